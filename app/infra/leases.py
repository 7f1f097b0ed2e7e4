"""Match leases: which node runs a match. A lease is a key naming its holder with an expiry; the
holder renews it (see :class:`LeaseKeeper`), and when a node dies its leases expire and another node
may acquire them and rebuild the matches from the database.

Redis layout: ``{prefix}lease:{match_id}`` = holder's node id, with a PX expiry. ``acquire`` is
``SET NX PX`` (in a script that also lets the holder re-acquire, extending its lease); ``renew``
and ``release`` compare the holder before PEXPIRE / DEL in one Lua script, so a node can never
extend or delete a lease another node holds.

Lease time is measured by the Redis server (Redis backend) or ``time.monotonic`` (local backend).
A holder must stop writing a match before its lease can have expired: :class:`LeaseKeeper` declares
a lease lost at ``(start of its last successful renew) + ttl - margin`` even if Redis cannot be
reached to find out. The only node of a cluster (embedded mode, ``lapses=False``) has nobody to
stop for: there a lease is lost only to another holder, never by time.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Iterable, Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.infra._aio import cancel_and_wait, cancel_requested

log = logging.getLogger("bannerfall.leases")


class Leases(Protocol):
    async def acquire(self, match_id: str, node_id: str, ttl_seconds: float) -> bool:
        """Take the lease for ``ttl_seconds`` if nobody holds it (or extend it if ``node_id`` already
        does). True if ``node_id`` holds it now. Raises ValueError for ttl <= 0."""

    async def renew(self, match_id: str, node_id: str, ttl_seconds: float) -> bool:
        """Extend the lease to ``ttl_seconds`` from now, only if ``node_id`` still holds it. False if
        it expired or another node holds it (the lease is lost: stop running the match)."""

    async def renew_many(self, match_ids: Iterable[str], node_id: str, ttl_seconds: float) -> set[str]:
        """``renew`` for many matches in one round trip; returns the ids still held."""

    async def release(self, match_id: str, node_id: str) -> bool:
        """Give the lease up, only if ``node_id`` holds it. True if it was held and is now free."""

    async def owner(self, match_id: str) -> str | None:
        """The node holding the lease, None if it is free (or expired)."""

    async def owners(self, match_ids: Iterable[str]) -> dict[str, str | None]:
        """``owner`` for many matches in one round trip."""

    async def close(self) -> None: ...


def _check_ttl(ttl_seconds: float) -> int:
    """The TTL in whole milliseconds (at least 1). Raises ValueError unless ttl_seconds > 0."""
    if not ttl_seconds > 0:
        raise ValueError(f"a lease ttl must be > 0 seconds, got {ttl_seconds!r}")
    return max(1, int(round(ttl_seconds * 1000)))


class LocalLeases:
    """In-process leases (embedded mode, or tests): a dict of holder and monotonic expiry.
    ``clock`` is injectable for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, tuple[str, float]] = {}

    def _current(self, match_id: str) -> str | None:
        entry = self._held.get(match_id)
        if entry is None:
            return None
        if entry[1] <= self._clock():
            del self._held[match_id]
            return None
        return entry[0]

    async def acquire(self, match_id: str, node_id: str, ttl_seconds: float) -> bool:
        ttl_ms = _check_ttl(ttl_seconds)
        holder = self._current(match_id)
        if holder is not None and holder != node_id:
            return False
        self._held[match_id] = (node_id, self._clock() + ttl_ms / 1000)
        return True

    async def renew(self, match_id: str, node_id: str, ttl_seconds: float) -> bool:
        ttl_ms = _check_ttl(ttl_seconds)
        if self._current(match_id) != node_id:
            return False
        self._held[match_id] = (node_id, self._clock() + ttl_ms / 1000)
        return True

    async def renew_many(self, match_ids: Iterable[str], node_id: str, ttl_seconds: float) -> set[str]:
        return {m for m in list(match_ids) if await self.renew(m, node_id, ttl_seconds)}

    async def release(self, match_id: str, node_id: str) -> bool:
        if self._current(match_id) != node_id:
            return False
        del self._held[match_id]
        return True

    async def owner(self, match_id: str) -> str | None:
        return self._current(match_id)

    async def owners(self, match_ids: Iterable[str]) -> dict[str, str | None]:
        return {m: self._current(m) for m in match_ids}

    async def close(self) -> None:
        return None


_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

_RENEW = """
local renewed = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('PEXPIRE', key, ARGV[2])
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisLeases:
    """Leases in Redis (production mode): ``{prefix}lease:{match_id}`` = node id, PX expiry.
    ``client``: a shared client (else one is made from ``redis_url`` and closed by :meth:`close`).
    ``renew_many`` sends one script over many keys: fine on a single Redis server, not on a cluster.
    Every method raises ``redis.exceptions.RedisError`` when Redis is unreachable."""

    def __init__(self, redis_url: str, prefix: str = "bannerfall:", *, client: Redis | None = None) -> None:
        self.key_prefix = f"{prefix}lease:"
        self._own_client = client is None
        self._client = client if client is not None else Redis.from_url(redis_url, socket_connect_timeout=2.0)
        self._acquire = self._client.register_script(_ACQUIRE)
        self._renew = self._client.register_script(_RENEW)
        self._release = self._client.register_script(_RELEASE)

    def key(self, match_id: str) -> str:
        return self.key_prefix + match_id

    async def acquire(self, match_id: str, node_id: str, ttl_seconds: float) -> bool:
        ttl_ms = _check_ttl(ttl_seconds)
        return bool(await self._acquire(keys=[self.key(match_id)], args=[node_id, ttl_ms]))

    async def renew(self, match_id: str, node_id: str, ttl_seconds: float) -> bool:
        return match_id in await self.renew_many([match_id], node_id, ttl_seconds)

    async def renew_many(self, match_ids: Iterable[str], node_id: str, ttl_seconds: float) -> set[str]:
        ttl_ms = _check_ttl(ttl_seconds)
        ids = list(match_ids)
        renewed: set[str] = set()
        for start in range(0, len(ids), 1000):
            chunk = ids[start:start + 1000]
            flags = await self._renew(keys=[self.key(m) for m in chunk], args=[node_id, ttl_ms])
            renewed.update(m for m, flag in zip(chunk, flags, strict=True) if flag)
        return renewed

    async def release(self, match_id: str, node_id: str) -> bool:
        return bool(await self._release(keys=[self.key(match_id)], args=[node_id]))

    async def owner(self, match_id: str) -> str | None:
        holder = await self._client.get(self.key(match_id))
        return holder.decode() if isinstance(holder, bytes) else holder

    async def owners(self, match_ids: Iterable[str]) -> dict[str, str | None]:
        """``owner`` of many matches in one round trip (MGET per 1000)."""
        ids = list(match_ids)
        out: dict[str, str | None] = {}
        for start in range(0, len(ids), 1000):
            chunk = ids[start:start + 1000]
            for m, holder in zip(chunk, await self._client.mget([self.key(m) for m in chunk]), strict=True):
                out[m] = holder.decode() if isinstance(holder, bytes) else holder
        return out

    async def close(self) -> None:
        if self._own_client:
            await self._client.aclose()


class LeaseKeeper:
    """Keeps this node's leases alive: every ``ttl/3`` seconds renews all held leases in one call.

    A lease is lost (removed from :attr:`held`, then ``on_lost(match_id)`` is called) when a renew
    says another node holds it or it expired, or when no renew has succeeded for long enough that
    it may have expired: at ``(start of the last successful renew) + ttl - margin``, ``margin`` =
    ``ttl/10`` by default, so the node stops before anyone else can acquire. A renew that takes
    longer than the interval counts as failed. ``on_lost`` runs on the event loop and must not block;
    it should drop the match's runner (its state may be written by the new owner from now on).

    ``lapses=False`` is for a node that is the only one (embedded mode): no other node can take a
    match over, so time alone never makes a lease lost there. :meth:`holds` is then "acquired and not
    released or lost", and a renewal that finds the lease expired (the event loop stalled past the
    TTL: a suspended process, a long pause) takes it again; a lease is lost only when another holder
    has it. With ``lapses=True`` (the default, several nodes) a stall past ``ttl - margin`` loses it.
    """

    def __init__(self, leases: Leases, node_id: str, ttl_seconds: float, *,
                 on_lost: Callable[[str], None] | None = None, margin_seconds: float | None = None,
                 lapses: bool = True) -> None:
        _check_ttl(ttl_seconds)
        self.leases = leases
        self.node_id = node_id
        self.ttl = ttl_seconds
        self.interval = ttl_seconds / 3
        self.margin = ttl_seconds / 10 if margin_seconds is None else margin_seconds
        self.on_lost = on_lost
        #: whether a lease not renewed in time counts as lost (several nodes); False: the only node
        self.lapses = lapses
        #: leases found expired at a renewal and taken again (``lapses=False``: after a stall)
        self.retaken = 0
        #: match id -> monotonic time until which the lease is surely still ours
        self._valid_until: dict[str, float] = {}
        self._task: asyncio.Task | None = None
        self._stopping = False
        self.renew_failures = 0

    @property
    def held(self) -> set[str]:
        """Matches whose lease this node holds (as far as it can know)."""
        return set(self._valid_until)

    def holds(self, match_id: str) -> bool:
        """Whether the lease is surely still ours *now*: held and not past its validity on
        ``time.monotonic()``. A process resumed after a pause (SIGSTOP, a long stall) holds nothing
        until a renew succeeds, even before the keeper's loop has declared the lease lost."""
        until = self._valid_until.get(match_id)
        return until is not None and (not self.lapses or until > time.monotonic())

    async def acquire(self, match_id: str) -> bool:
        """Acquire the lease and keep it alive from now on. True if this node holds it."""
        started = time.monotonic()
        if await self.leases.acquire(match_id, self.node_id, self.ttl):
            self._valid_until[match_id] = started + self.ttl - self.margin
            return True
        return False

    async def release(self, match_id: str) -> None:
        """Stop renewing and give the lease up (e.g. the match finished). A Redis error is logged;
        the lease then simply expires."""
        self._valid_until.pop(match_id, None)
        try:
            await self.leases.release(match_id, self.node_id)
        except (RedisError, OSError) as exc:
            log.warning("node %s: could not release lease of %s (%s); it will expire", self.node_id, match_id, exc)

    async def start(self) -> None:
        self._stopping = False
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"leases-{self.node_id}")

    async def stop(self, *, release: bool = True) -> None:
        """Stop renewing; with ``release`` also give every held lease up (clean shutdown, so other
        nodes can take the matches over at once instead of after the TTL)."""
        self._stopping = True
        await cancel_and_wait(self._task)
        self._task = None
        if release:
            for match_id in list(self._valid_until):
                await self.release(match_id)
        self._valid_until.clear()

    async def renew_now(self) -> set[str]:
        """One renewal round (the loop calls this every ``ttl/3``); returns the ids lost in it."""
        before = dict(self._valid_until)
        ids = list(before)
        lost: set[str] = set()
        if ids:
            started = time.monotonic()
            try:
                kept = await asyncio.wait_for(self.leases.renew_many(ids, self.node_id, self.ttl), self.interval)
            except (RedisError, OSError, asyncio.TimeoutError) as exc:
                self.renew_failures += 1
                log.warning("node %s: lease renewal failed (%s)", self.node_id, exc)
            else:
                for match_id in ids:
                    if self._valid_until.get(match_id) != before[match_id]:
                        continue  # released or acquired again meanwhile: this answer is about the old one
                    if match_id in kept:
                        self._valid_until[match_id] = started + self.ttl - self.margin
                    else:
                        lost.add(match_id)
                if lost and not self.lapses:
                    lost = await self._retake(lost, before)
        if self.lapses:
            now = time.monotonic()
            lost.update(m for m, until in self._valid_until.items() if until <= now)
        for match_id in lost:
            self._lose(match_id)
        return lost

    async def _retake(self, expired: set[str], before: dict[str, float]) -> set[str]:
        """``lapses=False``: take again the leases a renewal found expired; returns those another
        holder has (lost)."""
        lost: set[str] = set()
        retaken = self.retaken
        for match_id in expired:
            if self._valid_until.get(match_id) != before[match_id]:
                continue  # released (or acquired again) meanwhile
            started = time.monotonic()
            if not await self.leases.acquire(match_id, self.node_id, self.ttl):
                lost.add(match_id)
            elif self._valid_until.get(match_id) == before[match_id]:  # not released meanwhile
                self._valid_until[match_id] = started + self.ttl - self.margin
                self.retaken += 1
        if self.retaken > retaken:
            log.info("node %s: %d leases had expired (the event loop stalled past %g s) and were taken again",
                     self.node_id, self.retaken - retaken, self.ttl)
        return lost

    def _lose(self, match_id: str) -> None:
        if self._valid_until.pop(match_id, None) is None:
            return
        log.warning("node %s: lost the lease of match %s", self.node_id, match_id)
        if self.on_lost is not None:
            try:
                self.on_lost(match_id)
            except Exception:
                log.exception("on_lost failed for match %s", match_id)

    async def _run(self) -> None:
        while not self._stopping and not cancel_requested():
            await asyncio.sleep(self._next_delay())
            if self._stopping or cancel_requested():
                return
            try:
                await self.renew_now()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("node %s: lease keeper round failed", self.node_id)

    def _next_delay(self) -> float:
        """ttl/3, or sooner if a lease's validity ends before then (so it is declared lost on time)."""
        delay = self.interval
        if self._valid_until and self.lapses:
            delay = min(delay, max(0.01, min(self._valid_until.values()) - time.monotonic()))
        return delay
