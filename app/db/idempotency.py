"""Idempotency keys in the database (docs/protocol.md, "Idempotency keys"; IETF draft "The
Idempotency-Key HTTP Header Field"): the first answer to a request that spends or grants, kept per
asking player and key, written in the transaction that spends or grants.

A repository method that spends or grants takes an :class:`Idempotency` and, as the **first**
statement of its transaction, calls :func:`claim`: it inserts the key's row (``ON CONFLICT DO
NOTHING``). A concurrent request with the same key blocks on that insert until the first commits
(Postgres waits on the unique key; SQLite on its write lock), then finds the row and returns its
answer, so a key spends once across nodes. The method then does its work and calls
:func:`remember` with its result before the commit. A failed request rolls back its row too: its
key may be sent again.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.tables import idempotency_t


class IdempotencyKeyReused(Exception):
    """The key was used before by this player for another request (another path or body);
    nothing was changed."""


@dataclass
class Idempotency:
    """One request's key: ``player_id`` (who asks), ``key`` (the header's value, 1-255 characters),
    ``fingerprint`` (:func:`fingerprint` of the request), ``ttl_seconds`` (how long a key is kept).
    ``replayed`` is set by :func:`claim` when the answer is the stored one."""

    player_id: str
    key: str
    fingerprint: str
    ttl_seconds: float
    replayed: bool = False


def fingerprint(method: str, path: str, body: Any) -> str:
    """SHA-256 (hex) of the request: method, path and the body as canonical JSON (sorted keys)."""
    text = json.dumps({"method": method.upper(), "path": path, "body": body}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _stored(row: Any, idem: Idempotency) -> Any:
    if row.fingerprint != idem.fingerprint:
        raise IdempotencyKeyReused(f"Idempotency-Key {idem.key!r} was used for another request")
    idem.replayed = True
    return row.response


async def lookup(engine: AsyncEngine, idem: Idempotency) -> tuple[bool, Any]:
    """A read before any work: ``(True, stored answer)`` if the key has a live answer, else
    ``(False, None)``. Raises :class:`IdempotencyKeyReused`."""
    cut = time.time() - idem.ttl_seconds
    async with engine.connect() as conn:
        row = (await conn.execute(select(idempotency_t).where(
            idempotency_t.c.player_id == idem.player_id, idempotency_t.c.key == idem.key,
            idempotency_t.c.created_at >= cut))).first()
    if row is None or row.response is None:
        return False, None
    return True, _stored(row, idem)


async def claim(conn: AsyncConnection, idem: Idempotency | None) -> tuple[bool, Any]:
    """Take the key in the caller's transaction (its first statement): ``(False, None)`` when the key
    is new (go on, then :func:`remember`), ``(True, stored answer)`` when a request with it already
    committed (return that; change nothing). An expired row of the key (older than ``ttl_seconds``)
    is replaced. Raises :class:`IdempotencyKeyReused` (the caller rolls back). ``idem`` None: no key,
    ``(False, None)``."""
    if idem is None:
        return False, None
    now = time.time()
    await conn.execute(delete(idempotency_t).where(
        idempotency_t.c.player_id == idem.player_id, idempotency_t.c.key == idem.key,
        idempotency_t.c.created_at < now - idem.ttl_seconds))
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    res = await conn.execute(insert(idempotency_t).values(
        player_id=idem.player_id, key=idem.key, fingerprint=idem.fingerprint, response=None, created_at=now,
    ).on_conflict_do_nothing(index_elements=["player_id", "key"]))
    if res.rowcount == 1:
        return False, None
    row = (await conn.execute(select(idempotency_t).where(
        idempotency_t.c.player_id == idem.player_id, idempotency_t.c.key == idem.key))).one()
    return True, _stored(row, idem)


async def prune(engine: AsyncEngine, older_than: float) -> int:
    """Delete every kept answer made before ``older_than`` (a time): keys past their retention.
    Returns how many were deleted."""
    async with engine.begin() as conn:
        res = await conn.execute(delete(idempotency_t).where(idempotency_t.c.created_at < older_than))
    return res.rowcount


async def remember(conn: AsyncConnection, idem: Idempotency | None, answer: Any) -> None:
    """Store ``answer`` (JSON-able) as the key's answer, in the transaction that made it."""
    if idem is None:
        return
    await conn.execute(update(idempotency_t).where(
        idempotency_t.c.player_id == idem.player_id, idempotency_t.c.key == idem.key).values(response=answer))


__all__ = ["Idempotency", "IdempotencyKeyReused", "claim", "fingerprint", "lookup", "prune", "remember"]
