"""Leases contract (LocalLeases and RedisLeases) and the LeaseKeeper."""
from __future__ import annotations

import asyncio
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from app.infra.leases import LeaseKeeper, LocalLeases
from tests.infra.conftest import wait_until
from tests.timing import scaled


async def test_acquire_is_exclusive(leases):
    assert await leases.acquire("m1", "n1", 5)
    assert not await leases.acquire("m1", "n2", 5)
    assert await leases.owner("m1") == "n1"
    assert await leases.acquire("m1", "n1", 5)  # the holder may acquire again (extends)
    assert await leases.acquire("m2", "n2", 5)  # other matches are independent
    assert await leases.owner("m2") == "n2"
    assert await leases.owner("nobody") is None


async def test_renew_only_by_the_holder(leases):
    first_ttl_ends = time.monotonic() + 0.3
    assert await leases.acquire("m1", "n1", 0.3)
    assert not await leases.renew("m1", "n2", 5)
    assert await leases.renew("m1", "n1", 5)
    # past the first ttl (measured, whatever the loop's delays): the renew extended it
    assert await wait_until(lambda: time.monotonic() > first_ttl_ends + 0.05, timeout=5.0)
    assert await leases.owner("m1") == "n1"
    assert not await leases.renew("never-acquired", "n1", 5)


async def test_expiry_lets_another_node_acquire(leases):
    assert await leases.acquire("m1", "n1", 0.15)
    assert not await leases.acquire("m1", "n2", 0.15)
    assert await wait_until_async(lambda: _is_none(leases.owner("m1")), timeout=3.0)  # it expired
    assert not await leases.renew("m1", "n1", 5)  # too late: it is lost
    assert await leases.acquire("m1", "n2", 5)
    assert await leases.owner("m1") == "n2"


async def test_release_only_by_the_holder(leases):
    assert await leases.acquire("m1", "n1", 5)
    assert not await leases.release("m1", "n2")
    assert await leases.owner("m1") == "n1"
    assert await leases.release("m1", "n1")
    assert await leases.owner("m1") is None
    assert not await leases.release("m1", "n1")  # already free
    assert await leases.acquire("m1", "n2", 5)


async def test_renew_many_reports_what_is_still_held(leases):
    for match_id in ("a", "b", "c"):
        assert await leases.acquire(match_id, "n1", 5)
    assert await leases.release("b", "n1")
    assert await leases.acquire("b", "n2", 5)
    assert await leases.renew_many(["a", "b", "c", "gone"], "n1", 5) == {"a", "c"}
    assert await leases.renew_many([], "n1", 5) == set()


async def test_ttl_must_be_positive(leases):
    with pytest.raises(ValueError):
        await leases.acquire("m1", "n1", 0)
    with pytest.raises(ValueError):
        await leases.renew("m1", "n1", -1)


async def test_keeper_keeps_leases_alive(leases):
    keeper = LeaseKeeper(leases, "n1", 0.3)
    await keeper.start()
    try:
        assert await keeper.acquire("m1")
        assert not await LeaseKeeper(leases, "n2", 0.3).acquire("m1")
        await asyncio.sleep(0.8)  # well past the ttl
        assert await leases.owner("m1") == "n1"
        assert keeper.held == {"m1"}
    finally:
        await keeper.stop()
    assert await leases.owner("m1") is None  # stop() released it


async def test_keeper_reports_a_lease_taken_by_another_node(leases):
    lost: list[str] = []
    keeper = LeaseKeeper(leases, "n1", 0.3, on_lost=lost.append)
    await keeper.start()
    try:
        assert await keeper.acquire("m1")
        assert await keeper.acquire("m2")
        # m1 expires behind the keeper's back (as if the node had stalled) and n2 takes it
        assert await leases.release("m1", "n1")
        assert await leases.acquire("m1", "n2", 5)
        assert await wait_until(lambda: lost == ["m1"], timeout=1.0)
        assert keeper.held == {"m2"}
        await asyncio.sleep(0.2)
        assert lost == ["m1"]  # reported once
    finally:
        await keeper.stop()
    assert await leases.owner("m1") == "n2"  # stop() released only what it held


async def test_keeper_release_stops_renewing(leases):
    keeper = LeaseKeeper(leases, "n1", 0.3)
    await keeper.start()
    try:
        assert await keeper.acquire("m1")
        await keeper.release("m1")
        assert keeper.held == set()
        assert await leases.owner("m1") is None
    finally:
        await keeper.stop()


class Unreachable(LocalLeases):
    """Leases whose renewals fail as if Redis were unreachable."""

    async def renew_many(self, match_ids, node_id, ttl_seconds):
        raise RedisConnectionError("Redis is down")


async def test_keeper_gives_a_lease_up_before_it_can_expire_when_redis_is_unreachable():
    lost: list[tuple[str, float]] = []
    keeper = LeaseKeeper(Unreachable(), "n1", 0.5, on_lost=lambda m: lost.append((m, time.monotonic())))
    await keeper.start()
    try:
        started = time.monotonic()
        assert await keeper.acquire("m1")
        assert await wait_until(lambda: lost, timeout=2.0)
        elapsed = lost[0][1] - started
        # declared lost at ttl - margin (0.45 s): not before the renewals had a chance, not after expiry
        assert 0.35 <= elapsed < 0.5, elapsed
        assert keeper.held == set()
        assert keeper.renew_failures >= 1
    finally:
        await keeper.stop()


async def test_holds_checks_validity_on_the_monotonic_clock(leases):
    """Issue 9 item 3: a process resumed after a pause holds nothing until a renew succeeds, even
    before its keeper loop has run (here the loop is not started at all)."""
    keeper = LeaseKeeper(leases, "n1", 0.3)
    assert await keeper.acquire("m1")
    assert keeper.holds("m1")
    assert await wait_until(lambda: not keeper.holds("m1"), timeout=1.0)
    assert keeper.held == {"m1"}  # not declared lost yet: only the validity ran out
    assert not keeper.holds("m2")
    await keeper.renew_now()  # the renew finds it expired (local) or still ours (Redis PX 300 ms)
    assert keeper.holds("m1") == (await leases.owner("m1") == "n1")
    await keeper.stop()


async def _is_none(coro) -> bool:
    return (await coro) is None


async def wait_until_async(make, timeout: float) -> bool:
    """Poll an async predicate until it holds (a wait on the condition, not a fixed sleep)."""
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        if await make():
            return True
        await asyncio.sleep(0.01)
    return False


class SlowRenewals(LocalLeases):
    """Leases whose renewals wait for ``gate`` and then say nothing was kept (as after Redis lost
    its keys)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()

    async def renew_many(self, match_ids, node_id, ttl_seconds):
        self.entered.set()
        await self.gate.wait()
        return set()


async def test_a_renewal_answer_about_an_old_lease_does_not_drop_a_new_one():
    """A renewal in flight when the match is acquired again (the takeover scan re-took it) answers
    about the old lease: it must not declare the new one lost (that dropped the new runner)."""
    leases = SlowRenewals()
    lost: list[str] = []
    keeper = LeaseKeeper(leases, "n1", 5.0, on_lost=lost.append)
    assert await keeper.acquire("m1")
    renewal = asyncio.create_task(keeper.renew_now())
    await asyncio.wait_for(leases.entered.wait(), 5)
    await asyncio.sleep(0.01)  # the monotonic clock moves on: the new validity differs
    assert await keeper.acquire("m1")  # acquired again while the renewal is in flight
    leases.gate.set()
    assert await asyncio.wait_for(renewal, 5) == set()
    assert lost == [] and keeper.holds("m1")


async def test_the_only_node_keeps_its_leases_through_a_stall():
    """Embedded mode (one process, ``lapses=False``): an event loop stalled past the TTL (a suspended
    process, a long pause) loses no lease: the renewal finds it expired and takes it again. Before,
    every match was declared lost ("lost the lease"), dropped and rebuilt, its sockets closed."""
    leases = LocalLeases()
    lost: list[str] = []
    keeper = LeaseKeeper(leases, "n1", 0.3, on_lost=lost.append, lapses=False)
    assert await keeper.acquire("m1") and await keeper.acquire("m2")
    time.sleep(0.4)  # the loop stalls past the TTL (no await: nothing else runs)
    assert keeper.holds("m1")  # no other node can have it: still ours
    assert await leases.owner("m1") is None  # the store's entry did expire
    # meanwhile another holder took m2 (only possible with another node: then it is lost)
    assert await leases.acquire("m2", "n2", 5)
    assert await keeper.renew_now() == {"m2"}
    assert lost == ["m2"] and keeper.held == {"m1"} and keeper.retaken == 1
    assert await leases.owner("m1") == "n1"  # taken again
    await keeper.stop()


async def test_a_stall_past_the_lease_still_loses_it_with_several_nodes():
    """``lapses=True`` (several nodes, the default) is unchanged: past ``ttl - margin`` the lease is
    not ours any more, another node may run the match."""
    leases = LocalLeases()
    lost: list[str] = []
    keeper = LeaseKeeper(leases, "n1", 0.3, on_lost=lost.append)
    assert await keeper.acquire("m1")
    time.sleep(0.4)
    assert not keeper.holds("m1")
    assert await keeper.renew_now() == {"m1"} and lost == ["m1"]
    await keeper.stop()


async def test_the_node_keeper_lapses_only_with_several_nodes():
    """The wiring of ``create_app``: Redis backends get ``LEASE_SECONDS`` and lapsing leases; local
    backends (embedded mode) a long lease that never lapses by time."""
    from app.config import Settings
    from app.infra.backends import make_backends
    from app.main import make_lease_keeper
    from tests.conftest import REDIS_URL

    settings = Settings(lease_seconds=2.0)
    local = make_backends(None, "n1")
    keeper = make_lease_keeper(local, settings, lambda m: None)
    assert keeper.lapses is False and keeper.ttl == 30.0
    redis_backends = make_backends(REDIS_URL, "n1", "bftest:unused:")  # connects nothing
    try:
        keeper = make_lease_keeper(redis_backends, settings, lambda m: None)
        assert keeper.lapses is True and keeper.ttl == 2.0
    finally:
        await redis_backends.close()
        await local.close()


@pytest.fixture
async def prefix_redis():
    """A fresh key prefix on the real Redis; its keys are deleted afterwards."""
    import uuid

    from redis.asyncio import Redis

    from tests.conftest import REDIS_URL

    value = f"bftest:{uuid.uuid4().hex}:"
    yield value
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=value + "*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


def _node_keeper(prefix: str, lost: list[str], *, lease: float, stall: float):
    """The production wiring (``create_app``'s ``make_lease_keeper``) on the real Redis, with
    ``LEASE_SECONDS`` = ``lease`` and ``LEASE_STALL_SECONDS`` = ``stall``."""
    from app.config import Settings
    from app.infra.backends import make_backends
    from app.main import make_lease_keeper
    from tests.conftest import REDIS_URL

    backends = make_backends(REDIS_URL, "n1", prefix)
    settings = Settings(lease_seconds=lease, lease_stall_seconds=stall, node_id="n1")
    return backends, make_lease_keeper(backends, settings, lost.append)


@pytest.mark.redis
async def test_a_busy_event_loop_keeps_its_leases(prefix_redis):
    """Several nodes: the event loop blocked for 2.5 s — longer than the 1 s lease itself, within
    ``LEASE_STALL_SECONDS`` (4 s) — loses no lease: the renewal thread keeps them alive meanwhile
    (the lease's holder in Redis never changes, no other node could have taken it). Before, the
    renewals ran on the loop: a stall past ``lease - margin`` (0.9 s here, 1.8 s with the default
    2 s lease) lost every lease of the node at once (571 in bursts of 26-42 on a starved node)."""
    lost: list[str] = []
    backends, keeper = _node_keeper(prefix_redis, lost, lease=1.0, stall=4.0)
    await keeper.start()
    try:
        for match_id in ("m1", "m2", "m3"):
            assert await keeper.acquire(match_id)
        time.sleep(2.5)  # the loop is blocked: no await, nothing else on it runs
        assert all(keeper.holds(m) for m in ("m1", "m2", "m3")), keeper.held
        await asyncio.sleep(0.3)  # the loop runs again: any loss would be delivered now
        assert lost == [] and keeper.held == {"m1", "m2", "m3"}
        assert keeper.losses == {"taken": 0, "expired": 0, "stalled": 0}
        for match_id in ("m1", "m2", "m3"):
            assert await backends.leases.owner(match_id) == "n1"
    finally:
        await keeper.stop()
        await backends.close()


@pytest.mark.redis
async def test_a_loop_stalled_past_the_stall_bound_lets_its_leases_lapse_and_counts_them(prefix_redis):
    """A loop blocked past ``LEASE_STALL_SECONDS`` + the lease: the thread stops renewing once the
    loop's heartbeat is older than the bound, the leases expire in Redis (another node may take
    the matches: this one cannot run them), and when the loop runs again they are declared lost,
    counted as ``stalled`` (``bannerfall_lease_losses_total{reason="stalled"}``)."""
    lost: list[str] = []
    backends, keeper = _node_keeper(prefix_redis, lost, lease=1.0, stall=1.0)
    await keeper.start()
    try:
        assert await keeper.acquire("m1") and await keeper.acquire("m2")
        time.sleep(3.0)  # past the stall bound (1 s) and then the lease (1 s)
        assert not keeper.holds("m1")
        assert await backends.leases.owner("m1") is None  # expired in Redis: free for another node
        assert await wait_until(lambda: sorted(lost) == ["m1", "m2"], timeout=3.0), lost
        assert keeper.losses["stalled"] == 2 and keeper.held == set()
    finally:
        await keeper.stop()
        await backends.close()


@pytest.mark.redis
async def test_a_lease_taken_while_the_thread_renews_is_lost_as_taken(prefix_redis):
    """The renewal thread finds another holder (Redis lost the key and another node acquired it):
    lost at once, reason ``taken``, ``on_lost`` called on the loop."""
    lost: list[str] = []
    backends, keeper = _node_keeper(prefix_redis, lost, lease=1.0, stall=5.0)
    await keeper.start()
    try:
        assert await keeper.acquire("m1")
        await backends.redis.delete(backends.leases.key("m1"))
        assert await backends.leases.acquire("m1", "n2", 5)
        assert await wait_until(lambda: lost == ["m1"], timeout=3.0), lost
        assert keeper.losses["taken"] == 1 and not keeper.holds("m1")
    finally:
        await keeper.stop()
        await backends.close()
