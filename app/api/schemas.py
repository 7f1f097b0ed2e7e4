"""Request and response models. Create and Public models are separate so a token hash never
reaches a response."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

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
    name: Text = Field("guest", min_length=1, max_length=32)


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
                       description="a bot kind of the lobby's game (`GET /games`: `bot_kinds`); another: 422 unknown_bot")
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
    version: int | None = Field(None, description="actions applied so far (null while running on another node)")


class AbortRequest(StrictRequest):
    reason: Text = Field("aborted by an admin", max_length=200)
