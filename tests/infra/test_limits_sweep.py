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


def test_a_burst_of_hits_over_many_keys_sweeps_once_within_the_period():
    async def run() -> tuple[int, int]:
        storage = api_limits.swept_memory_storage()
        sweeps = 0
        original = storage._MemoryStorage__expire_events

        async def counted() -> None:
            nonlocal sweeps
            sweeps += 1
            await original()

        storage._MemoryStorage__expire_events = counted
        limiter = SlidingWindowCounterRateLimiter(storage)
        item = parse("120/minute")
        for i in range(500):
            assert await limiter.hit(item, f"player{i}")
            await asyncio.sleep(0)  # the sweep's task may run between hits, as between requests
        plain: Any = MemoryStorage()
        plain_sweeps = 0
        plain_original = plain._MemoryStorage__expire_events

        async def plain_counted() -> None:
            nonlocal plain_sweeps
            plain_sweeps += 1
            await plain_original()

        plain._MemoryStorage__expire_events = plain_counted
        plain_limiter = SlidingWindowCounterRateLimiter(plain)
        for i in range(500):
            assert await plain_limiter.hit(item, f"player{i}")
            await asyncio.sleep(0)
        return sweeps, plain_sweeps

    sweeps, plain_sweeps = asyncio.run(run())
    assert sweeps == 1  # the first hit's; the next is due a second later
    assert plain_sweeps > 100  # the library's own: one per finished sweep


@pytest.mark.parametrize("moving", [False, True])
def test_counts_and_refusals_are_the_librarys(moving):
    async def run() -> list[bool]:
        storage = api_limits.swept_memory_storage()
        limiter = (MovingWindowRateLimiter if moving else SlidingWindowCounterRateLimiter)(storage)
        item = parse("3/minute")
        return [await limiter.hit(item, "ann") for _ in range(5)] + [await limiter.hit(item, "bob")]

    assert asyncio.run(run()) == [True, True, True, False, False, True]
