"""make_backends: local without a Redis URL, Redis with one; all three backends work together."""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from redis.asyncio import Redis

from app.infra.backends import make_backends
from app.infra.leases import LocalLeases, RedisLeases
from app.infra.pubsub import LocalPubSub, RedisPubSub
from app.infra.redis_timers import RedisTimers
from app.infra.timers import LocalTimers
from tests.conftest import REDIS_URL
from tests.infra.conftest import wait_until


async def test_local_without_a_redis_url():
    backends = make_backends(None, "n1")
    assert backends.mode == "local"
    assert isinstance(backends.timers, LocalTimers)
    assert isinstance(backends.pubsub, LocalPubSub)
    assert isinstance(backends.leases, LocalLeases)
    await backends.ping()
    await backends.close()
    await backends.close()


@pytest.mark.redis
@pytest.mark.parametrize("kind", ["redis"], indirect=True)
async def test_redis_backends_work_together(prefix):
    backends = make_backends(REDIS_URL, "n1", prefix)
    try:
        assert backends.mode == "redis"
        assert isinstance(backends.timers, RedisTimers)
        assert isinstance(backends.pubsub, RedisPubSub)
        assert isinstance(backends.leases, RedisLeases)
        await backends.ping()
        assert backends.timers.key == f"{prefix}deadlines"
        assert backends.timers.lease_prefix == f"{prefix}lease:"

        fired: list[tuple[str, int]] = []
        backends.timers.set_callback(lambda m, p: fired.append((m, p)))
        await backends.timers.start()
        assert await backends.leases.acquire("m1", "n1", 5)
        async with backends.pubsub.subscribe("match:m1") as subscription:
            await backends.timers.schedule("m1", 3, time.time() + 0.05)
            await backends.pubsub.publish("match:m1", "hello")
            assert await asyncio.wait_for(subscription.get(), 3) == b"hello"
            assert await wait_until(lambda: fired == [("m1", 3)], timeout=2.0)
        client = Redis.from_url(REDIS_URL)
        try:
            assert await client.get(f"{prefix}lease:m1") == b"n1"
        finally:
            await client.aclose()
    finally:
        await backends.close()
        await backends.close()  # idempotent


async def test_redis_backends_connect_lazily():
    # nothing listens on this port: making the backends must not fail, using them does
    backends = make_backends("redis://127.0.0.1:9/0", "n1", f"bftest:{uuid.uuid4().hex}:")
    try:
        from redis.exceptions import RedisError

        with pytest.raises(RedisError):
            await backends.ping()
    finally:
        await backends.close()
