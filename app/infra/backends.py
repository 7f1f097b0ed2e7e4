"""``make_backends``: the node's timers, pub/sub and leases, in-process or on Redis.

Create them in the app's lifespan (never at import time) and close them there::

    backends = make_backends(settings.redis_url, settings.node)
    try:
        ...
    finally:
        await backends.close()
"""
from __future__ import annotations

from dataclasses import dataclass, field

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from app.infra.leases import Leases, LocalLeases, RedisLeases
from app.infra.pubsub import LocalPubSub, PubSub, RedisPubSub
from app.infra.redis_timers import RedisTimers
from app.infra.timers import LocalTimers, Timers


@dataclass
class Backends:
    """The node's backends. ``mode`` is ``"local"`` or ``"redis"``; ``redis`` is the shared client
    (None in local mode) used by timers, leases and PUBLISH; the pub/sub subscriber has its own
    connection."""

    mode: str
    node_id: str
    timers: Timers
    pubsub: PubSub
    leases: Leases
    redis: Redis | None = None
    _closed: bool = field(default=False, repr=False)

    async def ping(self) -> None:
        """Raises ``redis.exceptions.RedisError`` if Redis does not answer (a readiness check);
        returns at once in local mode."""
        if self.redis is not None:
            await self.redis.ping()

    async def close(self) -> None:
        """Stop the timers (idempotent: the runtime may have stopped them), end every subscription,
        close the Redis connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self.timers.stop()
        await self.pubsub.close()
        await self.leases.close()
        if self.redis is not None:
            await self.redis.aclose()


def make_redis_client(redis_url: str, timeout_seconds: float = 2.0) -> Redis:
    """The shared client: ``timeout_seconds`` to connect and for each reply; a command whose
    connection was refused or reset is retried once (after 10-50 ms), one that timed out is not.
    So a command fails within about ``timeout_seconds`` when Redis hangs or is cut off, and at
    once when it is down (``BANNERFALL_REDIS_TIMEOUT_SECONDS``; redis-py's own default retries
    ten times)."""
    return Redis.from_url(
        redis_url,
        socket_connect_timeout=timeout_seconds,
        socket_timeout=timeout_seconds,
        socket_keepalive=True,
        retry=Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.05), 1, supported_errors=(RedisConnectionError,)),
    )


def make_backends(redis_url: str | None, node_id: str, prefix: str = "bannerfall:", *,
                  poll_interval: float = 0.05, claim_seconds: float = 5.0, timeout_seconds: float = 2.0) -> Backends:
    """Local backends when ``redis_url`` is None (embedded mode, one node), else Redis backends
    sharing one client, all keys under ``prefix`` (see docs/infra.md). ``claim_seconds``: a claimed
    deadline's visibility timeout (see :class:`RedisTimers`); ``timeout_seconds``: the Redis
    client's connect and reply timeout (:func:`make_redis_client`). Nothing connects until used."""
    if redis_url is None:
        return Backends(mode="local", node_id=node_id, timers=LocalTimers(), pubsub=LocalPubSub(),
                        leases=LocalLeases())
    client = make_redis_client(redis_url, timeout_seconds)
    leases = RedisLeases(redis_url, prefix, client=client, timeout_seconds=timeout_seconds)
    timers = RedisTimers(redis_url, prefix, node_id, poll_interval, client=client,
                         lease_prefix=leases.key_prefix, claim_seconds=claim_seconds)
    pubsub = RedisPubSub(redis_url, prefix, client=client, client_name=f"{prefix}pubsub:{node_id}")
    return Backends(mode="redis", node_id=node_id, timers=timers, pubsub=pubsub, leases=leases, redis=client)
