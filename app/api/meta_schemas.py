"""Request and response models of the meta-game (conquest.md 5): inventory, ledger, spins, grants."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.api.schemas import StrictRequest, Text


class OwnedSpecialPublic(BaseModel):
    id: str = Field(description="special id (conquest.md 5 table)")
    matches_left: int = Field(description="finished matches it still lasts")
    cost: int = Field(description="activation cost in mana under this server's configuration")
    description: str


class SpinOffer(BaseModel):
    price: int = Field(description="crystals one spin costs")
    next_seed_hash: str = Field(description="sha256 of the seed your next spin will use (hex)")
    strip: list[str] = Field(description="the symbols of each reel (special ids or 'blank')")
    paytable: dict[str, int] = Field(description="reels showing one special -> matches that special is won for")


class Inventory(BaseModel):
    player_id: str
    crystals: int
    specials: list[OwnedSpecialPublic] = Field(description="owned specials with matches left, in table order")
    spin: SpinOffer


class LedgerRow(BaseModel):
    id: int
    asset: str = Field(description="'crystals' or a special id")
    kind: Literal["grant", "spin", "prize", "match_use", "match_release", "expiry"] = Field(
        description="match_use: a match of a special, taken when the match starts; match_release: "
                    "given back when that match is aborted")
    delta: int
    balance_after: int
    ref: str | None = Field(None, description="the spin or match this row belongs to")
    actor: str | None = Field(None, description="the admin who granted")
    reason: str | None = None
    created_at: float


class SpinRequest(StrictRequest):
    client_seed: Text = Field("", max_length=64, description="any text of yours mixed into the reels")


class Prize(BaseModel):
    special: str
    matches: int
    level: int = Field(description="how many reels show the special")


class SpinPublic(BaseModel):
    id: str
    player_id: str
    reels: list[str] = Field(min_length=3, max_length=3)
    prize: Prize | None
    price: int
    seed: str = Field(description="the seed used, revealed (hex)")
    seed_hash: str = Field(description="the commitment published before the spin")
    client_seed: str
    strip: list[str]
    paytable: dict[str, int]
    created_at: float


class SpinResult(SpinPublic):
    crystals: int = Field(description="your balance after the spin")
    next_seed_hash: str = Field(description="the commitment to your next spin")


class SpinCheck(BaseModel):
    spin_id: str
    ok: bool
    problems: list[str]


class CrystalGrant(StrictRequest):
    amount: int = Field(ge=-1_000_000_000, le=1_000_000_000, description="crystals to add (negative: take back)")
    reason: Text = Field(min_length=1, max_length=200, description="why; kept in the ledger with the admin's id")


class SpecialGrant(StrictRequest):
    special: Text = Field(max_length=32)
    matches: int = Field(ge=1, le=10, description="matches it lasts (seed §5.1.2: 1-10)")
    reason: Text = Field(min_length=1, max_length=200)


class LoadoutRequest(StrictRequest):
    loadout: list[Text] = Field(max_length=15, description="owned special ids to bring ([] = none)")


class GrantResult(BaseModel):
    player_id: str
    asset: str
    balance: int


class LedgerPage(BaseModel):
    """A page of a ledger, newest first: pass ``next_cursor`` back as ``?cursor=``."""

    items: list[LedgerRow]
    next_cursor: str | None
