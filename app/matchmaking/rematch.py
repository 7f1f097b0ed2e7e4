"""Rematches: after a match ends, its human players have ``REMATCH_SECONDS`` to agree; when the last
one agrees, a new match with the same seats (the same players in the same seats, bots of the same
kind in the bots' seats) and the same options starts through the lobby start path. Anyone
declining or leaving cancels the offer at once, and an offer nobody completes expires, so nobody
is held (docs/decisions.md, "Rematch").

Exactly once: the store's vote is atomic and tells exactly one caller ``start``; the new lobby's id
is derived from the ended match (:func:`rematch_lobby_id`), so even a second start could not insert
it. If the starting node dies before the match exists, the offer shows ``starting`` until its window
and :data:`START_GRACE` pass, then reads as ``cancelled``: the players queue again.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from app.db.parties import create_lobby_with_seats, lobby_rated, running_matches_of
from app.db.repo import Repository
from app.meta.loadouts import RESERVED_OPTIONS, start_options

log = logging.getLogger("bannerfall.rematch")

#: seconds past its window a ``starting`` offer is given before it reads as ``cancelled``
START_GRACE = 30.0
_NAMESPACE = uuid.UUID("5b1f4c1e-6f55-4d5e-9a43-0c1c2a6f9e11")


class RematchRefused(Exception):
    """The rematch cannot start: a player is seated in another running match (``player_id``)."""

    def __init__(self, player_id: str, match_id: str) -> None:
        super().__init__(f"{player_id} is playing the match {match_id}")
        self.player_id = player_id
        self.match_id = match_id


def rematch_lobby_id(match_id: str) -> str:
    """The lobby id of ``match_id``'s rematch: a UUID5 of the match id (32 hex digits)."""
    return uuid.uuid5(_NAMESPACE, match_id).hex


def human_players(match: dict[str, Any]) -> list[str]:
    """The distinct human players of a match, by seat."""
    return list(dict.fromkeys(s["player_id"] for s in match.get("seats") or []
                              if s.get("player_id") and not s.get("bot")))


def offer_view(offer: dict[str, Any] | None, match: dict[str, Any], expires_at: float,
               now: float | None = None) -> dict[str, Any]:
    """The offer as players see it: a match nobody voted on yet is an ``open`` offer with nobody
    agreed; an ``open`` one past its window reads ``expired``, a ``starting`` one long past it
    ``cancelled``."""
    now = time.time() if now is None else now
    if offer is None:
        offer = {"match_id": match["id"], "needed": human_players(match), "agreed": [], "status": "open",
                 "expires_at": expires_at, "new_match_id": None, "declined_by": None}
    offer = dict(offer)
    if offer["status"] == "open" and now > offer["expires_at"]:
        offer["status"] = "expired"
    if offer["status"] == "starting" and now > offer["expires_at"] + START_GRACE:
        offer["status"] = "cancelled"
    return offer


class Rematches:
    """Starts agreed rematches on this node."""

    def __init__(self, store: Any, repo: Repository, create_match: Callable[..., Awaitable[Any]], *,
                 window_seconds: float, make_bot: Callable[[int], dict[str, Any]],
                 special_costs: dict[str, int] | None = None) -> None:
        self.store = store
        self.repo = repo
        self.create_match = create_match
        self.window_seconds = window_seconds
        self.make_bot = make_bot
        self.special_costs = special_costs or {}
        #: rematches this node started
        self.started = 0

    def expires_at(self, match: dict[str, Any]) -> float:
        """When the offer of an ended match closes (epoch seconds)."""
        return float(match.get("ended_at") or match["created_at"]) + self.window_seconds

    async def start(self, match: dict[str, Any]) -> str:
        """Start the rematch of ``match`` (the caller was told ``start``); the new match id. Bot
        seats get new bots of the same kind; Conquest players bring no specials (as in quick play).
        Raises :class:`RematchRefused` when a player sits in another running match meanwhile (a
        player is never in two matches through a rematch), or what the lobby insert or the match
        start raises (the caller cancels the offer)."""
        lobby_id = rematch_lobby_id(match["id"])
        busy = await running_matches_of(self.repo.engine, human_players(match))
        if busy:
            player_id, other = next(iter(busy.items()))
            raise RematchRefused(player_id, other)
        seats, bots = [], []
        for i, s in enumerate(match["seats"]):
            if s.get("bot"):
                bot = {**self.make_bot(i), "name": s.get("name") or f"{s['bot']}-bot-{i}"}
                bots.append(bot)
                seats.append({"player_id": bot["id"], "bot": s["bot"]})
            else:
                seats.append({"player_id": s["player_id"], "bot": None})
        humans = human_players(match)
        lobby = {"id": lobby_id, "game": match["game"], "options": {}, "seat_count": len(seats),
                 "host_id": humans[0], "status": "open", "match_id": None, "created_at": time.time(),
                 "rated": await lobby_rated(self.repo.engine, match.get("lobby_id"))}
        options = {k: v for k, v in (match.get("options") or {}).items() if k not in RESERVED_OPTIONS}
        lobby["options"] = options
        await create_lobby_with_seats(self.repo.engine, lobby, seats, bots)
        started = await self.repo.lobby(lobby_id)
        assert started is not None  # inserted just above
        opts, _loadouts = start_options(match["game"], options, started["seats"], {}, self.special_costs)
        names = {s["player_id"]: s.get("name", "") for s in match["seats"]}
        names.update({b["id"]: b["name"] for b in bots})
        runner = await self.create_match(match["game"], opts,
                                         [{"player_id": s["player_id"], "name": names.get(s["player_id"], ""),
                                           "bot": s["bot"]} for s in seats], lobby_id=lobby_id)
        self.started += 1
        return str(runner.match_id)
