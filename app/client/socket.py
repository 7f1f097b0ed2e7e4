"""The match WebSocket client and the loop that lets a bot (or any ``decide`` function) play."""
from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
import websockets

from app.delta import PatchError, apply_patch


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
    come back through :meth:`recv` like every other message.

    Deltas (docs/protocol.md "Deltas, audiences and versions"; issue 11 item 1): ``hello`` always
    says ``"deltas": <deltas>``. The socket holds the document ``{"status", "prompts", "view"}`` of
    the last full ``state`` and its version (:attr:`version`, the socket's audience version). A
    ``delta`` whose ``base`` is the held version is applied to it (:func:`app.delta.apply_patch`) and
    :meth:`recv` returns a **synthesized full state**: the shape of a server ``state`` (``match_id``,
    ``game``, ``seat``, ``viewer`` of the last full state; the delta's ``version`` and ``events``) plus
    ``"via_delta": True``. So callers (:func:`play`, tests, the CLI) only ever see states. On a
    ``base`` that is not the held version, or a patch that does not apply, the socket sends
    ``{"type": "resume", "since_version": <held version>}`` and drops every ``delta`` until the next
    full ``state`` (which always resets the document). Dropped deltas are not returned.

    ``record = True`` keeps what :meth:`recv` returned in :attr:`received` and every frame as it came
    off the wire in :attr:`raw_received` (``(type, bytes)``; the type is the frame's ``"type"``), for
    wire-level tests. :attr:`resumes` counts the resumes this socket sent because of a gap."""

    def __init__(self, base_url: str, match_id: str, token: str | None, *, as_: str | None = None,
                 deltas: bool = True, record: bool = False) -> None:
        self.url = ws_url(base_url, match_id)
        self.match_id = match_id
        self.token = token
        self.as_ = as_
        self.deltas = deltas
        self.ws: Any = None
        self._seq = itertools.count(1)
        self.received: list[dict[str, Any]] = []
        self.raw_received: list[tuple[str, bytes]] = []
        self.record = record
        #: the held audience version (of the last full or synthesized state); None before the first
        self.version: int | None = None
        self._doc: dict[str, Any] | None = None  # {"status", "prompts", "view"} at self.version
        self._head: dict[str, Any] = {}  # match_id, game, seat, viewer of the last full state
        self._resyncing = False  # a resume was sent: drop deltas until the next full state
        self.resumes = 0

    async def connect(self, since_version: int | None = None) -> None:
        self.ws = await websockets.connect(self.url, max_size=2**24, open_timeout=20)
        self._doc = None
        self._resyncing = False
        await self.send(self.hello(since_version))

    def hello(self, since_version: int | None = None) -> dict[str, Any]:
        """The ``hello`` this socket sends: ``{"type": "hello", "token", "deltas"[, "as"][, "since_version"]}``."""
        hello: dict[str, Any] = {"type": "hello", "token": self.token, "deltas": self.deltas}
        if self.as_:
            hello["as"] = self.as_
        if since_version is not None:
            hello["since_version"] = since_version
        return hello

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
        """The next message for the caller (a ``delta`` comes back as a synthesized ``state``; a
        dropped one is skipped). ``timeout`` (seconds) bounds the whole wait: TimeoutError."""
        if timeout is None:
            return await self._recv_message()
        return await asyncio.wait_for(self._recv_message(), timeout)

    async def _recv_message(self) -> dict[str, Any]:
        while True:
            raw = await self.ws.recv()
            msg = orjson.loads(raw)
            if self.record:
                kind = msg.get("type") if isinstance(msg, dict) else None
                self.raw_received.append((kind if isinstance(kind, str) else "",
                                          raw.encode() if isinstance(raw, str) else bytes(raw)))
            out = await self.take(msg)
            if out is None:
                continue
            if self.record:
                self.received.append(out)
            return out

    async def take(self, msg: Any) -> dict[str, Any] | None:
        """Apply one parsed server message to the held document; returns what :meth:`recv` hands
        on (the message itself, or the state synthesized from a delta), or None for a dropped delta
        (after sending ``resume`` if it revealed a gap)."""
        if not isinstance(msg, dict):
            return msg  # not a protocol message: the caller sees it as it came
        kind = msg.get("type")
        if kind == "state":
            self._hold(msg)
            return msg
        if kind != "delta":
            return msg
        if self._doc is None or self._resyncing:
            return None
        base, version, patch = msg.get("base"), msg.get("version"), msg.get("patch")
        if (base != self.version or type(version) is not int or type(base) is not int or version <= base
                or not isinstance(patch, list)):
            await self._resync()
            return None
        try:
            doc = apply_patch(self._doc, patch, in_place=True)
            if not isinstance(doc, dict) or not {"status", "prompts", "view"} <= doc.keys():
                raise PatchError("the patched document lost status, prompts or view")
        except (PatchError, KeyError, TypeError, AttributeError, IndexError):
            await self._resync()  # the held document may be half patched: the next state resets it
            return None
        self._doc = doc
        self.version = version
        events = msg.get("events")
        # a private copy for the caller (orjson round trip: fast, and the caller may change it freely)
        mine = orjson.loads(orjson.dumps(doc))
        return {"type": "state", **self._head, "version": version, "status": mine["status"],
                "prompts": mine["prompts"], "view": mine["view"],
                "events": events if isinstance(events, list) else [], "via_delta": True}

    def _hold(self, state: dict[str, Any]) -> None:
        self._head = {k: state.get(k) for k in ("match_id", "game", "seat", "viewer")}
        doc = {k: state.get(k) for k in ("status", "prompts", "view")}
        self._doc = orjson.loads(orjson.dumps(doc))  # ours alone: the caller keeps the message
        version = state.get("version")
        self.version = version if type(version) is int else None
        self._resyncing = False

    async def _resync(self) -> None:
        self._resyncing = True
        self.resumes += 1
        if self.version is not None:
            await self.send({"type": "resume", "since_version": self.version})

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
    ``initial``: a message already received on this socket (e.g. the first ``state``).

    Decisions are made only on a ``state`` (a :class:`MatchSocket` turns each ``delta`` into one),
    never on an ``ack``: after the ack of version *v* the seat waits until it holds a state of
    version >= *v*, so either order of ``ack`` and ``state`` works (the protocol sends the state of
    *v* first, then the ack; older servers sent the ack first)."""
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
