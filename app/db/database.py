"""The async engine for SQLite (aiosqlite) or Postgres (asyncpg), chosen by the URL."""
from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def make_engine(url: str, *, busy_timeout_ms: int = 10_000, timeout_seconds: float | None = None) -> AsyncEngine:
    """Create the engine. SQLite gets WAL, ``synchronous=FULL`` (a commit is on disk before an ack),
    foreign keys and a busy timeout (``busy_timeout_ms``: how long a statement waits for another
    connection's write lock before failing with "database is locked"); Postgres a pool sized for
    REST plus the log writer.

    ``timeout_seconds`` (Postgres; None: the drivers' defaults, for tools): the bound on opening a
    connection and on each statement (asyncpg's ``timeout`` and ``command_timeout``: the
    statement raises ``TimeoutError``) and on waiting for a pooled connection (``pool_timeout``:
    ``sqlalchemy.exc.TimeoutError``). So a Postgres that hangs (stopped, its host cut off) costs a
    request at most about twice this plus the 2 s SQLAlchemy gives a cancelled connection to close."""
    if url.startswith("sqlite"):
        engine = create_async_engine(url, pool_size=4, max_overflow=4)

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # pragma: no cover - trivial
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cursor.close()

        return engine
    if timeout_seconds is None:
        return create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
    return create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True, pool_timeout=timeout_seconds,
                               connect_args={"timeout": timeout_seconds, "command_timeout": timeout_seconds})
