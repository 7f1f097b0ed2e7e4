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
"""
from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import exc as sa_exc

if TYPE_CHECKING:
    from app.db.repo import MatchWrite

#: matches per fence statement (4 parameters each; SQLite allows 32,766)
FENCE_CHUNK = 500
_INSERT = ("INSERT INTO match_actions (match_id, seq, seat, kind, action, client_seq, deadlines, created_at) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_END = "UPDATE matches SET status = ?, outcome = ?, ended_at = ? WHERE id = ?"


def fence_sql(n: int) -> str:
    """The fence of ``n`` matches as one statement (SQLite 3.35+: ``UPDATE … FROM``, ``RETURNING``):
    ``version = last`` where ``owner_epoch = epoch AND version = first - 1``; parameters id, epoch,
    first, last per match. Returns the ids that matched."""
    values = ",".join(["(?,?,?,?)"] * n)
    return (f"WITH v(id, epoch, first, last) AS (VALUES {values}) "
            "UPDATE matches SET version = v.last FROM v "
            "WHERE matches.id = v.id AND matches.owner_epoch = v.epoch AND matches.version = v.first - 1 "
            "RETURNING matches.id")


def _json(value: Any) -> str:
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
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-log")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

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
                    rows += [(r["match_id"], r["seq"], r["seat"], r["kind"], _json(r["action"]),
                              r["client_seq"], _json(r["deadlines"]), r["created_at"]) for r in g.rows]
                    if g.update:
                        u = g.update
                        conn.execute(_END, (u["status"], _json(u.get("outcome")), u.get("ended_at"), g.match_id))
                if rows:
                    conn.executemany(_INSERT, rows)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return {g.match_id for g in ordered} - accepted

    async def commit(self, ordered: Sequence[MatchWrite]) -> set[str]:
        """Fence, insert and commit ``ordered`` (sorted by match id, consecutive rows) in one
        transaction on the committer's thread. Returns the ids of the refused matches."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self._commit_sync, ordered)
        except sqlite3.IntegrityError as exc:
            raise sa_exc.IntegrityError("commit_batch", None, exc) from exc
        except sqlite3.OperationalError as exc:
            raise sa_exc.OperationalError("commit_batch", None, exc) from exc
        except sqlite3.DatabaseError as exc:
            raise sa_exc.DBAPIError("commit_batch", None, exc) from exc

    def close(self) -> None:
        """Close the connection and stop the thread (waits for a commit in progress)."""
        if self._conn is None:  # never used: no thread to stop
            self._executor.shutdown(wait=True)
            return

        def _close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        self._executor.submit(_close).result()
        self._executor.shutdown(wait=True)
