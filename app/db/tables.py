"""Typed ``Table`` handles of the ORM models, for SQLAlchemy Core queries.

``Model.__table__`` is typed ``FromClause`` by SQLAlchemy (a mapped class may map any selectable), so
``.c``/``insert()``/``update()`` on it do not type-check. Every model here is mapped to a plain
``Table``; this module says so once per table, and the query modules (``app.db.repo``,
``app.db.wallet``, ``app.db.admins``, ``app.db.caps``) import these names instead of each casting.
"""
from __future__ import annotations

from typing import Any, cast

from sqlalchemy import ColumnElement, Table, bindparam

from app.db.models import (
    Account,
    IdempotencyKey,
    LedgerEntry,
    Lobby,
    LobbySeat,
    Match,
    MatchAction,
    MatchRating,
    MatchSettlement,
    OwnedSpecial,
    Player,
    PlayerRating,
    RatingChange,
    Spin,
    Wallet,
)

players_t = cast(Table, Player.__table__)
lobbies_t = cast(Table, Lobby.__table__)
seats_t = cast(Table, LobbySeat.__table__)
matches_t = cast(Table, Match.__table__)
actions_t = cast(Table, MatchAction.__table__)
wallets_t = cast(Table, Wallet.__table__)
owned_t = cast(Table, OwnedSpecial.__table__)
ledger_t = cast(Table, LedgerEntry.__table__)
spins_t = cast(Table, Spin.__table__)
settlements_t = cast(Table, MatchSettlement.__table__)
idempotency_t = cast(Table, IdempotencyKey.__table__)
ratings_t = cast(Table, PlayerRating.__table__)
changes_t = cast(Table, RatingChange.__table__)
marks_t = cast(Table, MatchRating.__table__)
accounts_t = cast(Table, Account.__table__)



def in_list(column: Any, name: str) -> ColumnElement[bool]:
    """``column IN (:name)`` with an expanding bound parameter, for statements built ONCE (module
    constants) and executed with ``{name: [values]}``.

    ``column.in_(values)`` built per query leaves its bound parameter in a reference cycle
    (SQLAlchemy keeps every clone of a parameter in the clone's own ``_cloned_set``): 5 objects of
    cyclic garbage per query, which the cyclic collector must find (``docs/decisions.md``, "Garbage
    collection"). A constant statement is compiled and cached once, and executing it with new
    values makes no cycle. ``name`` must not be a column name of an UPDATE's table (it would be
    taken for a SET value)."""
    return column.in_(bindparam(name, expanding=True))


#: a match that has ended (its status is final), as a constant for the reason given in :func:`in_list`
ENDED = matches_t.c.status.in_(("finished", "aborted"))

__all__ = [
    "ENDED", "in_list",
    "accounts_t", "changes_t", "marks_t", "ratings_t",
    "actions_t", "idempotency_t", "ledger_t", "lobbies_t", "matches_t", "owned_t", "players_t", "seats_t",
    "settlements_t", "spins_t", "wallets_t",
]
