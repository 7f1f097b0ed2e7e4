"""Request and response models. Create and Public models are separate so a token hash never
reaches a response."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Error(BaseModel):
    code: str
    message: str


class PlayerCreate(BaseModel):
    name: str = Field("guest", min_length=1, max_length=32)


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


class LobbyCreate(BaseModel):
    game: str
    seats: int = Field(ge=1, le=16)
    options: dict[str, Any] = Field(default_factory=dict)
    loadout: list[str] | None = Field(None, max_length=15, description="Conquest: owned special ids the host brings")


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


class JoinRequest(BaseModel):
    seat: int | None = Field(None, ge=0, description="a seat number, or none for the first free seat")
    loadout: list[str] | None = Field(None, max_length=15, description="Conquest: owned special ids you bring")


class BotsRequest(BaseModel):
    kind: Literal["random", "smart"] = "random"
    count: int | None = Field(None, ge=1, description="how many empty seats to fill (default: all)")


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


class AbortRequest(BaseModel):
    reason: str = Field("aborted by an admin", max_length=200)
