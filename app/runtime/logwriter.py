"""Group commit for the action log: records from every match are written in shared transactions.

A match hands each accepted action to :meth:`LogWriter.submit` synchronously, in order; the writer
commits whatever has queued while the previous commit was in flight (plus up to ``window_ms`` of
company), then resolves the records' callbacks in submission order. Acks and views go out only from
those callbacks, so nothing is acknowledged before it is durable. One commit serves many actions:
Postgres here tops out near 800 commits/s, not 800 actions/s.

Faults: each record belongs to a *stream* (its match's runner) holding the
runner's fencing ``epoch``. Every write is conditional per match in the database
(:meth:`app.db.repo.Repository.commit_batch`): a stale owner's records are refused with
:class:`Fenced` while the other matches of the batch commit. Once a record of a stream failed, the
stream is marked ``log_failed`` and none of its later records is written (they fail with
:class:`StreamFailed`), so a match's log never has a gap. Transient errors are retried for
``retry_seconds``; then only the matches of that batch fail. An insert that still fails on a
constraint is retried match by match, so one match's failure never touches another's.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, cast

from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

from app.db.repo import MatchWrite, Repository
from app.metrics import LatencyBuckets
from app.runtime.rows import LogRow, MatchUpdate

log = logging.getLogger("bannerfall.log")


#: the shortest time a commit attempt is given, seconds (a database back from an outage needs a
#: new connection and one statement)
ATTEMPT_FLOOR_SECONDS = 0.5
#: what a cancelled statement may take to give its connection up on a hung Postgres (SQLAlchemy's
#: asyncpg adapter closes it gracefully, for up to 2 s), seconds
CLOSE_ALLOWANCE_SECONDS = 2.5


class LogWriteError(Exception):
    """A log record was not written (the base of the typed errors handed to ``on_durable``)."""


class Fenced(LogWriteError):
    """The match's ``owner_epoch`` (or durable version) is not the writer's: another node took the
    match over, or an earlier record of it failed. Nothing of this match was written."""


class StreamFailed(LogWriteError):
    """An earlier record of the same match failed; this one was dropped without being written."""


class LogStream(Protocol):
    """The writer of one match (a :class:`app.runtime.match.MatchRunner`)."""

    match_id: str
    #: the fencing token the runner got when it took the match (None: never writes)
    epoch: int | None
    #: set by the log writer once a record of this stream failed
    log_failed: bool

    def may_write(self) -> bool:
        """Whether the stream may write now (a valid lease), checked before each commit attempt; a
        stream that may not write fails with Fenced without being written."""


@dataclass(slots=True)
class LogRecord:
    stream: LogStream
    row: LogRow
    match_update: MatchUpdate | None
    on_durable: Callable[[BaseException | None], None]
    #: ``time.monotonic()`` at submit: a record's retries end ``retry_seconds`` after it was queued
    submitted: float = 0.0


@dataclass
class LogWriterStats:
    commits: int = 0
    records: int = 0
    failures: int = 0
    #: records refused by the fencing check (stale owner or out of sequence)
    fenced: int = 0
    #: records dropped because an earlier record of their match failed
    dropped: int = 0
    last_batch: int = 0
    batch_sizes: deque = field(default_factory=lambda: deque(maxlen=1000))
    #: seconds from a record's submit to its callback (``bannerfall_action_durable_seconds``)
    durable: LatencyBuckets = field(default_factory=LatencyBuckets)
    #: seconds per commit, retries included (``bannerfall_log_commit_seconds``)
    commit: LatencyBuckets = field(default_factory=LatencyBuckets)


class LogWriter:
    """``retry_seconds``: how long a batch is retried on transient database errors before its
    matches fail (``BANNERFALL_COMMIT_RETRY_SECONDS``)."""

    def __init__(self, repo: Repository, *, window_ms: float = 0.0, max_batch: int = 2000,
                 retry_seconds: float = 10.0,
                 sends: Callable[[], AbstractContextManager[None]] = nullcontext) -> None:
        self.repo = repo
        #: entered around each record's callback: the sockets' layer batches the writes it makes
        #: (``app.transport.hub.SocketHub.corked``: an action's delta and its ack in one write)
        self.sends = sends
        self.window = window_ms / 1000.0
        self.max_batch = max_batch
        self.retry_seconds = retry_seconds
        self._queue: deque[LogRecord] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._closing = False
        self.stats = LogWriterStats()
        #: whether the last commit attempt failed on a transient error (readiness, metrics)
        self.unhealthy = False
        #: ``time.monotonic()`` of the last failed and the last successful commit attempt (readiness)
        self.last_failure_at: float | None = None
        self.last_success_at: float | None = None
        self._failure_times: deque[float] = deque(maxlen=10_000)
        #: commit attempts given up on (cancelled), still closing their connections
        self._abandoned: set[asyncio.Task] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="log-writer")

    async def stop(self) -> None:
        """Flush what is queued, then stop."""
        self._closing = True
        self._wakeup.set()
        if self._task:
            await self._task

    @property
    def pending(self) -> int:
        return len(self._queue)

    def recent_failures(self, seconds: float) -> int:
        """Commit attempts that failed in the last ``seconds`` (retries count one each)."""
        since = time.monotonic() - seconds
        return sum(1 for t in self._failure_times if t >= since)

    def failing(self, seconds: float) -> bool:
        """Whether the latest commit attempt failed, less than ``seconds`` ago (a database that
        answers reads but cannot commit: a full disk, a read-only file)."""
        last = self.last_failure_at
        if last is None or time.monotonic() - last > seconds:
            return False
        return self.last_success_at is None or self.last_success_at < last

    def submit(self, stream: LogStream, row: LogRow, match_update: MatchUpdate | None,
               on_durable: Callable[[BaseException | None], None]) -> None:
        """Queue one log row of ``stream``'s match; ``on_durable(None)`` runs after its commit,
        ``on_durable(exc)`` if it was not written: :class:`Fenced`, :class:`StreamFailed`, or the
        database error that outlived the retries (the caller must then drop its runner; the match
        is rebuilt from its durable log)."""
        self._queue.append(LogRecord(stream, row, match_update, on_durable, time.monotonic()))
        self._wakeup.set()

    async def _run(self) -> None:
        """Commit, then deliver, in turn: a batch is what queued while the previous commit and its
        callbacks ran, plus up to ``window`` of company when the writer is busy (it went straight
        from one batch to the next); a record that finds the writer idle is committed at once. A
        batch is formed only after the commit before it returned and its callbacks ran, so the
        streams that failed there are marked and their later records are dropped, never written.
        (Starting the next commit before delivering the last batch was measured and not kept:
        docs/decisions.md, "Group commit".)"""
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue  # woken from idle: no window, a lone record is not delayed
            batch, dropped = self._take()
            results: dict[str, BaseException | None] = await self._commit(batch) if batch else {}
            await self._deliver(batch, dropped, results)
            if self.window and self._queue and len(self._queue) < self.max_batch and not self._closing:
                await asyncio.sleep(self.window)  # busy: let the next batch gather company

    def _take(self) -> tuple[list[LogRecord], list[LogRecord]]:
        """The next batch off the queue, and the records of failed streams in it (not to be written)."""
        batch: list[LogRecord] = []
        dropped: list[LogRecord] = []
        while self._queue and len(batch) < self.max_batch:
            record = self._queue.popleft()
            (dropped if record.stream.log_failed else batch).append(record)
        return batch, dropped

    async def _deliver(self, batch: list[LogRecord], dropped: list[LogRecord],
                       results: dict[str, BaseException | None]) -> None:
        """Run the callbacks of a committed batch (and of its dropped records) in submission order."""
        now = time.monotonic()
        observe = self.stats.durable.observe
        self.stats.dropped += len(dropped)
        done: list[tuple[LogRecord, BaseException | None]] = [
            (r, StreamFailed("an earlier record of this match failed")) for r in dropped]
        done += [(r, results.get(r.stream.match_id)) for r in batch]
        sends = self.sends
        for i, (record, error) in enumerate(done):
            observe(now - record.submitted)
            try:
                with sends():  # one write per socket for what this record sends (its delta and ack)
                    record.on_durable(error)
            except Exception:  # a callback must never stop the writer
                log.exception("on_durable callback failed")
            if i % 32 == 31:
                await asyncio.sleep(0)  # let sockets and REST breathe during a big fan-out

    async def _commit(self, batch: list[LogRecord]) -> dict[str, BaseException | None]:
        """Write ``batch``; returns the error of each match that failed (absent: committed). Marks
        the failed matches' streams ``log_failed`` before any callback runs."""
        groups: dict[int, tuple[LogStream, MatchWrite]] = {}
        for record in batch:
            stream = record.stream
            entry = groups.get(id(stream))
            if entry is None:
                entry = groups[id(stream)] = (stream, MatchWrite(stream.match_id, stream.epoch or 0, []))
            entry[1].rows.append(cast("dict[str, Any]", record.row))  # the repository's plain dict rows
            if record.match_update:
                entry[1].update = cast("dict[str, Any]", record.match_update)
        writes = [w for _, w in groups.values()]
        errors: dict[str, BaseException | None] = {}
        # every record is answered within retry_seconds of its submit (plus one attempt), also when
        # it queued behind a batch that spent its own retries: the budget counts from the oldest
        began = time.monotonic()
        budget = self.retry_seconds - (began - min(r.submitted for r in batch))
        streams = {w.match_id: s for s, w in groups.values()}
        try:
            refused = await self._with_retries(writes, budget, streams)
        except Exception as exc:
            from sqlalchemy.exc import DBAPIError, IntegrityError

            if not isinstance(exc, IntegrityError) and isinstance(exc, (DBAPIError, OSError, TimeoutError)):
                log.error("log commit failed for %d records of %d matches: %s", len(batch), len(writes),
                          type(exc).__name__)
                errors = {w.match_id: exc for w in writes}
                refused = set()
            else:  # one match's rows collide, or cannot be written at all (a value the driver or its
                # JSON encoder refuses): write match by match so the others are not touched
                log.error("log commit hit a constraint or a bad value (%s); writing match by match",
                          type(exc).__name__)
                refused = set()
                for w in writes:
                    try:
                        refused |= await self._with_retries([w], 0.0, streams)
                    except Exception as one:
                        errors[w.match_id] = one
        for match_id in refused:
            errors[match_id] = Fenced(f"match {match_id}: owner epoch or version changed; not written")
        failed_records = 0
        for stream, w in groups.values():
            if w.match_id in errors:
                stream.log_failed = True
                failed_records += len(w.rows)
                if isinstance(errors[w.match_id], Fenced):
                    self.stats.fenced += len(w.rows)
        if errors:
            self.stats.failures += 1
        written = len(batch) - failed_records
        self.stats.commit.observe(time.monotonic() - began)
        if written:
            self.stats.commits += 1
            self.stats.records += written
            self.stats.last_batch = written
            self.stats.batch_sizes.append(written)
        return errors

    async def _with_retries(self, writes: list[MatchWrite], budget: float,
                            streams: dict[str, LogStream] | None = None) -> set[str]:
        """``commit_batch`` retried on transient errors for ``budget`` seconds (at least one
        attempt); each attempt is bounded by what is left of the budget (at least
        :data:`ATTEMPT_FLOOR_SECONDS`), so a database that hangs instead of refusing is treated as
        down and the batch is answered within ``budget`` + the floor (a retry after an attempt whose
        commit did land is refused by the version check, never applied twice)."""
        ends = time.monotonic() + max(0.0, budget)
        # the first attempt without tenacity's machinery: almost every commit succeeds at once, and
        # a retry state per commit was most of the cyclic garbage of a busy server (bench/server.md)
        try:
            return await self._attempt(writes, ends, streams)
        except Exception as exc:
            if not _transient(exc) or time.monotonic() >= ends:
                raise
        # then the retries: waits of 0.05, 0.1, 0.2 ... 2 s, the last attempt at the end of the budget
        await asyncio.sleep(max(0.0, min(0.05, ends - time.monotonic())))
        backoff = wait_exponential(multiplier=0.1, max=2.0)

        def wait(state) -> float:  # the last attempt is at the end of the budget, not past it
            return max(0.0, min(backoff(state), ends - time.monotonic()))

        async for attempt in AsyncRetrying(
            stop=stop_after_delay(max(0.0, ends - time.monotonic())),
            wait=wait,
            retry=retry_if_exception(_transient),
            reraise=True,
        ):
            with attempt:
                return await self._attempt(writes, ends, streams)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, writes: list[MatchWrite], ends: float,
                       streams: dict[str, LogStream] | None) -> set[str]:
        """One ``commit_batch`` of the writes whose stream may still write, to be answered by
        ``ends`` (``time.monotonic()``; at least :data:`ATTEMPT_FLOOR_SECONDS` from now); returns
        the refused ids plus those that may not write (lease lapsed). Raises ``TimeoutError`` when
        the database does not answer in time.

        A cancelled statement on a hung Postgres takes up to 2 s more to give its connection up
        (SQLAlchemy closes it gracefully first). With time to spare the attempt runs in this task
        and is cancelled :data:`CLOSE_ALLOWANCE_SECONDS` before ``ends`` (the common case, no
        extra task); near the end it runs in a task of its own that is left to close in the
        background, so the answer is not delayed by it."""
        lapsed = {w.match_id for w in writes if not _may_write((streams or {}).get(w.match_id))}
        todo = [w for w in writes if w.match_id not in lapsed]
        left = ends - time.monotonic()
        try:
            if left >= CLOSE_ALLOWANCE_SECONDS + ATTEMPT_FLOOR_SECONDS:
                async with asyncio.timeout(left - CLOSE_ALLOWANCE_SECONDS):  # in this task
                    refused = await self.repo.commit_batch(todo)
            else:
                refused = await self._attempt_apart(todo, max(ATTEMPT_FLOOR_SECONDS, left))
        except Exception:
            self.unhealthy = True
            self.last_failure_at = time.monotonic()
            self._failure_times.append(self.last_failure_at)
            raise
        self.unhealthy = False
        self.last_success_at = time.monotonic()
        return refused | lapsed

    async def _attempt_apart(self, todo: list[MatchWrite], timeout: float) -> set[str]:
        """``commit_batch(todo)`` in a task of its own, waited for ``timeout`` seconds; after that
        it is cancelled and left to finish closing its connection, and ``TimeoutError`` raised."""
        task = asyncio.get_running_loop().create_task(self.repo.commit_batch(todo))
        try:
            done, _ = await asyncio.wait((task,), timeout=timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            self._abandoned.add(task)
            task.add_done_callback(self._forget_abandoned)
            raise TimeoutError(f"the database did not answer a commit within {timeout:.1f} s")
        return task.result()

    def _forget_abandoned(self, task: asyncio.Task) -> None:
        self._abandoned.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: the batch was answered already


def _may_write(stream: LogStream | None) -> bool:
    return stream is None or stream.may_write()


def _transient(exc: BaseException) -> bool:
    """Whether a failed commit attempt is worth retrying: the network or a timeout, an
    ``OperationalError`` (database down, locked) or a connection the pool invalidated."""
    from sqlalchemy.exc import DBAPIError, OperationalError

    if isinstance(exc, (OSError, ConnectionError, TimeoutError, OperationalError)):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated
