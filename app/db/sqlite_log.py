"""The group commit on SQLite in one trip to one thread (``Repository.commit_batch``).

Through SQLAlchemy and aiosqlite every statement of a commit costs several hand-offs between the
event loop and aiosqlite's thread (a cursor, the statement, its rows, BEGIN, COMMIT), each with its
SQLAlchemy bookkeeping on the event loop. Here the log writer's whole transaction (fence, end-of-match
updates, inserts, commit) runs as one function on a dedicated thread that owns its own ``sqlite3``
connection to the same database file (WAL, ``synchronous=FULL``, foreign keys, busy timeout: the
pragmas of ``app.db.database.make_engine``). Measured in ``docs/benchmarks/server.md`` ("Where the
time goes").

Same contract as the SQLAlchemy path: the rows land in one transaction or none; a match whose fence
fails is refused (its rows not inserted); driver errors come out as SQLAlchemy's
``IntegrityError``/``OperationalError``/``DBAPIError`` so the log writer's retry rules apply unchanged.

Other short write transactions that must not hold SQLite's write lock across event-loop turns run
here too, serialized with the group commits (:meth:`SqliteLogCommitter.run`: rating a match,
``app.db.ratings``): through SQLAlchemy and aiosqlite each of their statements is an await, and
from their first write to COMMIT the group commit could not take the lock (the p99 ack).
"""
from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Sequence
from functools import partial
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import StaticPool

if TYPE_CHECKING:
    from app.db.repo import MatchWrite

#: matches per fence statement (4 parameters each; SQLite allows 32,766)
FENCE_CHUNK = 500
_INSERT = ("INSERT INTO match_actions (match_id, seq, seat, kind, action, client_seq, deadlines, created_at) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_END = "UPDATE matches SET status = ?, outcome = ?, ended_at = ? WHERE id = ?"


T = TypeVar("T")


def fence_sql(n: int) -> str:
    """The fence of ``n`` matches as one statement (SQLite 3.35+: ``UPDATE … FROM``, ``RETURNING``):
    ``version = last`` where ``owner_epoch = epoch AND version = first - 1``; parameters id, epoch,
    first, last per match. Returns the ids that matched."""
    values = ",".join(["(?,?,?,?)"] * n)
    return (f"WITH v(id, epoch, first, last) AS (VALUES {values}) "
            "UPDATE matches SET version = v.last FROM v "
            "WHERE matches.id = v.id AND matches.owner_epoch = v.epoch AND matches.version = v.first - 1 "
            "RETURNING matches.id")


def json_text(value: Any) -> str:
    """A JSON column's text (SQLAlchemy's ``JSON`` stores None as ``null`` too)."""
    return orjson.dumps(value).decode()


class SqliteLogCommitter:
    """Writes group commits to the SQLite file ``path`` from one dedicated thread.

    :meth:`commit` has the semantics of :meth:`app.db.repo.Repository.commit_batch` for writes that
    are already checked (consecutive ``seq``) and sorted. Raises SQLAlchemy's ``IntegrityError``
    (a row collides), ``OperationalError`` (locked, I/O) or ``DBAPIError``; nothing is committed then."""

    def __init__(self, path: str, busy_timeout_ms: int = 10_000) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        #: (function, its asyncio future, the future's loop), or None to stop the thread
        self._jobs: SimpleQueue[tuple[Callable[[], Any], asyncio.Future, asyncio.AbstractEventLoop] | None] = \
            SimpleQueue()
        self._thread: threading.Thread | None = None
        self._conn: sqlite3.Connection | None = None
        #: a sync SQLAlchemy engine over ``_conn`` for :meth:`run` (made at its first use)
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def _run_thread(self) -> None:
        """The committer thread: runs each job and hands its result to the job's loop. (A plain
        thread and queue rather than an executor: no ``concurrent.futures`` future, condition and
        lock per commit, which were cyclic garbage for the event loop's collector.)"""
        while (job := self._jobs.get()) is not None:
            fn, future, loop = job
            try:
                result, error = fn(), None
            except BaseException as exc:  # handed to the waiting coroutine
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(_resolve, future, result, error)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass
            del job, fn, future, result, error

    def _submit(self, fn: Callable[[], Any]) -> asyncio.Future:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run_thread, name="sqlite-log", daemon=True)
            self._thread.start()
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((fn, future, loop))
        return future

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
            self._conn = conn
        return self._conn

    def _commit_sync(self, ordered: Sequence[MatchWrite]) -> set[str]:
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                accepted: set[str] = set()
                for start in range(0, len(ordered), FENCE_CHUNK):
                    chunk = ordered[start:start + FENCE_CHUNK]
                    params: list[Any] = []
                    for g in chunk:
                        params += (g.match_id, g.epoch, g.rows[0]["seq"], g.rows[-1]["seq"])
                    accepted.update(r[0] for r in conn.execute(fence_sql(len(chunk)), params).fetchall())
                rows = []
                for g in ordered:
                    if g.match_id not in accepted:
                        continue
                    rows += [(r["match_id"], r["seq"], r["seat"], r["kind"], json_text(r["action"]),
                              r["client_seq"], json_text(r["deadlines"]), r["created_at"]) for r in g.rows]
                    if g.update:
                        u = g.update
                        conn.execute(_END, (u["status"], json_text(u.get("outcome")), u.get("ended_at"), g.match_id))
                if rows:
                    conn.executemany(_INSERT, rows)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return {g.match_id for g in ordered} - accepted

    def _sync_engine(self) -> Engine:
        """A sync SQLAlchemy engine whose one connection is the committer's own (``StaticPool``,
        ``creator``), used only on the committer's thread under ``_lock``. The ``sqlite3``
        connection is in autocommit mode (``isolation_level=None``: the driver never begins a
        transaction by itself), so the engine's ``begin`` emits ``BEGIN IMMEDIATE``: the transaction
        takes the write lock at once (no lock upgrade that could fail with "database is locked"
        midway) and SQLAlchemy's COMMIT/ROLLBACK end it (``sqlite3`` commits or rolls back an
        explicit transaction even in autocommit mode)."""
        if self._engine is None:
            engine = create_engine("sqlite://", creator=self._connection, poolclass=StaticPool)

            @event.listens_for(engine, "begin")
            def _begin_immediate(conn: Connection) -> None:
                conn.exec_driver_sql("BEGIN IMMEDIATE")

            self._engine = engine
        return self._engine

    def _run_sync(self, fn: Callable[[Connection], T]) -> T:
        with self._lock:
            with self._sync_engine().begin() as conn:
                return fn(conn)

    async def run(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(connection)`` (a sync SQLAlchemy :class:`~sqlalchemy.Connection`) in one
        transaction on the committer's thread and connection, between two group commits; commit
        if it returns, roll back if it raises. Returns its result. SQLite's write lock is held only
        while ``fn`` runs (synchronously: no event-loop turns), and the group commits never wait
        for it on the lock: they run before or after it on the same thread. ``fn`` must be short
        (the group commits queued behind it wait) and must not end the transaction itself. Errors come out as SQLAlchemy
        raises them (``IntegrityError``, ``OperationalError``, ...)."""
        return await self._submit(partial(self._run_sync, fn))

    async def commit(self, ordered: Sequence[MatchWrite]) -> set[str]:
        """Fence, insert and commit ``ordered`` (sorted by match id, consecutive rows) in one
        transaction on the committer's thread. Returns the ids of the refused matches."""
        try:
            return await self._submit(partial(self._commit_sync, ordered))
        except sqlite3.IntegrityError as exc:
            raise sa_exc.IntegrityError("commit_batch", None, exc) from exc
        except sqlite3.OperationalError as exc:
            raise sa_exc.OperationalError("commit_batch", None, exc) from exc
        except sqlite3.DatabaseError as exc:
            raise sa_exc.DBAPIError("commit_batch", None, exc) from exc

    def close(self) -> None:
        """Stop the thread after the jobs already queued (a commit in progress finishes) and close
        the connection. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()
        with self._lock:
            engine, self._engine = self._engine, None
            if engine is not None:
                engine.dispose()  # closes the pool's hold on the connection (closed below in any case)
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _resolve(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():  # the waiter gave up (a timeout): the commit's outcome is decided by the fence
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
