"""Request and response models. Create and Public models are separate so a token hash never
reaches a response."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from app.api.names import DISPLAY_RAW_MAX

#: the most seats a game takes (the lobby's ``seats`` bound; seat numbers are below it)
MAX_SEATS = 16


def check_text(value: str) -> str:
    """Refuse text no database can store: NUL (U+0000; Postgres text cannot hold it) and lone
    surrogates (not encodable as UTF-8). Raises a validation error of type ``invalid_text``, which
    the error handler answers as ``422 invalid_text``."""
    if "\x00" in value:
        raise PydanticCustomError("invalid_text", "NUL characters (U+0000) are not allowed in text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise PydanticCustomError("invalid_text", "text must be valid Unicode (no lone surrogates)") from None
    return value


#: a string the server may store or query with
Text = Annotated[str, AfterValidator(check_text)]


class StrictRequest(BaseModel):
    """Request bodies: strict types (``"2"`` or ``2.0`` is not an int), unknown fields refused."""

    model_config = ConfigDict(strict=True, extra="forbid")


class Error(BaseModel):
    """Every error answer: a stable ``code`` and a message for people (validation errors add
    ``details``: ``[{loc, msg}]``)."""

    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class PlayerCreate(StrictRequest):
    name: Text = Field("guest", min_length=1, max_length=DISPLAY_RAW_MAX,
                       description="1-32 characters once normalised (NFKC, white space collapsed)")


class PlayerPublic(BaseModel):
    id: str
    name: str
    role: str


class PlayerCreated(BaseModel):
    player: PlayerPublic
    token: str = Field(description="Bearer token; shown once, stored only hashed")


class GameInfo(BaseModel):
    id: str
    title: str
    min_seats: int
    max_seats: int
    options_schema: dict[str, Any]
    bot_kinds: list[str]


class LobbyCreate(StrictRequest):
    game: Text = Field(max_length=32)
    seats: int = Field(ge=1, le=MAX_SEATS)
    options: dict[Text, Any] = Field(default_factory=dict, description="the game's options (see its options_schema)")
    loadout: list[Text] | None = Field(None, max_length=15, description="Conquest: owned special ids the host brings")


class SeatPublic(BaseModel):
    seat: int
    player: PlayerPublic | None = None
    bot: str | None = None
    loadout: list[str] | None = Field(None, description="Conquest: the specials this seat brings")


class LobbyPublic(BaseModel):
    id: str
    game: str
    options: dict[str, Any]
    seat_count: int
    host_id: str
    status: Literal["open", "started", "closed"]
    match_id: str | None
    seats: list[SeatPublic]
    created_at: float


class JoinRequest(StrictRequest):
    seat: int | None = Field(None, ge=0, lt=MAX_SEATS, description="a seat number, or none for the first free seat")
    loadout: list[Text] | None = Field(None, max_length=15, description="Conquest: owned special ids you bring")


class BotsRequest(StrictRequest):
    kind: Text = Field("random", min_length=1, max_length=32,
                       description="a bot kind of the lobby's game (`GET /games`: `bot_kinds`); "
                                   "another: 422 unknown_bot")
    count: int | None = Field(None, ge=1, le=MAX_SEATS, description="how many empty seats to fill (default: all)")


class MatchSeat(BaseModel):
    seat: int
    player_id: str | None
    name: str
    bot: str | None


class MatchPublic(BaseModel):
    id: str
    game: str
    status: str
    options: dict[str, Any]
    seats: list[MatchSeat]
    seed_hash: str
    seed: str | None = Field(None, description="revealed when the match has ended")
    outcome: dict[str, Any] | None
    created_at: float
    ended_at: float | None
    version: int | None = Field(None, description="the spectators' version (docs/protocol.md, audiences) when "
                                "the match is in memory on the answering node, else null; admins see the "
                                "match's action count in /admin/matches")


class AbortRequest(StrictRequest):
    reason: Text = Field("aborted by an admin", max_length=200)


# -- accounts, ratings, leaderboards and paging (issue 14) -------------------------------------------
class ClaimRequest(StrictRequest):
    """Claim the asking guest: ``username`` 3-24 letters, digits, ``_-.`` (unique case-insensitively),
    ``password`` 8-128 characters."""

    username: Text = Field(min_length=1, max_length=64)
    password: Text = Field(min_length=1, max_length=1024)


class SignInRequest(StrictRequest):
    username: Text = Field(min_length=1, max_length=64)
    password: Text = Field(min_length=1, max_length=1024)
    label: Text | None = Field(None, max_length=64, description="what this device is, shown in the token list")


class AccountPublic(BaseModel):
    player: PlayerPublic
    username: str | None = Field(description="None while the player is a guest")


class SignedIn(BaseModel):
    player: PlayerPublic
    username: str
    token: str = Field(description="A new bearer token for this device; shown once, stored only hashed")
    token_id: str


class TokenPublic(BaseModel):
    id: str = Field(description="`first` for the player's first token, else the sign-in's id")
    label: str | None
    created_at: float
    current: bool = Field(description="the token this request was made with")


class TokenList(BaseModel):
    items: list[TokenPublic]


class RevokedTokens(BaseModel):
    revoked: int


class RatingPublic(BaseModel):
    """openskill Plackett-Luce: ``mu`` skill, ``sigma`` its uncertainty, ``ordinal`` = mu - 3 sigma."""

    mu: float
    sigma: float
    ordinal: float
    matches: int
    wins: int


class LeaderboardRow(BaseModel):
    rank: int = Field(description="1-based, by ordinal (ties broken by player id)")
    player: PlayerPublic
    username: str | None
    rating: RatingPublic


class LeaderboardPage(BaseModel):
    game: str
    items: list[LeaderboardRow]
    next_cursor: str | None
    me: LeaderboardRow | None = Field(description="the asking player's row, None if never rated in this game")


class RecentMatch(BaseModel):
    match_id: str
    game: str
    seat: int
    rank: int
    seats: int
    ordinal_before: float
    ordinal_after: float
    ended_at: float


class ProfilePublic(BaseModel):
    player: PlayerPublic
    username: str | None
    created_at: float
    ratings: dict[str, RatingPublic] = Field(description="by game id; only games the player was rated in")
    recent_matches: list[RecentMatch] = Field(description="the last rated matches, newest first")


class LobbyPage(BaseModel):
    items: list[LobbyPublic]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; None on the last")


class MatchPage(BaseModel):
    items: list[MatchPublic]
    next_cursor: str | None
