"""The meta-game over REST (conquest.md 5): a player's inventory and ledger, the slot machine and
its verification, and the admins' audited grants."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from app.api.deps import AdminDep, PlayerDep, RepoDep, SettingsDep
from app.api.errors import ApiError, not_found
from app.api.meta_schemas import (
    CrystalGrant,
    GrantResult,
    Inventory,
    LedgerRow,
    OwnedSpecialPublic,
    SpecialGrant,
    SpinCheck,
    SpinOffer,
    SpinPublic,
    SpinRequest,
    SpinResult,
)
from app.api.schemas import LobbyPublic
from app.config import Settings
from app.db.wallet import InsufficientCrystals, SpinContention, WalletRepository
from app.games.conquest.specials import SPECIAL_DESCRIPTIONS, SPECIALS, special_cost
from app.meta.slot import verify_spin

router = APIRouter(tags=["inventory"])
admin_router = APIRouter(prefix="/admin", tags=["admin"])


def get_wallets(request: Request) -> WalletRepository:
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


@router.get("/players/me/inventory", response_model=Inventory)
async def my_inventory(player: PlayerDep, wallets: WalletsDep, settings: SettingsDep) -> Inventory:
    """Your crystals, the specials you own with the matches they still last, and the next spin's
    price and seed commitment."""
    return await inventory_of(wallets, settings, player["id"])


@router.get("/players/me/ledger", response_model=list[LedgerRow])
async def my_ledger(player: PlayerDep, wallets: WalletsDep, limit: int = Query(100, ge=1, le=500),
                    before: int | None = Query(None, ge=1)) -> list[dict[str, Any]]:
    """Every change of your balances, newest first (page back with ``before`` = the last id seen)."""
    return await wallets.ledger(player["id"], limit, before)


@router.get("/players/me/spins/next", response_model=SpinOffer)
async def next_spin(player: PlayerDep, wallets: WalletsDep, settings: SettingsDep) -> SpinOffer:
    """The commitment to your next spin: ``sha256(seed)`` before the spin (provably fair)."""
    wallet = await wallets.wallet(player["id"])
    return SpinOffer(price=settings.spin_price, next_seed_hash=wallet["next_spin_seed_hash"],
                     strip=settings.spin_strip, paytable=settings.spin_paytable)


@router.post("/players/me/spins", response_model=SpinResult, status_code=201)
async def spin(player: PlayerDep, wallets: WalletsDep, settings: SettingsDep,
               body: SpinRequest | None = None) -> SpinResult:
    """Spin the slot machine (seed §5.2): pay ``spin_price`` crystals, get three reels and maybe a
    special. Errors: 409 ``insufficient_crystals`` (nothing taken), 503 ``busy`` (try again)."""
    body = body or SpinRequest(client_seed="")
    try:
        row = await wallets.play_spin(player["id"], price=settings.spin_price, strip=settings.spin_strip,
                                      paytable=settings.spin_paytable, client_seed=body.client_seed)
    except InsufficientCrystals as exc:
        raise ApiError(409, "insufficient_crystals",
                       f"a spin costs {exc.needed} crystals; you have {exc.balance}") from None
    except SpinContention:
        raise ApiError(503, "busy", "too many spins at once; try again") from None
    return SpinResult(**row, crystals=row["balance"])


@router.get("/players/me/spins", response_model=list[SpinPublic])
async def my_spins(player: PlayerDep, wallets: WalletsDep, limit: int = Query(50, ge=1, le=500)) -> list[dict[str, Any]]:
    """Your spins, newest first, each with its revealed seed."""
    return await wallets.spins(player["id"], limit)


async def _visible_spin(wallets: WalletRepository, player: dict[str, Any], spin_id: str) -> dict[str, Any]:
    row = await wallets.spin(spin_id) if len(spin_id) <= 64 else None
    if row is None or (row["player_id"] != player["id"] and player["role"] != "admin"):
        raise not_found("spin")
    return row


@router.get("/spins/{spin_id}", response_model=SpinPublic)
async def get_spin(spin_id: str, player: PlayerDep, wallets: WalletsDep) -> dict[str, Any]:
    """One spin (yours, or any for an admin)."""
    return await _visible_spin(wallets, player, spin_id)


@router.get("/spins/{spin_id}/verify", response_model=SpinCheck)
async def verify(spin_id: str, player: PlayerDep, wallets: WalletsDep) -> SpinCheck:
    """Recompute a spin from its revealed seed, client seed, strip and paytable, and check the seed
    against the commitment published before it (same as ``bannerfall verify-spin ID``)."""
    problems = verify_spin(await _visible_spin(wallets, player, spin_id))
    return SpinCheck(spin_id=spin_id, ok=not problems, problems=problems)


class LoadoutRequest(BaseModel):
    loadout: list[str] = Field(max_length=15, description="owned special ids to bring ([] = none)")


@router.put("/lobbies/{lobby_id}/loadout", response_model=LobbyPublic)
async def set_loadout(lobby_id: str, body: LoadoutRequest, player: PlayerDep, repo: RepoDep,
                      wallets: WalletsDep) -> LobbyPublic:
    """Change the specials you bring to an open Conquest lobby you sit in (conquest.md 5). Errors:
    404, 409 ``lobby_not_open`` / ``not_seated``, 422 ``special_not_owned`` and the other loadout codes."""
    from app.api.routes.lobbies import _checked_loadout, _open_lobby, lobby_public

    lobby = await _open_lobby(repo, lobby_id)
    mine = [s for s in lobby["seats"] if s["player_id"] == player["id"]]
    if not mine:
        raise ApiError(409, "not_seated", "you have no seat in this lobby")
    loadout = await _checked_loadout(wallets, lobby["game"], body.loadout, player["id"])
    if not await wallets.set_seat_loadout(lobby_id, mine[0]["seat"], player["id"], loadout):
        raise ApiError(409, "not_seated", "you left the seat meanwhile")
    return await lobby_public(repo, await repo.lobby(lobby_id))


# -- admins -------------------------------------------------------------------------------------
async def _existing_player(repo, player_id: str) -> dict[str, Any]:
    player = await repo.player(player_id) if len(player_id) <= 32 else None
    if player is None:
        raise not_found("player")
    return player


@admin_router.post("/players/{player_id}/crystals", response_model=GrantResult)
async def grant_crystals(player_id: str, body: CrystalGrant, admin: AdminDep, repo: RepoDep,
                         wallets: WalletsDep) -> GrantResult:
    """Grant crystals (buying them is outside the server). Audited: the ledger row names the admin
    and the reason. Errors: 404 ``not_found``, 422 ``invalid_request`` (amount 0), 409
    ``insufficient_crystals`` (a negative amount larger than the balance; nothing changes)."""
    await _existing_player(repo, player_id)
    if body.amount == 0:
        raise ApiError(422, "invalid_request", "amount: must not be 0")
    try:
        balance = await wallets.grant_crystals(player_id, body.amount, actor=admin["id"], reason=body.reason)
    except InsufficientCrystals as exc:
        raise ApiError(409, "insufficient_crystals", f"the player has {exc.balance} crystals") from None
    return GrantResult(player_id=player_id, asset="crystals", balance=balance)


@admin_router.post("/players/{player_id}/specials", response_model=GrantResult)
async def grant_special(player_id: str, body: SpecialGrant, admin: AdminDep, repo: RepoDep,
                        wallets: WalletsDep) -> GrantResult:
    """Give a player a special for 1-10 more matches (audited like crystals). Errors: 404, 422
    ``unknown_special``."""
    await _existing_player(repo, player_id)
    if body.special not in SPECIALS:
        raise ApiError(422, "unknown_special", f"no special {body.special!r}")
    left = await wallets.grant_special(player_id, body.special, body.matches, actor=admin["id"], reason=body.reason)
    return GrantResult(player_id=player_id, asset=body.special, balance=left)


@admin_router.get("/players/{player_id}/inventory", response_model=Inventory)
async def player_inventory(player_id: str, _admin: AdminDep, repo: RepoDep, wallets: WalletsDep,
                           settings: SettingsDep) -> Inventory:
    await _existing_player(repo, player_id)
    return await inventory_of(wallets, settings, player_id)


@admin_router.get("/players/{player_id}/ledger", response_model=list[LedgerRow])
async def player_ledger(player_id: str, _admin: AdminDep, repo: RepoDep, wallets: WalletsDep,
                        limit: int = Query(100, ge=1, le=500), before: int | None = Query(None, ge=1)) -> list[dict[str, Any]]:
    await _existing_player(repo, player_id)
    return await wallets.ledger(player_id, limit, before)
