"""SQLAlchemy 2 models. The schema is made only by Alembic migrations (``migrations/``)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, CheckConstraint, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Player(Base):
    """A player: a guest, an admin or a bot. The bearer token is stored only as its SHA-256 hash."""

    __tablename__ = "players"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(16), default="player")  # player | admin | bot
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    created_at: Mapped[float] = mapped_column(Float)


class Lobby(Base):
    __tablename__ = "lobbies"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    game: Mapped[str] = mapped_column(String(32))
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    seat_count: Mapped[int] = mapped_column(Integer)
    host_id: Mapped[str] = mapped_column(ForeignKey("players.id"))
    status: Mapped[str] = mapped_column(String(16), default="open", index=True)  # open | started | closed
    match_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[float] = mapped_column(Float)


class LobbySeat(Base):
    __tablename__ = "lobby_seats"
    lobby_id: Mapped[str] = mapped_column(ForeignKey("lobbies.id", ondelete="CASCADE"), primary_key=True)
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[str | None] = mapped_column(ForeignKey("players.id"), nullable=True)
    bot: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: the special ids this seat's player brings (Conquest, conquest.md 5); set by create/join
    loadout: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)


class Match(Base):
    """A match. ``seed`` is secret until the match ends (only ``seed_hash`` is public before)."""

    __tablename__ = "matches"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    game: Mapped[str] = mapped_column(String(32), index=True)
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    seat_count: Mapped[int] = mapped_column(Integer)
    #: list of {"player_id", "name", "bot"} by seat
    seats: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    seed: Mapped[str] = mapped_column(String(128))
    seed_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), index=True)  # running | finished | aborted
    lobby_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: deadlines at creation: {"<phase_id>": due_at epoch seconds}
    deadlines: Mapped[dict[str, float]] = mapped_column(JSON)
    outcome: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: the last durable version (the log's highest ``seq``); log writes check and advance it
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: fencing token: raised by every node that takes the match over; log writes are conditional on it
    owner_epoch: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: the node that holds ``owner_epoch`` (informational)
    owner_node: Mapped[str | None] = mapped_column(String(64), nullable=True)


class MatchAction(Base):
    """The action log: one row per accepted action, the source of truth for replay and recovery.

    ``seq`` is the match version after the action. ``kind``: ``act`` (a seat's action),
    ``deadline`` (the server's default for a seat that did not answer), ``abort`` (an admin).
    ``deadlines`` are the absolute due times pending after this action.
    """

    __tablename__ = "match_actions"
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    seat: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kind: Mapped[str] = mapped_column(String(16))
    action: Mapped[dict[str, Any]] = mapped_column(JSON)
    client_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    deadlines: Mapped[dict[str, float]] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Float)


Index("ix_matches_status_game", Match.status, Match.game)
#: one seat per player per lobby (NULL players, i.e. empty seats, are distinct)
Index("uq_lobby_seats_player", LobbySeat.lobby_id, LobbySeat.player_id, unique=True)


# -- the meta-game (issue 12, conquest.md 5): crystals, owned specials, their ledger, spins ----------
class Wallet(Base):
    """A player's crystals (hard currency, never negative) and the commitment to their next spin.

    ``next_spin_seed`` is secret until that spin is made; ``next_spin_seed_hash`` (its SHA-256) is
    public before it (provably fair, like a match's seed)."""

    __tablename__ = "wallets"
    __table_args__ = (CheckConstraint("crystals >= 0", name="ck_wallets_crystals_nonnegative"),)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    crystals: Mapped[int] = mapped_column(BigInteger, default=0)
    next_spin_seed: Mapped[str] = mapped_column(String(64))
    next_spin_seed_hash: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[float] = mapped_column(Float)


class OwnedSpecial(Base):
    """A special a player owns, with the finished matches it still lasts (conquest.md 5, seed §5.1.2)."""

    __tablename__ = "owned_specials"
    __table_args__ = (CheckConstraint("matches_left >= 0", name="ck_owned_specials_nonnegative"),)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    special: Mapped[str] = mapped_column(String(32), primary_key=True)
    matches_left: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[float] = mapped_column(Float)


class LedgerEntry(Base):
    """One change of one balance: ``asset`` is ``crystals`` or a special id (its ``matches_left``).

    ``kind``: ``grant`` (an admin, named in ``actor`` with a ``reason``), ``spin`` (a spin's price),
    ``prize`` (a spin's prize), ``match_use`` (a finished match the special was brought to),
    ``expiry`` (a special reached 0 matches; delta 0, a marker). ``balance_after`` is the balance
    after this row; a balance is always the sum of its ledger's deltas. ``idem_key`` is unique when
    set: a match use is ``use:<player>:<special>:<match>``, so it is counted once across nodes.
    """

    __tablename__ = "ledger"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), index=True)
    asset: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))
    delta: Mapped[int] = mapped_column(BigInteger)
    balance_after: Mapped[int] = mapped_column(BigInteger)
    ref: Mapped[str | None] = mapped_column(String(64), nullable=True)
    actor: Mapped[str | None] = mapped_column(String(64), nullable=True)
    reason: Mapped[str | None] = mapped_column(String(200), nullable=True)
    idem_key: Mapped[str | None] = mapped_column(String(160), nullable=True, unique=True)
    created_at: Mapped[float] = mapped_column(Float)


class Spin(Base):
    """One slot machine spin, with everything needed to re-check it (seed, client seed, reel strip
    and paytable in force)."""

    __tablename__ = "spins"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), index=True)
    seed: Mapped[str] = mapped_column(String(64))
    seed_hash: Mapped[str] = mapped_column(String(64))
    client_seed: Mapped[str] = mapped_column(String(64))
    price: Mapped[int] = mapped_column(Integer)
    strip: Mapped[list[str]] = mapped_column(JSON)
    paytable: Mapped[dict[str, int]] = mapped_column(JSON)
    reels: Mapped[list[str]] = mapped_column(JSON)
    #: ``{"special", "matches"}`` or None (nothing won)
    prize: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)


class MatchSettlement(Base):
    """A finished or aborted match whose specials' lifetimes have been counted (exactly once)."""

    __tablename__ = "match_settlements"
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    uses: Mapped[int] = mapped_column(Integer, default=0)
    settled_at: Mapped[float] = mapped_column(Float)
