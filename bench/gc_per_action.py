"""What one game's live matches cost the cyclic collector and the CPU, in process (no server, no sockets).

Run from the project root with its venv active (pure Python: ``BANNERFALL_PURE_PYTHON=1``):

    python bench/gc_per_action.py --game warrior --matches 200

1. ``--matches`` seeded 4-seat matches are played by the game's smart bots (``GameInfo.bots``; each
   bot sees its seat's view and its prompt) and their actions recorded.
2. The recorded actions are replayed as a live node does: ``apply``, then ``AudienceBook.advance``
   (``Game.view_parts`` for every audience, the documents, the patches). Figures:

   * **retained**: GC-tracked objects per live match, each match holding its state and its audience
     book, half way through its actions (after a full collection, and after a second one: a tuple of
     tuples is untracked one collection after its items; ``len(gc.get_objects())`` with the matches
     held minus without);
   * **young per action**: the tracked objects one round (every live match acting once) leaves in the
     young generation (``gc.freeze()`` of everything before, ``len(gc.get_objects(0))``), per action,
     and of them what survives a young collection (``gc.collect(0)``);
   * **CPU**: µs per action of apply + advance, and of ``view_parts`` alone (every audience), the best
     of ``--repeat`` passes over every recorded action, collector off.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from typing import Any

sys.path.insert(0, os.getcwd())
#: import app from this tree, not from the venv's editable install
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]


def record(game: Any, matches: int, seats: int, limit: int) -> list[tuple[bytes, list[tuple[int, dict[str, Any]]]]]:
    """``matches`` bot plays: (seed, [(seat, action)])."""
    kind = "smart" if "smart" in game.info.bots else next(iter(game.info.bots))
    plays = []
    for i in range(matches):
        seed = b"gc-per-action-%s-%d" % (game.info.id.encode(), i)
        state = game.setup(seats, None, seed)
        bots = [game.info.bots[kind](seed=i * 10 + s) for s in range(seats)]
        rng = random.Random(seed)
        steps: list[tuple[int, dict[str, Any]]] = []
        while game.outcome(state) is None and len(steps) < limit:
            prompts = [p for p in game.prompts(state) if not p.submitted]
            if not prompts:
                break
            p = rng.choice(prompts)
            wire = {"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "submitted": p.submitted,
                    "simultaneous": p.simultaneous, "deadline_seconds": p.deadline_seconds}
            action = bots[p.seat].decide(game.view(state, p.seat), wire)
            if action is None or not game.can_act(state, p.seat, action):
                action = dict(p.default_action)
            state, _ = game.apply(state, p.seat, action)
            steps.append((p.seat, action))
        plays.append((seed, steps))
    return plays


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--game", default="warrior")
    ap.add_argument("--matches", type=int, default=200)
    ap.add_argument("--seats", type=int, default=4)
    ap.add_argument("--limit", type=int, default=2000, help="actions recorded per match at most")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import app
    from app.games import registry
    from app.runtime.audience import AudienceBook

    game = registry()[args.game]
    seats = args.seats
    plays = record(game, args.matches, seats, args.limit)
    actions = sum(len(steps) for _, steps in plays)
    audiences = (*range(seats), -1)
    status = b'"running"'
    print(f"python {sys.version.split()[0]}, {args.game}: {len(plays)} matches, {actions} actions "
          f"({actions / len(plays):.0f} per match), load {os.getloadavg()[0]:.2f}, app from {os.path.dirname(app.__file__)}")

    # -- CPU ------------------------------------------------------------------------------------
    gc.collect()
    gc.disable()
    best_all = best_parts = float("inf")
    for _ in range(args.repeat):
        total = parts_total = 0.0
        for seed, steps in plays:
            state = game.setup(seats, None, seed)
            book = AudienceBook(game, seats, state, status, ())
            for seat, action in steps:
                t0 = time.perf_counter()
                state, events = game.apply(state, seat, action)
                book.advance(state, status, (), events)
                t1 = time.perf_counter()
                game.view_parts(state, audiences)
                t2 = time.perf_counter()
                total += t1 - t0
                parts_total += t2 - t1
        best_all = min(best_all, total)
        best_parts = min(best_parts, parts_total)
    gc.enable()
    print(f"CPU per action: apply + advance {best_all / actions * 1e6:7.1f} us; "
          f"view_parts again (every audience, memo warm) {best_parts / actions * 1e6:7.1f} us")

    # -- retained and young ---------------------------------------------------------------------
    gc.collect()
    gc.disable()
    base = len(gc.get_objects())
    live: list[list[Any]] = []
    for seed, steps in plays:
        state = game.setup(seats, None, seed)
        live.append([state, AudienceBook(game, seats, state, status, ()), steps, 0])

    def round_() -> int:
        acted = 0
        for entry in live:
            state, book, steps, k = entry
            if k < len(steps):
                seat, action = steps[k]
                state, events = game.apply(state, seat, action)
                book.advance(state, status, (), events)
                entry[0] = state
                entry[3] = k + 1
                acted += 1
        return acted

    half = min(len(steps) for _, steps in plays) // 2
    for _ in range(half):
        round_()
    gc.collect()
    retained = (len(gc.get_objects()) - base) / len(live)
    gc.collect()  # a tuple holding tuples is untracked one collection after its items
    retained_again = (len(gc.get_objects()) - base) / len(live)
    young = survived = acted = 0
    rounds = 5
    for _ in range(rounds):
        gc.collect()
        gc.freeze()
        acted += round_()
        young += len(gc.get_objects(0))
        gc.collect(0)
        survived += len(gc.get_objects(1))
        gc.unfreeze()
    gc.enable()
    print(f"retained per live match (state + audience book, after {half} actions): {retained:7.1f} tracked objects "
          f"after a full collection, {retained_again:7.1f} after a second one")
    print(f"young per action: {young / acted:6.1f} tracked objects; surviving a young collection {survived / acted:6.1f}")


if __name__ == "__main__":
    main()
