"""Which errors are an overloaded database (``503 storage_busy``), storage out of reach (``503
storage_unavailable``), and which are neither (``app.api.errors.storage_failure``)."""
from __future__ import annotations

import sqlite3

from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.api.errors import storage_busy, storage_failure


class PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def wrapped(cls, orig: BaseException):
    return cls("SELECT 1", {}, orig)


def test_busy_databases_are_storage_busy():
    assert storage_failure(PoolTimeout("QueuePool limit of size 4 overflow 4 reached")) == "storage_busy"
    assert storage_failure(wrapped(OperationalError, sqlite3.OperationalError("database is locked"))) == "storage_busy"
    assert storage_failure(wrapped(OperationalError, sqlite3.OperationalError("database table is locked"))) \
        == "storage_busy"
    for state in ("53300", "55P03", "40001", "40P01"):
        assert storage_failure(wrapped(OperationalError, PgError(state))) == "storage_busy", state


def test_storage_out_of_reach_is_storage_unavailable():
    """What the outages raised as 500s: asyncpg's refused connection and its connect and statement
    timeouts come unwrapped (``ConnectionRefusedError``, ``TimeoutError``), Redis errors, a
    Postgres shut down or unreachable, SQLite unable to write (a full disk)."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeout

    for exc in (ConnectionRefusedError(111, "refused"), TimeoutError(), OSError(113, "no route"),
                RedisConnectionError("Error 111 connecting"), RedisTimeout("Timeout reading from socket")):
        assert storage_failure(exc) == "storage_unavailable", exc
    for state in ("08006", "08001", "57P01", "57P03"):
        assert storage_failure(wrapped(OperationalError, PgError(state))) == "storage_unavailable", state
    for text in ("database or disk is full", "disk I/O error", "unable to open database file",
                 "attempt to write a readonly database"):
        assert storage_failure(wrapped(OperationalError, sqlite3.OperationalError(text))) == "storage_unavailable"
    assert storage_busy(TimeoutError())  # both are answered 503


def test_other_database_errors_are_not():
    assert not storage_busy(wrapped(IntegrityError, sqlite3.IntegrityError("UNIQUE constraint failed")))
    assert not storage_busy(wrapped(OperationalError, sqlite3.OperationalError("no such table: players")))
    assert not storage_busy(wrapped(ProgrammingError, PgError("42P01")))  # undefined table
    assert not storage_busy(wrapped(OperationalError, PgError("22021")))  # a value (422 elsewhere)
    assert not storage_busy(ValueError("not a database error"))
    assert storage_failure(KeyError("a bug")) is None


def test_every_503_refusal_says_when_to_retry():
    """A ``503`` raised as an ``ApiError`` by any route (the admin abort's ``match_moved`` and
    ``abort_pending``, the slot machine's ``busy``) carries ``Retry-After``; other refusals only when
    they give one."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from app.api import errors

    app = FastAPI()
    errors.install(app)

    @app.get("/moved")
    async def moved():
        raise errors.ApiError(503, "match_moved", "the match changed node while aborting")

    @app.get("/busy")
    async def busy():
        raise errors.ApiError(503, "busy", "too many at once", retry_after=5)

    @app.get("/conflict")
    async def conflict():
        raise errors.ApiError(409, "lobby_not_open", "no")

    with TestClient(app) as client:
        moved_answer = client.get("/moved")
        assert moved_answer.status_code == 503 and moved_answer.json()["code"] == "match_moved"
        assert moved_answer.headers["Retry-After"] == str(errors.STORAGE_UNAVAILABLE_RETRY_SECONDS)
        assert client.get("/busy").headers["Retry-After"] == "5"
        assert "Retry-After" not in client.get("/conflict").headers
