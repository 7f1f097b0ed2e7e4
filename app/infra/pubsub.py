"""Pub/sub fan-out between nodes: a message published on a channel reaches every subscription to
that channel on every node, in publish order (per publisher), and no other subscription.

After encode/broadcaster (``broadcaster/_base.py``, ``backends/memory.py``): a backend is a tiny
interface with an in-memory twin, and a subscription is an async context manager that always cleans
up, whether the body returns, raises or is cancelled::

    async with pubsub.subscribe("match:42") as subscription:
        async for data in subscription:        # bytes, in publish order
            ...

Delivery is at-most-once. A subscriber never loses messages silently, though: when its queue
overflows (a slow consumer) or when the Redis connection dropped and was re-established, the next
read raises :class:`MessagesLost` at the position of the gap. The subscription stays open; catch the
error, resynchronise from the authoritative state (e.g. send the viewer a full ``state``), and keep
iterating the same subscription.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from contextlib import asynccontextmanager
from typing import AsyncContextManager, AsyncIterator, Protocol

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.client import PubSub as RedisPyPubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from app.infra._aio import cancel_and_wait, cancel_requested

log = logging.getLogger("bannerfall.pubsub")

#: Messages a subscription may hold before it overflows (see :class:`MessagesLost`).
DEFAULT_QUEUE_SIZE = 10_000


class MessagesLost(Exception):
    """Raised by a subscription read where messages were dropped: ``reason`` is ``"overflow"`` (the
    consumer was too slow) or ``"reconnect"`` (the Redis connection dropped; raised once the channel
    is subscribed again, so a resync done after catching this misses nothing). The subscription
    stays open and can be iterated again."""

    def __init__(self, channel: str, reason: str) -> None:
        super().__init__(f"messages lost on channel {channel!r} ({reason})")
        self.channel = channel
        self.reason = reason


class _Gap:
    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Subscription:
    """One subscriber's view of a channel: an async iterator of ``bytes`` (``str`` messages arrive
    UTF-8 encoded). Created only by :meth:`PubSub.subscribe`; iteration ends when the subscription
    (or the whole backend) is closed."""

    def __init__(self, channel: str, maxsize: int = DEFAULT_QUEUE_SIZE) -> None:
        self.channel = channel
        self.maxsize = maxsize
        self._items: deque[bytes | _Gap] = deque()
        self._size = 0
        self._wake = asyncio.Event()
        self.closed = False
        #: messages dropped because the queue was full
        self.dropped = 0

    # ---------------------------------------------------------------- producer side (sync, loop)
    def _deliver(self, data: bytes) -> None:
        if self.closed:
            return
        if self._size >= self.maxsize:
            self.dropped += 1
            self._gap("overflow")
            return
        self._items.append(data)
        self._size += 1
        self._wake.set()

    def _gap(self, reason: str) -> None:
        if self.closed:
            return
        if not (self._items and isinstance(self._items[-1], _Gap)):
            self._items.append(_Gap(reason))
        self._wake.set()

    def _close(self) -> None:
        self.closed = True
        self._wake.set()

    # ---------------------------------------------------------------- consumer side
    def pending(self) -> int:
        """Messages queued and not yet read."""
        return self._size

    async def get(self) -> bytes:
        """The next message. Raises :class:`MessagesLost` at a gap, :class:`StopAsyncIteration` once
        the subscription is closed and drained."""
        while not self._items:
            if self.closed:
                raise StopAsyncIteration
            self._wake.clear()
            await self._wake.wait()
        item = self._items.popleft()
        if isinstance(item, _Gap):
            raise MessagesLost(self.channel, item.reason)
        self._size -= 1
        return item

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> bytes:
        return await self.get()


class PubSub(Protocol):
    """Channel fan-out. Channel names are free-form strings (the runtime uses ``match:{id}``)."""

    async def publish(self, channel: str, message: bytes | str) -> None:
        """Send ``message`` to every current subscription of ``channel`` on every node.
        Raises ``redis.exceptions.RedisError`` (Redis backend) when the message could not be sent."""

    def subscribe(self, channel: str) -> AsyncContextManager[Subscription]:
        """``async with pubsub.subscribe(channel) as subscription``: every message published after
        entry (returns) is delivered to ``subscription``; on exit the subscription is removed (and the
        node's Redis subscription too, if it was the last one for the channel)."""

    def channels(self) -> dict[str, int]:
        """Channels this node is subscribed to, with their local subscription counts."""

    async def subscribers(self, channel: str) -> int:
        """How many nodes are subscribed to ``channel`` right now (Redis ``PUBSUB NUMSUB``; the
        cluster uses it to tell whether a node still exists). Raises ``RedisError``."""

    async def close(self) -> None:
        """Ends every subscription's iteration and releases connections. Idempotent."""


def _as_bytes(message: bytes | str) -> bytes:
    if isinstance(message, str):
        return message.encode()
    if isinstance(message, (bytes, bytearray, memoryview)):
        return bytes(message)
    raise TypeError(f"a message is bytes or str, not {type(message).__name__}")


class LocalPubSub:
    """In-process fan-out (embedded mode, one node): ``publish`` hands the message to every
    subscription's queue synchronously, so order is the order of ``publish`` calls."""

    def __init__(self, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self.queue_size = queue_size
        self._subs: dict[str, set[Subscription]] = {}
        self._closed = False

    async def publish(self, channel: str, message: bytes | str) -> None:
        data = _as_bytes(message)
        for sub in list(self._subs.get(channel, ())):
            sub._deliver(data)

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscription]:
        if self._closed:
            raise RuntimeError("pubsub is closed")
        sub = Subscription(channel, self.queue_size)
        self._subs.setdefault(channel, set()).add(sub)
        try:
            yield sub
        finally:
            sub._close()
            subs = self._subs.get(channel)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[channel]

    def channels(self) -> dict[str, int]:
        return {ch: len(subs) for ch, subs in self._subs.items()}

    async def subscribers(self, channel: str) -> int:
        return 1 if self._subs.get(channel) else 0

    async def close(self) -> None:
        self._closed = True
        for subs in self._subs.values():
            for sub in subs:
                sub._close()
        self._subs.clear()


class _OneConnectionPubSub(RedisPyPubSub):
    """redis-py's PubSub, minus its transparent reconnect: when a command on it fails, redis-py
    reconnects the connection (even with retries off) and would quietly subscribe again, hiding the
    gap. Here a reconnect only counts, and the reader then replaces the whole connection."""

    reconnects = 0

    async def on_connect(self, connection) -> None:  # called on re-connects only
        self.reconnects += 1


class _Channel:
    """A channel this node is subscribed to in Redis, with its local subscriptions."""

    __slots__ = ("name", "subs", "ready", "gap")

    def __init__(self, name: str) -> None:
        self.name = name
        self.subs: set[Subscription] = set()
        #: resolved when Redis confirms the SUBSCRIBE (on the current connection)
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: the connection dropped after this channel was live: tell subscribers once resubscribed
        self.gap = False


class RedisPubSub:
    """Redis fan-out: one shared subscriber connection per node, multiplexing every channel that
    has at least one local subscription (Redis channel ``{prefix}ch:{channel}``), and a reader task
    that dispatches messages to local subscriptions.

    ``subscribe`` returns only after Redis confirmed the SUBSCRIBE, so anything published after it
    returns is delivered. If the connection drops (or stays silent past ``keepalive_seconds`` with an
    unanswered PING: a health check every ``keepalive_seconds`` of silence, default 2 s, so a dead
    connection is noticed within about twice that), the reader opens a new one with backoff (50 ms
    doubling to 2 s), subscribes to
    every live channel again, and then raises :class:`MessagesLost` (reason ``"reconnect"``) in each
    subscription. A ``subscribe`` made while Redis is unreachable waits up to ``subscribe_timeout``
    seconds and then raises ``redis.exceptions.ConnectionError``.

    ``redis_url``: where to subscribe (a dedicated pool is made for the subscriber connection, with
    redis-py's own transparent reconnects disabled so every drop is seen). ``client``: the shared
    client used for PUBLISH (made from ``redis_url`` and closed by :meth:`close` if not given).
    ``client_name``: the subscriber connection's name in ``CLIENT LIST`` (default ``{prefix}pubsub``).
    """

    def __init__(self, redis_url: str, prefix: str = "bannerfall:", *, client: Redis | None = None,
                 queue_size: int = DEFAULT_QUEUE_SIZE, subscribe_timeout: float = 5.0,
                 keepalive_seconds: float = 2.0, client_name: str | None = None) -> None:
        self.redis_url = redis_url
        self.prefix = prefix
        self.queue_size = queue_size
        self.subscribe_timeout = subscribe_timeout
        self.keepalive_seconds = keepalive_seconds
        #: ``CLIENT SETNAME`` of the subscriber connection (operators and fault tests find it by name)
        self.client_name = client_name or f"{prefix}pubsub"
        self._own_client = client is None
        self._client = client if client is not None else Redis.from_url(redis_url, socket_connect_timeout=2.0)
        self._pool: ConnectionPool | None = None
        self._ps: _OneConnectionPubSub | None = None  # the current connection's PubSub, None while down
        self._channels: dict[bytes, _Channel] = {}
        self._unsub_waiters: dict[bytes, list[asyncio.Future[None]]] = {}
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task | None = None
        self._closed = False
        self._connected = asyncio.Event()
        self._kick = asyncio.Event()
        #: connections opened by the reader (1 + reconnects)
        self.connections = 0

    # ---------------------------------------------------------------- naming
    def _wire(self, channel: str) -> bytes:
        return f"{self.prefix}ch:{channel}".encode()

    @property
    def connected(self) -> bool:
        """Whether the subscriber connection is up right now."""
        return self._ps is not None

    # ---------------------------------------------------------------- interface
    async def publish(self, channel: str, message: bytes | str) -> None:
        await self._client.publish(self._wire(channel), _as_bytes(message))

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscription]:
        if self._closed:
            raise RuntimeError("pubsub is closed")
        self._ensure_reader()
        wire = self._wire(channel)
        sub = Subscription(channel, self.queue_size)
        async with self._lock:
            entry = self._channels.get(wire)
            if entry is None:
                entry = self._channels[wire] = _Channel(channel)
                if self._ps is not None:
                    try:
                        await self._ps.subscribe(wire)
                    except (RedisError, OSError) as exc:
                        # the reader sees the broken connection too and subscribes again on reconnect
                        log.warning("SUBSCRIBE %s failed (%s); waiting for the reconnect", channel, exc)
            entry.subs.add(sub)
            if self._ps is None:
                self._kick.set()  # the reader is backing off: try now
        try:
            ready = entry.ready
            done, _ = await asyncio.wait({ready}, timeout=self.subscribe_timeout)
            if not done:
                raise RedisConnectionError(f"could not subscribe to {channel!r} within {self.subscribe_timeout} s")
            if ready.cancelled():
                raise RuntimeError("pubsub is closed")
            yield sub
        finally:
            sub._close()
            # shielded: a second cancellation must not leave a Redis subscription behind
            await asyncio.shield(self._leave(wire, entry, sub))

    def channels(self) -> dict[str, int]:
        return {entry.name: len(entry.subs) for entry in self._channels.values()}

    async def subscribers(self, channel: str) -> int:
        counts = await self._client.pubsub_numsub(self._wire(channel))
        return int(counts[0][1]) if counts else 0

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await cancel_and_wait(self._reader)
        self._reader = None
        for entry in self._channels.values():
            for sub in entry.subs:
                sub._close()
            if not entry.ready.done():
                entry.ready.cancel()
        self._channels.clear()
        await self._drop_connection()
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
        if self._own_client:
            await self._client.aclose()

    # ---------------------------------------------------------------- internals
    async def _leave(self, wire: bytes, entry: _Channel, sub: Subscription) -> None:
        waiter: asyncio.Future[None] | None = None
        async with self._lock:
            entry.subs.discard(sub)
            if entry.subs or self._channels.get(wire) is not entry:
                return
            del self._channels[wire]
            if not entry.ready.done():
                entry.ready.cancel()
            if self._ps is not None:
                waiter = asyncio.get_running_loop().create_future()
                self._unsub_waiters.setdefault(wire, []).append(waiter)
                try:
                    await self._ps.unsubscribe(wire)
                except (RedisError, OSError) as exc:
                    # the connection is broken: the reconnect subscribes only to live channels
                    log.info("UNSUBSCRIBE %s failed (%s)", entry.name, exc)
                    waiter = None
        if waiter is not None:
            # wait (briefly) for Redis to confirm, so that on return the node holds no subscription
            await asyncio.wait({waiter}, timeout=2.0)

    def _ensure_reader(self) -> None:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read_forever(),
                                                                  name="pubsub-reader")

    async def _connect(self) -> None:
        if self._pool is None:
            # no transparent reconnects: a drop must surface here so subscribers learn of the gap
            # socket_timeout bounds the handshake on a silent network; message reads pass their own
            self._pool = ConnectionPool.from_url(self.redis_url, retry=Retry(NoBackoff(), 0),
                                                 socket_connect_timeout=2.0, socket_timeout=5.0,
                                                 socket_keepalive=True, client_name=self.client_name)
        ps = _OneConnectionPubSub(self._pool)
        try:
            await ps.connect()
            async with self._lock:
                live = list(self._channels)
                if live:
                    await ps.subscribe(*live)
                self._ps = ps
        except BaseException:
            await self._close_quietly(ps)
            raise
        self.connections += 1
        self._connected.set()

    async def _drop_connection(self) -> None:
        ps, self._ps = self._ps, None
        self._connected.clear()
        for entry in self._channels.values():
            if entry.ready.done():
                entry.gap = True
                entry.ready = asyncio.get_running_loop().create_future()
        for waiters in self._unsub_waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        self._unsub_waiters.clear()
        if ps is not None:
            await self._close_quietly(ps)

    @staticmethod
    async def _close_quietly(ps) -> None:
        try:
            await ps.aclose()
        except Exception:  # the connection is already broken
            pass

    async def _read_forever(self) -> None:
        failures = 0
        while not self._closed and not cancel_requested():
            try:
                await self._connect()
                if failures:
                    log.warning("pubsub reconnected to Redis after %d failed attempts", failures)
                failures = 0
                await self._read(self._ps)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # RedisError, OSError, a dead connection
                if self._ps is not None:
                    log.warning("pubsub connection lost: %s", exc)
                await self._drop_connection()
                if self._closed or cancel_requested():
                    return
                failures += 1
                # back off, but a new subscribe wakes the reader to try again at once
                self._kick.clear()
                try:
                    await asyncio.wait_for(self._kick.wait(), min(0.05 * 2 ** (failures - 1), 2.0))
                except asyncio.TimeoutError:
                    pass

    async def _read(self, ps) -> None:
        last_seen = time.monotonic()
        ping_sent: float | None = None
        read_timeout = min(1.0, self.keepalive_seconds / 3)
        while not self._closed:
            message = await ps.get_message(timeout=read_timeout)
            if cancel_requested():
                raise asyncio.CancelledError
            if ps.reconnects:
                raise ConnectionError("the subscriber connection was re-established underneath")
            now = time.monotonic()
            if message is None:
                if ping_sent is not None and now - ping_sent > self.keepalive_seconds:
                    raise ConnectionError(f"no PONG from Redis in {self.keepalive_seconds} s")
                if ping_sent is None and now - last_seen > self.keepalive_seconds:
                    await ps.ping()
                    ping_sent = now
                continue
            last_seen, ping_sent = now, None
            self._dispatch(message)

    def _dispatch(self, message: dict) -> None:
        kind = message["type"]
        if isinstance(kind, bytes):
            kind = kind.decode()
        wire = message.get("channel")
        if not isinstance(wire, bytes):  # a PONG names no channel: it only showed the connection is alive
            return
        if kind == "message":
            entry = self._channels.get(wire)
            if entry is not None:
                data = message["data"]
                for sub in list(entry.subs):
                    sub._deliver(data)
        elif kind == "subscribe":
            entry = self._channels.get(wire)
            if entry is not None and not entry.ready.done():
                entry.ready.set_result(None)
                if entry.gap:
                    entry.gap = False
                    for sub in list(entry.subs):
                        sub._gap("reconnect")
        elif kind == "unsubscribe":
            waiters = self._unsub_waiters.get(wire)
            if waiters:
                waiter = waiters.pop(0)
                if not waiters:
                    del self._unsub_waiters[wire]
                if not waiter.done():
                    waiter.set_result(None)
