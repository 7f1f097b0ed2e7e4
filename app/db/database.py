"""The async engine for SQLite (aiosqlite) or Postgres (asyncpg), chosen by the URL."""
from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def make_engine(url: str, *, busy_timeout_ms: int = 10_000) -> AsyncEngine:
    """Create the engine. SQLite gets WAL, ``synchronous=FULL`` (a commit is on disk before an ack),
    foreign keys and a busy timeout (``busy_timeout_ms``: how long a statement waits for another
    connection's write lock before failing with "database is locked"); Postgres a pool sized for
    REST plus the log writer."""
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
    return create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
