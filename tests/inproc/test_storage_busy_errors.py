"""Which database errors are an overloaded database (``503 storage_busy``, retry) and which are not
(``app.api.errors.storage_busy``)."""
from __future__ import annotations

import sqlite3

from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.api.errors import storage_busy


class PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def wrapped(cls, orig: BaseException):
    return cls("SELECT 1", {}, orig)


def test_busy_or_unreachable_databases_are_storage_busy():
    assert storage_busy(PoolTimeout("QueuePool limit of size 4 overflow 4 reached"))
    assert storage_busy(wrapped(OperationalError, sqlite3.OperationalError("database is locked")))
    assert storage_busy(wrapped(OperationalError, sqlite3.OperationalError("database table is locked")))
    for state in ("08006", "53300", "57P03", "55P03", "40001", "40P01"):
        assert storage_busy(wrapped(OperationalError, PgError(state))), state


def test_other_database_errors_are_not():
    assert not storage_busy(wrapped(IntegrityError, sqlite3.IntegrityError("UNIQUE constraint failed")))
    assert not storage_busy(wrapped(OperationalError, sqlite3.OperationalError("no such table: players")))
    assert not storage_busy(wrapped(ProgrammingError, PgError("42P01")))  # undefined table
    assert not storage_busy(wrapped(OperationalError, PgError("22021")))  # a value (422 elsewhere)
    assert not storage_busy(ValueError("not a database error"))
