"""The embedded rate-limit storage sweeps expired keys at most once a second
(``app.api.limits.swept_memory_storage``), and still counts and expires as ``limits`` does."""
from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from limits import parse
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

from app.api import limits as api_limits


def test_the_library_still_has_the_sweep_the_storage_overrides():
    # a release that renames the private method would make the override a no-op: fail here instead
    assert hasattr(MemoryStorage, "_MemoryStorage__schedule_expiry")
    assert hasattr(MemoryStorage, "_MemoryStorage__expire_events")


async def _sweeps_over_a_burst(storage: Any, hits: int) -> int:
    """How many sweeps ``storage`` runs over ``hits`` hits on as many keys, each sweep the hit
    started awaited to its end before the next hit (as between requests)."""
    sweeps = 0
    original = storage._MemoryStorage__expire_events

    async def counted() -> None:
        nonlocal sweeps
        sweeps += 1
        await original()

    storage._MemoryStorage__expire_events = counted
    limiter = SlidingWindowCounterRateLimiter(storage)
    item = parse("120/minute")
    for i in range(hits):
        assert await limiter.hit(item, f"player{i}")
        if storage.timer is not None and not storage.timer.done():
            await storage.timer
    return sweeps


def test_a_burst_of_hits_over_many_keys_sweeps_once_within_the_period():
    assert asyncio.run(_sweeps_over_a_burst(api_limits.swept_memory_storage(), 500)) == 1
    assert asyncio.run(_sweeps_over_a_burst(MemoryStorage(), 500)) == 500  # the library's own: one a hit


async def _locks_after_hits(storage: Any, keys: int, *, moving: bool) -> int:
    """The ``asyncio.Lock`` objects alive after one hit on each of ``keys`` keys (the storage held)."""
    limiter = (MovingWindowRateLimiter if moving else SlidingWindowCounterRateLimiter)(storage)
    item = parse("120/minute")
    for i in range(keys):
        assert await limiter.hit(item, f"player{i}")
    if storage.timer is not None and not storage.timer.done():
        await storage.timer
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is asyncio.Lock)


@pytest.mark.parametrize("moving", [False, True])
def test_the_storage_keeps_no_lock_per_key(moving):
    # the library's own keeps one lock per key until the key expires; ours one for all keys
    assert asyncio.run(_locks_after_hits(MemoryStorage(), 300, moving=moving)) >= 300
    assert asyncio.run(_locks_after_hits(api_limits.swept_memory_storage(), 300, moving=moving)) <= 1


def test_every_key_gets_the_same_lock_and_keeps_it():
    async def run() -> None:
        storage = api_limits.swept_memory_storage()
        lock = storage.locks["ann"]
        assert isinstance(lock, asyncio.Lock)  # exclusion is asyncio.Lock's own
        assert storage.locks["bob"] is lock
        storage.locks.pop("ann", None)  # the library drops an expired key's lock: the shared one stays
        storage.locks.clear()
        assert storage.locks["ann"] is lock and not lock.locked()

    asyncio.run(run())


@pytest.mark.parametrize("moving", [False, True])
def test_counts_and_refusals_are_the_librarys(moving):
    async def run() -> list[bool]:
        storage = api_limits.swept_memory_storage()
        limiter = (MovingWindowRateLimiter if moving else SlidingWindowCounterRateLimiter)(storage)
        item = parse("3/minute")
        return [await limiter.hit(item, "ann") for _ in range(5)] + [await limiter.hit(item, "bob")]

    assert asyncio.run(run()) == [True, True, True, False, False, True]
