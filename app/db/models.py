"""SQLAlchemy 2 models. The schema is made only by Alembic migrations (``migrations/``)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, String
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
