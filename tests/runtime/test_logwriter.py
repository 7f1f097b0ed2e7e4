"""The group-commit writer under faults (issue 9 items 1-2), on a repository twin that fails on
demand: a failed record's later records are never written, other matches are never touched."""
from __future__ import annotations

import asyncio

from sqlalchemy.exc import IntegrityError, OperationalError

from app.runtime.logwriter import Fenced, LogWriter, StreamFailed


class Stream:
    def __init__(self, match_id: str, epoch: int = 1) -> None:
        self.match_id = match_id
        self.epoch = epoch
        self.log_failed = False
        self.writable = True

    def may_write(self) -> bool:
        return self.writable


class TwinRepo:
    """``commit_batch`` keeps what it is given; ``gate`` holds a commit until set; ``fail`` makes the
    next commits raise it (only those holding a match of ``fail_only``, when given); ``collide``
    names a match whose rows raise IntegrityError; ``refuse`` names matches the fencing check
    refuses."""

    def __init__(self) -> None:
        self.log: dict[str, list[int]] = {}
        self.calls: list[list[str]] = []
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()
        self.fail: BaseException | None = None
        self.fail_only: set[str] | None = None
        self.collide: str | None = None
        self.refuse: set[str] = set()

    async def commit_batch(self, groups):
        self.calls.append([g.match_id for g in groups])
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None and (self.fail_only is None or self.fail_only & {g.match_id for g in groups}):
            raise self.fail
        if self.collide in {g.match_id for g in groups}:
            raise IntegrityError("INSERT", {}, Exception("duplicate key"))
        for g in groups:
            if g.match_id not in self.refuse:
                self.log.setdefault(g.match_id, []).extend(r["seq"] for r in g.rows)
        return {g.match_id for g in groups} & self.refuse


def row(match_id: str, seq: int) -> dict:
    return {"match_id": match_id, "seq": seq}


class Results:
    def __init__(self) -> None:
        self.got: dict[tuple[str, int], BaseException | None] = {}
        self.done = asyncio.Event()
        self.expected = 0

    def cb(self, match_id: str, seq: int):
        def on_durable(exc):
            self.got[(match_id, seq)] = exc
            if len(self.got) >= self.expected:
                self.done.set()
        return on_durable


async def test_after_a_failed_batch_a_queued_record_of_the_same_match_is_never_written():
    repo = TwinRepo()
    repo.gate = asyncio.Event()
    writer = LogWriter(repo, retry_seconds=0.2)  # type: ignore[arg-type]
    writer.start()
    a, b = Stream("a"), Stream("b")
    res = Results()
    res.expected = 3
    writer.submit(a, row("a", 1), None, res.cb("a", 1))
    await asyncio.wait_for(repo.entered.wait(), 5)  # the first batch (a:1) is committing
    writer.submit(a, row("a", 2), None, res.cb("a", 2))  # queued for the next batch
    writer.submit(b, row("b", 1), None, res.cb("b", 1))
    # every commit holding a:1 fails (on every retry for 0.2 s); the next batch, formed as soon as
    # that commit gave up (before a:1's callback runs: the commits are pipelined), must leave a:2 out
    repo.fail = OperationalError("COMMIT", {}, Exception("server closed the connection"))
    repo.fail_only = {"a"}
    repo.gate.set()
    await asyncio.wait_for(res.done.wait(), 5)
    await writer.stop()
    assert isinstance(res.got[("a", 1)], OperationalError)
    assert isinstance(res.got[("a", 2)], StreamFailed)  # dropped without being written
    assert res.got[("b", 1)] is None
    assert repo.log == {"b": [1]}
    assert a.log_failed and not b.log_failed
    assert all("a" not in call for call in repo.calls[-1:])
    assert writer.stats.dropped == 1 and writer.stats.records == 1


async def test_a_fenced_match_fails_alone():
    repo = TwinRepo()
    repo.refuse = {"stale"}
    writer = LogWriter(repo)  # type: ignore[arg-type]
    res = Results()
    streams = {m: Stream(m) for m in ("h1", "stale", "h2", "h3")}
    res.expected = 8
    for m, s in streams.items():  # queued before the writer runs: one batch
        writer.submit(s, row(m, 1), None, res.cb(m, 1))
        writer.submit(s, row(m, 2), None, res.cb(m, 2))
    writer.start()
    await asyncio.wait_for(res.done.wait(), 5)
    await writer.stop()
    assert len(repo.calls) == 1
    assert isinstance(res.got[("stale", 1)], Fenced) and isinstance(res.got[("stale", 2)], Fenced)
    assert all(res.got[(m, s)] is None for m in ("h1", "h2", "h3") for s in (1, 2))
    assert repo.log == {"h1": [1, 2], "h2": [1, 2], "h3": [1, 2]}
    assert streams["stale"].log_failed and writer.stats.fenced == 2


async def test_a_constraint_failure_of_one_match_is_retried_match_by_match():
    repo = TwinRepo()
    repo.collide = "bad"
    writer = LogWriter(repo)  # type: ignore[arg-type]
    res = Results()
    res.expected = 4
    for m in ("g1", "bad", "g2", "g3"):
        writer.submit(Stream(m), row(m, 1), None, res.cb(m, 1))
    writer.start()
    await asyncio.wait_for(res.done.wait(), 5)
    await writer.stop()
    assert isinstance(res.got[("bad", 1)], IntegrityError)
    assert all(res.got[(m, 1)] is None for m in ("g1", "g2", "g3"))
    assert repo.log == {"g1": [1], "g2": [1], "g3": [1]}


async def test_transient_errors_are_retried_within_the_bound():
    repo = TwinRepo()
    repo.fail = OperationalError("COMMIT", {}, Exception("connection refused"))
    writer = LogWriter(repo, retry_seconds=5.0)  # type: ignore[arg-type]
    writer.start()
    res = Results()
    res.expected = 1
    writer.submit(Stream("a"), row("a", 1), None, res.cb("a", 1))
    await asyncio.wait_for(repo.entered.wait(), 5)
    assert writer.unhealthy or len(repo.calls) >= 1
    repo.fail = None
    await asyncio.wait_for(res.done.wait(), 10)
    await writer.stop()
    assert res.got[("a", 1)] is None and repo.log == {"a": [1]}
    assert len(repo.calls) >= 2 and not writer.unhealthy


async def test_a_record_queued_behind_a_failing_batch_is_answered_within_its_own_retry_bound():
    """The act answer bound: every record gets its callback within retry_seconds of its submit
    (plus an attempt), not retry_seconds after the batch in front of it gave up."""
    import time

    repo = TwinRepo()
    repo.fail = OperationalError("COMMIT", {}, Exception("connection refused"))
    writer = LogWriter(repo, retry_seconds=1.0)  # type: ignore[arg-type]
    writer.start()
    answered: dict[str, float] = {}
    submitted: dict[str, float] = {}
    done = asyncio.Event()

    def cb(name):
        def on_durable(exc):
            assert exc is not None
            answered[name] = time.monotonic()
            if len(answered) == 2:
                done.set()
        return on_durable

    submitted["a"] = time.monotonic()
    writer.submit(Stream("a"), row("a", 1), None, cb("a"))
    await asyncio.wait_for(repo.entered.wait(), 5)
    await asyncio.sleep(0.6)  # b arrives while a's batch is retrying
    submitted["b"] = time.monotonic()
    writer.submit(Stream("b"), row("b", 1), None, cb("b"))
    await asyncio.wait_for(done.wait(), 10)
    await writer.stop()
    assert answered["a"] - submitted["a"] < 1.3
    assert answered["b"] - submitted["b"] < 1.3, answered["b"] - submitted["b"]


async def test_a_stream_without_a_valid_lease_is_not_written():
    """Checked before each commit attempt: a record queued while the lease was valid is not
    committed once it lapsed (the node was paused between the act and the commit)."""
    repo = TwinRepo()
    writer = LogWriter(repo)  # type: ignore[arg-type]
    res = Results()
    res.expected = 2
    paused, healthy = Stream("paused"), Stream("healthy")
    paused.writable = False
    writer.submit(paused, row("paused", 1), None, res.cb("paused", 1))
    writer.submit(healthy, row("healthy", 1), None, res.cb("healthy", 1))
    writer.start()
    await asyncio.wait_for(res.done.wait(), 5)
    await writer.stop()
    assert isinstance(res.got[("paused", 1)], Fenced) and res.got[("healthy", 1)] is None
    assert repo.log == {"healthy": [1]} and paused.log_failed


async def test_a_lone_record_is_not_delayed_and_a_busy_writer_waits_the_window_for_company():
    """``window_ms``: a record that finds the writer idle is committed at once; records queued while
    a commit and its callbacks ran wait the window after them and go in one commit."""
    import time

    repo = TwinRepo()
    writer = LogWriter(repo, window_ms=200)  # type: ignore[arg-type]
    writer.start()
    got: dict[int, float] = {}
    events = {i: asyncio.Event() for i in range(4)}

    def cb(i):
        def on_durable(exc):
            assert exc is None
            got[i] = time.monotonic()
            events[i].set()
            if i == 0:  # queued while record 0's callback runs: the writer is busy
                writer.submit(Stream("b"), row("b", 1), None, cb(1))
                writer.submit(Stream("c"), row("c", 1), None, cb(2))
        return on_durable

    t0 = time.monotonic()
    writer.submit(Stream("a"), row("a", 1), None, cb(0))
    await asyncio.wait_for(events[2].wait(), 5)
    assert got[0] - t0 < 0.1  # the writer was idle: not delayed by the window
    assert got[1] - got[0] >= 0.19 and got[2] - got[0] >= 0.19  # busy: the window's company
    assert repo.calls == [["a"], ["b", "c"]]  # ... in one commit
    await asyncio.sleep(0.25)
    t3 = time.monotonic()
    writer.submit(Stream("a"), row("a", 2), None, cb(3))
    await asyncio.wait_for(events[3].wait(), 5)
    await writer.stop()
    assert got[3] - t3 < 0.1  # idle again: at once
    assert sum(writer.stats.durable.counts) == 4 and writer.stats.durable.counts[-1] == 0
    assert sum(writer.stats.commit.counts) == 3


async def test_a_record_that_cannot_be_written_fails_its_match_alone():
    """A value the driver or its JSON encoder refuses (not a database failure) fails only the match
    whose rows hold it: the batch is written match by match, the others commit."""
    class PoisonRepo(TwinRepo):
        async def commit_batch(self, groups):
            if any(g.match_id == "poison" for g in groups):
                self.calls.append([g.match_id for g in groups])
                raise TypeError("Recursion limit reached")
            return await super().commit_batch(groups)

    repo = PoisonRepo()
    writer = LogWriter(repo)  # type: ignore[arg-type]
    res = Results()
    res.expected = 3
    for m in ("a", "poison", "b"):
        writer.submit(Stream(m), row(m, 1), None, res.cb(m, 1))
    writer.start()
    await asyncio.wait_for(res.done.wait(), 5)
    await writer.stop()
    assert isinstance(res.got[("poison", 1)], TypeError)
    assert res.got[("a", 1)] is None and res.got[("b", 1)] is None
    assert repo.log == {"a": [1], "b": [1]}
