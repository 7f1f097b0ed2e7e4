"""Lobbies: create, list, read (a long-poll with ``?wait=&state=``), join, leave, fill with bots,
start (host only). Each change wakes the lobby's long-polls on every node (``lobby:{id}`` on the
matchmaking store's event channel, as parties' do)."""
from __future__ import annotations

import secrets
import time
import uuid
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.deps import ManagerDep, PlayerDep, RepoDep, SettingsDep, hash_token
from app.api.errors import ApiError, not_found, responses
from app.api.idempotency import IdempotencyKeyHeader, idempotency, mark, refusing_reuse
from app.api.limits import BotMatchCap, LobbyCap
from app.api.routes.inventory import WalletsDep
from app.api.routes.matchmaking import MatchmakingDep, long_poll
from app.api.schemas import (
    BotsRequest,
    JoinRequest,
    LobbyCreate,
    LobbyPage,
    LobbyPublic,
    PlayerPublic,
    SeatPublic,
    Text,
)
from app.api.waits import MAX_WAIT, wait_slot
from app.db.idempotency import Idempotency, remember
from app.db.idempotency import claim as claim_key
from app.db.idempotency import lookup as lookup_key
from app.db.repo import LobbyRefused, MatchInsertHook, Repository
from app.db.wallet import LifetimeSpent, WalletRepository
from app.games import registry
from app.meta.loadouts import (
    RESERVED_OPTIONS,
    LoadoutError,
    check_loadout,
    start_options,
)
from app.runtime.bots import bot_class
from app.runtime.rows import SeatRow

router = APIRouter(prefix="/lobbies", tags=["lobbies"])

LobbyId = Annotated[Text, Path(max_length=64, description="a lobby id")]


def lobby_key(lobby_id: str) -> str:
    """The wake-up key of a lobby's long-polls (on the matchmaking store's event channel)."""
    return "lobby:" + lobby_id


def lobby_changed(request: Request, lobby_id: str) -> None:
    """A change of the lobby committed: wake its long-polls on every node (never raises, never
    waits: a lost wake-up is made up by the long-polls' re-read)."""
    service = getattr(request.app.state, "matchmaking", None)
    if service is not None:
        service.store.notify(lobby_key(lobby_id))


async def _checked_loadout(wallets: WalletRepository, game_id: str, loadout: list[str] | None,
                           player_id: str) -> list[str]:
    """A loadout the player may bring (conquest.md 5), else ApiError 422 with the LoadoutError's code."""
    if not loadout:
        return []
    try:
        return check_loadout(game_id, loadout, await wallets.owned(player_id))
    except LoadoutError as exc:
        raise ApiError(422, exc.code, exc.message) from None


async def lobby_public(repo: Repository, lobby: dict[str, Any]) -> LobbyPublic:
    """The public lobby. Its players are read unless the lobby carries them (``players``, read in the
    transaction that changed it: then nothing is read after that commit)."""
    players: dict[str, Any] = lobby.get("players") or {}
    missing = [s["player_id"] for s in lobby["seats"] if s["player_id"] and s["player_id"] not in players]
    if missing:
        players = {**players, **await repo.seat_players(missing)}
    seats = []
    for s in lobby["seats"]:
        p = players.get(s["player_id"]) if s["player_id"] else None
        seats.append(SeatPublic(seat=s["seat"], bot=s["bot"], player=PlayerPublic(**p) if p else None,
                                username=p.get("username") if p else None, loadout=s.get("loadout")))
    return LobbyPublic(seats=seats, **{k: v for k, v in lobby.items() if k not in ("seats", "players")})


async def _open_lobby(repo: Repository, lobby_id: str) -> dict[str, Any]:
    """An unlocked read, for the host check only (the host never changes); the change itself runs
    in the repository under the lobby's lock and checks the status again there."""
    lobby = await repo.lobby(lobby_id)
    if lobby is None:
        raise not_found("lobby")
    if lobby["status"] != "open":
        raise ApiError(409, "lobby_not_open", f"the lobby is {lobby['status']}")
    return lobby


@router.post("", response_model=LobbyPublic, status_code=201, responses=responses(401, 404, 429))
async def create_lobby(body: LobbyCreate, player: PlayerDep, repo: RepoDep, wallets: WalletsDep,
                       _cap: LobbyCap) -> LobbyPublic:
    """Create a lobby; the host takes seat 0. Options are validated against the game's schema;
    ``loadouts``/``special_costs`` are the server's (422 ``reserved_option``); a ``loadout`` is
    checked against what the host owns (422 ``special_not_owned`` and others, conquest.md 5)."""
    game = registry().get(body.game)
    if game is None:
        raise ApiError(404, "unknown_game", f"no game {body.game!r}")
    reserved = [k for k in RESERVED_OPTIONS if k in body.options and k in game.Options.model_fields]
    if reserved:
        raise ApiError(422, "reserved_option", f"{', '.join(reserved)}: filled by the server at start")
    loadout = await _checked_loadout(wallets, game.id, body.loadout, player["id"])
    if not game.min_seats <= body.seats <= game.max_seats:
        raise ApiError(422, "bad_seat_count", f"{game.id} takes {game.min_seats}-{game.max_seats} seats")
    try:
        options = game.Options.model_validate(body.options, strict=True).model_dump(mode="json")
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ApiError(422, "invalid_options",
                       f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    lobby = {"id": uuid.uuid4().hex, "game": game.id, "options": options, "seat_count": body.seats,
             "host_id": player["id"], "status": "open", "match_id": None, "created_at": time.time(),
             "rated": body.rated}
    # the host's username is read in the transaction of the insert, before it
    username = await repo.create_lobby(lobby, player["id"], loadout, host_username=True)
    # the answer is the lobby as inserted, without reading it back: once the insert has committed,
    # nothing may fail (an overloaded database answered 503 to a lobby that existed)
    host = PlayerPublic(id=player["id"], name=player["name"], role=player["role"])
    return LobbyPublic(seats=[SeatPublic(seat=s, player=host if s == 0 else None, bot=None,
                                         username=username if s == 0 else None,
                                         loadout=(loadout or None) if s == 0 else None)
                              for s in range(body.seats)], **lobby)


@router.get("", response_model=LobbyPage, responses=responses(401))
async def list_lobbies(repo: RepoDep, _player: PlayerDep, settings: SettingsDep,
                       game: Annotated[Text | None, Query(max_length=32)] = None,
                       status: Literal["open", "started", "closed", "all"] = "open",
                       cursor: Annotated[Text | None, Query(max_length=512)] = None,
                       limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> LobbyPage:
    """A page of lobbies, newest first, by ``status`` (default ``open``) and ``game``:
    ``{items, next_cursor}``; pass ``next_cursor`` back as ``?cursor=`` for the next page
    (``limit`` at most ``page_max``). 422 ``bad_cursor``."""
    from app.db.paging import BadCursor

    try:
        rows, next_cursor = await repo.lobbies_page(None if status == "all" else status, game,
                                                    min(limit, settings.page_max), cursor)
    except BadCursor as exc:
        raise ApiError(422, "bad_cursor", str(exc)) from None
    return LobbyPage(items=[await lobby_public(repo, r) for r in rows], next_cursor=next_cursor)


@router.get("/{lobby_id}", response_model=LobbyPublic, responses=responses(401, 404, 429))
async def get_lobby(lobby_id: LobbyId, repo: RepoDep, player: PlayerDep, request: Request, service: MatchmakingDep,
                    wait: Annotated[float, Query(ge=0, le=MAX_WAIT, description="long-poll: answer when the "
                                                 "lobby's state differs from ?state=, or after this many s")] = 0,
                    state: Annotated[Text | None, Query(max_length=64)] = None) -> LobbyPublic:
    """The lobby. With ``wait`` > 0 and ``state`` (from the last answer) this is a long-poll
    (docs/protocol.md, "Long-polls"): it answers as soon as the lobby differs from that state (a
    seat taken or left, bots, a loadout, the start with its ``match_id``, the close), at once if the
    lobby is no longer open (it will not change again), or after ``wait`` seconds unchanged. 404
    ``not_found``; 429 ``too_many_long_polls``."""
    async def read() -> LobbyPublic:
        lobby = await repo.lobby(lobby_id)
        if lobby is None:
            raise not_found("lobby")
        return await lobby_public(repo, lobby)

    if not wait or not state:
        return await read()
    async with wait_slot(request, player["id"], wait):
        found: LobbyPublic = await long_poll(service, lobby_key(lobby_id), wait, read,
                                             lambda lobby: lobby.state != state or lobby.status != "open")
        return found


#: the HTTP status of each refusal decided under the lobby's lock
_REFUSED_STATUS = {"not_found": 404, "lobby_not_open": 409, "bad_seat": 422, "no_free_seat": 409,
                   "not_seated": 409, "seats_empty": 409, "lobby_changed": 409}


def _refused(exc: LobbyRefused) -> ApiError:
    return ApiError(_REFUSED_STATUS.get(exc.code, 409), exc.code, exc.message)


@router.post("/{lobby_id}/join", response_model=LobbyPublic, responses=responses(401, 404, 409, 429))
async def join(request: Request, lobby_id: LobbyId, player: PlayerDep, repo: RepoDep, wallets: WalletsDep,
               _cap: LobbyCap, body: JoinRequest | None = None) -> LobbyPublic:
    """Take a seat: the first free one, or ``seat``. Idempotent: a player who already holds a seat in
    this lobby gets ``200`` and the lobby with that seat, whatever ``seat`` asks, so parallel or
    repeated joins all give the same answer and one seat (docs/protocol.md, "Lobbies"). Conquest:
    ``loadout`` names owned specials to bring (422 ``special_not_owned`` etc., nothing taken)."""
    loadout: list[str] = []
    if body is not None and body.loadout:
        found = await repo.lobby(lobby_id)
        if found is not None:
            loadout = await _checked_loadout(wallets, found["game"], body.loadout, player["id"])
    try:
        lobby = await repo.join_lobby(lobby_id, player["id"], body.seat if body else None, loadout)
    except LobbyRefused as exc:
        raise _refused(exc) from None
    lobby_changed(request, lobby_id)
    return await lobby_public(repo, lobby)


@router.post("/{lobby_id}/leave", response_model=LobbyPublic, responses=responses(401, 404, 409))
async def leave(request: Request, lobby_id: LobbyId, player: PlayerDep, repo: RepoDep) -> LobbyPublic:
    """Leave a lobby. When the host leaves, the lobby closes. A leave that loses a race with
    ``start`` gets ``409 lobby_not_open`` and the player keeps the seat the match gave them."""
    try:
        lobby = await repo.leave_lobby(lobby_id, player["id"])
    except LobbyRefused as exc:
        raise _refused(exc) from None
    lobby_changed(request, lobby_id)
    return await lobby_public(repo, lobby)


@router.post("/{lobby_id}/bots", response_model=LobbyPublic, responses=responses(401, 403, 404, 409))
async def fill_bots(request: Request, lobby_id: LobbyId, player: PlayerDep, repo: RepoDep,
                    body: BotsRequest | None = None) -> LobbyPublic:
    """Fill empty seats with bots (host only): ``kind`` random or smart, ``count`` seats at most."""
    body = body or BotsRequest()
    lobby = await _open_lobby(repo, lobby_id)
    if lobby["host_id"] != player["id"]:
        raise ApiError(403, "not_host", "only the host can add bots")
    try:
        bot_class(lobby["game"], body.kind)
    except (KeyError, ImportError):
        kinds = ", ".join(sorted(registry()[lobby["game"]].info.bots)) if lobby["game"] in registry() else "none"
        raise ApiError(422, "unknown_bot", f"{lobby['game']} has no {body.kind!r} bot (its bots: {kinds})") from None

    def make_bot(seat: int) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex, "name": f"{body.kind}-bot-{seat}", "role": "bot",
                "token_hash": hash_token(secrets.token_urlsafe(32)), "created_at": time.time()}

    try:
        lobby = await repo.fill_lobby_bots(lobby_id, body.kind, body.count, make_bot)
    except LobbyRefused as exc:
        raise _refused(exc) from None
    lobby_changed(request, lobby_id)
    return await lobby_public(repo, lobby)


def _keeping(idem: Idempotency | None, lobby_id: str) -> MatchInsertHook | None:
    """The in-transaction step that keeps a start's idempotency key with the match it inserts."""
    if idem is None:
        return None

    async def keep(conn: AsyncConnection, match: dict[str, Any]) -> None:
        replayed, _stored = await claim_key(conn, idem)
        if replayed:  # the same key started this lobby already (the lobby lock makes it unreachable)
            raise LobbyRefused("lobby_not_open", "the lobby is started")
        await remember(conn, idem, {"lobby_id": lobby_id, "match_id": match["id"]})
    return keep


#: Starts tried when a special's last match is taken by another match meanwhile (each re-reads what
#: the players own, so the spent special is dropped the next time)
_START_ATTEMPTS = 3


@router.post("/{lobby_id}/start", response_model=LobbyPublic, responses=responses(400, 401, 403, 404, 409, 429))
async def start(request: Request, response: Response, lobby_id: LobbyId, player: PlayerDep, repo: RepoDep,
                manager: ManagerDep, wallets: WalletsDep, settings: SettingsDep, bot_cap: BotMatchCap,
                idempotency_key: IdempotencyKeyHeader = None) -> LobbyPublic:
    """Start the match (host only, every seat filled). The lobby's ``match_id`` names it. The seats
    are read, the match inserted and the lobby marked started in one transaction under the lobby's
    lock, so a concurrent leave or join either happened before (and is in the match) or is refused.
    Conquest: one match of every special a player brings is reserved in that transaction (seed
    §5.1.2); a special whose last match another match took meanwhile is dropped from the seat's
    loadout, as one no longer owned is. 409 ``lobby_changed`` if that keeps happening.
    ``Idempotency-Key``: a repeat gets the started lobby (its ``match_id``) instead of 409
    ``lobby_not_open``; 400 ``bad_idempotency_key``, 422 ``idempotency_key_reused``."""
    idem = idempotency(request, player["id"], idempotency_key, None)

    async def replayed() -> LobbyPublic | None:
        if idem is None:
            return None
        with refusing_reuse():
            found, _stored = await lookup_key(repo.engine, idem)
        started = await repo.lobby(lobby_id) if found else None
        if started is None:
            return None
        mark(response, idem)
        return await lobby_public(repo, started)

    again = await replayed()
    if again is not None:
        return again
    try:
        lobby = await _open_lobby(repo, lobby_id)
    except ApiError as exc:
        # a repeat whose first request committed between the lookup above and this read (on
        # another node, say) gets that first answer, not 409
        again = await replayed() if exc.code == "lobby_not_open" else None
        if again is None:
            raise
        return again
    if lobby["host_id"] != player["id"]:  # the host never changes: no lock needed to check it
        raise ApiError(403, "not_host", "only the host can start")
    if any(s["player_id"] is None for s in lobby["seats"]):  # as of this read, before any later join
        raise ApiError(409, "seats_empty", "every seat needs a player or a bot")
    await bot_cap.check(lobby["seats"])  # the seats started (same_seats below): bots added before count
    seats = [{"player_id": s["player_id"], "name": "", "bot": s["bot"]} for s in lobby["seats"]]
    read = [(s["player_id"], s["bot"], s.get("loadout") or []) for s in lobby["seats"]]

    def same_seats(locked: list[dict[str, Any]]) -> None:
        # the options (loadouts) were computed from the seats read above: if a leave, join or
        # loadout change came between that read and the lock, refuse rather than start with them
        if [(s["player_id"], s["bot"], s.get("loadout") or []) for s in locked] != read:
            raise LobbyRefused("lobby_changed", "the lobby changed while starting; start again")

    # the answer's seats are read before the start (the start refuses if they changed): once the
    # match is committed nothing may fail (an overloaded database answered 503 to a started match)
    public = await lobby_public(repo, lobby)
    for attempt in range(_START_ATTEMPTS):
        # Conquest: every seat's loadout (checked again against what each player owns now) and the
        # configured costs go into the match's options (conquest.md 5); one match of each special
        # brought is reserved in the transaction that inserts the match (``reserve_lifetimes``)
        owned = {s["player_id"]: await wallets.owned(s["player_id"]) for s in lobby["seats"] if s.get("loadout")}
        options, _loadouts = start_options(lobby["game"], lobby["options"], lobby["seats"], owned,
                                           settings.special_costs)
        try:
            with refusing_reuse():
                runner = await manager.create_match(lobby["game"], options, cast(list[SeatRow], seats),
                                                    lobby_id=lobby_id, check_seats=same_seats,
                                                    also=_keeping(idem, lobby_id))
        except LobbyRefused as exc:
            if exc.code == "lobby_not_open":  # a repeat of a start that won the race with this one
                again = await replayed()
                if again is not None:
                    return again
            raise _refused(exc) from None
        except LifetimeSpent:
            # another match took a special's last match after ``owned`` was read: read again (it is
            # dropped from that seat's loadout now) and start once more
            if attempt + 1 == _START_ATTEMPTS:
                raise ApiError(409, "lobby_changed",
                               "the specials brought changed while starting; start again") from None
            continue
        lobby_changed(request, lobby_id)
        return public.model_copy(update={"status": "started", "match_id": runner.match_id})
    raise AssertionError("unreachable")  # the loop returns or raises
