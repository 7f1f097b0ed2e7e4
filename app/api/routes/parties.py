"""Parties: friends queue for quick play together (docs/protocol.md, "Parties"). A player makes a
party for a game and seat count and gets an invite code; others join with it, up to the seat count;
the leader queues the party (one ticket seating every member, with strangers or bots filling the
rest); members learn of the match by long-polling the party. Members may leave (a waiting ticket of
the party is cancelled then), the leader may cancel the queue or end the party.

Every decision (join, leave, queue, cancel) is one atomic step in the ticket store, so across nodes
a party is queued at most once at a time, a member is never in two live tickets, and a cancel racing
the match's claim is answered one way: cancelled, or ``claimed`` and then matched."""
from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field

from app.api import limits as api_limits
from app.api.deps import PlayerDep, RepoDep, SettingsDep
from app.api.errors import ApiError, not_found, responses
from app.api.limits import LimitExceeded
from app.api.routes.matchmaking import (
    MatchmakingDep,
    TicketPublic,
    _public,
    check_bots,
    long_poll,
    validated_options,
)
from app.api.schemas import MAX_SEATS, PlayerPublic, StrictRequest, Text
from app.api.waits import MAX_WAIT, wait_slot
from app.db.parties import running_matches_of
from app.matchmaking.parties import PartyRefused, parties
from app.matchmaking.service import MatchmakingService, new_ticket_id, party_rating, pool_key
from app.matchmaking.store import TicketExists

router = APIRouter(prefix="/parties", tags=["parties"])

PartyId = Annotated[Text, Path(max_length=64, description="a party id")]
#: invite codes: 16 random bytes, URL-safe (128 bits: not guessable within any rate limit)
CODE_BYTES = 16

#: the HTTP status and message of each refusal the store decides
_REFUSED = {
    "not_found": (404, "no such party (or you are not in it)"),
    "bad_invite": (404, "this invite code is unknown or has expired: ask for a new one"),
    "not_leader": (403, "only the party's leader may do that"),
    "in_party": (409, "you are in another party: leave it first"),
    "party_full": (409, "the party has as many members as the game has seats"),
    "party_queued": (409, "the party is in the queue: cancel it first"),
    "party_changed": (409, "the party's members changed meanwhile: try again"),
    "party_claimed": (409, "a match is being made for the party: it starts in a moment"),
}


def _refused(exc: PartyRefused) -> ApiError:
    status, message = _REFUSED.get(exc.code, (409, exc.code))
    return ApiError(status, exc.code, message)


class PartyCreate(StrictRequest):
    game: Text = Field(max_length=32)
    seats: int = Field(ge=1, le=MAX_SEATS, description="the table's seats; the party has at most as many members")
    options: dict[Text, Any] = Field(default_factory=dict, description="the game's options, as for a ticket")


class PartyJoin(StrictRequest):
    code: Text = Field(min_length=1, max_length=64, description="the invite code the leader shared")


class PartyQueue(StrictRequest):
    bots_after_seconds: float | None = Field(None, ge=0, le=3600, description="seconds after which bots may "
                                             "fill the seats nobody took; null: never")


class PartyPublic(BaseModel):
    id: str
    game: str
    seats: int
    options: dict[str, Any]
    leader: PlayerPublic
    members: list[PlayerPublic] = Field(description="in joining order")
    status: Literal["open", "queued"] = Field(description="queued while its ticket waits or is claimed")
    invite_code: str = Field(description="share it (or invite_path); works until invite_expires_at")
    invite_path: str = Field(description="the web client's join link, relative to the server's address")
    invite_expires_at: float = Field(description="epoch seconds")
    ticket: TicketPublic | None = Field(None, description="its last ticket (matched: match_id names the match)")
    state: str = Field(description="changes whenever anything here changes: pass it back as ?state= to long-poll")
    created_at: float


class PartyLeft(BaseModel):
    party_id: str
    ticket_cancelled: bool = Field(description="the party's waiting ticket was cancelled by this leave")


def _code() -> str:
    return secrets.token_urlsafe(CODE_BYTES)


def _limits(request: Request) -> tuple[list[Any], list[Any]]:
    state = request.app.state
    if getattr(state, "party_limits", None) is None:
        settings = state.settings
        state.party_limits = (api_limits._parse(settings.rate_limit_party_invites),
                              api_limits._parse(settings.rate_limit_party_joins))
    return state.party_limits


async def _spend_invite(request: Request, player_id: str) -> None:
    """Count a party or invite code made (``RATE_LIMIT_PARTY_INVITES``); 429 ``rate_limited``."""
    invites, _joins = _limits(request)
    retry = await request.app.state.rate_limiter.hit(invites, "party-invite", player_id)
    if retry is not None:
        raise LimitExceeded(429, "rate_limited", f"too many parties or invites: retry in {retry} s", retry)


async def _party_public(service: MatchmakingService, repo: Any, party: dict[str, Any]) -> PartyPublic:
    ticket = await service.store.get(party["ticket_id"]) if party.get("ticket_id") else None
    players = await repo.players(party["members"])

    def who(pid: str) -> PlayerPublic:
        p = players.get(pid) or {"id": pid, "name": "", "role": "player"}
        return PlayerPublic(id=p["id"], name=p["name"], role=p["role"])

    status: Literal["open", "queued"] = "queued" if ticket and ticket["status"] in ("waiting", "claimed") else "open"
    shown = _public(service, ticket) if ticket else None
    fingerprint = f"{party['version']}|{party['code']}|{ticket and ticket['id']}|{ticket and ticket['status']}"
    return PartyPublic(id=party["id"], game=party["game"], seats=party["seats"], options=party["options"],
                       leader=who(party["leader_id"]), members=[who(m) for m in party["members"]], status=status,
                       invite_code=party["code"], invite_path=f"#/join/{party['code']}",
                       invite_expires_at=party["code_expires_at"], ticket=shown,
                       state=hashlib.sha256(fingerprint.encode()).hexdigest()[:16], created_at=party["created_at"])


async def _member_party(service: MatchmakingService, party_id: str, player_id: str) -> dict[str, Any]:
    party = await parties(service).party(party_id)
    if party is None or player_id not in party["members"]:  # a stranger is not told it exists
        raise not_found("party")
    return party


@router.post("", response_model=PartyPublic, status_code=201, responses=responses(401, 404, 409, 429))
async def create_party(body: PartyCreate, request: Request, player: PlayerDep, repo: RepoDep,
                       settings: SettingsDep, service: MatchmakingDep) -> PartyPublic:
    """Make a party (the player leads it) with an invite code valid ``PARTY_INVITE_SECONDS``.
    404 ``unknown_game``; 422 ``bad_seat_count``, ``invalid_options``, ``reserved_option``; 409
    ``party_exists`` (the player is in a party: its id in the message); 429 ``rate_limited``
    (``RATE_LIMIT_PARTY_INVITES``)."""
    game, options = validated_options(body.game, body.seats, body.options)
    current = await parties(service).party_of(player["id"])
    if current is not None:
        raise ApiError(409, "party_exists", f"you are in the party {current}: leave it first")
    await _spend_invite(request, player["id"])
    now = time.time()
    party = {"id": uuid.uuid4().hex, "leader_id": player["id"], "game": game.id, "seats": body.seats,
             "options": options, "code": _code(), "code_expires_at": now + settings.party_invite_seconds,
             "created_at": now}
    current = await parties(service).create_party(party)
    if current is not None:  # made in parallel: decided atomically in the store
        raise ApiError(409, "party_exists", f"you are in the party {current}: leave it first")
    stored = await parties(service).party(party["id"])
    if stored is None:
        raise not_found("party")
    return await _party_public(service, repo, stored)


@router.get("/mine", response_model=PartyPublic, responses=responses(401, 404))
async def my_party(player: PlayerDep, repo: RepoDep, service: MatchmakingDep) -> PartyPublic:
    """The party the player is in. 404 ``not_found`` when in none."""
    party_id = await parties(service).party_of(player["id"])
    if party_id is None:
        raise not_found("party")
    return await _party_public(service, repo, await _member_party(service, party_id, player["id"]))


@router.post("/join", response_model=PartyPublic, responses=responses(401, 404, 409, 429))
async def join_party(body: PartyJoin, request: Request, player: PlayerDep, repo: RepoDep,
                     service: MatchmakingDep) -> PartyPublic:
    """Join the party of an invite code (joining one's own party again changes nothing). 404
    ``bad_invite`` (unknown or expired); 409 ``in_party``, ``party_full``, ``party_queued``; 429
    ``rate_limited`` after ``RATE_LIMIT_PARTY_JOINS`` failed joins (only failures count)."""
    _invites, joins = _limits(request)
    limiter = request.app.state.rate_limiter
    retry = await limiter.test(joins, "party-join", player["id"], exact=True)
    if retry is not None:
        raise LimitExceeded(429, "rate_limited", f"too many failed joins: retry in {retry} s", retry)
    try:
        party_id = await parties(service).join_party(body.code, player["id"])
    except PartyRefused as exc:
        if exc.code == "bad_invite":
            await limiter.hit(joins, "party-join", player["id"], exact=True)
        raise _refused(exc) from None
    return await _party_public(service, repo, await _member_party(service, party_id, player["id"]))


@router.get("/{party_id}", response_model=PartyPublic, responses=responses(401, 404, 429))
async def get_party(party_id: PartyId, request: Request, player: PlayerDep, repo: RepoDep, service: MatchmakingDep,
                    wait: Annotated[float, Query(ge=0, le=MAX_WAIT, description="long-poll: answer when the "
                                                 "party's state differs from ?state=, or after this many s")] = 0,
                    state: Annotated[Text | None, Query(max_length=64)] = None) -> PartyPublic:
    """The party, for its members. With ``wait`` > 0 and ``state`` (from the last answer) this is a
    long-poll: it answers as soon as anything changes (a member joins or leaves, the party is
    queued, matched or cancelled, a new invite code), or after ``wait`` seconds unchanged. 404
    ``not_found`` (no such party, or not a member: also when the player left or the party ended
    meanwhile); 429 ``too_many_long_polls``."""
    async def read() -> PartyPublic:
        return await _party_public(service, repo, await _member_party(service, party_id, player["id"]))

    async with wait_slot(request, player["id"], wait if state else 0):
        return await long_poll(service, party_id, wait if state else 0, read, lambda p: p.state != state)


@router.post("/{party_id}/invite", response_model=PartyPublic, responses=responses(401, 403, 404, 429))
async def new_invite(party_id: PartyId, request: Request, player: PlayerDep, repo: RepoDep,
                     settings: SettingsDep, service: MatchmakingDep) -> PartyPublic:
    """A new invite code (the old one stops working at once); leader only. 403 ``not_leader``;
    404 ``not_found``; 429 ``rate_limited`` (``RATE_LIMIT_PARTY_INVITES``)."""
    await _member_party(service, party_id, player["id"])
    await _spend_invite(request, player["id"])
    try:
        await parties(service).new_invite(party_id, player["id"], _code(),
                                       time.time() + settings.party_invite_seconds)
    except PartyRefused as exc:
        raise _refused(exc) from None
    return await _party_public(service, repo, await _member_party(service, party_id, player["id"]))


@router.post("/{party_id}/queue", response_model=TicketPublic, status_code=201,
             responses=responses(401, 403, 404, 409, 429))
async def queue_party(party_id: PartyId, body: PartyQueue, player: PlayerDep, repo: RepoDep,
                      settings: SettingsDep, service: MatchmakingDep) -> TicketPublic:
    """The leader queues the party: one ticket that seats every member side by side (the rest of the
    table from the queue, or bots after ``bots_after_seconds``), rated by the party's highest
    ordinal. 403 ``not_leader``; 404 ``not_found``; 409 ``party_queued``, ``party_changed`` (a member
    joined or left meanwhile), ``member_queued`` (a member has a live ticket of their own: the
    message names them), ``member_in_match`` (a member is seated in a running match: named); 422
    ``unknown_bot``; 429 ``too_many_bot_matches`` (the leader's cap)."""
    party = await _member_party(service, party_id, player["id"])
    if party["leader_id"] != player["id"]:
        raise _refused(PartyRefused("not_leader"))
    members = list(party["members"])
    names = await repo.players(members)
    seated = await running_matches_of(repo.engine, members)
    if seated:
        who, match_id = next(iter(seated.items()))
        raise ApiError(409, "member_in_match",
                       f"{(names.get(who) or {}).get('name') or who} is playing the match {match_id}: "
                       "queue when it ends")
    await check_bots(party["game"], body.bots_after_seconds, player["id"], repo, settings, service)
    created = time.time()  # the id says who queued it and when: a lost ticket reads 410 ticket_lost to them
    ticket = {"id": new_ticket_id(player["id"], created), "player_id": player["id"], "game": party["game"],
              "seats": party["seats"], "options": party["options"],
              "pool": pool_key(party["game"], party["seats"], party["options"]),
              "rating": await party_rating(repo.engine, members, party["game"]), "created_at": created,
              "bots_after_seconds": body.bots_after_seconds}
    try:
        stored = await parties(service).queue_party(party_id, player["id"], members, ticket)
    except PartyRefused as exc:
        raise _refused(exc) from None
    except TicketExists as exc:
        queued = (names.get(exc.player_id or "") or {}).get("name") or exc.player_id
        raise ApiError(409, "member_queued", f"{queued} is in the queue already (ticket {exc.ticket_id}): "
                       "they must cancel it first") from None
    return _public(service, stored)


@router.delete("/{party_id}/queue", response_model=TicketPublic, responses=responses(401, 403, 404, 409))
async def cancel_party_queue(party_id: PartyId, player: PlayerDep, service: MatchmakingDep) -> TicketPublic:
    """The leader takes the party out of the queue. 403 ``not_leader``; 404 ``not_found`` (also when
    it never queued); 409 ``ticket_claimed`` (its match is being made: it comes next),
    ``ticket_matched``, ``ticket_cancelled``, decided atomically against the match's claim."""
    party = await _member_party(service, party_id, player["id"])
    if party["leader_id"] != player["id"]:
        raise _refused(PartyRefused("not_leader"))
    if not party.get("ticket_id"):
        raise not_found("ticket")
    result = await service.store.cancel(party["ticket_id"], player["id"])
    if result == "missing":
        raise not_found("ticket")
    if result != "ok":
        raise ApiError(409, f"ticket_{result}", f"the party's ticket is {result}")
    ticket = await service.store.get(party["ticket_id"])
    if ticket is None:
        raise not_found("ticket")
    return _public(service, ticket)


@router.post("/{party_id}/leave", response_model=PartyLeft, responses=responses(401, 404, 409))
async def leave_party(party_id: PartyId, player: PlayerDep, service: MatchmakingDep) -> PartyLeft:
    """Leave the party (a leader leaving hands the lead to the next member; the last one out ends
    it). A waiting ticket of the party is cancelled in the same step. 404 ``not_found``; 409
    ``party_claimed`` (its match is being made: nothing changed)."""
    try:
        cancelled = await parties(service).leave_party(party_id, player["id"])
    except PartyRefused as exc:
        raise _refused(exc) from None
    return PartyLeft(party_id=party_id, ticket_cancelled=cancelled)


@router.delete("/{party_id}", response_model=PartyLeft, responses=responses(401, 403, 404, 409))
async def end_party(party_id: PartyId, player: PlayerDep, service: MatchmakingDep) -> PartyLeft:
    """The leader ends the party for everyone (a waiting ticket is cancelled). 403 ``not_leader``;
    404 ``not_found``; 409 ``party_claimed``."""
    try:
        cancelled = await parties(service).leave_party(party_id, player["id"], disband=True)
    except PartyRefused as exc:
        raise _refused(exc) from None
    return PartyLeft(party_id=party_id, ticket_cancelled=cancelled)

