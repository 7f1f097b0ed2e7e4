"""The embedded rate-limit storage sweeps expired keys at most once a second
(``app.api.limits.swept_memory_storage``), and still counts and expires as ``limits`` does."""
from __future__ import annotations

import asyncio
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


@pytest.mark.parametrize("moving", [False, True])
def test_counts_and_refusals_are_the_librarys(moving):
    async def run() -> list[bool]:
        storage = api_limits.swept_memory_storage()
        limiter = (MovingWindowRateLimiter if moving else SlidingWindowCounterRateLimiter)(storage)
        item = parse("3/minute")
        return [await limiter.hit(item, "ann") for _ in range(5)] + [await limiter.hit(item, "bob")]

    assert asyncio.run(run()) == [True, True, True, False, False, True]
