"""Helpers for end-to-end tests: players, lobbies and sockets against a real server."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from app.client import MatchSocket, RestClient
from tests.timing import scaled


@dataclass
class Table:
    match_id: str
    players: list[RestClient]          # by seat; None-free for human seats
    seats: list[dict[str, Any]] = field(default_factory=list)
    lobby_id: str = ""

    async def close(self) -> None:
        for p in self.players:
            await p.close()


async def start_match(url: str, game: str, humans: int, *, bots: int = 0, options: dict | None = None,
                      bot_kind: str = "random") -> Table:
    """A lobby with ``humans`` registered players (seats 0..humans-1) and ``bots`` server bots, started."""
    players = []
    for i in range(humans):
        c = RestClient(url)
        await c.register(f"p{i}")
        players.append(c)
    lobby = await players[0].create_lobby(game, humans + bots, options or {})
    for c in players[1:]:
        await c.join(lobby["id"])
    if bots:
        await players[0].fill_bots(lobby["id"], bot_kind)
    lobby = await players[0].start(lobby["id"])
    match = await players[0].match(lobby["match_id"])
    return Table(lobby["match_id"], players, match["seats"], lobby["id"])


async def connect(url: str, match_id: str, token: str | None, **kw) -> tuple[MatchSocket, dict[str, Any]]:
    """Open a socket, send hello, return it with the first message (normally ``state``)."""
    since = kw.pop("since_version", None)
    sock = MatchSocket(url, match_id, token, **kw)
    await sock.connect(since)
    first = await sock.recv(timeout=scaled(10))
    return sock, first


async def recv_until(sock: MatchSocket, pred, timeout: float = 10.0) -> dict[str, Any]:
    """Receive until ``pred(msg)`` holds; returns that message. Every ``state`` received on the way
    is kept as ``sock.last_state`` (the state of a version comes before its ``ack``). The deadline
    is ``scaled(timeout)`` (``tests/timing.py``)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + scaled(timeout)
    while True:
        msg = await sock.recv(timeout=max(0.01, end - loop.time()))
        if msg.get("type") == "state":
            sock.last_state = msg  # type: ignore[attr-defined]
        if pred(msg):
            return msg


async def state_at_least(sock: MatchSocket, version: int, timeout: float = 10.0) -> dict[str, Any]:
    """The socket's newest ``state`` once its version is >= ``version`` (it may have come already,
    before an ``ack`` that :func:`recv_until` waited for)."""
    held = getattr(sock, "last_state", None)
    if held is not None and held["version"] >= version:
        return held
    return await recv_until(sock, lambda m: m["type"] == "state" and m["version"] >= version, timeout)


def my_prompt(state: dict[str, Any]) -> dict[str, Any] | None:
    return next((p for p in state["prompts"] if p["seat"] == state["seat"]), None)


def by_owner(nodes, match_id: str):
    """Two ``ServerProcess`` nodes (with ``.prefix`` and ``.redis_url`` set) as (owner, other): the
    node holding the match's lease first. Usually the node that created the match, but another
    node's takeover sweep may claim a brand-new match first."""
    import redis

    a, b = nodes
    r = redis.Redis.from_url(a.redis_url)
    try:
        owner = r.get(f"{a.prefix}lease:{match_id}")
    finally:
        r.close()
    if isinstance(owner, bytes) and owner.decode() == b.extra_env["BANNERFALL_NODE_ID"]:
        return b, a
    return a, b
