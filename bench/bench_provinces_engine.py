"""Provinces engine benchmark (plain script): ``python bench/bench_provinces_engine.py [matches]``.

1. Plays seeded bot matches (RandomBot and GreedyBot, 2–6 seats) in-process and records every
   applied action.
2. Replays the recorded actions from ``setup`` timing only ``GAME.apply`` -> applied actions/s.
3. Times ``GAME.view`` for the seat to move on states sampled from the replays -> µs per view.
Throughput is measured in CPU time of this process (``time.process_time``), which a busy shared
machine disturbs less than the wall clock (also printed). Results go to stdout; copy them into
``docs/benchmarks/provinces-engine.md``.
"""
from __future__ import annotations

import collections
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from app.games.base import SPECTATOR  # noqa: E402
from app.games.provinces import GAME, Options  # noqa: E402
from app.games.provinces.bots import GreedyBot, RandomBot  # noqa: E402


def record(seats: int, seed: bytes, kinds) -> list[tuple[int, dict]]:
    state = GAME.setup(seats, Options(), seed)
    bots = [kinds[i % len(kinds)](i + 17 * seats) for i in range(seats)]
    log = []
    while GAME.outcome(state) is None:
        [prompt] = GAME.prompts(state)
        wire = {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
                "submitted": False, "simultaneous": False}
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire) or dict(prompt.default_action)
        state, _ = GAME.apply(state, prompt.seat, action)
        log.append((prompt.seat, action))
    return log


def main() -> None:
    matches = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    games = []
    for i in range(matches):
        seats = 2 + i % 5
        kinds = [[RandomBot, GreedyBot], [GreedyBot], [RandomBot]][i % 3]
        seed = b"bench-%d" % i
        games.append((seats, seed, record(seats, seed, kinds)))

    mix = collections.Counter(action["type"] for _, _, log in games for _, action in log)
    total = sum(mix.values())

    apply_time = apply_cpu = 0.0
    sampled = []
    per_type: collections.Counter = collections.Counter()
    for seats, seed, log in games:
        state = GAME.setup(seats, Options(), seed)
        apply = GAME.apply
        start, cpu_start = time.perf_counter(), time.process_time()
        for seat, action in log:
            state, _ = apply(state, seat, action)
        apply_time += time.perf_counter() - start
        apply_cpu += time.process_time() - cpu_start
        # re-walk: time each action on its own (per type) and sample states for the view timing
        state = GAME.setup(seats, Options(), seed)
        clock = time.perf_counter
        for n, (seat, action) in enumerate(log):
            if n % 25 == 0:
                sampled.append(state)
            start = clock()
            state, _ = apply(state, seat, action)
            per_type[action["type"]] += clock() - start

    by_seats: dict[int, list] = collections.defaultdict(list)
    for state in sampled:
        by_seats[state.seats].append(state)
    view_time = view_cpu = 0.0
    views = 0
    spectator_time = 0.0
    for state in sampled:
        seat = state.current
        start = time.perf_counter()
        for _ in range(20):
            GAME.view(state, seat)
        view_time += time.perf_counter() - start
        start = time.process_time()
        for _ in range(20):
            GAME.view(state, seat)
        view_cpu += time.process_time() - start
        start = time.perf_counter()
        for _ in range(20):
            GAME.view(state, SPECTATOR)
        spectator_time += time.perf_counter() - start
        views += 20

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores")
    print(f"matches: {matches} (2-6 seats), applied actions: {total}")
    print("action mix: " + ", ".join(f"{k} {v / total:.0%}" for k, v in mix.most_common()))
    print(f"apply: {total / apply_cpu:,.0f} actions/s of CPU time ({apply_cpu / total * 1e6:.1f} µs/action); "
          f"wall clock {total / apply_time:,.0f} actions/s")
    print("µs per action by type: " + ", ".join(f"{k} {per_type[k] / mix[k] * 1e6:.1f}" for k, _ in mix.most_common()))
    print(f"view (seat to move): {view_cpu / views * 1e6:.1f} µs CPU, {view_time / views * 1e6:.1f} µs wall; spectator: {spectator_time / views * 1e6:.1f} µs "
          f"over {len(sampled)} sampled states")
    for seats in sorted(by_seats):
        states = by_seats[seats]
        start = time.process_time()
        for _ in range(20):
            for state in states:
                GAME.view(state, state.current)
        cpu = (time.process_time() - start) / len(states) / 20
        print(f"  view with {seats} seats ({6 * seats} provinces): {cpu * 1e6:.1f} µs CPU")


if __name__ == "__main__":
    main()
