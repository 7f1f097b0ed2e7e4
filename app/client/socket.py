"""The match WebSocket client and the loop that lets a bot (or any ``decide`` function) play."""
from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
import websockets


def ws_url(base_url: str, match_id: str) -> str:
    base = base_url.rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base[len("https://"):]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://"):]
    return f"{base}/ws/matches/{match_id}"


class MatchSocket:
    """One connection to ``/ws/matches/{id}``: ``hello`` with the token, then messages as dicts.

    ``act()`` sends an action with the next client sequence number; replies (``ack``/``error``)
    come back through :meth:`recv` like every other message."""

    def __init__(self, base_url: str, match_id: str, token: str | None, *, as_: str | None = None) -> None:
        self.url = ws_url(base_url, match_id)
        self.match_id = match_id
        self.token = token
        self.as_ = as_
        self.ws: Any = None
        self._seq = itertools.count(1)
        self.received: list[dict[str, Any]] = []
        self.record = False

    async def connect(self, since_version: int | None = None) -> None:
        self.ws = await websockets.connect(self.url, max_size=2**24, open_timeout=20)
        hello: dict[str, Any] = {"type": "hello", "token": self.token}
        if self.as_:
            hello["as"] = self.as_
        if since_version is not None:
            hello["since_version"] = since_version
        await self.ws.send(json.dumps(hello))

    async def send(self, message: dict[str, Any]) -> None:
        # stdlib json: any value a caller gives is sent as given (orjson refuses ints over 64 bits,
        # which tests send on purpose); what the server sends is parsed with orjson (recv)
        await self.ws.send(json.dumps(message))

    async def act(self, action: dict[str, Any], version: int | None = None) -> int:
        seq = next(self._seq)
        msg: dict[str, Any] = {"type": "act", "seq": seq, "action": action}
        if version is not None:
            msg["version"] = version
        await self.send(msg)
        return seq

    async def recv(self, timeout: float | None = None) -> dict[str, Any]:
        raw = await asyncio.wait_for(self.ws.recv(), timeout)
        msg = orjson.loads(raw)
        if self.record:
            self.received.append(msg)
        return msg

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


Decide = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None]


class Seat(Protocol):
    """What :func:`play` needs of a seat: a :class:`MatchSocket`, or an in-process bot's peer
    (``app.runtime.bots.BotPeer``) that gets the same messages."""

    async def recv(self, timeout: float | None = None) -> dict[str, Any]: ...

    async def act(self, action: dict[str, Any], version: int | None = None) -> int: ...


async def play(sock: Seat, decide: Decide, *, on_message: Callable[[dict[str, Any]], Any] | None = None,
               delay: float = 0.0, max_errors: int = 50, idle_timeout: float = 600.0,
               initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """Play until ``ended``: whenever the latest ``state`` gives this socket's seat a prompt to
    answer, call ``decide(view, prompt)`` and send the action; wait for its ack or error before
    deciding again. Returns the ``ended`` message. A rejected action is retried with a fresh
    decision, at most ``max_errors`` times in a row (then the seat waits for its deadline).
    ``initial``: a message already received on this socket (e.g. the first ``state``)."""
    state: dict[str, Any] | None = None
    in_flight: int | None = None
    acked_version = -1
    errors = 0
    pending = [initial] if initial is not None else []
    while True:
        msg = pending.pop() if pending else await sock.recv(timeout=idle_timeout)
        if on_message is not None:
            result = on_message(msg)
            if isinstance(result, Awaitable):
                await result
        kind = msg.get("type")
        if kind == "ended":
            return msg
        if kind == "state":
            state = msg
        elif kind == "ack" and msg.get("seq") == in_flight:
            in_flight = None
            errors = 0
            acked_version = msg.get("version", acked_version)
        elif kind == "error" and msg.get("seq") == in_flight:
            in_flight = None
            errors += 1
        elif kind == "error" and msg.get("seq") is None:
            continue
        if state is None or in_flight is not None or state["version"] < acked_version or errors >= max_errors:
            if errors >= max_errors and kind == "state":
                errors = 0  # something changed: try again
            continue
        seat = state.get("seat")
        prompt = next((p for p in state.get("prompts", []) if p["seat"] == seat), None)
        if prompt is None or (prompt.get("simultaneous") and prompt.get("submitted")):
            continue
        action = decide(state["view"], prompt)
        if action is None:
            continue
        if delay:
            await asyncio.sleep(delay)
        in_flight = await sock.act(action, version=state["version"])
