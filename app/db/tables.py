"""Typed ``Table`` handles of the ORM models, for SQLAlchemy Core queries.

``Model.__table__`` is typed ``FromClause`` by SQLAlchemy (a mapped class may map any selectable), so
``.c``/``insert()``/``update()`` on it do not type-check. Every model here is mapped to a plain
``Table``; this module says so once per table, and the query modules (``app.db.repo``,
``app.db.wallet``, ``app.db.admins``, ``app.db.caps``) import these names instead of each casting.
"""
from __future__ import annotations

from typing import cast

from sqlalchemy import Table

from app.db.models import (
    Account,
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
ratings_t = cast(Table, PlayerRating.__table__)
changes_t = cast(Table, RatingChange.__table__)
marks_t = cast(Table, MatchRating.__table__)
accounts_t = cast(Table, Account.__table__)

__all__ = [
    "accounts_t", "changes_t", "marks_t", "ratings_t",
    "actions_t", "ledger_t", "lobbies_t", "matches_t", "owned_t", "players_t", "seats_t", "settlements_t",
    "spins_t", "wallets_t",
]
