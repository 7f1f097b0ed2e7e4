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
import threading
import time
from typing import Any, Callable, Iterable, Protocol

from redis import Redis as SyncRedis
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

    def __init__(self, redis_url: str, prefix: str = "bannerfall:", *, client: Redis | None = None,
                 timeout_seconds: float = 2.0) -> None:
        self.key_prefix = f"{prefix}lease:"
        self.redis_url = redis_url
        self.timeout_seconds = timeout_seconds
        self._own_client = client is None
        self._client = client if client is not None else Redis.from_url(redis_url, socket_connect_timeout=2.0)
        self._acquire = self._client.register_script(_ACQUIRE)
        self._renew = self._client.register_script(_RENEW)
        self._release = self._client.register_script(_RELEASE)
        #: the blocking client of :meth:`renew_many_blocking` (the renewal thread's), made at first use
        self._blocking: SyncRedis | None = None
        self._blocking_renew: Any = None

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

    def renew_many_blocking(self, match_ids: list[str], node_id: str, ttl_seconds: float) -> set[str]:
        """:meth:`renew_many` on a blocking connection of its own, for the renewal thread of
        :class:`LeaseKeeper` (never call it on the event loop). ``timeout_seconds`` to connect and
        for the reply; a refused or reset connection is retried once. Raises ``RedisError``."""
        ttl_ms = _check_ttl(ttl_seconds)
        if self._blocking is None:
            from redis.backoff import NoBackoff
            from redis.exceptions import ConnectionError as RedisConnectionError
            from redis.retry import Retry as SyncRetry

            retry = SyncRetry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))
            self._blocking = SyncRedis.from_url(self.redis_url, socket_connect_timeout=self.timeout_seconds,
                                                socket_timeout=self.timeout_seconds, retry=retry)
            self._blocking_renew = self._blocking.register_script(_RENEW)
        renewed: set[str] = set()
        for start in range(0, len(match_ids), 1000):
            chunk = match_ids[start:start + 1000]
            flags = self._blocking_renew(keys=[self.key(m) for m in chunk], args=[node_id, ttl_ms])
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
        """Close the clients (stop the renewal thread first: :meth:`LeaseKeeper.stop`)."""
        if self._blocking is not None:
            self._blocking.close()
            self._blocking = None
        if self._own_client:
            await self._client.aclose()


#: why a lease was lost (``LeaseKeeper.losses``, ``bannerfall_lease_losses_total{reason}``)
LOSS_REASONS = ("taken", "expired", "stalled")


class LeaseKeeper:
    """Keeps this node's leases alive: every ``ttl/4`` seconds renews all held leases in one call
    (``renew_many``: one Lua script per 1000 leases).

    With ``renew_blocking`` (production mode: ``RedisLeases.renew_many_blocking``) the renewals run
    on a thread of their own, with their own blocking Redis connection, so a busy or stalled event
    loop does not delay them; the loop only proves it is alive by a heartbeat every ``ttl/8``. The
    thread renews while that heartbeat is at most ``stall_seconds`` old: a loop stalled longer (a
    blocking call, starved of CPU) lets its leases lapse, since its matches cannot be run here
    anyway. A stopped process (SIGSTOP, a frozen VM) stops the thread too, so its leases lapse
    after ``ttl``. Without it (embedded mode, tests) the renewals are a task on the loop.

    A lease is lost (removed from :attr:`held`, then ``on_lost(match_id)`` is called on the loop)
    when a renewal says another node holds it or it expired (reason ``taken``), or when no renewal
    has succeeded for long enough that it may have expired: at ``(start of the last successful
    renewal) + ttl - margin``, ``margin`` = ``ttl/10`` by default, so the node stops before anyone
    else can acquire (``expired``; ``stalled`` when the loop's heartbeat was too old to renew).
    :attr:`losses` counts them by reason. ``on_lost`` must not block; it should drop the match's
    runner (its state may be written by the new owner from now on).

    ``lapses=False`` is for a node that is the only one (embedded mode): no other node can take a
    match over, so time alone never makes a lease lost there. :meth:`holds` is then "acquired and not
    released or lost", and a renewal that finds the lease expired (the event loop stalled past the
    TTL: a suspended process, a long pause) takes it again; a lease is lost only when another holder
    has it. With ``lapses=True`` (the default, several nodes) a stall past ``ttl - margin`` loses it.
    """

    def __init__(self, leases: Leases, node_id: str, ttl_seconds: float, *,
                 on_lost: Callable[[str], None] | None = None, margin_seconds: float | None = None,
                 lapses: bool = True, renew_blocking: Callable[[list[str], str, float], set[str]] | None = None,
                 stall_seconds: float = 5.0) -> None:
        _check_ttl(ttl_seconds)
        self.leases = leases
        self.node_id = node_id
        self.ttl = ttl_seconds
        self.interval = ttl_seconds / 4
        self.margin = ttl_seconds / 10 if margin_seconds is None else margin_seconds
        self.on_lost = on_lost
        #: whether a lease not renewed in time counts as lost (several nodes); False: the only node
        self.lapses = lapses
        #: the renewal thread's blocking ``renew_many`` (None: renew on the event loop)
        self.renew_blocking = renew_blocking
        #: the oldest event-loop heartbeat the renewal thread still renews for, seconds
        self.stall_seconds = stall_seconds
        #: leases found expired at a renewal and taken again (``lapses=False``: after a stall)
        self.retaken = 0
        #: leases lost, by reason (:data:`LOSS_REASONS`)
        self.losses: dict[str, int] = dict.fromkeys(LOSS_REASONS, 0)
        self.renew_failures = 0
        #: seconds the last successful renewal round took (the Redis round trip, on the thread)
        self.last_renew_seconds = 0.0
        #: match id -> monotonic time until which the lease is surely still ours; changed under
        #: ``_lock`` (the renewal thread and the loop both change it)
        self._valid_until: dict[str, float] = {}
        self._lock = threading.Lock()
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._thread_stop = threading.Event()
        #: ``time.monotonic()`` of the event loop's last heartbeat (thread mode)
        self._beat = time.monotonic()
        self._failing = False

    @property
    def held(self) -> set[str]:
        """Matches whose lease this node holds (as far as it can know)."""
        with self._lock:
            return set(self._valid_until)

    def holds(self, match_id: str) -> bool:
        """Whether the lease is surely still ours *now*: held and not past its validity on
        ``time.monotonic()``. A process resumed after a pause (SIGSTOP, a long stall) holds nothing
        until a renew succeeds, even before the keeper has declared the lease lost."""
        until = self._valid_until.get(match_id)
        return until is not None and (not self.lapses or until > time.monotonic())

    async def acquire(self, match_id: str) -> bool:
        """Acquire the lease and keep it alive from now on. True if this node holds it."""
        started = time.monotonic()
        if await self.leases.acquire(match_id, self.node_id, self.ttl):
            with self._lock:
                self._valid_until[match_id] = started + self.ttl - self.margin
            return True
        return False

    async def release(self, match_id: str) -> None:
        """Stop renewing and give the lease up (e.g. the match finished). A Redis error is logged;
        the lease then simply expires."""
        with self._lock:
            self._valid_until.pop(match_id, None)
        try:
            await self.leases.release(match_id, self.node_id)
        except (RedisError, OSError) as exc:
            log.warning("node %s: could not release lease of %s (%s); it will expire", self.node_id, match_id, exc)

    async def start(self) -> None:
        self._stopping = False
        self._loop = asyncio.get_running_loop()
        if self._task is None or self._task.done():
            work = self._heartbeat() if self.renew_blocking is not None else self._run()
            self._task = self._loop.create_task(work, name=f"leases-{self.node_id}")
        if self.renew_blocking is not None and (self._thread is None or not self._thread.is_alive()):
            self._beat = time.monotonic()
            self._thread_stop.clear()
            self._thread = threading.Thread(target=self._thread_main, name=f"leases-{self.node_id}", daemon=True)
            self._thread.start()

    async def stop(self, *, release: bool = True) -> None:
        """Stop renewing; with ``release`` also give every held lease up (clean shutdown, so other
        nodes can take the matches over at once instead of after the TTL)."""
        self._stopping = True
        await cancel_and_wait(self._task)
        self._task = None
        thread, self._thread = self._thread, None
        if thread is not None:
            self._thread_stop.set()
            await asyncio.to_thread(thread.join, 30)  # a round in flight ends within the Redis timeouts
        if release:
            for match_id in list(self.held):
                await self.release(match_id)
        with self._lock:
            self._valid_until.clear()

    # ------------------------------------------------------------------ one renewal round
    def _begin(self) -> dict[str, float]:
        with self._lock:
            return dict(self._valid_until)

    def _renewed(self, before: dict[str, float], started: float, kept: set[str]) -> dict[str, str]:
        """Apply a renewal's answer (``kept``: the ids still ours) to the leases it was about;
        returns the ids lost (reason ``expired`` if their validity had passed before the renewal,
        else ``taken``). A lease released or acquired again meanwhile is left alone: the answer is
        about the old one. A lease past its validity that Redis still names us for is renewed
        (nobody else can have taken it)."""
        lost: dict[str, str] = {}
        with self._lock:
            for match_id, until in before.items():
                if self._valid_until.get(match_id) != until:
                    continue
                if match_id in kept:
                    self._valid_until[match_id] = started + self.ttl - self.margin
                else:  # not ours in Redis: it expired there (our validity had passed) or another took it
                    lost[match_id] = "expired" if self.lapses and until <= started else "taken"
        return lost

    def _failed(self, exc: BaseException) -> None:
        self.renew_failures += 1
        if not self._failing:  # one line per streak of failures, not one per round
            log.warning("node %s: lease renewal failed (%s)", self.node_id, type(exc).__name__)
        self._failing = True

    def _lapsed(self, lost: dict[str, str], stalled: bool) -> dict[str, str]:
        """Add the leases past their validity (``lapses=True``: reason ``expired``, or ``stalled``
        when the loop's heartbeat was too old to renew them), then take every lost lease out of
        :attr:`held` and count it; returns ``lost``."""
        if self.lapses:
            now = time.monotonic()
            with self._lock:
                for match_id, until in self._valid_until.items():
                    if until <= now and match_id not in lost:
                        lost[match_id] = "stalled" if stalled else "expired"
        with self._lock:
            for match_id in list(lost):
                if self._valid_until.pop(match_id, None) is None:
                    del lost[match_id]
        for reason in lost.values():
            self.losses[reason] += 1
        return lost

    async def renew_now(self) -> set[str]:
        """One renewal round on the event loop (the loop task calls this every ``ttl/4`` when
        there is no renewal thread); returns the ids lost in it."""
        before = self._begin()
        lost: dict[str, str] = {}
        if before:
            started = time.monotonic()
            try:
                # a renewal may take until the first held lease's validity ends: its answer, however
                # late, extends from ``started`` (Redis ran the script after that)
                bound = max(self.interval, min(before.values()) - started)
                kept = await asyncio.wait_for(self.leases.renew_many(list(before), self.node_id, self.ttl), bound)
            except (RedisError, OSError, asyncio.TimeoutError) as exc:
                self._failed(exc)
            else:
                self._failing = False
                self.last_renew_seconds = time.monotonic() - started
                lost = self._renewed(before, started, kept)
                if lost and not self.lapses:
                    lost = await self._retake(lost, before)
        lost = self._lapsed(lost, stalled=False)
        for match_id in lost:
            self._notify(match_id)
        return set(lost)

    def renew_blocking_now(self) -> dict[str, str]:
        """One renewal round on the calling (renewal) thread, with ``renew_blocking``; returns the
        ids lost in it and why. Renews nothing while the event loop's heartbeat is older than
        ``stall_seconds``."""
        assert self.renew_blocking is not None
        stalled = time.monotonic() - self._beat > self.stall_seconds
        before = self._begin()
        lost: dict[str, str] = {}
        if before and not stalled:
            started = time.monotonic()
            try:
                kept = self.renew_blocking(list(before), self.node_id, self.ttl)
            except (RedisError, OSError) as exc:
                self._failed(exc)
            else:
                self._failing = False
                self.last_renew_seconds = time.monotonic() - started
                lost = self._renewed(before, started, kept)
        return self._lapsed(lost, stalled)

    async def _retake(self, expired: dict[str, str], before: dict[str, float]) -> dict[str, str]:
        """``lapses=False``: take again the leases a renewal found expired; returns those another
        holder has (lost)."""
        lost: dict[str, str] = {}
        retaken = self.retaken
        for match_id, reason in expired.items():
            if self._valid_until.get(match_id) != before[match_id]:
                continue  # released (or acquired again) meanwhile
            started = time.monotonic()
            if not await self.leases.acquire(match_id, self.node_id, self.ttl):
                lost[match_id] = reason
                continue
            with self._lock:
                if self._valid_until.get(match_id) == before[match_id]:  # not released meanwhile
                    self._valid_until[match_id] = started + self.ttl - self.margin
                    self.retaken += 1
        if self.retaken > retaken:
            log.info("node %s: %d leases had expired (the event loop stalled past %g s) and were taken again",
                     self.node_id, self.retaken - retaken, self.ttl)
        return lost

    def _notify(self, match_id: str) -> None:
        """On the loop: tell ``on_lost`` (unless the match was acquired again since)."""
        if match_id in self._valid_until:
            return
        log.warning("node %s: lost the lease of match %s", self.node_id, match_id)
        if self.on_lost is not None:
            try:
                self.on_lost(match_id)
            except Exception:
                log.exception("on_lost failed for match %s", match_id)

    def _notify_all(self, lost: dict[str, str]) -> None:
        reasons = sorted(set(lost.values()))
        if reasons == ["stalled"]:
            log.warning("node %s: the event loop stalled past LEASE_STALL_SECONDS (%g s): %d leases lapsed",
                        self.node_id, self.stall_seconds, len(lost))
        for match_id in lost:
            self._notify(match_id)

    # ------------------------------------------------------------------ the loops
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

    async def _heartbeat(self) -> None:
        """Thread mode: the loop's proof of life for the renewal thread."""
        while not self._stopping and not cancel_requested():
            self._beat = time.monotonic()
            await asyncio.sleep(self.interval / 2)

    def _thread_main(self) -> None:
        loop = self._loop
        while not self._thread_stop.wait(self._next_delay()):
            try:
                lost = self.renew_blocking_now()
            except Exception:
                log.exception("node %s: lease renewal round failed", self.node_id)
                continue
            if lost and loop is not None:
                try:
                    loop.call_soon_threadsafe(self._notify_all, lost)
                except RuntimeError:  # the loop is closed: the node is stopping
                    return

    def _next_delay(self) -> float:
        """ttl/4, or sooner if a lease's validity ends before then (so it is declared lost on time)."""
        delay = self.interval
        if self.lapses:
            with self._lock:
                first = min(self._valid_until.values(), default=None)
            if first is not None:
                delay = min(delay, max(0.01, first - time.monotonic()))
        return delay
