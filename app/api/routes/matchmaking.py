"""Quick play (issue 14 item 2): matchmaking tickets. A player queues with ``POST``, learns of the
match with the long-poll ``GET …?wait=`` and may cancel while the ticket waits (docs/protocol.md,
"Quick play")."""
from __future__ import annotations

import time
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field, ValidationError

from app.api.deps import PlayerDep, RepoDep, SettingsDep
from app.api.errors import ApiError, not_found, responses
from app.api.limits import CAP_RETRY_SECONDS, LimitExceeded
from app.api.schemas import MAX_SEATS, StrictRequest, Text
from app.db.caps import running_bot_matches_hosted_by
from app.games import registry
from app.matchmaking.service import MatchmakingService, pool_key, rating_of
from app.matchmaking.store import TicketExists
from app.meta.loadouts import RESERVED_OPTIONS
from app.runtime.bots import bot_class

router = APIRouter(prefix="/matchmaking", tags=["matchmaking"])

TicketId = Annotated[Text, Path(max_length=64, description="a ticket id")]
#: the longest long-poll, seconds
MAX_WAIT = 30.0


def get_matchmaking(request: Request) -> MatchmakingService:
    return request.app.state.matchmaking


MatchmakingDep = Annotated[MatchmakingService, Depends(get_matchmaking)]


class TicketCreate(StrictRequest):
    game: Text = Field(max_length=32)
    seats: int = Field(ge=1, le=MAX_SEATS)
    options: dict[Text, Any] = Field(default_factory=dict, description="the game's options; tickets match only "
                                     "tickets with the same game, seats and options")
    bots_after_seconds: float | None = Field(None, ge=0, le=3600, description="seconds after which bots may "
                                             "fill the seats no player took; null: never")


class TicketPublic(BaseModel):
    id: str
    game: str
    seats: int
    options: dict[str, Any]
    status: Literal["waiting", "claimed", "matched", "cancelled"]
    created_at: float = Field(description="epoch seconds")
    waited_seconds: float
    rating: float = Field(description="the player's openskill ordinal for the game when queued")
    window: float = Field(description="the rating window now, in ordinal points (docs/decisions.md)")
    bots_after_seconds: float | None = None
    match_id: str | None = None
    lobby_id: str | None = None


def _public(service: MatchmakingService, ticket: dict[str, Any]) -> TicketPublic:
    waited = max(0.0, time.time() - ticket["created_at"])
    return TicketPublic(id=ticket["id"], game=ticket["game"], seats=ticket["seats"], options=ticket["options"],
                        status=ticket["status"], created_at=ticket["created_at"], waited_seconds=round(waited, 3),
                        rating=ticket["rating"], window=service.config.window.at(waited),
                        bots_after_seconds=ticket.get("bots_after_seconds"), match_id=ticket.get("match_id"),
                        lobby_id=ticket.get("lobby_id"))


async def _mine(service: MatchmakingService, ticket_id: str, player_id: str) -> dict[str, Any]:
    ticket = await service.store.get(ticket_id)
    if ticket is None or ticket["player_id"] != player_id:  # another's ticket is not even said to exist
        raise not_found("ticket")
    return ticket


@router.post("/tickets", response_model=TicketPublic, status_code=201, responses=responses(401, 404, 409))
async def create_ticket(body: TicketCreate, player: PlayerDep, repo: RepoDep, settings: SettingsDep,
                        service: MatchmakingDep) -> TicketPublic:
    """Queue for a match of ``game`` with ``seats`` seats. 404 ``unknown_game``; 422
    ``bad_seat_count``, ``invalid_options``, ``reserved_option``, ``unknown_bot``; 409 ``ticket_exists``
    when the player already has a live (waiting or claimed) ticket (decided atomically in the store);
    429 ``too_many_bot_matches`` when bots may fill and the player hosts ``MAX_BOT_MATCHES_PER_PLAYER``
    running bot matches already."""
    game = registry().get(body.game)
    if game is None:
        raise ApiError(404, "unknown_game", f"no game {body.game!r}")
    if not game.min_seats <= body.seats <= game.max_seats:
        raise ApiError(422, "bad_seat_count", f"{game.id} takes {game.min_seats}-{game.max_seats} seats")
    reserved = [k for k in RESERVED_OPTIONS if k in body.options and k in game.Options.model_fields]
    if reserved:
        raise ApiError(422, "reserved_option", f"{', '.join(reserved)}: filled by the server at start")
    try:
        options = game.Options.model_validate(body.options, strict=True).model_dump(mode="json")
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ApiError(422, "invalid_options", f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if body.bots_after_seconds is not None:
        try:
            bot_class(game.id, service.config.bot_kind)
        except (KeyError, ImportError):
            raise ApiError(422, "unknown_bot", f"{game.id} has no {service.config.bot_kind!r} bot") from None
        # the lobby start's cap on running bot matches (a bot table's host is its oldest ticket's player)
        cap = settings.max_bot_matches_per_player
        if cap and await running_bot_matches_hosted_by(repo.engine, player["id"]) >= cap:
            raise LimitExceeded(429, "too_many_bot_matches",
                                f"you host {cap} running matches with bots already: finish one first",
                                CAP_RETRY_SECONDS)
    ticket = {"id": uuid.uuid4().hex, "player_id": player["id"], "game": game.id, "seats": body.seats,
              "options": options, "pool": pool_key(game.id, body.seats, options),
              "rating": await rating_of(repo.engine, player["id"], game.id), "created_at": time.time(),
              "bots_after_seconds": body.bots_after_seconds}
    try:
        stored = await service.store.create(ticket)
    except TicketExists as exc:
        raise ApiError(409, "ticket_exists", f"you already have the live ticket {exc.ticket_id}") from None
    return _public(service, stored)


@router.get("/tickets/{ticket_id}", response_model=TicketPublic, responses=responses(401, 404))
async def get_ticket(ticket_id: TicketId, player: PlayerDep, service: MatchmakingDep,
                     wait: Annotated[float, Query(ge=0, le=MAX_WAIT, description="long-poll: answer when the "
                                                  "ticket is matched or cancelled, or after this many seconds")] = 0
                     ) -> TicketPublic:
    """The player's own ticket. With ``wait`` > 0 this is a long-poll: the answer comes as soon as the
    ticket is ``matched`` (then ``match_id`` names the match to connect to) or ``cancelled``, or after
    ``wait`` seconds with the ticket as it is then (still ``waiting``/``claimed``: ask again)."""
    ticket = await _mine(service, ticket_id, player["id"])
    deadline = time.monotonic() + wait
    while ticket["status"] in ("waiting", "claimed"):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        await service.store.wait(ticket_id, left)
        ticket = await _mine(service, ticket_id, player["id"])
    return _public(service, ticket)


@router.delete("/tickets/{ticket_id}", response_model=TicketPublic, responses=responses(401, 404, 409))
async def cancel_ticket(ticket_id: TicketId, player: PlayerDep, service: MatchmakingDep) -> TicketPublic:
    """Leave the queue. 409 ``ticket_claimed`` (a match is being formed with it: wait for it),
    ``ticket_matched`` or ``ticket_cancelled`` when it no longer waits. Cancelling twice answers 409
    ``ticket_cancelled`` and changes nothing."""
    result = await service.store.cancel(ticket_id, player["id"])
    if result == "missing":
        raise not_found("ticket")
    if result != "ok":
        raise ApiError(409, f"ticket_{result}", f"the ticket is {result}")
    return _public(service, await _mine(service, ticket_id, player["id"]))
