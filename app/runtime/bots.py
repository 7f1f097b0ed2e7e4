"""Bots for bot seats, played over a real WebSocket to this node (the same client path as people)."""
from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from typing import Any

from app.client.socket import MatchSocket, play
from app.games import registry

log = logging.getLogger("bannerfall.bots")

#: the lobby bot kinds, in the order ``GET /games`` lists them (each game's ``info.bots`` has its own)
BOT_KINDS: tuple[str, ...] = ("random", "smart")


def bot_class(game_id: str, kind: str):
    """The bot class for a game and kind, from the game's metadata (``GAME.info.bots``); KeyError if
    the game is unknown or has no bot of that kind."""
    return registry()[game_id].info.bots[kind]


def make_bot(game_id: str, kind: str, seed: int):
    return bot_class(game_id, kind)(seed)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class BotRunner:
    """Keeps one task per (match, bot seat) on this node. Bot players get a fresh token each time a
    bot is (re)started; the token never leaves the process and is stored only hashed."""

    def __init__(self, repo, base_url: str, *, delay: float = 0.0) -> None:
        self.repo = repo
        self.base_url = base_url
        self.delay = delay
        self.tasks: dict[tuple[str, int], asyncio.Task] = {}

    def ensure(self, match: dict[str, Any]) -> None:
        for seat, info in enumerate(match["seats"]):
            if info.get("bot") and (match["id"], seat) not in self.tasks:
                task = asyncio.get_running_loop().create_task(self._run(match, seat, info))
                self.tasks[(match["id"], seat)] = task
                task.add_done_callback(lambda _t, key=(match["id"], seat): self.tasks.pop(key, None))

    async def stop(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    async def _run(self, match: dict[str, Any], seat: int, info: dict[str, Any]) -> None:
        token = secrets.token_urlsafe(32)
        await self.repo.set_token_hash(info["player_id"], hash_token(token))
        seed = int.from_bytes(hashlib.sha256(f"{match['id']}:{seat}".encode()).digest()[:8], "big")
        bot = make_bot(match["game"], info["bot"], seed)
        for attempt in range(30):
            sock = MatchSocket(self.base_url, match["id"], token)
            try:
                await sock.connect()
                ended = await play(sock, bot.decide, delay=self.delay)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnect: server restarting, socket dropped
                log.info("bot %s seat %d reconnecting after %s", match["id"][:8], seat, type(exc).__name__)
                await asyncio.sleep(min(5.0, 0.2 * (attempt + 1)))
            finally:
                try:
                    await sock.close()
                except Exception:
                    pass
