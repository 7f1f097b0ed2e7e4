"""Benchmark of the Hold'em Conquest engine: applied actions per second and view cost.

Plays seeded bot matches (a RandomBot / SensibleBot mix, 2–4 seats), records every applied action,
then replays the recorded actions through ``GAME.apply`` alone (bots' thinking excluded) and times
``GAME.view`` for a seat, a spectator and the admin on the states met along the way.

Run:  python bench/bench_conquest_engine.py [--matches 60] [--write docs/benchmarks/conquest-engine.md]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from app.games.base import ADMIN, SPECTATOR
from app.games.conquest import GAME
from app.games.conquest.bots import RandomBot, SensibleBot


def record_match(seats: int, seed: bytes, bot_seed: int) -> list[tuple[int, dict]]:
    """Play one bot match; return the applied (seat, action) list."""
    bots = [(SensibleBot(bot_seed + k, samples=40) if (bot_seed + k) % 2 else RandomBot(bot_seed + k)) for k in range(seats)]
    state = GAME.setup(seats, None, seed)
    log = []
    while GAME.outcome(state) is None:
        prompt = next(p for p in GAME.prompts(state) if not p.submitted)
        wire = {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
                "submitted": prompt.submitted, "simultaneous": prompt.simultaneous}
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire)
        state, _ = GAME.apply(state, prompt.seat, action)
        log.append((prompt.seat, action))
    return log


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--matches", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", default=None, help="write the markdown report to this path")
    args = parser.parse_args()

    matches = []
    for i in range(args.matches):
        seats = 2 + i % 3
        seed = b"bench-%d" % i
        matches.append((seats, seed, record_match(seats, seed, 1000 * i)))
    actions = sum(len(log) for _, _, log in matches)

    best_apply = best_total = None
    for _ in range(args.repeat):
        apply_time = 0.0
        total_start = time.perf_counter()
        for seats, seed, log in matches:
            state = GAME.setup(seats, None, seed)
            start = time.perf_counter()
            for seat, action in log:
                state, _ = GAME.apply(state, seat, action)
            apply_time += time.perf_counter() - start
            assert GAME.outcome(state) is not None
        total = time.perf_counter() - total_start
        best_apply = apply_time if best_apply is None else min(best_apply, apply_time)
        best_total = total if best_total is None else min(best_total, total)

    # view cost on every 5th state of the first 15 matches
    samples = {0: [], SPECTATOR: [], ADMIN: []}
    for seats, seed, log in matches[:15]:
        state = GAME.setup(seats, None, seed)
        for n, (seat, action) in enumerate(log):
            state, _ = GAME.apply(state, seat, action)
            if n % 5 == 0:
                for viewer in samples:
                    start = time.perf_counter()
                    GAME.view(state, viewer)
                    samples[viewer].append(time.perf_counter() - start)

    rate = actions / best_apply
    rate_total = actions / best_total
    lines = [
        "# Hold'em Conquest engine benchmark",
        "",
        "Produced by `python bench/bench_conquest_engine.py --write docs/benchmarks/conquest-engine.md`.",
        "",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        f"- workload: {len(matches)} seeded bot matches (2–4 seats, RandomBot/SensibleBot mix), "
        f"{actions} recorded actions, replayed through `GAME.apply` only (bots excluded), best of {args.repeat}",
        "",
        "| measure | value |",
        "|---|---|",
        f"| applied actions/s (apply only) | {rate:,.0f} |",
        f"| applied actions/s (including `setup` of each match) | {rate_total:,.0f} |",
        f"| mean µs per apply | {1e6 / rate:.1f} |",
    ]
    for viewer, name in ((0, "seat 0"), (SPECTATOR, "spectator"), (ADMIN, "admin")):
        values = samples[viewer]
        lines.append(f"| view µs ({name}), median / p95 | {1e6 * statistics.median(values):.1f} / "
                     f"{1e6 * sorted(values)[int(0.95 * len(values))]:.1f} |")
    lines.append("")
    report = "\n".join(lines)
    print(report)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as fh:
            fh.write(report)


if __name__ == "__main__":
    main()
