"""The meta-game over REST (conquest.md 5): a player's inventory and ledger, the slot machine and
its verification, and the admins' audited grants."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from app.api.deps import AdminDep, PlayerDep, RepoDep, SettingsDep
from app.api.errors import ApiError, Error, not_found, responses
from app.api.idempotency import IdempotencyKeyHeader, idempotency, mark, refusing_reuse
from app.api.meta_schemas import (
    CrystalGrant,
    GrantResult,
    Inventory,
    LedgerPage,
    LedgerRow,
    LoadoutRequest,
    OwnedSpecialPublic,
    SpecialGrant,
    SpinCheck,
    SpinOffer,
    SpinPublic,
    SpinRequest,
    SpinResult,
)
from app.api.schemas import LobbyPublic, Text
from app.config import Settings
from app.db.wallet import InsufficientCrystals, SpinContention, WalletRepository
from app.games.conquest.specials import SPECIAL_DESCRIPTIONS, SPECIALS, special_cost
from app.meta.slot import verify_spin

router = APIRouter(tags=["inventory"])
#: ids in paths: bounded text (the walk of every route sends NUL, surrogates and huge values)
SpinId = Annotated[Text, Path(max_length=64, description="a spin id")]
PlayerId = Annotated[Text, Path(max_length=64, description="a player id")]
LobbyId = Annotated[Text, Path(max_length=64, description="a lobby id")]
#: ledger ids are 32-bit
LedgerBefore = Annotated[int | None, Query(ge=1, le=2**31 - 1, description="page back from this ledger id")]
LedgerCursor = Annotated[Text | None, Query(max_length=512, description="next_cursor of the previous page")]
_SPIN_ERRORS = {**responses(400, 401, 409, unavailable="`busy`: the wallet changed under the spin's lock (not "
                                                        "expected); nothing was taken; try again"),
                409: {"model": Error, "description": "`insufficient_crystals`: nothing taken"}}
admin_router = APIRouter(prefix="/admin", tags=["admin"])


async def get_wallets(request: Request) -> WalletRepository:
    return request.app.state.wallets


WalletsDep = Annotated[WalletRepository, Depends(get_wallets)]


async def inventory_of(wallets: WalletRepository, settings: Settings, player_id: str) -> Inventory:
    wallet = await wallets.wallet(player_id)
    owned = await wallets.owned(player_id)
    specials = [OwnedSpecialPublic(id=s, matches_left=owned[s], cost=special_cost(settings.special_costs, s),
                                   description=SPECIAL_DESCRIPTIONS[s]) for s in SPECIALS if s in owned]
    return Inventory(player_id=player_id, crystals=wallet["crystals"], specials=specials,
                     spin=SpinOffer(price=settings.spin_price, next_seed_hash=wallet["next_spin_seed_hash"],
                                    strip=settings.spin_strip, paytable=settings.spin_paytable))


@router.get("/players/me/inventory", response_model=Inventory, responses=responses(401))
async def my_inventory(player: PlayerDep, wallets: WalletsDep, settings: SettingsDep) -> Inventory:
    """Your crystals, the specials you own with the matches they still last, and the next spin's
    price and seed commitment."""
    return await inventory_of(wallets, settings, player["id"])


async def ledger_page(wallets: WalletRepository, player_id: str, limit: int, before: int | None,
                      cursor: str | None) -> LedgerPage:
    """One page of a player's ledger, newest first, keyset by id: ``cursor`` from
    the previous page (or the older ``before`` id). Raises ApiError 422 ``bad_cursor``."""
    from app.db.paging import BadCursor, decode_cursor, encode_cursor

    if cursor is not None:
        try:
            (before,) = decode_cursor("ledger", cursor, (int,))
        except BadCursor as exc:
            raise ApiError(422, "bad_cursor", str(exc)) from None
    rows = await wallets.ledger(player_id, limit + 1, before)
    more = len(rows) > limit
    rows = rows[:limit]
    return LedgerPage(items=[LedgerRow(**r) for r in rows],
                      next_cursor=encode_cursor("ledger", [rows[-1]["id"]]) if more else None)


@router.get("/players/me/ledger", response_model=LedgerPage, responses=responses(401))
async def my_ledger(player: PlayerDep, wallets: WalletsDep, limit: int = Query(100, ge=1, le=500),
                    before: LedgerBefore = None, cursor: LedgerCursor = None) -> LedgerPage:
    """Every change of your balances, newest first: ``{items, next_cursor}`` (pass ``next_cursor``
    back as ``?cursor=``; ``before`` = a ledger id still works). 422 ``bad_cursor``."""
    return await ledger_page(wallets, player["id"], limit, before, cursor)


@router.get("/players/me/spins/next", response_model=SpinOffer, responses=responses(401))
async def next_spin(player: PlayerDep, wallets: WalletsDep, settings: SettingsDep) -> SpinOffer:
    """The commitment to your next spin: ``sha256(seed)`` before the spin (provably fair)."""
    wallet = await wallets.wallet(player["id"])
    return SpinOffer(price=settings.spin_price, next_seed_hash=wallet["next_spin_seed_hash"],
                     strip=settings.spin_strip, paytable=settings.spin_paytable)


@router.post("/players/me/spins", response_model=SpinResult, status_code=201, responses=_SPIN_ERRORS)
async def spin(request: Request, response: Response, player: PlayerDep, wallets: WalletsDep,
               settings: SettingsDep, idempotency_key: IdempotencyKeyHeader = None,
               body: SpinRequest | None = None) -> SpinResult:
    """Spin the slot machine (seed §5.2): pay ``spin_price`` crystals, get three reels and maybe a
    special. ``Idempotency-Key``: a repeat gets the first spin's answer and pays nothing. Errors: 409
    ``insufficient_crystals`` (nothing taken), 503 ``busy`` (try again), 400 ``bad_idempotency_key``,
    422 ``idempotency_key_reused``."""
    body = body or SpinRequest(client_seed="")
    idem = idempotency(request, player["id"], idempotency_key, body.model_dump(mode="json"))
    try:
        with refusing_reuse():
            row = await wallets.play_spin(player["id"], price=settings.spin_price, strip=settings.spin_strip,
                                          paytable=settings.spin_paytable, client_seed=body.client_seed, idem=idem)
    except InsufficientCrystals as exc:
        raise ApiError(409, "insufficient_crystals",
                       f"a spin costs {exc.needed} crystals; you have {exc.balance}") from None
    except SpinContention:
        raise ApiError(503, "busy", "too many spins at once; try again") from None
    mark(response, idem)
    return SpinResult(**row, crystals=row["balance"])


@router.get("/players/me/spins", response_model=list[SpinPublic], responses=responses(401))
async def my_spins(
    player: PlayerDep, wallets: WalletsDep, limit: int = Query(50, ge=1, le=500),
) -> list[dict[str, Any]]:
    """Your spins, newest first, each with its revealed seed."""
    return await wallets.spins(player["id"], limit)


async def _visible_spin(wallets: WalletRepository, player: dict[str, Any], spin_id: str) -> dict[str, Any]:
    row = await wallets.spin(spin_id) if len(spin_id) <= 64 else None
    if row is None or (row["player_id"] != player["id"] and player["role"] != "admin"):
        raise not_found("spin")
    return row


@router.get("/spins/{spin_id}", response_model=SpinPublic, responses=responses(401, 404))
async def get_spin(spin_id: SpinId, player: PlayerDep, wallets: WalletsDep) -> dict[str, Any]:
    """One spin (yours, or any for an admin)."""
    return await _visible_spin(wallets, player, spin_id)


@router.get("/spins/{spin_id}/verify", response_model=SpinCheck, responses=responses(401, 404))
async def verify(spin_id: SpinId, player: PlayerDep, wallets: WalletsDep) -> SpinCheck:
    """Recompute a spin from its revealed seed, client seed, strip and paytable, and check the seed
    against the commitment published before it (same as ``bannerfall verify-spin ID``)."""
    problems = verify_spin(await _visible_spin(wallets, player, spin_id))
    return SpinCheck(spin_id=spin_id, ok=not problems, problems=problems)


@router.put("/lobbies/{lobby_id}/loadout", response_model=LobbyPublic, responses=responses(401, 404, 409))
async def set_loadout(request: Request, lobby_id: LobbyId, body: LoadoutRequest, player: PlayerDep, repo: RepoDep,
                      wallets: WalletsDep) -> LobbyPublic:
    """Change the specials you bring to an open Conquest lobby you sit in (conquest.md 5). Errors:
    404, 409 ``lobby_not_open`` / ``not_seated``, 422 ``special_not_owned`` and the other loadout codes."""
    from app.api.routes.lobbies import _checked_loadout, _open_lobby, lobby_changed, lobby_public

    lobby = await _open_lobby(repo, lobby_id)
    mine = [s for s in lobby["seats"] if s["player_id"] == player["id"]]
    if not mine:
        raise ApiError(409, "not_seated", "you have no seat in this lobby")
    loadout = await _checked_loadout(wallets, lobby["game"], body.loadout, player["id"])
    # the answer is read before the change: once it is committed nothing may fail (a read after it
    # answered 503 storage_unavailable to a loadout that was set)
    public = await lobby_public(repo, lobby)
    if not await wallets.set_seat_loadout(lobby_id, mine[0]["seat"], player["id"], loadout):
        raise ApiError(409, "not_seated", "you left the seat meanwhile")
    lobby_changed(request, lobby_id)
    seats = [seat.model_copy(update={"loadout": list(loadout)}) if seat.seat == mine[0]["seat"] else seat
             for seat in public.seats]
    return public.model_copy(update={"seats": seats})


# -- admins -------------------------------------------------------------------------------------
async def _existing_player(repo, player_id: str) -> dict[str, Any]:
    player = await repo.player(player_id) if len(player_id) <= 32 else None
    if player is None:
        raise not_found("player")
    return player


@admin_router.post("/players/{player_id}/crystals", response_model=GrantResult,
                   responses=responses(400, 401, 403, 404, 409))
async def grant_crystals(request: Request, response: Response, player_id: PlayerId, body: CrystalGrant,
                         admin: AdminDep, repo: RepoDep, wallets: WalletsDep,
                         idempotency_key: IdempotencyKeyHeader = None) -> GrantResult:
    """Grant crystals (buying them is outside the server). Audited: the ledger row names the admin
    and the reason. ``Idempotency-Key``: a repeat gets the first answer and grants nothing. Errors:
    404 ``not_found``, 422 ``invalid_request`` (amount 0), 409 ``insufficient_crystals`` (a negative
    amount larger than the balance; nothing changes), 400 ``bad_idempotency_key``, 422
    ``idempotency_key_reused``."""
    idem = idempotency(request, admin["id"], idempotency_key, body.model_dump(mode="json"))
    await _existing_player(repo, player_id)
    if body.amount == 0:
        raise ApiError(422, "invalid_request", "amount: must not be 0")
    try:
        with refusing_reuse():
            balance = await wallets.grant_crystals(player_id, body.amount, actor=admin["id"], reason=body.reason,
                                                   idem=idem)
    except InsufficientCrystals as exc:
        raise ApiError(409, "insufficient_crystals", f"the player has {exc.balance} crystals") from None
    mark(response, idem)
    return GrantResult(player_id=player_id, asset="crystals", balance=balance)


@admin_router.post("/players/{player_id}/specials", response_model=GrantResult,
                   responses=responses(400, 401, 403, 404))
async def grant_special(request: Request, response: Response, player_id: PlayerId, body: SpecialGrant,
                        admin: AdminDep, repo: RepoDep, wallets: WalletsDep,
                        idempotency_key: IdempotencyKeyHeader = None) -> GrantResult:
    """Give a player a special for 1-10 more matches (audited like crystals; ``Idempotency-Key`` as
    there). Errors: 404, 422 ``unknown_special``, 400 ``bad_idempotency_key``, 422
    ``idempotency_key_reused``."""
    idem = idempotency(request, admin["id"], idempotency_key, body.model_dump(mode="json"))
    await _existing_player(repo, player_id)
    if body.special not in SPECIALS:
        raise ApiError(422, "unknown_special", f"no special {body.special!r}")
    with refusing_reuse():
        left = await wallets.grant_special(player_id, body.special, body.matches, actor=admin["id"],
                                           reason=body.reason, idem=idem)
    mark(response, idem)
    return GrantResult(player_id=player_id, asset=body.special, balance=left)


@admin_router.get("/players/{player_id}/inventory", response_model=Inventory, responses=responses(401, 403, 404))
async def player_inventory(player_id: PlayerId, _admin: AdminDep, repo: RepoDep, wallets: WalletsDep,
                           settings: SettingsDep) -> Inventory:
    await _existing_player(repo, player_id)
    return await inventory_of(wallets, settings, player_id)


@admin_router.get("/players/{player_id}/ledger", response_model=LedgerPage, responses=responses(401, 403, 404))
async def player_ledger(player_id: PlayerId, _admin: AdminDep, repo: RepoDep, wallets: WalletsDep,
                        limit: int = Query(100, ge=1, le=500), before: LedgerBefore = None,
                        cursor: LedgerCursor = None) -> LedgerPage:
    """A player's ledger, newest first: ``{items, next_cursor}``, as ``GET /players/me/ledger``."""
    await _existing_player(repo, player_id)
    return await ledger_page(wallets, player_id, limit, before, cursor)
