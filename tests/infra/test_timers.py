"""Timers contract (LocalTimers and RedisTimers), then what only the shared Redis set can do:
many nodes, ownership, outages, orphan sweeping."""
from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from app.infra.redis_timers import RedisTimers
from tests.conftest import REDIS_URL
from tests.infra.conftest import wait_until


def recorder(timers, fired: list, name: str = "") -> None:
    timers.set_callback(lambda match_id, phase_id: fired.append((name, match_id, phase_id, time.time())))


# --------------------------------------------------------------------------- contract
async def test_fires_once_at_about_its_due_time(make_timers):
    timers = await make_timers()
    fired: list = []
    recorder(timers, fired)
    due = time.time() + 0.3
    await timers.schedule("m1", 7, due)
    await asyncio.sleep(0.15)
    assert fired == []
    assert await wait_until(lambda: fired, timeout=2.0)
    await asyncio.sleep(0.2)  # no second firing
    assert [(m, p) for _, m, p, _ in fired] == [("m1", 7)]
    late = fired[0][3] - due
    assert -0.01 <= late < 0.25, late


async def test_past_due_fires_promptly(make_timers):
    timers = await make_timers()
    fired: list = []
    recorder(timers, fired)
    await timers.schedule("m1", 1, time.time() - 5)
    assert await wait_until(lambda: fired, timeout=0.5)


async def test_cancel_prevents_firing(make_timers):
    timers = await make_timers()
    fired: list = []
    recorder(timers, fired)
    await timers.schedule("m1", 1, time.time() + 0.15)
    await timers.schedule("m1", 2, time.time() + 0.15)
    await timers.cancel("m1", 1)
    await timers.cancel("m1", 99)  # no such deadline: no error
    assert await wait_until(lambda: fired, timeout=3.0)  # phase 2, due at the same time, fired
    await asyncio.sleep(0.1)  # a negative check: phase 1 does not follow
    assert [(m, p) for _, m, p, _ in fired] == [("m1", 2)]


async def test_rescheduling_moves_the_deadline(make_timers):
    timers = await make_timers()
    fired: list = []
    recorder(timers, fired)
    start = time.time()
    await timers.schedule("m1", 1, start + 0.15)
    await timers.schedule("m1", 1, start + 0.5)  # later
    await timers.schedule("m2", 1, start + 0.6)
    await timers.schedule("m2", 1, start + 0.1)  # earlier
    assert await wait_until(lambda: fired, timeout=3.0)
    assert [(m, p) for _, m, p, _ in fired] == [("m2", 1)]  # m1 was not at its first time (0.15 s)
    assert fired[0][3] - start < 0.3
    assert await wait_until(lambda: len(fired) == 2, timeout=1.0)
    assert fired[1][1] == "m1" and fired[1][3] >= start + 0.5 - 0.01
    await asyncio.sleep(0.1)
    assert len(fired) == 2


async def test_the_hot_path_schedules_and_cancels_without_a_coroutine(make_timers):
    """``schedule_now``/``cancel_now`` (what ``MatchManager`` calls after every action): a burst of
    them ends as the same deadlines as the awaited calls, the last call per phase winning."""
    timers = await make_timers()
    fired: list = []
    recorder(timers, fired)
    start = time.time()
    for phase in range(50):
        timers.schedule_now("m1", phase, start + 0.2)
    for phase in range(1, 50):
        timers.cancel_now("m1", phase)
    timers.schedule_now("m2", 1, start + 5)
    timers.schedule_now("m2", 1, start + 0.1)  # moved earlier before anything was written
    timers.schedule_now("last", 1, start + 0.4)  # due after the cancelled 49 would have been
    assert await wait_until(lambda: any(m == "last" for _, m, _, _ in fired), timeout=3.0)
    assert sorted((m, p) for _, m, p, _ in fired if m != "last") == [("m1", 0), ("m2", 1)]


async def test_owns_filter_skips_other_matches(make_timers):
    timers = await make_timers(owns=lambda match_id: match_id != "theirs")
    fired: list = []
    recorder(timers, fired)
    await timers.schedule("theirs", 1, time.time())
    await timers.schedule("mine", 1, time.time())
    assert await wait_until(lambda: fired, timeout=1.0)
    await asyncio.sleep(0.15)
    assert [m for _, m, _, _ in fired] == ["mine"]


async def test_stop_is_idempotent_and_silences(make_timers):
    timers = await make_timers()
    fired: list = []
    recorder(timers, fired)
    await timers.schedule("m1", 1, time.time() + 0.1)
    await timers.stop()
    await timers.stop()
    await asyncio.sleep(0.25)
    assert fired == []


async def test_a_failing_callback_does_not_stop_the_timers(make_timers):
    timers = await make_timers()
    fired: list = []

    def on_due(match_id: str, phase_id: int) -> None:
        fired.append(match_id)
        if match_id == "bad":
            raise RuntimeError("boom")

    timers.set_callback(on_due)
    await timers.schedule("bad", 1, time.time())
    assert await wait_until(lambda: fired == ["bad"], timeout=3.0)
    await timers.schedule("good", 1, time.time())
    assert await wait_until(lambda: fired == ["bad", "good"], timeout=1.0)


# --------------------------------------------------------------------------- Redis only
@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_three_nodes_claim_each_of_200_entries_exactly_once(make_timers, redis_client):
    nodes = [await make_timers(f"n{i}", poll_interval=0.005) for i in range(3)]
    fired: list = []
    for i, timers in enumerate(nodes):
        recorder(timers, fired, f"n{i}")
    start = time.time()
    expected = set()
    for i in range(200):
        match_id, phase_id = f"m{i % 40}", i // 40
        expected.add((match_id, phase_id))
        await nodes[i % 3].schedule(match_id, phase_id, start + 0.1 + (i % 20) * 0.02)
    assert await wait_until(lambda: len(fired) >= 200, timeout=5.0), len(fired)
    await asyncio.sleep(0.2)  # room for any duplicate
    counts = Counter((m, p) for _, m, p, _ in fired)
    assert set(counts) == expected
    assert max(counts.values()) == 1, [k for k, v in counts.items() if v > 1]
    assert sum(t.claimed for t in nodes) == 200
    per_node = Counter(name for name, *_ in fired)
    assert len(per_node) >= 2, per_node  # the nodes really raced
    # a claim hides an entry (visibility timeout) until the runtime cancels it once its phase ended
    key = make_timers.prefix + "deadlines"
    scores = [score for _, score in await redis_client.zrange(key, 0, -1, withscores=True)]
    assert len(scores) == 200 and min(scores) >= start + nodes[0].claim_seconds
    for match_id, phase_id in expected:
        await nodes[0].cancel(match_id, phase_id)
    assert await redis_client.zcard(key) == 0


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_entries_of_matches_a_node_does_not_own_are_left_for_their_owner(make_timers, redis_client):
    a_runs = {"a1", "a2"}
    b_runs = {"b1"}
    node_a = await make_timers("a", owns=lambda m: m in a_runs)
    node_b = await make_timers("b", owns=lambda m: m in b_runs)
    fired: list = []
    recorder(node_a, fired, "a")
    recorder(node_b, fired, "b")
    now = time.time()
    for match_id in ("a1", "a2", "b1", "orphan"):
        await node_a.schedule(match_id, 1, now)
    assert await wait_until(lambda: len(fired) == 3, timeout=1.0)
    await asyncio.sleep(0.1)
    assert sorted((n, m) for n, m, _, _ in fired) == [("a", "a1"), ("a", "a2"), ("b", "b1")]
    # nobody owns "orphan": it stays for its future owner
    assert await node_a.due_at("orphan", 1) == pytest.approx(now)
    b_runs.add("orphan")  # b takes the match over
    assert await wait_until(lambda: len(fired) == 4, timeout=1.0)
    assert fired[-1][:3] == ("b", "orphan", 1)


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
@pytest.mark.parametrize("hot_path", [False, True], ids=["awaited", "hot-path"])
async def test_writes_during_a_redis_outage_are_kept_and_fire_later(make_timers, proxy, hot_path):
    """``schedule``/``cancel`` awaited, or ``schedule_now``/``cancel_now`` (the runtime's hot path)."""
    timers = await make_timers("n1", url=proxy.url)
    fired: list = []
    recorder(timers, fired)

    async def schedule(match_id: str, due_at: float) -> None:
        if hot_path:
            timers.schedule_now(match_id, 1, due_at)
        else:
            await timers.schedule(match_id, 1, due_at)

    async def cancel(match_id: str) -> None:
        if hot_path:
            timers.cancel_now(match_id, 1)
        else:
            await timers.cancel(match_id, 1)

    await schedule("warm", time.time())
    assert await wait_until(lambda: fired, timeout=1.0)
    proxy.refusing = True
    proxy.cut()
    t0 = time.monotonic()
    due = time.time() + 0.1
    await schedule("m1", due)  # must not raise
    await schedule("m2", due)
    await cancel("m2")
    assert time.monotonic() - t0 < 20
    # polls failing after m1 was due: the node tried to claim it and could not
    errors = timers.poll_errors
    assert await wait_until(lambda: time.time() > due + 0.05 and timers.poll_errors > errors, timeout=5.0)
    assert len(fired) == 1
    proxy.refusing = False
    assert await wait_until(lambda: len(fired) == 2, timeout=8.0)
    await schedule("last", time.time())  # claimed after m1, and after m2 had it not been cancelled
    assert await wait_until(lambda: len(fired) == 3, timeout=3.0)
    assert [m for _, m, _, _ in fired if m != "last"] == ["warm", "m1"]
    assert timers.poll_errors > 0


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_long_unclaimed_entries_without_a_lease_are_swept(make_timers, redis_client):
    pfx = make_timers.prefix
    timers = await make_timers("n1", owns=lambda m: False, orphan_after=0.5, lease_prefix=pfx + "lease:")
    fired: list = []
    recorder(timers, fired)
    await redis_client.set(pfx + "lease:leased", "other-node", px=5000)
    old = time.time() - 1.0
    await timers.schedule("leased", 1, old)
    await timers.schedule("finished", 1, old)
    await timers.schedule("fresh", 1, time.time() + 0.8)
    assert await wait_until(lambda: timers.swept == 1, timeout=2.0)
    assert await timers.due_at("finished", 1) is None
    assert await timers.due_at("leased", 1) == pytest.approx(old)  # its owner will re-schedule
    assert await timers.due_at("fresh", 1) is not None  # not overdue long enough
    assert fired == []


async def test_redis_timers_rejects_start_after_stop():
    timers = RedisTimers(REDIS_URL, "bftest:unused:", "n1")
    await timers.stop()
    with pytest.raises(RuntimeError):
        await timers.start()


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_only_the_node_named_by_the_lease_claims_a_deadline(make_timers, redis_client):
    """Issue 9 item 3: a node that believes it runs the match (its ``owns`` says yes, e.g. it was
    paused and just resumed) cannot claim while the lease names another node."""
    pfx = make_timers.prefix
    lease_prefix = pfx + "lease:"
    old = await make_timers("old", owns=lambda m: True, lease_prefix=lease_prefix, poll_interval=0.005)
    fired: list = []
    recorder(old, fired, "old")
    await redis_client.set(lease_prefix + "m1", "new", px=10_000)
    await old.schedule("m1", 1, time.time() - 0.01)
    await asyncio.sleep(0.2)  # a negative check: ~40 polls of the old owner claim nothing
    assert fired == [] and await old.due_at("m1", 1) is not None
    new = await make_timers("new", owns=lambda m: True, lease_prefix=lease_prefix)
    recorder(new, fired, "new")
    assert await wait_until(lambda: fired, timeout=2.0)
    assert [name for name, *_ in fired] == ["new"]


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_a_claim_that_does_not_end_in_a_durable_default_fires_again(make_timers):
    """A claim is a visibility timeout: the entry comes back unless the runtime cancels it (it does
    once the phase has ended durably), so a node that dies or fails after claiming loses nothing."""
    timers = await make_timers("n1", claim_seconds=0.3)
    fired: list = []
    recorder(timers, fired)
    start = time.time()
    await timers.schedule("m1", 1, start)
    assert await wait_until(lambda: len(fired) == 2, timeout=3.0)
    # hidden for claim_seconds after the claim, which came at the due time or later (the first
    # callback itself may run late on a loaded machine, so its own time is no lower bound)
    assert fired[1][3] - start >= 0.3 - 0.02
    await timers.cancel("m1", 1)  # the phase ended durably
    count = len(fired)
    assert await timers.due_at("m1", 1) is None
    await asyncio.sleep(0.45)
    assert len(fired) == count
