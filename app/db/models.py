"""SQLAlchemy 2 models. The schema is made only by Alembic migrations (``migrations/``)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, CheckConstraint, Float, ForeignKey, Index, Integer, String
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
    #: its match may change ratings (quick play, a rematch of a rated match, a lobby made ``rated``);
    #: it does only when every seat is an account (``app.db.ratings``, docs/decisions.md)
    rated: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


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
    #: the game's rules version the match started under (``GameInfo.rules_version``): only an engine of
    #: that version replays its log (``app.games.versions``). The default is for nodes older than the
    #: column during a rolling upgrade (they play version 1); every node since writes it
    rules_version: Mapped[int] = mapped_column(Integer, server_default="1")


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


# -- the meta-game (conquest.md 5): crystals, owned specials, their ledger, spins ----------
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


class IdempotencyKey(Base):
    """The first answer to a request that spends or grants, sent with an ``Idempotency-Key`` header
    (docs/protocol.md, "Idempotency keys"; the IETF draft "The Idempotency-Key HTTP Header Field").

    Keyed by the asking player and the key: written in the transaction that spends or grants, so a
    repeat (on any node) finds it and gets ``response`` instead of a second effect. ``fingerprint``:
    SHA-256 of the method, path and body; the same key with another fingerprint is refused.
    ``response``: what the operation returned (JSON). A row older than the retention is replaced."""

    __tablename__ = "idempotency_keys"
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    response: Mapped[Any] = mapped_column(JSON, nullable=True)
    created_at: Mapped[float] = mapped_column(Float, index=True)


class MatchSettlement(Base):
    """A finished or aborted match whose specials' lifetimes have been counted (exactly once)."""

    __tablename__ = "match_settlements"
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    uses: Mapped[int] = mapped_column(Integer, default=0)
    settled_at: Mapped[float] = mapped_column(Float)


# -- accounts, tokens and ratings ---------------------------------------------------------
class PlayerToken(Base):
    """A bearer token of a player beyond its first one (``players.token_hash``): one row per signed-in
    device, stored only as the SHA-256 of the token. Revoking deletes the row."""

    __tablename__ = "player_tokens"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: what the client said it is (``user agent`` style, checked like a name), for the token list
    label: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[float] = mapped_column(Float)


class Account(Base):
    """A claimed player: a username (unique case-insensitively through ``username_key``, its NFKC,
    case-folded, confusable-folded form) and an argon2 password hash (never the password)."""

    __tablename__ = "accounts"
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    username: Mapped[str] = mapped_column(String(32), index=True)  # sign-in by the exact name first
    username_key: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class PlayerRating(Base):
    """A player's openskill rating in one game (Plackett-Luce; ``ordinal`` = mu - 3 sigma orders the
    leaderboard). A player without a row has the default rating (mu 25, sigma 25/3)."""

    __tablename__ = "ratings"
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    game: Mapped[str] = mapped_column(String(32), primary_key=True)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    ordinal: Mapped[float] = mapped_column(Float)
    matches: Mapped[int] = mapped_column(Integer, default=0)
    wins: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[float] = mapped_column(Float)
    #: rated matches counted by their weight (the repeated-opponent rule): a rating leaves
    #: provisional (and enters the leaderboard) at ``RATING_PROVISIONAL_MATCHES``
    weighted_matches: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")


class RatingChange(Base):
    """One player's rating change caused by one finished match; ``(match_id, player_id)`` is the
    primary key, so a match changes a player's rating at most once."""

    __tablename__ = "rating_changes"
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True,
                                           index=True)
    game: Mapped[str] = mapped_column(String(32))
    seat: Mapped[int] = mapped_column(Integer)
    rank: Mapped[int] = mapped_column(Integer)
    mu_before: Mapped[float] = mapped_column(Float)
    sigma_before: Mapped[float] = mapped_column(Float)
    mu_after: Mapped[float] = mapped_column(Float)
    sigma_after: Mapped[float] = mapped_column(Float)
    ordinal_after: Mapped[float] = mapped_column(Float)
    created_at: Mapped[float] = mapped_column(Float)
    #: 0-1: how much of openskill's change was applied (the repeated-opponent rule)
    weight: Mapped[float] = mapped_column(Float, default=1.0, server_default="1")


class MatchRating(Base):
    """A finished or aborted match that the ratings have seen (rated, or skipped with a reason)."""

    __tablename__ = "match_ratings"
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    rated: Mapped[int] = mapped_column(Integer, default=0)  # how many players' ratings changed
    rated_at: Mapped[float] = mapped_column(Float)


Index("ix_ratings_leaderboard", PlayerRating.game, PlayerRating.ordinal, PlayerRating.player_id)
Index("ix_matches_created", Match.created_at, Match.id)
Index("ix_lobbies_created", Lobby.created_at, Lobby.id)
