"""Leases contract (LocalLeases and RedisLeases) and the LeaseKeeper."""
from __future__ import annotations

import asyncio
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from app.infra.leases import LeaseKeeper, LocalLeases
from tests.infra.conftest import wait_until


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
    deadline = time.monotonic() + timeout
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
