"""Lobbies: create, list, join, leave, fill with bots, start (host only)."""
from __future__ import annotations

import secrets
import time
import uuid
from typing import Any

from fastapi import APIRouter, Query
from pydantic import ValidationError

from app.api.deps import ManagerDep, PlayerDep, RepoDep, hash_token
from app.api.errors import ApiError, not_found
from app.api.limits import BotMatchCap, LobbyCap
from app.api.schemas import BotsRequest, JoinRequest, LobbyCreate, LobbyPublic, PlayerPublic, SeatPublic
from app.db.repo import Repository
from app.games import registry
from app.runtime.bots import bot_class

router = APIRouter(prefix="/lobbies", tags=["lobbies"])


async def lobby_public(repo: Repository, lobby: dict[str, Any]) -> LobbyPublic:
    players = await repo.players(s["player_id"] for s in lobby["seats"] if s["player_id"])
    seats = []
    for s in lobby["seats"]:
        p = players.get(s["player_id"]) if s["player_id"] else None
        seats.append(SeatPublic(seat=s["seat"], bot=s["bot"], player=PlayerPublic(**p) if p else None))
    return LobbyPublic(seats=seats, **{k: v for k, v in lobby.items() if k != "seats"})


async def _open_lobby(repo: Repository, lobby_id: str) -> dict[str, Any]:
    lobby = await repo.lobby(lobby_id)
    if lobby is None:
        raise not_found("lobby")
    if lobby["status"] != "open":
        raise ApiError(409, "lobby_not_open", f"the lobby is {lobby['status']}")
    return lobby


@router.post("", response_model=LobbyPublic, status_code=201)
async def create_lobby(body: LobbyCreate, player: PlayerDep, repo: RepoDep, _cap: LobbyCap) -> LobbyPublic:
    """Create a lobby; the host takes seat 0. Options are validated against the game's schema."""
    game = registry().get(body.game)
    if game is None:
        raise ApiError(404, "unknown_game", f"no game {body.game!r}")
    if not game.min_seats <= body.seats <= game.max_seats:
        raise ApiError(422, "bad_seat_count", f"{game.id} takes {game.min_seats}-{game.max_seats} seats")
    try:
        options = game.Options.model_validate(body.options).model_dump(mode="json")
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ApiError(422, "invalid_options",
                       f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    lobby = {"id": uuid.uuid4().hex, "game": game.id, "options": options, "seat_count": body.seats,
             "host_id": player["id"], "status": "open", "match_id": None, "created_at": time.time()}
    await repo.create_lobby(lobby, player["id"])
    return await lobby_public(repo, await repo.lobby(lobby["id"]))


@router.get("", response_model=list[LobbyPublic])
async def list_lobbies(repo: RepoDep, _player: PlayerDep, game: str | None = None,
                       status: str = Query("open", pattern="^(open|started|closed|all)$")) -> list[LobbyPublic]:
    rows = await repo.lobbies(None if status == "all" else status, game)
    return [await lobby_public(repo, r) for r in rows]


@router.get("/{lobby_id}", response_model=LobbyPublic)
async def get_lobby(lobby_id: str, repo: RepoDep, _player: PlayerDep) -> LobbyPublic:
    lobby = await repo.lobby(lobby_id)
    if lobby is None:
        raise not_found("lobby")
    return await lobby_public(repo, lobby)


@router.post("/{lobby_id}/join", response_model=LobbyPublic)
async def join(lobby_id: str, player: PlayerDep, repo: RepoDep, _cap: LobbyCap,
               body: JoinRequest | None = None) -> LobbyPublic:
    lobby = await _open_lobby(repo, lobby_id)
    if any(s["player_id"] == player["id"] for s in lobby["seats"]):
        raise ApiError(409, "already_seated", "you already have a seat in this lobby")
    wanted = body.seat if body else None
    free = [s["seat"] for s in lobby["seats"] if s["player_id"] is None and s["bot"] is None]
    if wanted is not None:
        if wanted >= lobby["seat_count"]:
            raise ApiError(422, "bad_seat", "no such seat")
        free = [wanted] if wanted in free else []
    for seat in free:
        if await repo.set_seat(lobby_id, seat, player["id"], None, only_if_empty=True):
            return await lobby_public(repo, await repo.lobby(lobby_id))
    raise ApiError(409, "no_free_seat", "no free seat" if wanted is None else "that seat is taken")


@router.post("/{lobby_id}/leave", response_model=LobbyPublic)
async def leave(lobby_id: str, player: PlayerDep, repo: RepoDep) -> LobbyPublic:
    """Leave a lobby. When the host leaves, the lobby closes."""
    lobby = await _open_lobby(repo, lobby_id)
    mine = [s for s in lobby["seats"] if s["player_id"] == player["id"]]
    if not mine:
        raise ApiError(409, "not_seated", "you have no seat in this lobby")
    if lobby["host_id"] == player["id"]:
        await repo.set_lobby_status(lobby_id, "closed", expect="open")
    else:
        await repo.set_seat(lobby_id, mine[0]["seat"], None, None, only_if_empty=False)
    return await lobby_public(repo, await repo.lobby(lobby_id))


@router.post("/{lobby_id}/bots", response_model=LobbyPublic)
async def fill_bots(lobby_id: str, player: PlayerDep, repo: RepoDep, body: BotsRequest | None = None) -> LobbyPublic:
    """Fill empty seats with bots (host only): ``kind`` random or smart."""
    body = body or BotsRequest()
    lobby = await _open_lobby(repo, lobby_id)
    if lobby["host_id"] != player["id"]:
        raise ApiError(403, "not_host", "only the host can add bots")
    try:
        bot_class(lobby["game"], body.kind)
    except (KeyError, ImportError):
        raise ApiError(422, "unknown_bot", f"{lobby['game']} has no {body.kind!r} bot") from None
    free = [s["seat"] for s in lobby["seats"] if s["player_id"] is None and s["bot"] is None]
    for seat in free[: body.count or len(free)]:
        bot_id = uuid.uuid4().hex
        await repo.create_player(bot_id, f"{body.kind}-bot-{seat}", "bot", hash_token(secrets.token_urlsafe(32)))
        await repo.set_seat(lobby_id, seat, bot_id, body.kind, only_if_empty=True)
    return await lobby_public(repo, await repo.lobby(lobby_id))


@router.post("/{lobby_id}/start", response_model=LobbyPublic)
async def start(lobby_id: str, player: PlayerDep, repo: RepoDep, manager: ManagerDep, _cap: BotMatchCap) -> LobbyPublic:
    """Start the match (host only, every seat filled). The lobby's ``match_id`` names it."""
    lobby = await _open_lobby(repo, lobby_id)
    if lobby["host_id"] != player["id"]:
        raise ApiError(403, "not_host", "only the host can start")
    if any(s["player_id"] is None for s in lobby["seats"]):
        raise ApiError(409, "seats_empty", "every seat needs a player or a bot")
    players = await repo.players(s["player_id"] for s in lobby["seats"])
    seats = [{"player_id": s["player_id"], "name": players[s["player_id"]]["name"], "bot": s["bot"]}
             for s in lobby["seats"]]
    try:
        await manager.create_match(lobby["game"], lobby["options"], seats, lobby_id=lobby_id)
    except LookupError:
        raise ApiError(409, "lobby_not_open", "the lobby was started meanwhile") from None
    return await lobby_public(repo, await repo.lobby(lobby_id))
