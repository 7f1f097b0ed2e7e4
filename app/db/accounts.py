"""Accounts and bearer tokens. Every query about them lives here.

A player's first token stays in ``players.token_hash`` (guests, bots and the configured admin are
made that way, and :mod:`app.db.admins` revokes an admin by replacing it). Every later token (a
sign-in from another device) is a row of ``player_tokens``. Both are SHA-256 hashes of 256-bit
random tokens. Revoking the first token replaces ``players.token_hash`` by a ``revoked:`` value no
token hashes to (as :mod:`app.db.admins` does); revoking a later one deletes its row.
"""
from __future__ import annotations

import time
import uuid
from typing import Any, cast

from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.admins import REVOKED_PREFIX, _revoked_value
from app.db.idempotency import Idempotency, remember
from app.db.idempotency import claim as claim_key
from app.db.models import Account, Player, PlayerToken
from app.db.tables import in_list

players_t = cast(Table, Player.__table__)
tokens_t = cast(Table, PlayerToken.__table__)
accounts_t = cast(Table, Account.__table__)

#: built once: an ``in_()`` built per query leaves cyclic garbage (``app.db.tables.in_list``)
_USERNAMES = select(accounts_t.c.player_id, accounts_t.c.username).where(in_list(accounts_t.c.player_id, "ids"))

#: the id the token list gives a player's first token (``players.token_hash``)
FIRST_TOKEN_ID = "first"


class AccountRefused(Exception):
    """``code``: ``already_claimed`` (the player has an account), ``username_taken``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class AccountsRepository:
    """Data access for accounts and tokens over one :class:`AsyncEngine`. Methods return plain dicts."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def player_by_token_hash(self, token_hash: str) -> dict[str, Any] | None:
        """The player whose first token or one of whose later tokens hashes to ``token_hash``."""
        async with self.engine.connect() as conn:
            r = (await conn.execute(select(players_t).where(players_t.c.token_hash == token_hash))).first()
            if r is None:
                r = (await conn.execute(select(players_t).join(tokens_t, tokens_t.c.player_id == players_t.c.id)
                                        .where(tokens_t.c.token_hash == token_hash))).first()
        return dict(r._mapping) if r is not None else None

    async def account(self, player_id: str) -> dict[str, Any] | None:
        async with self.engine.connect() as conn:
            r = (await conn.execute(select(accounts_t).where(accounts_t.c.player_id == player_id))).first()
        return dict(r._mapping) if r is not None else None

    async def account_by_key(self, username_key: str) -> dict[str, Any] | None:
        async with self.engine.connect() as conn:
            r = (await conn.execute(select(accounts_t).where(accounts_t.c.username_key == username_key))).first()
        return dict(r._mapping) if r is not None else None

    async def account_for_sign_in(self, username: str, username_key: str) -> dict[str, Any] | None:
        """The account a sign-in names: the one whose username is exactly ``username`` (as stored,
        NFKC), else the one whose key is ``username_key``. The exact name comes first so that an
        account whose username came to look like an older one's (migration 0007: it kept a key of
        its own) still signs in by its name; new usernames never share a key."""
        async with self.engine.connect() as conn:
            r = (await conn.execute(select(accounts_t).where(accounts_t.c.username == username))).first()
            if r is None:
                r = (await conn.execute(select(accounts_t).where(accounts_t.c.username_key == username_key))).first()
        return dict(r._mapping) if r is not None else None

    async def usernames(self, player_ids: list[str]) -> dict[str, str]:
        if not player_ids:
            return {}
        async with self.engine.connect() as conn:
            rows = (await conn.execute(_USERNAMES, {"ids": player_ids})).all()
        return {r.player_id: r.username for r in rows}

    async def claim(self, player_id: str, username: str, username_key: str, password_hash: str,
                    idem: Idempotency | None = None) -> dict[str, Any]:
        """Give the player an account. The unique ``username_key`` decides a race between two claims
        of one name (one wins, the other gets ``username_taken``); the primary key decides two claims
        of one player (``already_claimed``). Raises :class:`AccountRefused`. ``idem``: the request's
        idempotency key (:mod:`app.db.idempotency`): a repeat returns the first claim's row (without
        its password hash) and changes nothing; raises ``IdempotencyKeyReused``."""
        now = time.time()
        row = {"player_id": player_id, "username": username, "username_key": username_key,
               "password_hash": password_hash, "created_at": now, "updated_at": now}
        try:
            async with self.engine.begin() as conn:
                replayed, stored = await claim_key(conn, idem)
                if replayed:
                    return dict(stored)
                await conn.execute(insert(accounts_t), row)
                await remember(conn, idem, {k: v for k, v in row.items() if k != "password_hash"})
        except IntegrityError:
            if await self.account(player_id) is not None:
                raise AccountRefused("already_claimed", "this player has an account already") from None
            raise AccountRefused("username_taken", "that username is taken") from None
        return row

    async def set_password_hash(self, player_id: str, password_hash: str) -> None:
        """Store a re-hashed password (argon2 parameters raised since it was made)."""
        async with self.engine.begin() as conn:
            await conn.execute(update(accounts_t).where(accounts_t.c.player_id == player_id)
                               .values(password_hash=password_hash, updated_at=time.time()))

    async def add_token(self, player_id: str, token_hash: str, label: str | None) -> dict[str, Any]:
        """A new token for the player (sign-in). Returns its row (never the token)."""
        row = {"id": uuid.uuid4().hex, "player_id": player_id, "token_hash": token_hash, "label": label,
               "created_at": time.time()}
        async with self.engine.begin() as conn:
            await conn.execute(insert(tokens_t), row)
        return row

    async def tokens(self, player_id: str) -> list[dict[str, Any]]:
        """The player's live tokens, oldest first: ``{id, label, created_at, token_hash}`` (the first
        token as id :data:`FIRST_TOKEN_ID` while it is not revoked)."""
        async with self.engine.connect() as conn:
            p = (await conn.execute(select(players_t).where(players_t.c.id == player_id))).first()
            rows = (await conn.execute(select(tokens_t).where(tokens_t.c.player_id == player_id)
                                       .order_by(tokens_t.c.created_at, tokens_t.c.id))).all()
        out = []
        if p is not None and not p.token_hash.startswith(REVOKED_PREFIX):
            out.append({"id": FIRST_TOKEN_ID, "label": "first device", "created_at": p.created_at,
                        "token_hash": p.token_hash})
        out += [{"id": r.id, "label": r.label, "created_at": r.created_at, "token_hash": r.token_hash} for r in rows]
        return out

    async def revoke_token(self, player_id: str, token_id: str) -> bool:
        """Revoke one of the player's tokens. Returns whether it was live."""
        async with self.engine.begin() as conn:
            if token_id == FIRST_TOKEN_ID:
                res = await conn.execute(update(players_t).where(
                    players_t.c.id == player_id, ~players_t.c.token_hash.startswith(REVOKED_PREFIX))
                    .values(token_hash=_revoked_value()))
            else:
                res = await conn.execute(delete(tokens_t).where(tokens_t.c.player_id == player_id,
                                                                tokens_t.c.id == token_id))
        return res.rowcount == 1

    async def revoke_all(self, player_id: str) -> int:
        """Sign out everywhere: every token of the player stops working, in one transaction.
        Returns how many were live."""
        async with self.engine.begin() as conn:
            first = await conn.execute(update(players_t).where(
                players_t.c.id == player_id, ~players_t.c.token_hash.startswith(REVOKED_PREFIX))
                .values(token_hash=_revoked_value()))
            rest = await conn.execute(delete(tokens_t).where(tokens_t.c.player_id == player_id))
        return first.rowcount + rest.rowcount
