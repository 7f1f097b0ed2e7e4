"""What a live Conquest match costs the cyclic collector and the CPU, in-process (no server):
``python bench/bench_conquest_gc.py [--matches 200] [--actions 300] [--loadouts]``.

1. Plays ``--matches`` seeded 4-seat matches with the game's bots (``random`` and ``smart`` seats
   alternating; each bot decides from ``view(state, seat)`` and its prompt, and sometimes replaces
   its submission) for at most ``--actions`` actions and records each ``(seat, action)``.
2. Replays them, one action per match per round (every live match holds a state at once), each
   action as the runtime does it: ``apply``, then ``view_parts`` for every audience (each seat and
   SPECTATOR) made into documents (``app.parts.document``), kept as the book keeps them. With the
   collector off, it counts
   - young objects per action: the rise of ``gc.get_count()[0]`` (tracked objects allocated and not
     yet freed) over a round, divided by the actions of that round;
   - retained objects per live match: after ``gc.collect()``, the tracked objects reachable from each
     match's state and documents (``gc.get_referents`` walk, each object counted once);
   - CPU µs per action of apply + view_parts + documents (``time.perf_counter``, best of ``--repeat``).
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from typing import Any

# the tree in the working directory, not the one of the venv's editable install (an A/B of two checkouts)
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path.insert(0, os.getcwd())


def reach(root: Any, seen: set[int], types: dict[str, int] | None = None) -> int:
    count = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, type):
            continue
        if type(obj).__name__ in ("module", "function", "builtin_function_or_method", "ModelMetaclass"):
            continue
        seen.add(id(obj))
        count += 1
        if types is not None:
            name = type(obj).__name__
            types[name] = types.get(name, 0) + 1
        stack.extend(gc.get_referents(obj))
    return count


def record(game: Any, matches: int, limit: int, loadouts: bool) -> list[tuple[bytes, dict[str, Any], list[Any]]]:
    from app.games.conquest.specials import SPECIALS
    from app.runtime.bots import make_bot

    plays = []
    for i in range(matches):
        seed = b"conquest-gc-%d" % i
        rng = random.Random(seed)
        options: dict[str, Any] = {}
        if loadouts:
            options["loadouts"] = [rng.sample(SPECIALS, 4) for _ in range(4)]
        state = game.setup(4, options, seed)
        bots = {s: make_bot("conquest", "random" if (s + i) % 2 else "smart", i * 10 + s) for s in range(4)}
        steps: list[tuple[int, dict[str, Any]]] = []
        idle = 0
        while game.outcome(state) is None and len(steps) < limit and idle < 50:
            prompts = game.prompts(state)
            acted = False
            for p in prompts:
                wire = {"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "submitted": p.submitted}
                if p.submitted and rng.random() < 0.85:
                    continue
                action = bots[p.seat].decide(game.view(state, p.seat), {**wire, "submitted": False})
                if action is None or not game.can_act(state, p.seat, action):
                    continue
                state, _ = game.apply(state, p.seat, action)
                steps.append((p.seat, action))
                acted = True
                break
            if not acted:
                idle += 1
                p = prompts[0]
                state, _ = game.apply(state, p.seat, dict(p.default_action))
                steps.append((p.seat, dict(p.default_action)))
        plays.append((seed, options, steps))
    return plays


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matches", type=int, default=200)
    ap.add_argument("--actions", type=int, default=300)
    ap.add_argument("--warm", type=int, default=40, help="rounds played before the retained count")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loadouts", action="store_true", help="seats bring 4 random specials each")
    ap.add_argument("--types", action="store_true", help="print the types of the retained objects")
    args = ap.parse_args()
    from app.games import registry
    from app.games.base import SPECTATOR
    from app.parts import document

    game = registry()["conquest"]
    t = time.perf_counter()
    plays = record(game, args.matches, args.actions, args.loadouts)
    total = sum(len(s) for _, _, s in plays)
    print(f"python {sys.version.split()[0]}; {args.matches} matches, {total} actions recorded in "
          f"{time.perf_counter() - t:.0f} s; load {os.getloadavg()[0]:.2f}")
    viewers = (0, 1, 2, 3, SPECTATOR)
    best = best_proc = float("inf")
    for rep in range(args.repeat):
        gc.collect()
        gc.disable()
        live: list[list[Any]] = []
        for seed, options, steps in plays:
            state = game.setup(4, options, seed)
            docs = [document(b'"running"', (), v) for v in game.view_parts(state, viewers)]
            live.append([state, docs, steps, 0])
        young = net = 0
        acted_total = 0
        cpu = proc = 0.0
        rounds = 0
        retained = None
        while True:
            gc.collect()
            before = gc.get_count()[0]
            t0 = time.perf_counter()
            p0 = time.process_time()
            acted = 0
            for m in live:
                state, docs, steps, k = m
                if k >= len(steps):
                    continue
                seat, action = steps[k]
                state, _ = game.apply(state, seat, action)
                m[0] = state
                m[1] = [document(b'"running"', (), v) for v in game.view_parts(state, viewers)]
                m[3] = k + 1
                acted += 1
            cpu += time.perf_counter() - t0
            proc += time.process_time() - p0
            net += gc.get_count()[0] - before
            young += len(gc.get_objects(0))
            acted_total += acted
            rounds += 1
            if rounds == args.warm and retained is None:
                gc.collect()
                counts = []
                types: dict[str, int] = {}
                for m in live:
                    seen: set[int] = set()
                    counts.append((reach(m[0], seen, types), reach(m[1], seen)))
                retained = (sum(c[0] for c in counts) / len(counts), sum(c[1] for c in counts) / len(counts))
                if args.types and rep == 0:
                    top = sorted(types.items(), key=lambda kv: -kv[1])[:12]
                    print("retained by type, per match:", ", ".join(f"{k} {v / len(live):.1f}" for k, v in top))
            if not acted:
                break
        gc.enable()
        best = min(best, cpu * 1e6 / acted_total)
        best_proc = min(best_proc, proc * 1e6 / acted_total)
        if rep == 0:
            print(f"young tracked objects per action: {young / acted_total:.1f} alive in generation 0 after "
                  f"the round, {net / acted_total:.1f} net (gc.get_count()[0])")
            if retained is not None:
                print(f"retained tracked objects per live match after {args.warm} rounds: state {retained[0]:.0f}, "
                      f"documents {retained[1]:.0f}")
        del live
    print(f"per action (apply + view_parts of 5 audiences + documents), best of {args.repeat}: "
          f"{best:.0f} us perf_counter, {best_proc:.0f} us process_time")


if __name__ == "__main__":
    main()
