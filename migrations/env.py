"""Alembic environment (async). URL: the ``sqlalchemy.url`` set by app.db.migrate, else settings.

Migrations run under a database lock, so any number of nodes may migrate one database at once (each
waits, then finds the schema at head and does nothing): on Postgres a session advisory lock
(``pg_advisory_lock(MIGRATION_LOCK_KEY)``) held on the migration connection for the whole upgrade,
released by ``pg_advisory_unlock`` or when that connection closes; on SQLite an exclusive ``flock``
on ``<database file>.migrate-lock`` beside the database file.
"""
from __future__ import annotations

import asyncio
import contextlib
import fcntl
from collections.abc import Iterator

from alembic import context
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from app.db.models import Base

config = context.config
target_metadata = Base.metadata

#: the advisory lock key of Bannerfall's migrations (any fixed 64-bit number; "bnfl" in ASCII)
MIGRATION_LOCK_KEY = 0x626E666C


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from app.config import Settings

    return Settings().database_url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def _do_run(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


@contextlib.contextmanager
def sqlite_file_lock(url: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``<database file>.migrate-lock`` for a file SQLite URL (blocks until
    every other migrating process is done); nothing for an in-memory database or another engine."""
    parsed = make_url(url)
    if not parsed.get_backend_name().startswith("sqlite") or parsed.database in (None, "", ":memory:"):
        yield
        return
    with open(f"{parsed.database}.migrate-lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


async def run_migrations_online() -> None:
    engine = create_async_engine(_url())
    try:
        async with engine.connect() as connection:
            postgres = connection.dialect.name == "postgresql"
            if postgres:  # a session lock: it outlives the commit below and is held until unlocked
                await connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
                await connection.commit()
            try:
                await connection.run_sync(_do_run)
                await connection.commit()
            finally:
                if postgres:
                    await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
                    await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    with sqlite_file_lock(_url()):
        asyncio.run(run_migrations_online())
