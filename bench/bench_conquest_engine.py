"""Benchmark of the Hold'em Conquest engine: applied actions per second and view cost.

Plays seeded bot matches (2–4 seats) for three bot mixes — RandomBot only, SensibleBot only, and
half-and-half — records every applied action, then replays the recorded actions through
``GAME.apply`` alone (bots' thinking excluded). Each match is replayed ``--repeat`` times and its
fastest replay counts: on a shared machine the minimum is the least disturbed measure of the
engine's own cost. ``GAME.view`` is timed on states met along the way: *cold* (the first view of a
position: ``view`` keeps the parts that depend only on the position in ``state.view_memo``, so a
cold view is timed on a ``state.clone()``, which starts with an empty memo) for a seat, a spectator
and the admin; *warm* (the same viewer again, e.g. after another seat's plain submission, which
shares the memo); and the *fan-out* a match pays after each action: cold views for every seat and
one spectator. The report also gives how many card tokens each action issues and what one
``CardTokens.token`` call costs, since that is a fixed share of the engine's work.

Run:  python bench/bench_conquest_engine.py [--matches 45] [--repeat 5] [--write docs/benchmarks/conquest-engine.md]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import timeit

from app.games.base import ADMIN, SPECTATOR, CardTokens
from app.games.conquest import GAME, SPECIALS
from app.games.conquest.bots import RandomBot, SensibleBot

MIXES = {
    "random": lambda seed: RandomBot(seed),
    "sensible": lambda seed: SensibleBot(seed, samples=40),
    "mixed": lambda seed: SensibleBot(seed, samples=40) if seed % 2 else RandomBot(seed),
    # section 5: every seat brings all 15 specials (the mixed bots play them)
    "specials": lambda seed: SensibleBot(seed, samples=40) if seed % 2 else RandomBot(seed),
}


def options_of(mix: str, seats: int) -> dict | None:
    """Lobby options of a mix's matches: none, or every special in every seat's loadout."""
    return {"loadouts": [list(SPECIALS)] * seats} if mix == "specials" else None


def record_match(seats: int, seed: bytes, bot_seed: int, mix: str = "mixed") -> list[tuple[int, dict]]:
    """Play one bot match; return the applied (seat, action) list."""
    bots = [MIXES[mix](bot_seed + k) for k in range(seats)]
    state = GAME.setup(seats, options_of(mix, seats), seed)
    log = []
    while GAME.outcome(state) is None:
        prompt = next(p for p in GAME.prompts(state) if not p.submitted)
        wire = {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
                "submitted": prompt.submitted, "simultaneous": prompt.simultaneous}
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire)
        state, _ = GAME.apply(state, prompt.seat, action)
        log.append((prompt.seat, action))
    return log


def measure(matches, repeat: int) -> dict[str, float]:
    """Fastest replay of each match, summed: wall and CPU seconds, actions, tokens, setup seconds."""
    wall = cpu = setup = 0.0
    actions = tokens = 0
    for seats, seed, log, options in matches:
        fastest = fastest_cpu = fastest_setup = None
        for _ in range(repeat):
            start = time.perf_counter()
            state = GAME.setup(seats, options, seed)
            made = time.perf_counter() - start
            first_token = state.dealt
            start, cpu_start = time.perf_counter(), time.process_time()
            for seat, action in log:
                state, _ = GAME.apply(state, seat, action)
            elapsed, used = time.perf_counter() - start, time.process_time() - cpu_start
            assert GAME.outcome(state) is not None
            fastest = elapsed if fastest is None else min(fastest, elapsed)
            fastest_cpu = used if fastest_cpu is None else min(fastest_cpu, used)
            fastest_setup = made if fastest_setup is None else min(fastest_setup, made)
        wall += fastest
        cpu += fastest_cpu
        setup += fastest_setup
        actions += len(log)
        tokens += state.dealt - first_token
    return {"wall": wall, "cpu": cpu, "setup": setup / len(matches), "actions": actions, "tokens": tokens}


def _cold(state, viewers) -> float:
    """Seconds for the views of ``viewers``, in order, of a copy of ``state`` with an empty view memo."""
    fresh = state.clone()
    start = time.perf_counter()
    for viewer in viewers:
        GAME.view(fresh, viewer)
    return time.perf_counter() - start


def view_costs(matches) -> dict[str, list[float]]:
    """Seconds per sample: cold views (seat 0, spectator, admin), a warm seat view, and the fan-out
    after an action (cold views for every seat and one spectator, per view and in total)."""
    samples: dict[str, list[float]] = {"seat": [], "spectator": [], "admin": [], "warm": [],
                                       "fanout": [], "fanout_view": []}
    for seats, seed, log, options in matches:
        state = GAME.setup(seats, options, seed)
        for n, (seat, action) in enumerate(log):
            state, _ = GAME.apply(state, seat, action)
            if n % 5 == 0:
                for name, viewer in (("seat", 0), ("spectator", SPECTATOR), ("admin", ADMIN)):
                    samples[name].append(min(_cold(state, (viewer,)) for _ in range(3)))
                GAME.view(state, 0)
                samples["warm"].append(min(timeit.repeat(lambda state=state: GAME.view(state, 0), number=1, repeat=3)))
                everyone = tuple(range(seats)) + (SPECTATOR,)
                fanout = min(_cold(state, everyone) for _ in range(3))
                samples["fanout"].append(fanout)
                samples["fanout_view"].append(fanout / len(everyone))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--matches", type=int, default=45, help="matches per bot mix")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", default=None, help="write the markdown report to this path")
    args = parser.parse_args()

    load = os.getloadavg()[0]
    results = {}
    recorded = {}
    for mix in MIXES:
        matches = []
        for i in range(args.matches):
            seats = 2 + i % 3
            seed = b"bench-%s-%d" % (mix.encode(), i)
            matches.append((seats, seed, record_match(seats, seed, 1000 * i, mix), options_of(mix, seats)))
        recorded[mix] = matches
        results[mix] = measure(matches, args.repeat)
    tokens = CardTokens(b"bench")
    token_cost = min(timeit.repeat(lambda: tokens.token(123456), number=5000, repeat=5)) / 5000
    samples = view_costs(recorded["mixed"][:15])
    load_end = os.getloadavg()[0]

    lines = [
        "# Hold'em Conquest engine benchmark",
        "",
        "Produced by `python bench/bench_conquest_engine.py --write docs/benchmarks/conquest-engine.md`.",
        "",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average (1 min) when it started: {load:.1f}, when it ended: "
        f"{load_end:.1f} (the machine is shared)",
        f"- workload: per bot mix, {args.matches} seeded matches (2, 3 and 4 seats in turn), every action "
        f"recorded, then replayed through `GAME.apply` only (bots excluded); fastest of {args.repeat} replays per match",
        "",
        "| bot mix | actions | applied actions/s (wall) | applied actions/s (CPU time) | µs per apply | "
        "card tokens per action | share of apply time issuing tokens | `setup` ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mix, r in results.items():
        lines.append(
            f"| {mix} | {r['actions']} | {r['actions'] / r['wall']:,.0f} | {r['actions'] / r['cpu']:,.0f} | "
            f"{1e6 * r['wall'] / r['actions']:.1f} | {r['tokens'] / r['actions']:.2f} | "
            f"{100 * r['tokens'] * token_cost / r['wall']:.0f}% | {1e3 * r['setup']:.1f} |")
    lines += [
        "",
        f"One `CardTokens.token` call (keyed BLAKE2b + base-32, `app/games/base.py`): {1e6 * token_cost:.1f} µs.",
        "",
        "| view | median µs | p95 µs |",
        "|---|---|---|",
    ]
    for key, name in (("seat", "seat 0, cold (first view of the position)"),
                      ("spectator", "spectator, cold"),
                      ("admin", "admin, cold"),
                      ("warm", "seat 0, warm (position already viewed)"),
                      ("fanout_view", "fan-out after an action, per view (every seat + 1 spectator, cold)"),
                      ("fanout", "fan-out after an action, all views")):
        values = sorted(samples[key])
        lines.append(f"| {name} | {1e6 * statistics.median(values):.1f} | {1e6 * values[int(0.95 * len(values))]:.1f} |")
    lines.append("")
    report = "\n".join(lines)
    print(report)
    if args.write:
        marker = "<!-- measurements above are generated; the notes below are written by hand -->"
        try:
            with open(args.write, encoding="utf-8") as fh:
                existing = fh.read()
        except FileNotFoundError:
            existing = ""
        tail = existing[existing.index(marker):] if marker in existing else marker + "\n"
        with open(args.write, "w", encoding="utf-8") as fh:
            fh.write(report + "\n" + tail)


if __name__ == "__main__":
    main()
