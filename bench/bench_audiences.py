"""Per-record cost of the audiences' documents (issue 11): ``python bench/bench_audiences.py``.

After every log record the runtime builds, for every seat and for the spectators, the document
``{"status", "prompts", "view"}`` and diffs it against the previous one
(:meth:`app.runtime.audience.AudienceBook.advance`). This script measures that, and nothing else:

1. for each game, plays ``--matches`` seeded matches of ``--seats`` seats with the game's ``smart``
   bots (a prompted seat's bot decides from its own view; its prompt's default when it has nothing
   to say) for at most ``--records`` records each, and keeps every record's state, status, public
   prompts and events;
2. replays the records through a fresh ``AudienceBook`` (``__init__`` then one ``advance`` per
   record), ``--repeat`` times, and reports the **best** CPU time (``time.process_time``) per record,
   in µs, and the same for ``Game.view`` of one seat alone.

A/B in one run: ``--tree DIR`` (repeatable) runs the measurement with the code of another checkout
(``git archive wip/core | tar -x -C /tmp/base``) in a subprocess, alternating with this tree round
by round, so both see the same machine load. Records are made by each tree's own engine from the
same seeds; the engines are deterministic and the views are equal, so the records are the same.

    python bench/bench_audiences.py --tree /tmp/views-base --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def use_tree(tree: str) -> None:
    """Import ``app`` from ``tree``, not from the checkout the venv's editable install points at."""
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
    sys.path.insert(0, tree)


def record(game: Any, seats: int, seed: bytes, limit: int) -> tuple[Any, list[tuple[Any, str, list, list]]]:
    """(initial state, [(state, status, public prompts, events)]) of one bot match."""
    from app.games.base import Prompt

    def wire(prompts: list[Prompt]) -> list[dict[str, Any]]:
        return [{"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "simultaneous": p.simultaneous,
                 "submitted": p.submitted, "deadline_at": None} for p in prompts]

    bot_kind = game.info.bots.get("smart") or next(iter(game.info.bots.values()))
    bots = [bot_kind(seat + 17 * seats) for seat in range(seats)]
    state = first = game.setup(seats, None, seed)
    records = []
    turn = 0
    while game.outcome(state) is None and len(records) < limit:
        prompts = [p for p in game.prompts(state) if not p.submitted]
        if not prompts:
            break
        prompt = prompts[turn % len(prompts)]
        turn += 1
        view = game.view(state, prompt.seat)
        action = bots[prompt.seat].decide(view, wire([prompt])[0]) or dict(prompt.default_action)
        if not game.can_act(state, prompt.seat, action):
            action = dict(prompt.default_action)
        state, events = game.apply(state, prompt.seat, action)
        status = "finished" if game.outcome(state) is not None else "running"
        records.append((state, status, wire(game.prompts(state)), events))
    return first, records


def measure(games: list[str], seats: int, matches: int, limit: int, repeat: int) -> dict[str, dict[str, float]]:
    """game id -> {"advance_us", "view_us", "records"}: best-of-``repeat`` CPU µs per record."""
    use_tree(os.getcwd())
    from app.games import registry
    from app.runtime.audience import AudienceBook

    out: dict[str, dict[str, float]] = {}
    for game_id in games:
        game = registry()[game_id]
        played = [record(game, seats, b"audiences-%s-%d" % (game_id.encode(), i), limit) for i in range(matches)]
        count = sum(len(r) for _, r in played)
        best_advance = best_view = float("inf")
        for _ in range(repeat):
            start = time.process_time()
            for first, records in played:
                book = AudienceBook(game, seats, first, "running", records[0][2] if records else [])
                advance = book.advance
                for state, status, prompts, events in records:
                    advance(state, status, prompts, events)
            best_advance = min(best_advance, time.process_time() - start)
            start = time.process_time()
            view = game.view
            for _first, records in played:
                for state, _status, _prompts, _events in records:
                    view(state, 0)
            best_view = min(best_view, time.process_time() - start)
        out[game_id] = {"advance_us": best_advance / count * 1e6, "view_us": best_view / count * 1e6,
                        "records": count}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="provinces,warrior,conquest")
    parser.add_argument("--seats", type=int, default=4)
    parser.add_argument("--matches", type=int, default=6)
    parser.add_argument("--records", type=int, default=400, help="records per match at most")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per round (the best counts)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations between the trees")
    parser.add_argument("--tree", action="append", default=[], help="another checkout to compare (A/B)")
    parser.add_argument("--json", action="store_true", help="(internal) print one JSON line and exit")
    args = parser.parse_args()
    games = [g for g in args.games.split(",") if g]
    if args.json:
        print(json.dumps(measure(games, args.seats, args.matches, args.records, args.repeat)))
        return
    trees = [os.path.dirname(HERE), *[os.path.abspath(t) for t in args.tree]]
    results: dict[str, list[dict[str, dict[str, float]]]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            cmd = [sys.executable, os.path.abspath(__file__), "--json", "--games", args.games,
                   "--seats", str(args.seats), "--matches", str(args.matches), "--records", str(args.records),
                   "--repeat", str(args.repeat)]
            done = subprocess.run(cmd, cwd=tree, check=True, capture_output=True, text=True)
            results[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.seats} seats, best CPU µs per record "
          f"(rounds: {args.rounds}, passes per round: {args.repeat})")
    print(f"{'tree':<40} {'game':<10} {'records':>7} {'advance µs':>11} {'view(seat 0) µs':>16}")
    best: dict[str, dict[str, float]] = {}
    for tree, runs in results.items():
        for game_id in games:
            adv = min(r[game_id]["advance_us"] for r in runs)
            view = min(r[game_id]["view_us"] for r in runs)
            best.setdefault(game_id, {})[tree] = adv
            print(f"{tree:<40} {game_id:<10} {runs[0][game_id]['records']:>7.0f} {adv:>11.1f} {view:>16.1f}")
    if len(trees) > 1:
        for game_id in games:
            here = best[game_id][trees[0]]
            for tree in trees[1:]:
                print(f"{game_id}: {tree} → this tree: advance ×{best[game_id][tree] / here:.2f} faster")


if __name__ == "__main__":
    main()
