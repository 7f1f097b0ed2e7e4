"""The configured admin's player row: made idempotently at start, every other admin revoked.

One configured admin at a time (``docs/operations.md``, "Admin token"):

- the admin is the player row whose ``token_hash`` is the configured token's hash, with a random id
  (nothing about the token can be read from the id);
- every other admin row is **revoked** at start: its ``token_hash`` is replaced by ``revoked:`` and
  random hex, which no token hashes to, so the old token stops passing ``/admin/*`` on every node
  that shares the database; the row itself stays (it is named in lobbies, matches and abort records);
- a revoked admin's open lobbies are closed when it hosted them, and its seats in other open lobbies
  are freed; its seats in running matches stay and are played by the deadline defaults;
- the insert is ``INSERT … ON CONFLICT DO NOTHING`` then a read, so several nodes starting together
  with the same token never fail on the unique token hash.
"""
from __future__ import annotations

import secrets
import time
import uuid
from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.tables import lobbies_t, players_t, seats_t

REVOKED_PREFIX = "revoked:"


def _insert(engine: AsyncEngine) -> Any:
    """``INSERT`` with the dialect's ``on_conflict_do_nothing`` (Postgres and SQLite have it)."""
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(players_t)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(players_t)


def _revoked_value() -> str:
    """64 characters like a SHA-256 hex digest, but with a ``:`` no digest contains."""
    return REVOKED_PREFIX + secrets.token_hex(28)


def legacy_admin_id(token_hash: str) -> str:
    """The id the server used to give the admin (derived from the token hash: it leaked it)."""
    return "admin" + token_hash[:27]


async def ensure_admin(engine: AsyncEngine, token_hash: str | None) -> dict[str, Any] | None:
    """Make the configured admin's row (if ``token_hash``) and revoke every other admin.

    ``token_hash``: the SHA-256 hex of the configured admin token, or None when no admin token is
    configured (then every admin is revoked). Returns the admin row, or None. Safe to run on several
    nodes at once: the insert ignores a conflicting row and the row is read back.
    """
    admin = None
    if token_hash is not None:
        async with engine.begin() as conn:
            row = (await conn.execute(select(players_t).where(players_t.c.token_hash == token_hash))).first()
            if row is not None and (row.role != "admin" or row.id == legacy_admin_id(token_hash)):
                # a row made by an older version (id derived from the hash) or, impossibly, a
                # non-admin with this token: retire it so the admin gets a fresh random id
                await _revoke(conn, row.id)
                row = None
            if row is None:
                await conn.execute(
                    _insert(engine).values(id=uuid.uuid4().hex, name="admin", role="admin", token_hash=token_hash,
                                           created_at=time.time()).on_conflict_do_nothing())
        async with engine.connect() as conn:
            row = (await conn.execute(select(players_t).where(players_t.c.token_hash == token_hash))).first()
        admin = dict(row._mapping) if row is not None else None
    async with engine.begin() as conn:
        others = select(players_t.c.id).where(players_t.c.role == "admin",
                                              ~players_t.c.token_hash.startswith(REVOKED_PREFIX))
        if token_hash is not None:
            others = others.where(players_t.c.token_hash != token_hash)
        for (player_id,) in (await conn.execute(others)).all():
            await _revoke(conn, player_id)
    return admin


async def _revoke(conn, player_id: str) -> None:
    await conn.execute(update(players_t).where(players_t.c.id == player_id).values(token_hash=_revoked_value()))
    await conn.execute(update(lobbies_t).where(lobbies_t.c.host_id == player_id, lobbies_t.c.status == "open")
                       .values(status="closed"))
    open_ids = select(lobbies_t.c.id).where(lobbies_t.c.status == "open").scalar_subquery()
    await conn.execute(update(seats_t).where(and_(seats_t.c.player_id == player_id, seats_t.c.lobby_id.in_(open_ids)))
                       .values(player_id=None, bot=None))
