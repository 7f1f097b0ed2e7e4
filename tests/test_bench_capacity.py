"""``bench/bench_capacity.py``'s pure helpers and the generators' think-time pace
(``bench/loadgen/genbase.py``): the rate arithmetic, the reference room's think time, the targets
table, the server histogram's quantiles, the machine-limit checks. No server is started."""
from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT


def _load(name: str, folder: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


cap = _load("bench_capacity", ROOT / "bench")
genbase = _load("genbase", ROOT / "bench" / "loadgen")


def test_room_think_time_gives_the_same_total_rate():
    # 4N clients each acting every think seconds = N x rate actions/s
    for rate in (0.5, 0.25, 2.0):
        think_s = cap.room_think_ms(rate) / 1000
        for n in (200, 1000, 5000):
            assert 4 * n / think_s == pytest.approx(n * rate)
    assert cap.room_think_ms(0.5) == 8000  # the THINKS=8000 at 1,000 rooms and 500 actions/s
    with pytest.raises(ValueError):
        cap.room_think_ms(0)


def test_think_mean_follows_littles_law():
    # L seats thinking on average, each for W seconds on average: L / W answers a second
    assert genbase.think_mean_s(1000, 500) == pytest.approx(2.0)
    assert genbase.think_mean_s(2500, 500) == pytest.approx(5.0)  # four seats at once, in part
    assert genbase.think_mean_s(0, 500) == 0.02  # the floor
    # half the thinks find their prompt gone (another seat answered it): thinks half as long
    assert genbase.think_mean_s(1000, 500, answered=0.5) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        genbase.think_mean_s(10, 0)


def test_unit_think_times_have_mean_one_and_are_seeded():
    for dist in genbase.THINK_DISTS:
        draws = [genbase.unit_think(random.Random(7 + i), dist) for i in range(20000)]
        assert sum(draws) / len(draws) == pytest.approx(1.0, rel=0.03)
        again = [genbase.unit_think(random.Random(7 + i), dist) for i in range(20000)]
        assert draws == again
    uniform = [genbase.unit_think(random.Random(i), "uniform") for i in range(2000)]
    assert 0.5 <= min(uniform) and max(uniform) <= 1.5
    with pytest.raises(ValueError):
        genbase.unit_think(random.Random(1), "gauss")


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_pacer_sets_the_mean_from_the_seats_thinking_at_once():
    """Start with a guess of one thinker per match; when four seats think at once (a simultaneous
    phase) the mean grows so that the rate stays the target."""
    clock = _Clock()
    pacer = genbase.ThinkPacer(rate=50.0, dist="exp", thinkers=100, tau_s=1.0, clock=clock)
    assert pacer.mean_s == pytest.approx(2.0)  # 100 matches at 0.5/s each
    rng = random.Random(1)
    for _ in range(400):
        pacer.start_think(rng)
    for _ in range(20):
        clock.t += 0.25
        pacer.tick()
    assert pacer.thinkers == pytest.approx(400, rel=0.01)
    assert pacer.mean_s == pytest.approx(400 / 50.0, rel=0.01)
    for _ in range(400):
        pacer.end_think()
    assert pacer.thinking == 0
    pacer.end_think()  # never below zero
    assert pacer.thinking == 0
    pacer.set_rate(100.0)
    assert pacer.mean_s == pytest.approx(pacer.answered * pacer.thinkers / 100.0)
    # a measured phase keeps the mean the warm-up reached, whatever the seats thinking do
    pacer.frozen = True
    mean = pacer.mean_s
    for _ in range(40):
        clock.t += 0.25
        pacer.tick()
    assert pacer.thinkers < 10 and pacer.mean_s == mean


def test_pacer_reaches_its_rate_in_a_simulation():
    """An event simulation of seats that think, answer, and are prompted again at once: the sends
    per second come out at the target, for one seat per match, for several at once, when a share
    of the thinks finds its prompt gone and sends nothing."""
    import heapq

    for seats_per_match, sends in ((1, 1.0), (4, 1.0), (4, 0.6)):
        clock = _Clock()
        matches, rate = 200, 100.0
        pacer = genbase.ThinkPacer(rate=rate, dist="exp", thinkers=matches, tau_s=3.0, clock=clock)
        rngs = [random.Random(i) for i in range(matches * seats_per_match)]
        events = [(pacer.start_think(rngs[i]), i) for i in range(matches * seats_per_match)]
        heapq.heapify(events)
        answers, next_tick, counted_from, until = 0, 0.25, 30.0, 90.0
        gone = random.Random(99)
        while events[0][0] < until:
            t, i = heapq.heappop(events)
            while next_tick <= t:
                clock.t = next_tick
                pacer.tick()
                next_tick += 0.25
            clock.t = t
            sent = gone.random() < sends
            pacer.end_think(sent=sent)
            if t >= counted_from and sent:
                answers += 1
            heapq.heappush(events, (t + pacer.start_think(rngs[i]), i))
        assert answers / (until - counted_from) == pytest.approx(rate, rel=0.08), (seats_per_match, sends)
        assert pacer.answered == pytest.approx(sends, abs=0.05)


def test_pending_thinks_follow_a_new_pace_at_once():
    """Thinks scheduled at a 10 s mean end within about a second once the mean drops to 0.1 s (they
    are re-timed from their start), not ten seconds later."""
    import asyncio
    import time

    async def scenario() -> tuple[int, float]:
        pacer = genbase.ThinkPacer(rate=100.0, dist="uniform", thinkers=1000)  # 10 s each
        done = asyncio.Event()
        ended = [0]

        def over() -> None:
            pacer.end_think()
            ended[0] += 1
            if ended[0] == 100:
                done.set()

        rng = random.Random(3)
        for _ in range(100):
            pacer.schedule(rng, over)
        t0 = time.perf_counter()
        pacer.set_rate(10_000.0)  # 1000 thinkers / 10,000 per s = 0.1 s
        await asyncio.wait_for(done.wait(), timeout=5.0)
        return ended[0], time.perf_counter() - t0

    ended, took = asyncio.run(scenario())
    assert ended == 100 and took < 5.0


def test_match_counts_spectators_and_spares():
    assert cap.parse_counts("200,1000, 2000") == [200, 1000, 2000]
    for bad in ("", "0", "5,-1"):
        with pytest.raises(ValueError):
            cap.parse_counts(bad)
    assert cap.spectated_matches(1000, "1%") == 10
    assert cap.spectated_matches(50, "1%") == 1  # at least one when a share is asked
    assert cap.spectated_matches(50, "0%") == 0
    assert cap.spectated_matches(50, "3") == 3
    assert cap.spectated_matches(2, "5") == 2
    # a fresh Warrior match lasts 87 actions or more: 37.5 actions per slot in 75 s end none (a small pool)
    assert cap.spares_for("warrior", 1000, 0.5, 75.0) == 22
    # 300 s: 150 actions per slot; 1,000 slots ≈ 1,402 matches of 107 actions end, × 1.5
    assert cap.spares_for("warrior", 1000, 0.5, 300.0) == 2103
    assert cap.spares_for("conquest", 1000, 0.5, 75.0) == 22
    assert cap.spares_for("provinces", 1000, 0.5, 3600.0) == 0


def test_spectators_never_hold_more_sockets_per_player_than_allowed():
    from collections import Counter

    for watched, per in ((10, 2), (13, 3), (1, 8), (4, 1)):
        watchers = [f"w{i}" for i in range(-(-watched * per // 8))]
        held = Counter(t for k in range(watched) for t in cap.spectator_tokens(watchers, k, per))
        assert sum(held.values()) == watched * per
        assert max(held.values()) <= 8


def test_source_addresses_and_processes_fit_the_machine():
    ports = (32768, 60999)  # 28,232 ports; 80 % of them per source address
    assert cap.source_addresses(8000, ports) == ["127.0.0.1"]
    assert cap.source_addresses(20000, ports) == ["127.0.0.1"]
    assert cap.source_addresses(26000, ports) == ["127.0.0.1", "127.0.0.2"]
    assert len(cap.source_addresses(60000, ports)) == 3
    assert cap.processes_for(8000, 20000) == 1
    assert cap.processes_for(20000, 20000) == 2
    assert cap.preflight(1000, 20, 500, 20000) is None
    why = cap.preflight(5000, 100, 800, 20000)
    assert why is not None and "20,000" in why and "~4,800 matches fit" in why
    assert cap.largest_n(20000, 0.02) == 4800
    assert cap.preflight(4800, 96, 800, 20000) is None  # the largest that fits does fit


def test_server_histogram_quantiles_include_p999_and_max():
    name = "bannerfall_action_durable_seconds"

    def hist(counts: dict[str, float]) -> dict[str, float]:
        return {f'{name}_bucket{{le="{le}"}}': c for le, c in counts.items()}

    m0 = hist({"0.001": 10, "0.005": 10, "0.05": 10, "+Inf": 10})
    # 1,000 observations: 900 ≤ 1 ms, 95 more ≤ 5 ms, 4 more ≤ 50 ms, 1 past the last bound
    m1 = hist({"0.001": 910, "0.005": 1005, "0.05": 1009, "+Inf": 1010})
    q = cap.histogram_quantiles(m0, m1, name)
    assert q["n"] == 1000
    assert q["p50_ms"] == 1.0 and q["p99_ms"] == 5.0 and q["p999_ms"] == 50.0
    assert q["max_ms"] == float("inf")
    assert cap.histogram_quantiles(m0, m0, name)["p99_ms"] is None


def _row(game: str, mode: str, **kw: Any) -> dict[str, Any]:
    row = {"game": game, "mode": mode, "ack": {"p50_ms": 1.0, "p99_ms": 8.0, "p999_ms": 20.0, "max_ms": 40.0},
           "server_cores": 0.4, "kb_per_live_match": 120.0,
           "make_match": {"cpu_ms_players": 5.0, "cpu_ms_lobby_to_start": 30.0}, "generator_bound": []}
    row.update(kw)
    return row


def test_targets_are_ratios_to_the_room_in_the_same_run():
    room = cap.mean_room({"p99_ms": 4.0, "server_cpu": 0.30, "max_ms": 20.0},
                         {"p99_ms": 5.0, "server_cpu": 0.34, "max_ms": 30.0})
    assert room is not None and room["p99_ms"] == pytest.approx(4.5) and room["server_cpu"] == pytest.approx(0.32)
    rows = [_row("provinces", "embedded"), _row("conquest", "production", ack={"p99_ms": 9.5, "max_ms": 46.0}),
            {"game": "warrior", "mode": "embedded", "error": "boom"}]
    checks = cap.targets(1000, rows, room)
    by = {(c["game"], c["key"]): c for c in checks}
    assert len(checks) == 2 * len(cap.TARGETS)  # the failed cell has no checks
    assert by["provinces", "p99"]["value"] == pytest.approx(8.0 / 4.5) and by["provinces", "p99"]["pass"] is True
    assert by["conquest", "p99"]["pass"] is False  # 9.5 / 4.5 = 2.1×
    assert by["provinces", "max"]["pass"] is True  # 40 / 4.5 = 8.9×
    assert by["conquest", "max"]["pass"] is False  # 46 / 4.5 = 10.2×
    assert by["provinces", "cpu"]["value"] == pytest.approx(0.4 / 0.32) and by["provinces", "cpu"]["pass"] is True
    assert by["provinces", "rss"]["pass"] is True
    assert by["provinces", "make"]["value"] == 30.0 and by["provinces", "make"]["pass"] is False
    assert {c["kind"] for c in checks} == {"target"}
    assert {c["kind"] for c in cap.targets(5000, rows, room)} == {"moonshot"}
    assert {c["kind"] for c in cap.targets(200, rows, room)} == {"info"}
    # no room: the ratios have no value, the absolute targets still do
    no_room = {(c["game"], c["key"]): c for c in cap.targets(1000, rows, None)}
    assert no_room["provinces", "p99"]["pass"] is None and no_room["provinces", "rss"]["pass"] is True
    table = cap.targets_table(checks)
    assert "**FAIL**" in table and "PASS" in table and "2.11×" in table


def test_generator_verdict_names_why_the_generator_may_own_the_tail():
    assert cap.generator_verdict(_row("p", "e", loadgen_loop_lag={"max_ms": 6.0, "p99_ms": 1.0},
                                      target_rate=500, actions_per_s=498, generator_core_busy_pct=40)) == []
    why = cap.generator_verdict(_row("p", "e", loadgen_loop_lag={"max_ms": 30.0, "p99_ms": 6.0},
                                     target_rate=500, actions_per_s=300, generator_core_busy_pct=97))
    assert len(why) == 4 and any("below 90%" in w for w in why) and any("97% busy" in w for w in why)
    assert any("above 110%" in w for w in cap.generator_verdict(_row("p", "e", target_rate=500, actions_per_s=574)))


def test_the_generators_own_collections_are_counted_by_generation() -> None:
    """A generator's collection delays the acks in its sockets, so the capacity rows report them
    (``loadgen_gc``) beside its loop lag."""
    import gc

    pauses = genbase.GcPauses()
    pauses.start()
    try:
        pauses.take()
        gc.collect(0)
        gc.collect(2)
        got = pauses.take()
        assert got["count"] == 2
        assert got["max_ms"] >= got["gen2_max_ms"] > 0
        assert got["total_ms"] >= got["max_ms"]
        assert pauses.take()["count"] == 0  # reset by the take
    finally:
        gc.callbacks.remove(pauses._cb)
