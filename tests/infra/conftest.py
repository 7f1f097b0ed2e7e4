"""Fixtures of the infra contract suite: every contract test runs against the in-process backend
and against the real local Redis (``BANNERFALL_TEST_REDIS``, default redis://127.0.0.1:6379/0).

Redis tests are marked ``redis`` and never skipped: if Redis is down they fail. Each test gets its
own key prefix ``bftest:{uuid}:``; its keys are deleted afterwards (never FLUSHDB) and the teardown
checks that no subscription on that prefix was leaked.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import Any, Callable

import pytest
from redis.asyncio import Redis

from app.infra.leases import LocalLeases, RedisLeases
from app.infra.pubsub import LocalPubSub, RedisPubSub
from app.infra.redis_timers import RedisTimers
from app.infra.timers import LocalTimers
from tests.conftest import REDIS_URL
from tests.timing import scaled

KINDS = ["local", pytest.param("redis", marks=pytest.mark.redis)]


@pytest.fixture(params=KINDS)
def kind(request) -> str:
    return request.param


@pytest.fixture
async def redis_client():
    client = Redis.from_url(REDIS_URL)
    yield client
    await client.aclose()


@pytest.fixture
async def prefix(kind):
    """Redis: a fresh key prefix; afterwards its keys are deleted and its channels checked for
    leaks. Local: None."""
    if kind == "local":
        yield None
        return
    value = f"bftest:{uuid.uuid4().hex}:"
    yield value
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=value + "*", count=1000)]
        if keys:
            await client.delete(*keys)
        leaked = await client.pubsub_channels(value + "*")
    finally:
        await client.aclose()
    assert not leaked, f"leaked Redis subscriptions: {leaked}"


class TcpProxy:
    """A TCP relay to Redis that a test can cut (drop every connection) or make refuse connections,
    to simulate Redis going away without touching the real server."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.refusing = False
        #: relay nothing (a silent network partition): connections stay open, bytes are dropped
        self.frozen = False
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self._conns: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        pair = (writer, up_writer)
        self._conns.add(pair)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    if self.frozen:
                        continue
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                dst.transport.abort()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._conns.discard(pair)

    def cut(self) -> int:
        """Drop every relayed connection; returns how many there were."""
        count = len(self._conns)
        for down, up in list(self._conns):
            down.transport.abort()
            up.transport.abort()
        return count

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


@pytest.fixture
async def proxy():
    host, port = REDIS_URL.split("//", 1)[1].split("/", 1)[0].split(":")
    relay = TcpProxy(host, int(port))
    await relay.start()
    yield relay
    await relay.close()


# --------------------------------------------------------------------------- factories
@pytest.fixture
async def make_timers(kind, prefix):
    """``make_timers(node_id, **kw)``: a started Timers of the test's kind (Redis ones share one set).
    Stopped afterwards."""
    made: list[Any] = []
    pfx = prefix

    async def factory(node_id: str = "n1", *, url: str = REDIS_URL, **kw: Any):
        timers: LocalTimers | RedisTimers
        if kind == "local":
            timers = LocalTimers(**kw)
        else:
            kw.setdefault("poll_interval", 0.02)
            timers = RedisTimers(url, pfx, node_id, **kw)
        made.append(timers)
        await timers.start()
        return timers

    factory.prefix = pfx  # type: ignore[attr-defined]
    yield factory
    for timers in made:
        await timers.stop()


@pytest.fixture
async def make_pubsub(kind, prefix):
    """``make_pubsub(**kw)``: a pub/sub "node" of the test's kind. For local, every call returns the
    same in-process instance (there is only one node)."""
    made: list[Any] = []
    pfx = prefix

    async def factory(*, url: str = REDIS_URL, **kw: Any):
        if kind == "local":
            if not made:
                made.append(LocalPubSub(**kw))
            return made[0]
        pubsub = RedisPubSub(url, pfx, **kw)
        made.append(pubsub)
        return pubsub

    factory.prefix = pfx  # type: ignore[attr-defined]
    yield factory
    for pubsub in made:
        await pubsub.close()


@pytest.fixture
async def leases(kind, prefix):
    """A Leases of the test's kind (one per test; node ids are plain arguments)."""
    if kind == "local":
        backend: Any = LocalLeases()
    else:
        backend = RedisLeases(REDIS_URL, prefix)
    yield backend
    await backend.close()


async def wait_until(predicate: Callable[[], bool], timeout: float = 3.0, step: float = 0.01) -> bool:
    deadline = asyncio.get_running_loop().time() + scaled(timeout)
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(step)
    return True
