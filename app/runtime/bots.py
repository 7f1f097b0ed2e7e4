"""Bots for bot seats, played in-process as local peers of the match's runner.

A bot seat is a :class:`BotPeer` attached to the runner like a socket: it receives exactly the
messages (the same encoded text) a socket of that seat would, and acts through the same pipeline
(:func:`app.runtime.protocol.route` → :meth:`MatchRunner.act`) with the same validation. There is
no privileged path: no socket, no token, nothing a person's seat could not do. The node that runs a
match runs its bots: ``MatchManager.on_match_started`` calls :meth:`BotRunner.ensure` whenever the
match starts or is rebuilt here (creation, recovery, takeover from another node).
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import logging
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from app.client.socket import play
from app.games import registry
from app.runtime.protocol import route
from app.runtime.rows import MatchRow

if TYPE_CHECKING:
    from app.runtime.match import MatchRunner

log = logging.getLogger("bannerfall.bots")

def bot_kinds(game_id: str) -> list[str]:
    """The bot kinds of a game, in the order it declares them (``GAME.info.bots``); KeyError if the
    game is unknown."""
    return list(registry()[game_id].info.bots)


def bot_kind_for(game_id: str, wanted: str) -> str:
    """``wanted`` when the game has a bot of that kind, else the game's first kind (a configured kind,
    e.g. ``MATCHMAKING_BOT_KIND``, that a game does not have). KeyError if the game is unknown."""
    kinds = registry()[game_id].info.bots
    return wanted if wanted in kinds else next(iter(kinds))


def bot_class(game_id: str, kind: str):
    """The bot class for a game and kind, from the game's metadata (``GAME.info.bots``); KeyError if
    the game is unknown or has no bot of that kind."""
    return registry()[game_id].info.bots[kind]


def make_bot(game_id: str, kind: str, seed: int):
    return bot_class(game_id, kind)(seed)


def bot_seed(match_id: str, seat: int) -> int:
    """The bot's own seed: 64 bits of ``sha256("{match_id}:{seat}")`` (same bot play after a rebuild)."""
    return int.from_bytes(hashlib.sha256(f"{match_id}:{seat}".encode()).digest()[:8], "big")


class BotGone(Exception):
    """The runner closed the bot's peer (the match moved, or was dropped to be rebuilt)."""


class BotPeer:
    """A bot seat as a runtime :class:`~app.runtime.match.Peer`, and the seat that
    :func:`app.client.socket.play` drives: ``recv`` the next message, ``act`` through the protocol.

    Its inbox is unbounded: the bot reads every message as it comes (a socket's bound is there for
    clients that stop reading; a bot never does)."""

    __slots__ = ("_seq", "closed", "deltas", "inbox", "player_id", "runner", "sent_version", "viewer")

    def __init__(self, runner: MatchRunner, seat: int, player_id: str | None) -> None:
        self.viewer = seat
        self.player_id = player_id
        self.sent_version = 0
        #: a bot decides on full states: the runtime sends it no ``delta`` messages
        self.deltas = False
        self.runner = runner
        self.inbox: asyncio.Queue[str | None] = asyncio.Queue()
        self.closed = False
        self._seq = itertools.count(1)

    # -- Peer ------------------------------------------------------------------------------------
    def push(self, text: str) -> None:
        if not self.closed:
            self.inbox.put_nowait(text)

    def close(self, code: int, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self.inbox.put_nowait(None)

    # -- the seat play() drives ------------------------------------------------------------------
    async def recv(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message (``timeout`` is ignored: a closed peer raises :class:`BotGone`)."""
        text = await self.inbox.get()
        if text is None:
            raise BotGone()
        return orjson.loads(text)

    async def act(self, action: dict[str, Any], version: int | None = None) -> int:
        """Send ``act`` with the next seq through the same route as a socket's message."""
        seq = next(self._seq)
        msg: dict[str, Any] = {"type": "act", "seq": seq, "action": action}
        if version is not None:
            msg["version"] = version
        if not self.closed:
            route(self.runner, self, msg)
        return seq


class BotRunner:
    """One task per (match, bot seat) on this node, attached to the match's current runner."""

    def __init__(self, *, delay: float = 0.0) -> None:
        #: seconds a bot waits before each action (``BANNERFALL_BOT_DELAY_SECONDS``)
        self.delay = delay
        self.tasks: dict[tuple[str, int], tuple[MatchRunner, asyncio.Task]] = {}
        self._live: Any = None

    def bind(self, matches: _Live) -> None:
        """Where to find a match's runner (the manager, made after this)."""
        self._live = matches

    def ensure(self, match: MatchRow) -> None:
        """Start the bots of ``match`` against its runner here (the ``on_match_started`` hook).
        A bot still attached to an older runner of the match is replaced."""
        runner = self._live.live(match["id"]) if self._live is not None else None
        if runner is None:
            return
        for seat, info in enumerate(match["seats"]):
            kind = info.get("bot")
            if not kind:
                continue
            key = (match["id"], seat)
            current = self.tasks.get(key)
            if current is not None:
                if current[0] is runner and not current[1].done():
                    continue
                current[1].cancel()
            task = asyncio.get_running_loop().create_task(self._run(runner, match, seat, kind))
            self.tasks[key] = (runner, task)
            task.add_done_callback(functools.partial(self._done, key))

    def _done(self, key: tuple[str, int], task: asyncio.Task) -> None:
        current = self.tasks.get(key)
        if current is not None and current[1] is task:
            del self.tasks[key]

    async def stop(self) -> None:
        tasks = [t for _r, t in self.tasks.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, runner: MatchRunner, match: MatchRow, seat: int, kind: str) -> None:
        bot = make_bot(match["game"], kind, bot_seed(match["id"], seat))
        peer = BotPeer(runner, seat, match["seats"][seat].get("player_id"))
        runner.attach(peer)
        try:
            await play(peer, bot.decide, delay=self.delay)
        except BotGone:  # the runner was dropped; the next one here (or elsewhere) runs its bots
            log.info("bot %s seat %d stopped: the match left its runner", match["id"][:8], seat)
        except Exception:
            log.exception("bot %s seat %d failed; the seat's deadlines take over", match["id"][:8], seat)
        finally:
            runner.detach(peer)


class _Live(Protocol):
    def live(self, match_id: str) -> MatchRunner | None: ...
