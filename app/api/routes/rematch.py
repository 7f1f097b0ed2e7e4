"""Rematches (docs/protocol.md, "Rematch"): ``POST /matches/{id}/rematch`` agrees, ``DELETE``
declines (or leaves: the offer is cancelled for everyone), ``GET …?wait=&state=`` long-polls the
offer. When the last human player agrees within ``REMATCH_SECONDS`` of the end, the request that
agreed last starts the new match and every long-poll answers with its id."""
from __future__ import annotations

import hashlib
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field

from app.api.deps import PlayerDep, RepoDep, hash_token
from app.api.errors import ApiError, not_found, responses
from app.api.routes.matchmaking import MatchmakingDep, long_poll
from app.api.schemas import PlayerPublic, Text
from app.api.waits import MAX_WAIT, wait_slot
from app.matchmaking.parties import parties, rematch_key
from app.matchmaking.rematch import Rematches, RematchRefused, human_players, offer_view
from app.matchmaking.service import MatchmakingService, bot_player_factory

router = APIRouter(prefix="/matches", tags=["rematch"])

MatchId = Annotated[Text, Path(max_length=64, description="an ended match's id")]


async def get_rematches(request: Request) -> Rematches:
    state = request.app.state
    if getattr(state, "rematches", None) is None:
        settings = state.settings
        state.rematches = Rematches(state.matchmaking.store, state.repo, state.manager.create_match,
                                    window_seconds=settings.rematch_seconds,
                                    make_bot=bot_player_factory("rematch", hash_token),
                                    special_costs=dict(settings.special_costs))
    return state.rematches


RematchesDep = Annotated[Rematches, Depends(get_rematches)]


class RematchPublic(BaseModel):
    match_id: str = Field(description="the ended match")
    status: Literal["open", "starting", "started", "cancelled", "expired"]
    players: list[PlayerPublic] = Field(description="the human players who must all agree")
    agreed: list[str] = Field(description="player ids of those who agreed")
    expires_at: float = Field(description="epoch seconds: the offer closes then")
    seconds_left: float
    new_match_id: str | None = Field(None, description="status started: the rematch to connect to")
    declined_by: str | None = Field(None, description="status cancelled: the player who declined or left")
    state: str = Field(description="changes whenever anything here changes: pass it back as ?state=")


async def _ended_match(repo: Any, match_id: str, player_id: str) -> dict[str, Any]:
    match = await repo.match(match_id)
    if match is None:
        raise not_found("match")
    if match["status"] == "running":
        raise ApiError(409, "match_not_ended", "the match is still running: a rematch is offered at its end")
    if player_id not in human_players(match):
        raise ApiError(403, "not_a_player", "only the match's players may ask for its rematch")
    return match


async def _public(repo: Any, offer: dict[str, Any]) -> RematchPublic:
    players = await repo.players(offer["needed"])
    fingerprint = f"{offer['status']}|{' '.join(offer['agreed'])}|{offer['new_match_id']}"
    return RematchPublic(
        match_id=offer["match_id"], status=offer["status"],
        players=[PlayerPublic(id=p, name=(players.get(p) or {}).get("name", ""),
                              role=(players.get(p) or {}).get("role", "player")) for p in offer["needed"]],
        agreed=offer["agreed"], expires_at=offer["expires_at"],
        seconds_left=round(max(0.0, offer["expires_at"] - time.time()), 3), new_match_id=offer["new_match_id"],
        declined_by=offer["declined_by"], state=hashlib.sha256(fingerprint.encode()).hexdigest()[:16])


async def _read(service: MatchmakingService, rematches: Rematches, match: dict[str, Any]) -> dict[str, Any]:
    return offer_view(await parties(service).rematch(match["id"]), match, rematches.expires_at(match))


@router.post("/{match_id}/rematch", response_model=RematchPublic, responses=responses(401, 403, 404, 409))
async def agree(match_id: MatchId, player: PlayerDep, repo: RepoDep, service: MatchmakingDep,
                rematches: RematchesDep) -> RematchPublic:
    """Agree to a rematch of an ended match (again: changes nothing). When this makes every human
    player agreed, the rematch starts before the answer (``status: started``, ``new_match_id``).
    403 ``not_a_player``; 404 ``not_found``; 409 ``match_not_ended``, ``rematch_expired`` (past
    ``REMATCH_SECONDS`` after the end), ``rematch_cancelled`` (someone declined or left),
    ``rematch_failed`` (the new match could not start, e.g. a player is in another running match
    meanwhile: queue again)."""
    match = await _ended_match(repo, match_id, player["id"])
    expires = rematches.expires_at(match)
    if time.time() > expires:
        raise ApiError(409, "rematch_expired", "the rematch window has closed")
    store = parties(service)
    result = await store.rematch_vote(match_id, player["id"], human_players(match), expires)
    if result == "expired":
        raise ApiError(409, "rematch_expired", "the rematch window has closed")
    if result == "cancelled":
        raise ApiError(409, "rematch_cancelled", "a player declined or left: no rematch")
    if result == "start":
        try:
            new_id = await rematches.start(match)
        except RematchRefused as exc:
            await store.rematch_done(match_id, "cancelled", None)
            names = await repo.players([exc.player_id])
            who = (names.get(exc.player_id) or {}).get("name") or exc.player_id
            raise ApiError(409, "rematch_failed", f"{who} is playing another match ({exc.match_id}): "
                           "no rematch") from None
        except Exception as exc:
            await store.rematch_done(match_id, "cancelled", None)
            raise ApiError(409, "rematch_failed", f"the rematch could not start ({type(exc).__name__}): "
                           "queue again") from None
        await store.rematch_done(match_id, "started", new_id)
    return await _public(repo, await _read(service, rematches, match))


@router.delete("/{match_id}/rematch", response_model=RematchPublic, responses=responses(401, 403, 404, 409))
async def decline(match_id: MatchId, player: PlayerDep, repo: RepoDep, service: MatchmakingDep,
                  rematches: RematchesDep) -> RematchPublic:
    """Decline (or leave): the offer is ``cancelled`` for everyone at once, and their long-polls
    answer. Declining an offer that is no longer open changes nothing and answers it as it is.
    403 ``not_a_player``; 404 ``not_found``; 409 ``match_not_ended``."""
    match = await _ended_match(repo, match_id, player["id"])
    await parties(service).rematch_decline(match_id, player["id"], human_players(match), rematches.expires_at(match))
    return await _public(repo, await _read(service, rematches, match))


@router.get("/{match_id}/rematch", response_model=RematchPublic, responses=responses(401, 403, 404, 409, 429))
async def offer(match_id: MatchId, request: Request, player: PlayerDep, repo: RepoDep, service: MatchmakingDep,
                rematches: RematchesDep,
                wait: Annotated[float, Query(ge=0, le=MAX_WAIT, description="long-poll: answer when the offer "
                                             "differs from ?state=, or after this many seconds")] = 0,
                state: Annotated[Text | None, Query(max_length=64)] = None) -> RematchPublic:
    """The rematch offer of an ended match, for its players. With ``wait`` and ``state`` a long-poll
    that answers when someone agrees or declines, the rematch starts, or the window closes (it never
    waits past ``expires_at``). 403 ``not_a_player``; 404 ``not_found``; 409 ``match_not_ended``;
    429 ``too_many_long_polls``."""
    match = await _ended_match(repo, match_id, player["id"])
    waited = wait if state else 0.0
    if waited:
        waited = min(waited, max(0.0, rematches.expires_at(match) - time.time()) + 0.5)

    async def read() -> RematchPublic:
        return await _public(repo, await _read(service, rematches, match))

    async with wait_slot(request, player["id"], waited):
        return await long_poll(service, rematch_key(match_id), waited, read, lambda o: o.state != state)
