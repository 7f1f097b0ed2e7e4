"""Benchmark of the Warrior engine: applied actions per second and view cost.

Plays seeded bot matches (a RandomBot / CaptainBot mix, 2–4 seats), records every applied action,
then replays the recorded actions through ``GAME.apply`` alone (bots' thinking excluded) and times
``GAME.view`` for a seat, a spectator and the admin on the states met along the way.

Run:  python bench/bench_warrior_engine.py [--matches 60] [--write docs/benchmarks/warrior-engine.md]
"""
from __future__ import annotations

import argparse
import collections
import os
import platform
import statistics
import time
import timeit

from app.games.base import ADMIN, SPECTATOR
from app.games.warrior import GAME
from app.games.warrior.bots import CaptainBot, RandomBot


def record_match(seats: int, seed: bytes, bot_seed: int) -> list[tuple[int, dict]]:
    """Play one bot match; return the applied (seat, action) list."""
    bots = [(CaptainBot(bot_seed + k) if (bot_seed + k) % 2 else RandomBot(bot_seed + k)) for k in range(seats)]
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
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", default=None, help="write the markdown report to this path")
    args = parser.parse_args()

    matches = []
    for i in range(args.matches):
        seats = 2 + i % 3
        seed = b"bench-%d" % i
        matches.append((seats, seed, record_match(seats, seed, 1000 * i)))
    actions = sum(len(log) for _, _, log in matches)
    mix = collections.Counter(action["type"] for _, _, log in matches for _, action in log)

    # the machine's speed and load at the time: a fixed pure-Python loop, best of 20
    reference_us = min(timeit.repeat("sum(range(1000))", number=2000, repeat=20)) / 2000 * 1e6
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    best_apply = best_total = best_cpu = None
    for _ in range(args.repeat):
        apply_time = cpu_time = 0.0
        total_start = time.perf_counter()
        for seats, seed, log in matches:
            state = GAME.setup(seats, None, seed)
            start = time.perf_counter()
            cpu_start = time.process_time()
            for seat, action in log:
                state, _ = GAME.apply(state, seat, action)
            cpu_time += time.process_time() - cpu_start
            apply_time += time.perf_counter() - start
            assert GAME.outcome(state) is not None
        total = time.perf_counter() - total_start
        best_apply = apply_time if best_apply is None else min(best_apply, apply_time)
        best_cpu = cpu_time if best_cpu is None else min(best_cpu, cpu_time)
        best_total = total if best_total is None else min(best_total, total)

    # view and prompts cost on every 3rd state of the first 15 matches
    samples: dict[object, list[float]] = {0: [], SPECTATOR: [], ADMIN: [], "prompts": []}
    for seats, seed, log in matches[:15]:
        state = GAME.setup(seats, None, seed)
        for n, (seat, action) in enumerate(log):
            state, _ = GAME.apply(state, seat, action)
            if n % 3 == 0:
                for viewer in (0, SPECTATOR, ADMIN):
                    start = time.perf_counter()
                    GAME.view(state, viewer)
                    samples[viewer].append(time.perf_counter() - start)
                start = time.perf_counter()
                GAME.prompts(state)
                samples["prompts"].append(time.perf_counter() - start)

    rate = actions / best_apply
    rate_total = actions / best_total
    lines = [
        "# Warrior engine benchmark",
        "",
        "Produced by `python bench/bench_warrior_engine.py --write docs/benchmarks/warrior-engine.md`.",
        "",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {load:.1f} at the start; reference loop `sum(range(1000))` {reference_us:.1f} µs "
        "(about 8–12 µs on an idle modern core: a larger figure means a slower or busier machine)",
        f"- workload: {len(matches)} seeded bot matches (2–4 seats, RandomBot/CaptainBot mix), "
        f"{actions} recorded actions, replayed through `GAME.apply` only (bots excluded), best of {args.repeat}",
        "- action mix: " + ", ".join(f"{k} {v}" for k, v in mix.most_common()),
        "- target: ≥ 20,000 applied actions/s on one core",
        "",
        "| measure | value |",
        "|---|---|",
        f"| applied actions/s (apply only, wall clock) | {rate:,.0f} |",
        f"| applied actions/s (apply only, process CPU time) | {actions / best_cpu:,.0f} |",
        f"| applied actions/s (including `setup` of each match) | {rate_total:,.0f} |",
        f"| mean µs per apply | {1e6 / rate:.1f} |",
    ]
    for key, name in ((0, "view µs (seat 0)"), (SPECTATOR, "view µs (spectator)"), (ADMIN, "view µs (admin)"),
                      ("prompts", "prompts µs")):
        values = samples[key]
        lines.append(f"| {name}, median / p95 | {1e6 * statistics.median(values):.1f} / "
                     f"{1e6 * sorted(values)[int(0.95 * len(values))]:.1f} |")
    lines += [
        "",
        "Notes: `apply` clones the state (per-seat tuples, copy-on-write rng) and validates before it",
        "changes anything; dealing a round (tokens) and rolling (one rng draw per side) are the costly",
        "steps. On a shared machine the wall-clock figure swings with the load (other jobs on the same",
        "two cores); the process-CPU-time figure is steadier, and the reference loop above tells how fast",
        "the core was while measuring.",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as fh:
            fh.write(report)


if __name__ == "__main__":
    main()
