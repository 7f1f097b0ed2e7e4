"""Deadline timers shared by every node through one Redis sorted set.

Key ``{prefix}deadlines``: member ``"{match_id}:{phase_id}"``, score = due time in epoch seconds.
``schedule`` is ZADD (so scheduling the same phase again moves its deadline), ``cancel`` is ZREM.
Each node polls the set every ``poll_interval`` seconds, reads the due members, keeps those of
matches it runs (the ``owns`` filter), and claims them with one Lua script. A claim is a *visibility
timeout*, not a delete: the script checks that the member is still due and that the match's lease
``{lease_prefix}{match_id}`` names this node, then moves the member's score to ``now +
claim_seconds``. So only the lease holder can claim (a resumed old owner cannot swallow a deadline),
one claim hides the entry from every node for ``claim_seconds``, and a claim that does
not end in a durable default (the node died, paused, or the commit failed) fires again. The runtime
removes the member (``cancel``: ZREM) once the phase has ended durably.

Ownership: entries of matches this node does not own are left in the set for their owner. When an
owner dies its entries stay until the match's new owner takes it over; the new owner rebuilds the
match from the database and re-schedules its deadlines (``MatchManager.load`` does), which overwrites
the same members. An entry no node claims for ``orphan_after`` seconds past its due time (a finished
match's leftover deadline, or a match nobody runs) is swept: removed without a callback, and only if
no lease names an owner for its match (``lease_prefix``), checked in the same Lua script.

A due entry is delivered at least once per ``claim_seconds`` until its phase ends durably; the
runtime ignores a firing whose phase has already ended (and cancels the entry then).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import cast

from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.infra._aio import cancel_and_wait, cancel_requested
from app.infra.timers import DueCallback, OwnsFilter

log = logging.getLogger("bannerfall.timers")

# KEYS[1] = the set; ARGV[1] = now (epoch seconds); ARGV[2] = claim (visibility) seconds;
# ARGV[3] = lease key prefix ('' = no lease check); ARGV[4] = this node's id; ARGV[5..] = members.
# Returns the claimed members (their scores moved to now + claim seconds).
_CLAIM = """
local now = tonumber(ARGV[1])
local hidden_until = now + tonumber(ARGV[2])
local claimed = {}
for i = 5, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= now then
    local mine = true
    if ARGV[3] ~= '' then
      local match_id = string.match(ARGV[i], '^(.*):[^:]*$') or ARGV[i]
      mine = redis.call('GET', ARGV[3] .. match_id) == ARGV[4]
    end
    if mine then
      redis.call('ZADD', KEYS[1], 'XX', hidden_until, ARGV[i])
      claimed[#claimed + 1] = ARGV[i]
    end
  end
end
return claimed
"""

# KEYS[1] = the set; ARGV[1] = cutoff (epoch seconds); ARGV[2] = lease key prefix ('' = no check);
# ARGV[3] = batch size. Removes entries due before the cutoff whose match has no lease.
_SWEEP = """
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local swept = 0
for _, member in ipairs(members) do
  local match_id = string.match(member, '^(.*):[^:]*$') or member
  if ARGV[2] == '' or redis.call('EXISTS', ARGV[2] .. match_id) == 0 then
    redis.call('ZREM', KEYS[1], member)
    swept = swept + 1
  end
end
return swept
"""


def member_of(match_id: str, phase_id: int) -> str:
    return f"{match_id}:{phase_id}"


def parse_member(member: bytes | str) -> tuple[str, int]:
    text = member.decode() if isinstance(member, bytes) else member
    match_id, _, phase = text.rpartition(":")
    return match_id, int(phase)


class RedisTimers:
    """The :class:`app.infra.timers.Timers` protocol on a Redis sorted set (production mode).

    ``redis_url``: the Redis server; ``prefix``: key prefix (the set is ``{prefix}deadlines``);
    ``node_id``: this node, for logs; ``poll_interval``: seconds between polls (the most a firing is
    late, plus one round trip); ``owns``: the ownership filter (also settable later with
    :meth:`set_owns`; None claims every due entry); ``client``: a shared client (else one is made
    from ``redis_url`` and closed by :meth:`stop`); ``orphan_after``: seconds past due after which an
    unclaimed entry is swept (None: never); ``lease_prefix``: lease key prefix checked by the claim
    (only the node named by the match's lease claims) and the sweep (see
    :class:`app.infra.leases.RedisLeases`; None: no lease check); ``claim_seconds``: how long a
    claimed entry stays hidden before it fires again unless the runtime cancelled it.

    ``schedule`` and ``cancel`` never raise for a Redis outage: the write is kept (the latest one per
    member) and retried by the poll loop until Redis answers, so the runtime's fire-and-forget calls
    lose nothing. Writes are batched: calls made while a write is in flight go out together in one
    pipeline.
    """

    BATCH = 500

    def __init__(self, redis_url: str, prefix: str, node_id: str, poll_interval: float = 0.05, *,
                 owns: OwnsFilter | None = None, client: Redis | None = None,
                 orphan_after: float | None = 300.0, lease_prefix: str | None = None,
                 claim_seconds: float = 5.0) -> None:
        if not claim_seconds > 0:
            raise ValueError(f"claim_seconds must be > 0, got {claim_seconds!r}")
        self.claim_seconds = claim_seconds
        self.redis_url = redis_url
        self.key = f"{prefix}deadlines"
        self.node_id = node_id
        self.poll_interval = poll_interval
        self.orphan_after = orphan_after
        self.lease_prefix = lease_prefix
        self._own_client = client is None
        self._client = client if client is not None else Redis.from_url(redis_url, socket_connect_timeout=2.0)
        self._claim = self._client.register_script(_CLAIM)
        self._sweep = self._client.register_script(_SWEEP)
        self._on_due: DueCallback | None = None
        self._owns = owns
        #: writes not yet in Redis, member -> score (schedule) or None (cancel)
        self._writes: dict[str, float | None] = {}
        self._write_lock = asyncio.Lock()
        #: the one task writing what schedule_now/cancel_now left in ``_writes`` (None: none running)
        self._flusher: asyncio.Task | None = None
        self._task: asyncio.Task | None = None
        self._closed = False
        self._next_sweep = 0.0
        #: entries this node claimed / swept, poll failures (for metrics and tests)
        self.claimed = 0
        self.swept = 0
        self.poll_errors = 0

    # ---------------------------------------------------------------- Timers protocol
    def set_callback(self, on_due: DueCallback) -> None:
        self._on_due = on_due

    def set_owns(self, owns: OwnsFilter | None) -> None:
        """Claim only due entries of matches for which ``owns(match_id)`` is true; others are left for
        their owner (None: claim all). Called on the event loop for each candidate; keep it cheap
        (e.g. ``lambda m: m in manager.runners``)."""
        self._owns = owns

    async def start(self) -> None:
        """Start the poll loop (idempotent)."""
        if self._closed:
            raise RuntimeError("timers are stopped")
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._poll_forever(),
                                                                name=f"timers-{self.node_id}")

    async def stop(self) -> None:
        """Stop polling, try once more to write pending schedules, close the client if it is ours.
        Idempotent. Entries stay in Redis for the nodes that take the matches over."""
        if self._closed:
            return
        self._closed = True
        await cancel_and_wait(self._task)
        self._task = None
        await cancel_and_wait(self._flusher)  # a cancelled flush puts its batch back in _writes
        self._flusher = None
        if self._writes:
            try:
                await asyncio.wait_for(self._flush(), 2.0)
            except (RedisError, OSError, asyncio.TimeoutError) as exc:
                log.warning("node %s: %d deadline writes not saved at stop: %s",
                            self.node_id, len(self._writes), exc)
        if self._own_client:
            await self._client.aclose()

    async def schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        """Arrange ``on_due(match_id, phase_id)`` at ``due_at`` (epoch seconds) or within
        ``poll_interval`` after, on exactly one node (the owner's). Scheduling the same phase again
        moves the deadline."""
        await self._write(member_of(match_id, phase_id), float(due_at))

    async def cancel(self, match_id: str, phase_id: int) -> None:
        """Remove the deadline (on every node: the set is shared). No error if there is none."""
        await self._write(member_of(match_id, phase_id), None)

    def schedule_now(self, match_id: str, phase_id: int, due_at: float) -> None:
        """:meth:`schedule` without a coroutine, for the runtime's hot path (``MatchManager``): the
        write is queued and sent by one flusher task with every other write queued meanwhile (one
        pipeline), instead of one task per call. Same guarantees: never raises; kept and retried by
        the poll loop during a Redis outage; per member the last call wins. Needs a running loop."""
        self._write_soon(member_of(match_id, phase_id), float(due_at))

    def cancel_now(self, match_id: str, phase_id: int) -> None:
        """:meth:`cancel` without a coroutine (see :meth:`schedule_now`)."""
        self._write_soon(member_of(match_id, phase_id), None)

    # ---------------------------------------------------------------- inspection
    async def due_at(self, match_id: str, phase_id: int) -> float | None:
        """The stored due time of a deadline, None if there is none (or it was claimed)."""
        return await self._client.zscore(self.key, member_of(match_id, phase_id))

    async def size(self) -> int:
        """Entries in the shared set (every node's)."""
        return await self._client.zcard(self.key)

    # ---------------------------------------------------------------- writes
    def _queue(self, member: str, score: float | None) -> None:
        """Queue a write, after every other one (only the latest per member is kept)."""
        self._writes.pop(member, None)
        self._writes[member] = score

    async def _write(self, member: str, score: float | None) -> None:
        self._queue(member, score)
        try:
            await self._flush()
        except (RedisError, OSError) as exc:
            log.warning("node %s: deadline write for %s deferred (%s); retrying in the poll loop",
                        self.node_id, member, exc)

    def _write_soon(self, member: str, score: float | None) -> None:
        self._queue(member, score)
        if not self._closed and (self._flusher is None or self._flusher.done()):
            self._flusher = asyncio.get_running_loop().create_task(self._flush_queued(),
                                                                   name=f"timer-writes-{self.node_id}")

    async def _flush_queued(self) -> None:
        """Write until nothing is queued (writes queued during a pipeline go in the next one); on a
        Redis error the writes stay queued for the poll loop, which retries them."""
        try:
            while self._writes and not self._closed:
                await self._flush()
        except (RedisError, OSError) as exc:
            log.warning("node %s: %d deadline writes deferred (%s); retrying in the poll loop",
                        self.node_id, len(self._writes), exc)

    async def _flush(self) -> None:
        """Write every pending schedule/cancel in one pipeline. Only one flush runs at a time, so
        per member the last call wins in Redis as it does locally."""
        async with self._write_lock:
            if not self._writes:
                return
            batch, self._writes = self._writes, {}
            adds = {m: s for m, s in batch.items() if s is not None}
            removes = [m for m, s in batch.items() if s is None]
            try:
                async with self._client.pipeline(transaction=False) as pipe:
                    if adds:
                        pipe.zadd(self.key, adds)
                    if removes:
                        pipe.zrem(self.key, *removes)
                    await pipe.execute()
            except BaseException:
                for member, score in batch.items():  # keep what is newer
                    self._writes.setdefault(member, score)
                raise

    # ---------------------------------------------------------------- polling
    async def _poll_forever(self) -> None:
        failures = 0
        while not self._closed and not cancel_requested():
            try:
                if self._writes:
                    await self._flush()
                await self.poll_once()
                if failures:
                    log.warning("node %s: deadline polling recovered after %d failures", self.node_id, failures)
                failures = 0
                delay = self.poll_interval
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                self.poll_errors += 1
                if failures == 1 or failures % 100 == 0:
                    log.warning("node %s: deadline poll failed (%d in a row): %s", self.node_id, failures, exc)
                delay = min(self.poll_interval * 2 ** failures, 2.0)
            await asyncio.sleep(delay)

    async def poll_once(self) -> int:
        """One poll: claim the due entries this node owns and call back for each. Returns how many
        were claimed. Raises RedisError/OSError when Redis is unreachable."""
        now = time.time()
        total = 0
        offset = 0
        while True:
            # without withscores Redis answers plain members (redis-py types every ZRANGE form together)
            members = cast("list[bytes | str]", await self._client.zrangebyscore(
                self.key, "-inf", now, start=offset, num=self.BATCH))
            if not members or self._closed:
                break
            owned = []
            for member in members:
                match_id, _ = parse_member(member)
                if self._owns is None or self._owns(match_id):
                    owned.append(member)
            claimed = await self._claim(keys=[self.key], args=[repr(now), repr(self.claim_seconds),
                                                               self.lease_prefix or "", self.node_id,
                                                               *owned]) if owned else []
            for member in claimed:
                self._fire(*parse_member(member))
            total += len(claimed)
            if len(members) < self.BATCH:
                break
            # claimed members left the range (their scores moved past now); the others (not ours, or
            # claimed elsewhere) stay before the next page. Entries another node moves meanwhile may
            # shift a few past this page: the next poll starts again from the first.
            offset += len(members) - len(claimed)
        self.claimed += total
        if self.orphan_after is not None and now >= self._next_sweep:
            self._next_sweep = now + max(1.0, min(self.orphan_after / 4, 30.0))
            swept = await self._sweep(keys=[self.key],
                                      args=[repr(now - self.orphan_after), self.lease_prefix or "", self.BATCH])
            if swept:
                self.swept += swept
                log.info("node %s: swept %d orphaned deadlines (due over %g s ago, no lease)",
                         self.node_id, swept, self.orphan_after)
        return total

    def _fire(self, match_id: str, phase_id: int) -> None:
        if self._on_due is None:
            log.warning("node %s: deadline %s:%s claimed with no callback set", self.node_id, match_id, phase_id)
            return
        try:
            self._on_due(match_id, phase_id)
        except Exception:
            log.exception("node %s: deadline callback failed for %s:%s", self.node_id, match_id, phase_id)
