"""The matcher loop every node runs, and how a group of tickets becomes a match.

Forming a match (one node, decided in the store): claim the tickets (atomic; a ticket is in at most
one claim), make a lobby whose id *is* the claim id, seat the players, fill bots, start it through
``MatchManager.create_match`` (the lobby start path), then mark the tickets matched.

Fencing when a node dies or stalls: a claim not finished by its deadline is settled by any node's
reaper through the database, which decides exactly once: it inserts a closed "tombstone" lobby with
the claim's id, or, if the claimer's lobby exists, closes it if it is still open. Either way the
claimer can no longer start a match for it (its insert, join or start is refused) and the tickets go
back to the queue. If the lobby had already started, the tickets are marked matched with its match.
So a ticket is never in two matches, and a claim whose match was not created within
``claim_seconds`` is released.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError

from app.db.caps import has_bots, running_bot_matches_by_host, running_bot_matches_hosted_by
from app.db.models import Lobby
from app.db.ratings import RatingsRepository
from app.db.repo import LobbyRefused, Repository
from app.matchmaking.matcher import Group, Window, form_groups
from app.matchmaking.store import TicketStore, members_of
from app.meta.loadouts import start_options
from app.storage import log_failure, storage_failure

log = logging.getLogger("bannerfall.matchmaking")

#: the openskill ordinal (mu − 3σ) of a player without a rating: 25 − 3 × 25/3
DEFAULT_ORDINAL = 0.0


def pool_key(game: str, seats: int, options: dict[str, Any]) -> str:
    """Tickets are compatible when game, seat count and (validated, canonical) options are equal."""
    digest = hashlib.sha256(json.dumps(options, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{game}:{seats}:{digest[:20]}"


def new_ticket_id(player_id: str, created_at: float) -> str:
    """A ticket id that tells, without the ticket, that it was issued to ``player_id`` at
    ``created_at`` (epoch seconds): 12 hex digits of the creation time in milliseconds, 8 of a
    digest of the player id, the time and the random part, and 20 random ones (40 in all). So a
    node asked for a ticket its store no longer has can tell the player it was lost
    (:func:`issued_at`) instead of saying it never existed."""
    millis = f"{int(created_at * 1000):012x}"
    rand = secrets.token_hex(10)
    return millis + _ticket_tag(player_id, millis, rand) + rand


def _ticket_tag(player_id: str, millis: str, rand: str) -> str:
    return hashlib.blake2b(f"{player_id}:{millis}:{rand}".encode(), digest_size=4,
                           person=b"bf-ticket").hexdigest()


def issued_at(ticket_id: str, player_id: str) -> float | None:
    """When the ticket ``ticket_id`` was issued to ``player_id`` (epoch seconds), if its id says
    so (:func:`new_ticket_id`); None for any other id (another player's, or not one of ours)."""
    if len(ticket_id) != 40:
        return None
    millis, tag, rand = ticket_id[:12], ticket_id[12:20], ticket_id[20:]
    try:
        created = int(millis, 16) / 1000
    except ValueError:
        return None
    if not secrets.compare_digest(tag, _ticket_tag(player_id, millis, rand)):
        return None
    return created


async def rating_of(engine, player_id: str, game: str) -> float:
    """The player's openskill ordinal (mu − 3σ) for ``game`` from ``RatingsRepository``;
    :data:`DEFAULT_ORDINAL` for a player never rated in it."""
    return await party_rating(engine, [player_id], game)


async def party_rating(engine, player_ids: list[str], game: str) -> float:
    """The rating a party queues with: the highest openskill ordinal of its members in ``game``
    (docs/decisions.md, "Parties": strangers never meet a table stronger than its ticket says)."""
    found = await RatingsRepository(engine).ratings(player_ids, game)
    return max((float(found[p].ordinal) if p in found else DEFAULT_ORDINAL) for p in player_ids)


@dataclass
class MatchmakingConfig:
    window: Window
    tick_seconds: float = 0.5
    claim_seconds: float = 15.0
    bot_kind: str = "smart"
    #: matches one node forms at once in a round (their claims are atomic, so this is safe)
    parallel: int = 8
    special_costs: dict[str, int] | None = None
    #: ``MAX_BOT_MATCHES_PER_PLAYER``: a table with bots is formed only for a host (its anchor's
    #: player) below it, checked when the groups are made and again just before the match is (0 = no cap)
    max_bot_matches_per_player: int = 0


class Fenced(Exception):
    """The claim was settled by a reaper (or the lobby changed): this node must not go on."""


class AtBotCap(Exception):
    """The host of a table with bots reached ``max_bot_matches_per_player`` after its group was
    made: the claim is released, its tickets wait again."""


class MatchmakingService:
    def __init__(self, store: TicketStore, repo: Repository, create_match: Callable[..., Awaitable[Any]],
                 config: MatchmakingConfig, *, make_bot: Callable[[int], dict[str, Any]]) -> None:
        self.store = store
        self.repo = repo
        self.create_match = create_match
        self.config = config
        self.make_bot = make_bot
        self._task: asyncio.Task | None = None
        #: counts for /metrics: matches this node formed, claims it lost to another node (a ticket
        #: was no longer waiting), its claims fenced off by a reaper, claims it settled
        self.formed = 0
        self.claims_lost = 0
        self.fenced = 0
        self.settled = 0

    async def start(self) -> None:
        await self.store.start()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.store.close()

    async def _loop(self) -> None:
        failing = False
        while True:
            try:
                await self.tick()
                failing = False
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if storage_failure(exc) is None:
                    log.exception("matchmaking tick failed")
                elif not failing:  # an outage: one line, not a traceback per tick
                    log.warning("matchmaking ticks fail: storage unavailable (%s)", type(exc).__name__)
                failing = storage_failure(exc) is not None
            await asyncio.sleep(self.config.tick_seconds)

    async def tick(self, now: float | None = None) -> int:
        """One round: settle expired claims, then form every group the pools allow. Returns how
        many matches this call formed."""
        await self.reap(now)
        formed = 0
        for pool in await self.store.pools():
            tickets = await self.store.waiting(pool)
            if tickets:
                formed += await self._form_pool(pool, tickets, time.time() if now is None else now)
        return formed

    async def _at_bot_cap(self, tickets: list[dict[str, Any]]) -> frozenset[str]:
        """The players of ``tickets`` that accept bots and host ``max_bot_matches_per_player``
        running matches with bots already (one query)."""
        cap = self.config.max_bot_matches_per_player
        players = sorted({t["player_id"] for t in tickets if t.get("bots_after_seconds") is not None})
        if not cap or not players:
            return frozenset()
        counts = await running_bot_matches_by_host(self.repo.engine, players)
        return frozenset(p for p, n in counts.items() if n >= cap)

    async def _form_pool(self, pool: str, tickets: list[dict[str, Any]], now: float) -> int:
        groups = form_groups(tickets, int(tickets[0]["seats"]), now, self.config.window,
                             await self._at_bot_cap(tickets))
        # every node computes the same groups: each starts at a random one, so racing nodes
        # mostly form different matches instead of colliding on the same claim
        start = secrets.randbelow(len(groups)) if groups else 0
        by_id = {t["id"]: t for t in tickets}
        limit = asyncio.Semaphore(self.config.parallel)

        async def one(group: Group) -> bool:
            async with limit:
                return await self.form(pool, [by_id[i] for i in group.ticket_ids], group.bots) is not None

        formed = 0
        for result in await asyncio.gather(*(one(g) for g in groups[start:] + groups[:start]),
                                           return_exceptions=True):
            if isinstance(result, BaseException):
                log_failure(log, result, "matchmaking: forming a match failed")
            elif result:
                formed += 1
        return formed

    async def form(self, pool: str, tickets: list[dict[str, Any]], bots: int) -> str | None:
        """Claim ``tickets`` and start their match with ``bots`` bot seats; the match id, or None if
        another node claimed one of them first or the claim was fenced off."""
        claim_id = uuid.uuid4().hex
        deadline = time.time() + self.config.claim_seconds
        if not await self.store.claim(claim_id, pool, [t["id"] for t in tickets], deadline):
            self.claims_lost += 1
            return None
        try:
            match_id = await self._start(claim_id, tickets, bots)
        except Fenced:
            self.fenced += 1
            log.warning("matchmaking claim %s was settled elsewhere before its match started", claim_id)
            return None
        except AtBotCap:
            await self.settle(claim_id)  # its lobby closed, its tickets back in the queue
            return None
        except Exception as exc:
            log_failure(log, exc, "matchmaking claim %s: the match could not be created; releasing", claim_id)
            await self.settle(claim_id)
            return None
        await self.store.finish(claim_id, match_id, claim_id)
        self.formed += 1
        return match_id

    async def _start(self, claim_id: str, tickets: list[dict[str, Any]], bots: int) -> str:
        first = tickets[0]
        lobby = {"id": claim_id, "game": first["game"], "options": first["options"],
                 "seat_count": int(first["seats"]), "host_id": first["player_id"], "status": "open",
                 "match_id": None, "created_at": time.time(), "rated": True}
        # a party's members side by side, the anchor's player (a party's leader: the host) first
        seated = [first["player_id"], *(m for t in tickets for m in members_of(t) if m != first["player_id"])]
        try:
            await self.repo.create_lobby(lobby, seated[0])
            for player_id in seated[1:]:
                await self.repo.join_lobby(claim_id, player_id)
            if bots:
                # the configured kind, or the game's first when it has no bot of that kind
                from app.runtime.bots import bot_kind_for

                kind = bot_kind_for(first["game"], self.config.bot_kind)
                await self.repo.fill_lobby_bots(claim_id, kind, bots, self.make_bot)
            started = await self.repo.lobby(claim_id)
            if started is None:
                raise Fenced()
            await self._check_bot_cap(first["player_id"], started["seats"])
            seats = [{"player_id": s["player_id"], "name": "", "bot": s["bot"]} for s in started["seats"]]
            options, _loadouts = start_options(first["game"], first["options"], started["seats"], {},
                                               self.config.special_costs or {})
            runner = await self.create_match(first["game"], options, seats, lobby_id=claim_id)
        except (IntegrityError, LobbyRefused) as exc:
            raise Fenced() from exc
        return str(runner.match_id)

    async def _check_bot_cap(self, host_id: str, seats: list[dict[str, Any]]) -> None:
        """The cap on running matches with bots, again at the moment the match is made (the group
        was made earlier, and the host may have started a bot match of its own since): raises
        :class:`AtBotCap`."""
        cap = self.config.max_bot_matches_per_player
        if cap and has_bots(seats) and await running_bot_matches_hosted_by(self.repo.engine, host_id) >= cap:
            log.info("matchmaking: the host of a table with bots hosts %d running bot matches: it waits", cap)
            raise AtBotCap()

    # ------------------------------------------------------------------ fencing
    async def reap(self, now: float | None = None) -> None:
        """Settle every claim past its deadline (any node may; settling is idempotent)."""
        for claim_id in await self.store.expired_claims(time.time() if now is None else now):
            try:
                await self.settle(claim_id)
            except Exception as exc:
                log_failure(log, exc, "could not settle matchmaking claim %s", claim_id)

    async def settle(self, claim_id: str) -> None:
        """Decide a claim in the database: match it to its started lobby's match, or fence its
        lobby off (tombstone or close) and release its tickets."""
        self.settled += 1
        tickets = await self.store.claim_tickets(claim_id)
        if not tickets:
            await self.store.release(claim_id)
            return
        first = tickets[0]
        tombstone = {"id": claim_id, "game": first["game"], "options": first["options"],
                     "seat_count": int(first["seats"]), "host_id": first["player_id"], "status": "closed",
                     "match_id": None, "created_at": time.time()}
        try:
            await self.repo.create_lobby(tombstone, first["player_id"])
        except IntegrityError:
            pass  # the claimer made its lobby: close it if it has not started
        else:
            await self.store.release(claim_id)
            return
        async with self.repo.engine.begin() as conn:
            closed = await conn.execute(update(Lobby).where(Lobby.id == claim_id, Lobby.status == "open")
                                        .values(status="closed"))
        if closed.rowcount == 1:
            await self.store.release(claim_id)
            return
        lobby = await self.repo.lobby(claim_id)
        if lobby is not None and lobby["status"] == "started" and lobby["match_id"]:
            await self.store.finish(claim_id, lobby["match_id"], claim_id)
        else:
            await self.store.release(claim_id)


def bot_player_factory(kind: str, hash_token: Callable[[str], str]) -> Callable[[int], dict[str, Any]]:
    """Bot player rows for ``Repository.fill_lobby_bots`` (a fresh random token, stored hashed)."""
    def make(seat: int) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex, "name": f"{kind}-bot-{seat}", "role": "bot",
                "token_hash": hash_token(secrets.token_urlsafe(32)), "created_at": time.time()}
    return make
