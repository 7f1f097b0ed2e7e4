"""Which errors mean "storage failed" (the database or Redis), for the REST answers and for the
background loops' logs: a storage outage is one warning line, not a traceback per attempt."""
from __future__ import annotations

import logging

from sqlalchemy.exc import DBAPIError

#: Postgres SQLSTATEs of an overloaded database: insufficient resources (53), lock not available
#: (55P03), serialization failure and deadlock (40001, 40P01: the transaction was rolled back)
BUSY_SQLSTATES = ("53", "55P03", "40001", "40P01")
#: ... of a database out of reach: connection exceptions (08), operator intervention (57P01-57P03:
#: shut down, crashed, starting)
UNAVAILABLE_SQLSTATES = ("08", "57P01", "57P02", "57P03")
#: sqlite3 messages of a database that cannot be written at all (a full disk, an I/O error, a file
#: that cannot be opened or is read-only)
SQLITE_UNAVAILABLE = ("disk is full", "disk i/o error", "unable to open", "readonly database")


def storage_failure(exc: BaseException) -> str | None:
    """The 503 code of an error that says storage failed rather than that the request is wrong or
    the server has a bug; None for any other error. The statement failed, so its transaction was
    rolled back: nothing of it was changed (except a commit whose answer was lost, see
    ``docs/decisions.md``, "Outages").

    - ``storage_busy`` (overloaded): SQLAlchemy's pool had no connection in time
      (``sqlalchemy.exc.TimeoutError``), SQLite's write lock not had within the busy timeout
      ("database is locked", "database table is locked"), a Postgres SQLSTATE of :data:`BUSY_SQLSTATES`;
    - ``storage_unavailable`` (out of reach): a connection refused, reset or timed out (``OSError``,
      ``TimeoutError``: asyncpg's connect and statement timeouts raise it unwrapped), any Redis error,
      a Postgres SQLSTATE of :data:`UNAVAILABLE_SQLSTATES`, a connection the pool invalidated, SQLite
      unable to write (:data:`SQLITE_UNAVAILABLE`)."""
    from redis.exceptions import RedisError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    if isinstance(exc, PoolTimeout):
        return "storage_busy"
    if isinstance(exc, (RedisError, OSError, TimeoutError)):
        return "storage_unavailable"
    if not isinstance(exc, DBAPIError):
        return None
    if exc.connection_invalidated:
        return "storage_unavailable"
    orig = exc.orig
    state = str(getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None) or "")
    if state.startswith(BUSY_SQLSTATES):
        return "storage_busy"
    if state.startswith(UNAVAILABLE_SQLSTATES):
        return "storage_unavailable"
    if type(orig).__name__ == "OperationalError" and not state:  # sqlite3's
        text = str(orig).lower()
        if "locked" in text or "busy" in text:
            return "storage_busy"
        if any(m in text for m in SQLITE_UNAVAILABLE):
            return "storage_unavailable"
    if isinstance(getattr(orig, "__cause__", None), (ConnectionError, TimeoutError)):
        return "storage_unavailable"
    return None


def log_failure(logger: logging.Logger, exc: BaseException, message: str, *args: object) -> None:
    """Log a background task's failure: one warning line naming the error when storage failed
    (an outage repeats it every round), else an error with its traceback (a bug)."""
    if storage_failure(exc) is not None:
        logger.warning(message + " (storage unavailable: %s)", *args, type(exc).__name__)
    else:
        logger.error(message, *args, exc_info=exc)
