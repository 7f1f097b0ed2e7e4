"""Repository of the meta-game (conquest.md 5): crystals, owned specials, the ledger, spins and the
settling of specials' lifetimes. Every query about them lives here.

Every change of a balance and its ledger row are written in one transaction, and the ledger explains
every unit: for each ``(player, asset)`` the balance equals the sum of the ledger's deltas
(``asset`` is ``crystals`` or a special id, whose balance is its ``matches_left``).
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db.idempotency import Idempotency, remember
from app.db.idempotency import claim as claim_key
from app.db.tables import ENDED, ledger_t, matches_t, owned_t, seats_t, settlements_t, spins_t, wallets_t
from app.meta.slot import new_seed, prize_for, reels_for

CRYSTALS = "crystals"


class InsufficientCrystals(Exception):
    """The balance does not pay for the operation; nothing was changed."""

    def __init__(self, balance: int, needed: int) -> None:
        super().__init__(f"{needed} crystals needed, {balance} held")
        self.balance = balance
        self.needed = needed


class LifetimeSpent(Exception):
    """A special brought to a match has no match left any more (another match reserved its last
    one since the loadout was read); nothing was changed. ``player_id``, ``special``."""

    def __init__(self, player_id: str, special: str) -> None:
        super().__init__(f"{special} of player {player_id} has no match left")
        self.player_id = player_id
        self.special = special


class SpinContention(Exception):
    """The spin commitment kept moving under concurrent spins; nothing was changed (try again)."""


def match_loadouts(match: Mapping[str, Any]) -> list[list[str]]:
    """The specials each seat brought to a match: ``options.loadouts`` (the engine's record), else
    the ``loadout`` kept on each seat of ``matches.seats``."""
    loadouts = (match.get("options") or {}).get("loadouts")
    if loadouts:
        return [list(x) for x in loadouts]
    return [list(s.get("loadout") or []) for s in match.get("seats") or []]


class WalletRepository:
    """Data access for the meta-game over one :class:`AsyncEngine`. Methods return plain dicts."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    def _insert(self, table):
        """An INSERT that supports ``on_conflict_*`` on this engine's dialect."""
        return (postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert)(table)

    # -- reading ------------------------------------------------------------------------------
    async def ensure_wallet(self, player_id: str) -> None:
        """Create the player's wallet (0 crystals, a first spin commitment) if it does not exist."""
        seed, seed_hash = new_seed()
        async with self.engine.begin() as conn:
            await conn.execute(self._insert(wallets_t).values(
                player_id=player_id, crystals=0, next_spin_seed=seed, next_spin_seed_hash=seed_hash,
                updated_at=time.time()).on_conflict_do_nothing(index_elements=["player_id"]))

    async def wallet(self, player_id: str) -> dict[str, Any]:
        """``{"crystals", "next_spin_seed_hash"}`` (the secret next seed is not returned)."""
        query = select(wallets_t.c.crystals, wallets_t.c.next_spin_seed_hash).where(wallets_t.c.player_id == player_id)
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None:  # the first look: make the wallet (a read does not write after that)
            await self.ensure_wallet(player_id)
            async with self.engine.connect() as conn:
                row = (await conn.execute(query)).one()
        return {"crystals": row.crystals, "next_spin_seed_hash": row.next_spin_seed_hash}

    async def owned(self, player_id: str) -> dict[str, int]:
        """Specials the player owns with matches left (> 0): ``{special: matches_left}``."""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(owned_t.c.special, owned_t.c.matches_left).where(
                owned_t.c.player_id == player_id, owned_t.c.matches_left > 0))).all()
        return {r.special: r.matches_left for r in rows}

    async def ledger(self, player_id: str, limit: int = 100, before: int | None = None) -> list[dict[str, Any]]:
        """The player's ledger rows, newest first (``before``: an id to page back from)."""
        q = select(ledger_t).where(ledger_t.c.player_id == player_id).order_by(ledger_t.c.id.desc()).limit(limit)
        if before is not None:
            q = q.where(ledger_t.c.id < before)
        async with self.engine.connect() as conn:
            return [dict(r._mapping) for r in (await conn.execute(q)).all()]

    async def balances(self, player_id: str) -> dict[str, int]:
        """Every balance of the player by asset (crystals and each special ever owned)."""
        async with self.engine.connect() as conn:
            w = (await conn.execute(select(wallets_t.c.crystals).where(wallets_t.c.player_id == player_id))).first()
            rows = (await conn.execute(select(owned_t.c.special, owned_t.c.matches_left)
                                       .where(owned_t.c.player_id == player_id))).all()
        out = {r.special: r.matches_left for r in rows}
        out[CRYSTALS] = w.crystals if w else 0
        return out

    async def ledger_sums(self, player_id: str) -> dict[str, int]:
        """The sum of the ledger's deltas by asset (equal to :meth:`balances`: the invariant)."""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(ledger_t.c.asset, func.sum(ledger_t.c.delta))
                                       .where(ledger_t.c.player_id == player_id).group_by(ledger_t.c.asset))).all()
        out = {r[0]: int(r[1]) for r in rows}
        out.setdefault(CRYSTALS, 0)
        return out

    async def spin(self, spin_id: str) -> dict[str, Any] | None:
        async with self.engine.connect() as conn:
            r = (await conn.execute(select(spins_t).where(spins_t.c.id == spin_id))).first()
        return dict(r._mapping) if r is not None else None

    async def spins(self, player_id: str, limit: int = 50) -> list[dict[str, Any]]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(spins_t).where(spins_t.c.player_id == player_id)
                                       .order_by(spins_t.c.created_at.desc()).limit(limit))).all()
        return [dict(r._mapping) for r in rows]

    # -- writing ------------------------------------------------------------------------------
    @staticmethod
    async def _ledger(conn: AsyncConnection, player_id: str, asset: str, kind: str, delta: int,
                      balance_after: int, *, ref: str | None = None, actor: str | None = None,
                      reason: str | None = None, idem_key: str | None = None, now: float) -> None:
        await conn.execute(insert(ledger_t).values(
            player_id=player_id, asset=asset, kind=kind, delta=delta, balance_after=balance_after, ref=ref,
            actor=actor, reason=reason, idem_key=idem_key, created_at=now))

    async def _add_special(self, conn: AsyncConnection, player_id: str, special: str, matches: int,
                           now: float) -> int:
        """Add ``matches`` to an owned special (creating it); returns the new matches_left."""
        stmt = self._insert(owned_t).values(player_id=player_id, special=special, matches_left=matches,
                                            updated_at=now)
        stmt = stmt.on_conflict_do_update(
            index_elements=["player_id", "special"],
            set_={"matches_left": owned_t.c.matches_left + matches, "updated_at": now})
        await conn.execute(stmt)
        return (await conn.execute(select(owned_t.c.matches_left).where(
            owned_t.c.player_id == player_id, owned_t.c.special == special))).scalar_one()

    async def grant_crystals(self, player_id: str, amount: int, *, actor: str, reason: str,
                             idem: Idempotency | None = None) -> int:
        """Add ``amount`` crystals (negative: take them back) as an audited ``grant`` naming the admin
        ``actor`` and the ``reason``. Returns the new balance. Raises :class:`InsufficientCrystals`
        if a negative amount would leave less than 0 (nothing changes then). ``idem``: the request's
        idempotency key (:mod:`app.db.idempotency`): a repeat returns the first balance and grants
        nothing; raises ``IdempotencyKeyReused``."""
        await self.ensure_wallet(player_id)
        now = time.time()
        async with self.engine.begin() as conn:
            replayed, stored = await claim_key(conn, idem)
            if replayed:
                return int(stored["balance"])
            res = await conn.execute(
                update(wallets_t).where(wallets_t.c.player_id == player_id, wallets_t.c.crystals + amount >= 0)
                .values(crystals=wallets_t.c.crystals + amount, updated_at=now))
            balance = (await conn.execute(select(wallets_t.c.crystals)
                                          .where(wallets_t.c.player_id == player_id))).scalar_one()
            if res.rowcount != 1:
                raise InsufficientCrystals(balance, -amount)
            await self._ledger(conn, player_id, CRYSTALS, "grant", amount, balance, actor=actor,
                               reason=reason, now=now)
            await remember(conn, idem, {"balance": balance})
        return balance

    async def grant_special(self, player_id: str, special: str, matches: int, *, actor: str, reason: str,
                            idem: Idempotency | None = None) -> int:
        """Give a special for ``matches`` more matches (audited ``grant``). Returns its matches_left.
        ``idem``: as for :meth:`grant_crystals` (a repeat returns the first matches_left)."""
        now = time.time()
        async with self.engine.begin() as conn:
            replayed, stored = await claim_key(conn, idem)
            if replayed:
                return int(stored["matches_left"])
            left = await self._add_special(conn, player_id, special, matches, now)
            await self._ledger(conn, player_id, special, "grant", matches, left, actor=actor, reason=reason, now=now)
            await remember(conn, idem, {"matches_left": left})
        return left

    async def play_spin(self, player_id: str, *, price: int, strip: Sequence[str], paytable: Mapping[str, int],
                        client_seed: str = "", idem: Idempotency | None = None) -> dict[str, Any]:
        """One slot machine spin (conquest.md 5, seed §5.2), in one transaction: lock the player's
        wallet row (a no-op update: a row lock on Postgres, the write lock on SQLite), so concurrent
        spins of one player queue and each uses the commitment its predecessor left; take ``price``
        crystals and consume the committed seed with an update that is also conditional (balance >=
        price, commitment unchanged); record the spin, add the prize, write the ledger, commit to a
        new seed. Two spins racing on a balance that pays for one: exactly one succeeds, the other
        raises :class:`InsufficientCrystals`; the balance never goes negative (and a CHECK forbids it).

        Returns the spin row plus ``balance`` and ``next_seed_hash``. Raises InsufficientCrystals
        (nothing changed), or :class:`SpinContention` if the conditional update finds the wallet
        changed under its lock (not expected; nothing changed). ``idem``: the request's idempotency
        key (:mod:`app.db.idempotency`, taken first in the transaction): a repeat returns the first
        spin's answer and spends nothing; raises ``IdempotencyKeyReused``."""
        await self.ensure_wallet(player_id)
        now = time.time()
        async with self.engine.begin() as conn:
            replayed, stored = await claim_key(conn, idem)
            if replayed:
                return dict(stored)
            await conn.execute(update(wallets_t).where(wallets_t.c.player_id == player_id).values(updated_at=now))
            w = (await conn.execute(select(wallets_t).where(wallets_t.c.player_id == player_id))).one()
            if w.crystals < price:
                raise InsufficientCrystals(w.crystals, price)
            reels = reels_for(w.next_spin_seed, client_seed, strip)
            prize = prize_for(reels, paytable)
            next_seed, next_hash = new_seed()
            spin = {"id": uuid.uuid4().hex, "player_id": player_id, "seed": w.next_spin_seed,
                    "seed_hash": w.next_spin_seed_hash, "client_seed": client_seed, "price": price,
                    "strip": list(strip), "paytable": dict(paytable), "reels": reels, "prize": prize,
                    "created_at": now}
            res = await conn.execute(
                update(wallets_t).where(wallets_t.c.player_id == player_id, wallets_t.c.crystals >= price,
                                        wallets_t.c.next_spin_seed_hash == w.next_spin_seed_hash)
                .values(crystals=wallets_t.c.crystals - price, next_spin_seed=next_seed,
                        next_spin_seed_hash=next_hash, updated_at=now))
            if res.rowcount != 1:
                raise SpinContention("the wallet changed under its lock; try again")
            balance = w.crystals - price
            await conn.execute(insert(spins_t).values(**spin))
            await self._ledger(conn, player_id, CRYSTALS, "spin", -price, balance, ref=spin["id"], now=now)
            if prize is not None:
                left = await self._add_special(conn, player_id, prize["special"], prize["matches"], now)
                await self._ledger(conn, player_id, prize["special"], "prize", prize["matches"], left,
                                   ref=spin["id"], now=now)
            answer = {**spin, "balance": balance, "next_seed_hash": next_hash}
            await remember(conn, idem, answer)
        return answer

    async def set_seat_loadout(self, lobby_id: str, seat: int, player_id: str, loadout: Sequence[str]) -> bool:
        """Store the loadout of a seat, only if ``player_id`` still sits there. Returns whether it did."""
        async with self.engine.begin() as conn:
            res = await conn.execute(update(seats_t).where(
                seats_t.c.lobby_id == lobby_id, seats_t.c.seat == seat, seats_t.c.player_id == player_id)
                .values(loadout=list(loadout)))
        return res.rowcount == 1

    # -- reserving and settling lifetimes ----------------------------------------------------
    async def reserve_lifetimes(self, conn: AsyncConnection, match: Mapping[str, Any]) -> int:
        """Reserve one match of every special each player brings to ``match`` (its row as inserted:
        ``options.loadouts``, ``seats``), in the caller's transaction, the one that inserts the match
        (conquest.md 5, seed §5.1.2: a special plays in at most as many matches as it has left).

        Each is a conditional ``UPDATE owned_specials … SET matches_left = matches_left - 1 WHERE
        matches_left > 0``: on Postgres it takes the row's lock (a concurrent start of another match
        waits, then re-checks), on SQLite the write lock serialises the starts; so two nodes starting
        matches at once can never take the same last match. The ledger gets the ``match_use`` (-1,
        ``use:<player>:<special>:<match>``, the key the settlement of a finished match finds, so it
        counts nothing twice) and, at 0, an ``expiry``. Bot seats and specials never owned are
        skipped. An aborted match gives the reservation back (:meth:`settle_match`).

        Returns how many were reserved. Raises :class:`LifetimeSpent` when an owned special is at 0
        (the caller's transaction must then roll back: nothing is reserved)."""
        if match.get("game") != "conquest":
            return 0
        now = time.time()
        seats = match.get("seats") or []
        reserved = 0
        for seat, loadout in enumerate(match_loadouts(match)):
            if seat >= len(seats) or seats[seat].get("bot") or not seats[seat].get("player_id"):
                continue
            player_id = seats[seat]["player_id"]
            for special in loadout:
                res = await conn.execute(
                    update(owned_t).where(owned_t.c.player_id == player_id, owned_t.c.special == special,
                                          owned_t.c.matches_left > 0)
                    .values(matches_left=owned_t.c.matches_left - 1, updated_at=now))
                left = (await conn.execute(select(owned_t.c.matches_left).where(
                    owned_t.c.player_id == player_id, owned_t.c.special == special))).scalar_one_or_none()
                if left is None:  # never owned (a match made with loadouts outside lobbies)
                    continue
                if res.rowcount != 1:
                    raise LifetimeSpent(player_id, special)
                key = f"use:{player_id}:{special}:{match['id']}"
                await self._ledger(conn, player_id, special, "match_use", -1, left, ref=match["id"],
                                   idem_key=key, now=now)
                if left == 0:
                    await self._ledger(conn, player_id, special, "expiry", 0, 0, ref=match["id"], now=now)
                reserved += 1
        return reserved

    async def _release(self, conn: AsyncConnection, match: Mapping[str, Any], now: float) -> int:
        """Give back every match reserved for ``match`` (aborted): +1 for each special whose
        ``use:<player>:<special>:<match>`` row took one, as a ``match_release`` row (``release:…``).
        Looked up by those unique keys. Returns how many were given back."""
        seats = match.get("seats") or []
        released = 0
        for seat, loadout in enumerate(match_loadouts(match)):
            if seat >= len(seats) or seats[seat].get("bot") or not seats[seat].get("player_id"):
                continue
            player_id = seats[seat]["player_id"]
            for special in loadout:
                delta = (await conn.execute(select(ledger_t.c.delta).where(
                    ledger_t.c.idem_key == f"use:{player_id}:{special}:{match['id']}"))).scalar_one_or_none()
                key = f"release:{player_id}:{special}:{match['id']}"
                if delta != -1 or (await conn.execute(
                        select(ledger_t.c.id).where(ledger_t.c.idem_key == key))).first() is not None:
                    continue
                left = await self._add_special(conn, player_id, special, 1, now)
                await self._ledger(conn, player_id, special, "match_release", 1, left, ref=match["id"],
                                   idem_key=key, reason="match aborted", now=now)
                released += 1
        return released

    # -- settling lifetimes ------------------------------------------------------------------
    async def unsettled_matches(self, game: str = "conquest", limit: int = 200) -> list[dict[str, Any]]:
        """Ended (finished or aborted) matches of ``game`` whose specials are not counted yet."""
        q = (select(matches_t).outerjoin(settlements_t, settlements_t.c.match_id == matches_t.c.id)
             .where(matches_t.c.game == game, ENDED,
                    settlements_t.c.match_id.is_(None))
             .order_by(matches_t.c.ended_at).limit(limit))
        async with self.engine.connect() as conn:
            return [dict(r._mapping) for r in (await conn.execute(q)).all()]

    async def settle_match(self, match: Mapping[str, Any]) -> int | None:
        """Count one finished match against the lifetime of every special its players brought
        (conquest.md 5, seed §5.1.2), exactly once: the settlement row (primary key: the match) and
        every use (unique key ``use:<player>:<special>:<match>``) are written in one transaction, so
        two nodes, a retry or a sweep after a restart cannot count a match twice.

        A match started by this server had its lifetimes reserved when it was created
        (:meth:`reserve_lifetimes`): finishing counts nothing more (the use rows exist); an
        aborted match gives them back (``match_release``; ``docs/decisions.md``). For a match
        without reservations (made before them, or outside lobbies) each use is counted here. Bot
        seats own every special without a record and are skipped, as are specials the player never
        owned. A special already at 0 then gets a use row with delta 0.

        Returns the number of lifetimes counted, or None if the match was settled already or has not
        ended (``match["status"]`` must be ``finished`` or ``aborted``)."""
        if match["status"] not in ("finished", "aborted"):
            return None
        now = time.time()
        uses = 0
        async with self.engine.begin() as conn:
            res = await conn.execute(self._insert(settlements_t).values(
                match_id=match["id"], uses=0, settled_at=now).on_conflict_do_nothing(index_elements=["match_id"]))
            if res.rowcount != 1:
                return None
            if match["status"] == "aborted":
                await self._release(conn, match, now)
            if match["status"] == "finished":
                seats = match.get("seats") or []
                for seat, loadout in enumerate(match_loadouts(match)):
                    if seat >= len(seats) or seats[seat].get("bot") or not seats[seat].get("player_id"):
                        continue
                    player_id = seats[seat]["player_id"]
                    for special in loadout:
                        uses += await self._use(conn, player_id, special, match["id"], now)
                await conn.execute(update(settlements_t).where(settlements_t.c.match_id == match["id"])
                                   .values(uses=uses))
        return uses

    async def _use(self, conn: AsyncConnection, player_id: str, special: str, match_id: str, now: float) -> int:
        key = f"use:{player_id}:{special}:{match_id}"
        if (await conn.execute(select(ledger_t.c.id).where(ledger_t.c.idem_key == key))).first() is not None:
            return 0
        res = await conn.execute(
            update(owned_t).where(owned_t.c.player_id == player_id, owned_t.c.special == special,
                                  owned_t.c.matches_left > 0)
            .values(matches_left=owned_t.c.matches_left - 1, updated_at=now))
        left = (await conn.execute(select(owned_t.c.matches_left).where(
            owned_t.c.player_id == player_id, owned_t.c.special == special))).scalar_one_or_none()
        if left is None:  # never owned (a match made with loadouts outside lobbies): nothing to count
            return 0
        if res.rowcount != 1:
            await self._ledger(conn, player_id, special, "match_use", 0, left, ref=match_id, idem_key=key,
                               reason="already expired", now=now)
            return 0
        await self._ledger(conn, player_id, special, "match_use", -1, left, ref=match_id, idem_key=key, now=now)
        if left == 0:
            await self._ledger(conn, player_id, special, "expiry", 0, 0, ref=match_id, now=now)
        return 1


def owned_missing(owned: Mapping[str, int], loadout: Iterable[str]) -> list[str]:
    """The specials of ``loadout`` not in ``owned`` with matches left."""
    return [s for s in loadout if owned.get(s, 0) <= 0]
