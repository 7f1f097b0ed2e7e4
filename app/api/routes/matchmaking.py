"""Quick play: matchmaking tickets. A player queues with ``POST``, learns of the match with the
long-poll ``GET …?wait=`` and may cancel while the ticket waits (docs/protocol.md, "Quick play").
A party's ticket (``app.api.routes.parties``) is read and cancelled here too, by any member."""
from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field, ValidationError

from app.api.deps import PlayerDep, RepoDep, SettingsDep
from app.api.errors import ApiError, not_found, responses
from app.api.limits import CAP_RETRY_SECONDS, LimitExceeded
from app.api.schemas import MAX_SEATS, StrictRequest, Text
from app.api.waits import MAX_WAIT, wait_slot
from app.config import Settings
from app.db.caps import running_bot_matches_hosted_by
from app.games import registry
from app.matchmaking.service import MatchmakingService, issued_at, new_ticket_id, pool_key, rating_of
from app.matchmaking.store import TicketExists, members_of
from app.meta.loadouts import RESERVED_OPTIONS
from app.runtime.bots import bot_class, bot_kind_for

router = APIRouter(prefix="/matchmaking", tags=["matchmaking"])

TicketId = Annotated[Text, Path(max_length=64, description="a ticket id")]


async def get_matchmaking(request: Request) -> MatchmakingService:
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
    party_id: str | None = Field(None, description="the party this ticket queues, if any")
    members: list[str] = Field(default_factory=list, description="player ids it seats (a party's members)")


def _public(service: MatchmakingService, ticket: dict[str, Any]) -> TicketPublic:
    waited = max(0.0, time.time() - ticket["created_at"])
    return TicketPublic(id=ticket["id"], game=ticket["game"], seats=ticket["seats"], options=ticket["options"],
                        status=ticket["status"], created_at=ticket["created_at"], waited_seconds=round(waited, 3),
                        rating=ticket["rating"], window=service.config.window.at(waited),
                        bots_after_seconds=ticket.get("bots_after_seconds"), match_id=ticket.get("match_id"),
                        lobby_id=ticket.get("lobby_id"), party_id=ticket.get("party_id"),
                        members=members_of(ticket))


def _missing(ticket_id: str, player_id: str, settings: Settings) -> ApiError:
    """The answer for a ticket the store does not have: ``410 ticket_lost`` when its id says it
    was issued to this player less than ``MATCHMAKING_TICKET_TTL_SECONDS`` ago (so the store lost
    it: Redis restarted empty, or an embedded server restarted), else ``404 not_found`` (never
    issued to this player, or expired)."""
    issued = issued_at(ticket_id, player_id)
    if issued is not None and time.time() - issued < settings.matchmaking_ticket_ttl_seconds:
        return ApiError(410, "ticket_lost", "the server lost this ticket (its queue was restarted); "
                        "queue again with POST /api/v1/matchmaking/tickets")
    return not_found("ticket")


async def _mine(service: MatchmakingService, ticket_id: str, player_id: str, settings: Settings) -> dict[str, Any]:
    ticket = await service.store.get(ticket_id)
    if ticket is None:
        raise _missing(ticket_id, player_id, settings)
    if player_id not in members_of(ticket):  # another's ticket is not even said to exist
        raise not_found("ticket")
    return ticket


def validated_options(game_id: str, seats: int, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The game and its validated options for a queue of ``seats`` seats. Raises ApiError 404
    ``unknown_game``; 422 ``bad_seat_count``, ``reserved_option``, ``invalid_options``."""
    game = registry().get(game_id)
    if game is None:
        raise ApiError(404, "unknown_game", f"no game {game_id!r}")
    if not game.min_seats <= seats <= game.max_seats:
        raise ApiError(422, "bad_seat_count", f"{game.id} takes {game.min_seats}-{game.max_seats} seats")
    reserved = [k for k in RESERVED_OPTIONS if k in options and k in game.Options.model_fields]
    if reserved:
        raise ApiError(422, "reserved_option", f"{', '.join(reserved)}: filled by the server at start")
    try:
        return game, game.Options.model_validate(options, strict=True).model_dump(mode="json")
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ApiError(422, "invalid_options", f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None


async def check_bots(game_id: str, bots_after_seconds: float | None, host_id: str, repo: Any, settings: Any,
                     service: MatchmakingService) -> None:
    """A queue that lets bots fill: the game must have the configured bot (422 ``unknown_bot``) and
    its host under the cap on running bot matches (429 ``too_many_bot_matches``)."""
    if bots_after_seconds is None:
        return
    try:
        bot_class(game_id, bot_kind_for(game_id, service.config.bot_kind))
    except (KeyError, ImportError, StopIteration):
        raise ApiError(422, "unknown_bot", f"{game_id} has no bot") from None
    # the lobby start's cap on running bot matches (a bot table's host is its oldest ticket's player)
    cap = settings.max_bot_matches_per_player
    if cap and await running_bot_matches_hosted_by(repo.engine, host_id) >= cap:
        raise LimitExceeded(429, "too_many_bot_matches",
                            f"you host {cap} running matches with bots already: finish one first",
                            CAP_RETRY_SECONDS)


async def long_poll(service: MatchmakingService, key: str, wait: float, read: Any, done: Any) -> Any:
    """``read()`` until ``done(value)`` or ``wait`` seconds pass, woken by ``key``'s events. The
    watch is taken before the first read, so a change while ``read`` awaits (a database read) is
    not missed; on Redis it re-reads at least every ``recheck`` seconds too."""
    store = service.store
    deadline = time.monotonic() + wait
    with store.watch(key) as changed:
        value = await read()
        while not done(value):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            step = left if store.recheck is None else min(left, store.recheck)
            try:
                await asyncio.wait_for(changed.wait(), step)
            except TimeoutError:
                pass
            changed.clear()
            value = await read()
    return value


@router.post("/tickets", response_model=TicketPublic, status_code=201, responses=responses(401, 404, 409))
async def create_ticket(body: TicketCreate, player: PlayerDep, repo: RepoDep, settings: SettingsDep,
                        service: MatchmakingDep) -> TicketPublic:
    """Queue for a match of ``game`` with ``seats`` seats. 404 ``unknown_game``; 422
    ``bad_seat_count``, ``invalid_options``, ``reserved_option``, ``unknown_bot``; 409 ``ticket_exists``
    when the player already has a live (waiting or claimed) ticket (decided atomically in the store);
    429 ``too_many_bot_matches`` when bots may fill and the player hosts ``MAX_BOT_MATCHES_PER_PLAYER``
    running bot matches already."""
    game, options = validated_options(body.game, body.seats, body.options)
    await check_bots(game.id, body.bots_after_seconds, player["id"], repo, settings, service)
    created = time.time()
    ticket = {"id": new_ticket_id(player["id"], created), "player_id": player["id"], "game": game.id,
              "seats": body.seats, "options": options, "pool": pool_key(game.id, body.seats, options),
              "rating": await rating_of(repo.engine, player["id"], game.id), "created_at": created,
              "bots_after_seconds": body.bots_after_seconds}
    try:
        stored = await service.store.create(ticket)
    except TicketExists as exc:
        raise ApiError(409, "ticket_exists", f"you already have the live ticket {exc.ticket_id}") from None
    return _public(service, stored)


@router.get("/tickets/{ticket_id}", response_model=TicketPublic, responses=responses(401, 404, 410, 429))
async def get_ticket(ticket_id: TicketId, player: PlayerDep, service: MatchmakingDep, request: Request,
                     settings: SettingsDep,
                     wait: Annotated[float, Query(ge=0, le=MAX_WAIT, description="long-poll: answer when the "
                                                  "ticket is matched or cancelled, or after this many seconds")] = 0
                     ) -> TicketPublic:
    """The player's own ticket. With ``wait`` > 0 this is a long-poll: the answer comes as soon as the
    ticket is ``matched`` (then ``match_id`` names the match to connect to) or ``cancelled``, or after
    ``wait`` seconds with the ticket as it is then (still ``waiting``/``claimed``: ask again). A
    party's ticket is readable by every member. 429 ``too_many_long_polls`` when the player holds
    ``MAX_LONG_POLLS_PER_PLAYER`` waiting requests on this node already. ``410 ticket_lost``: the
    server lost the ticket (queue again); ``503 storage_unavailable`` (with ``Retry-After``) while
    the queue's store (Redis) does not answer, also in the middle of a long-poll."""
    async with wait_slot(request, player["id"], wait):
        ticket = await long_poll(service, ticket_id, wait, lambda: _mine(service, ticket_id, player["id"], settings),
                                 lambda t: t["status"] not in ("waiting", "claimed"))
    return _public(service, ticket)


@router.delete("/tickets/{ticket_id}", response_model=TicketPublic, responses=responses(401, 404, 409, 410))
async def cancel_ticket(ticket_id: TicketId, player: PlayerDep, service: MatchmakingDep,
                        settings: SettingsDep) -> TicketPublic:
    """Leave the queue. 409 ``ticket_claimed`` (a match is being formed with it: wait for it),
    ``ticket_matched`` or ``ticket_cancelled`` when it no longer waits. Cancelling twice answers 409
    ``ticket_cancelled`` and changes nothing. Any member may cancel a party's ticket (decided in
    the same atomic step as the match's claim: exactly one of them wins). 410 ``ticket_lost``: the
    server lost it (nothing to cancel: the player is not queued)."""
    ticket = await service.store.get(ticket_id)  # read before: nothing is read after the change
    result = await service.store.cancel(ticket_id, player["id"])
    if result == "missing":
        raise _missing(ticket_id, player["id"], settings)
    if result != "ok":
        raise ApiError(409, f"ticket_{result}", f"the ticket is {result}")
    if ticket is None:  # not possible (the cancel found it waiting): read it, as before
        ticket = await _mine(service, ticket_id, player["id"], settings)
    return _public(service, {**ticket, "status": "cancelled"})
