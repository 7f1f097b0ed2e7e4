"""The match WebSocket client and the loop that lets a bot (or any ``decide`` function) play."""
from __future__ import annotations

import asyncio
import itertools
import json
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
import websockets

from app.delta import PatchError, apply_patch

#: the match protocol version this client speaks (``hello``'s ``protocol``)
PROTOCOL = 1
#: close codes after which :class:`MatchSocket` reconnects when ``reconnect=True`` (docs/protocol.md,
#: "Close codes"): no close frame (1006), storage failed (1011), server restart (1012), try again
#: later (1013), too slow (4008), the match moved or an act went unanswered (4503)
RECONNECT_CODES = frozenset((1006, 1011, 1012, 1013, 4008, 4503))
#: the error codes of an ``act`` that was not applied and is resent after a reconnect (with its seq)
RESEND_CODES = frozenset(("match_moved", "act_unanswered", "storage_unavailable", "too_many_messages"))


class Backoff:
    """Reconnect delays (docs/protocol.md, "Reconnecting"): the n-th attempt (n from 0) waits a random
    time between half and all of ``min(cap, first * 2**n)`` seconds (0.5 s doubling to 30 s), at least
    a ``retry_after`` the server gave; :meth:`reset` after a socket got its first ``state``."""

    def __init__(self, first: float = 0.5, cap: float = 30.0, rng: random.Random | None = None) -> None:
        self.first, self.cap = first, cap
        self.attempt = 0
        self._rng = rng or random.Random()

    def next(self, retry_after: float | None = None) -> float:
        """The delay (seconds) before the next attempt; counts the attempt."""
        ceiling = min(self.cap, self.first * 2 ** self.attempt)
        self.attempt += 1
        delay = self._rng.uniform(ceiling / 2, ceiling)
        return max(delay, retry_after or 0.0)

    def reset(self) -> None:
        self.attempt = 0


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

    Deltas (docs/protocol.md "Deltas, audiences and versions"): ``hello`` always
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
    wire-level tests. :attr:`resumes` counts the resumes this socket sent because of a gap.

    The server's clock: every ``state`` and ``pong`` carries ``server_time`` (epoch seconds, the clock
    of ``deadline_at``); :attr:`clock_offset` is the server's clock minus this machine's (from a
    :meth:`ping`'s round trip when there was one, else from the last state), :meth:`server_now` the
    server's time now and :meth:`seconds_left` a prompt's time left on it.

    Reconnecting (``reconnect=True``): a socket closed with one of :data:`RECONNECT_CODES` is opened
    again after a :class:`Backoff` delay (at least an error's ``retry_after``), with ``hello``'s
    ``since_version`` the held version, and every ``act`` not yet answered (or answered with one of
    :data:`RESEND_CODES`) is sent again with its same ``seq`` (the server applies a seq once). At most
    ``max_reconnects`` attempts in a row; then :meth:`recv` raises the close. :attr:`reconnects`
    counts the sockets opened again; :attr:`unacked` holds the acts waiting for an answer."""

    def __init__(self, base_url: str, match_id: str, token: str | None, *, as_: str | None = None,
                 deltas: bool = True, record: bool = False, reconnect: bool = False, max_reconnects: int = 10,
                 backoff: Backoff | None = None, protocol: int = PROTOCOL) -> None:
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
        self.protocol = protocol
        #: the server's clock minus this machine's (seconds); None before the first state or pong
        self.clock_offset: float | None = None
        self._offset_from_ping = False
        self.reconnect = reconnect
        self.max_reconnects = max_reconnects
        self.backoff = backoff or Backoff()
        self.reconnects = 0
        #: the close code of the last socket that closed under :meth:`recv` (1006: no close frame)
        self.last_close: int | None = None
        #: acts sent and not yet answered (or answered "not applied": :data:`RESEND_CODES`), by seq
        self.unacked: dict[int, dict[str, Any]] = {}
        self._retry_after: float | None = None
        self._resend = False  # a reconnect happened: resend the unacknowledged acts on the next state

    async def connect(self, since_version: int | None = None) -> None:
        self.ws = await websockets.connect(self.url, max_size=2**24, open_timeout=20)
        self._doc = None
        self._resyncing = False
        await self.send(self.hello(since_version))

    def hello(self, since_version: int | None = None) -> dict[str, Any]:
        """The ``hello`` this socket sends: ``{"type": "hello", "token", "deltas", "protocol"[, "as"]
        [, "since_version"]}``."""
        hello: dict[str, Any] = {"type": "hello", "token": self.token, "deltas": self.deltas,
                                 "protocol": self.protocol}
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
        self.unacked[seq] = msg
        await self.send(msg)
        return seq

    async def resend(self, seq: int) -> bool:
        """Send the unanswered ``act`` of ``seq`` again, with its same seq (the server applies a seq
        once): after ``too_many_messages``, once its ``retry_after`` has passed. False (nothing
        sent) if that act is not waiting for an answer."""
        msg = self.unacked.get(seq)
        if msg is None:
            return False
        await self.send(msg)
        return True

    async def ping(self) -> None:
        """Send ``ping`` with this machine's time as ``t``: its ``pong`` sets :attr:`clock_offset`
        from the round trip's midpoint."""
        await self.send({"type": "ping", "t": time.time()})

    def server_now(self) -> float:
        """The server's clock now (epoch seconds): this machine's corrected by :attr:`clock_offset`."""
        return time.time() + (self.clock_offset or 0.0)

    def seconds_left(self, prompt: dict[str, Any]) -> float | None:
        """Seconds until ``prompt``'s ``deadline_at`` on the server's clock (0 once passed), or None
        for a prompt without a deadline."""
        deadline = prompt.get("deadline_at")
        if not isinstance(deadline, (int, float)):
            return None
        return max(0.0, deadline - self.server_now())

    def _clock(self, msg: dict[str, Any]) -> None:
        server = msg.get("server_time")
        if not isinstance(server, (int, float)):
            return
        now = time.time()
        sent = msg.get("t") if msg.get("type") == "pong" else None
        if isinstance(sent, (int, float)) and not isinstance(sent, bool) and 0 <= now - sent < 60:
            self.clock_offset = server - (sent + now) / 2   # the round trip's midpoint
            self._offset_from_ping = True
        elif not self._offset_from_ping or self.clock_offset is None:
            self.clock_offset = server - now   # an upper bound of the delay, off by the one-way latency

    async def recv(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message for the caller (a ``delta`` comes back as a synthesized ``state``; a
        dropped one is skipped). ``timeout`` (seconds) bounds the whole wait: TimeoutError."""
        if timeout is None:
            return await self._recv_message()
        return await asyncio.wait_for(self._recv_message(), timeout)

    async def _recv_message(self) -> dict[str, Any]:
        while True:
            try:
                raw = await self.ws.recv()
            except websockets.ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd is not None else 1006
                self.last_close = code
                if not self.reconnect or code not in RECONNECT_CODES:
                    raise
                await self._reopen(closed)
                continue
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
            self._clock(msg)
            self._hold(msg)
            self.backoff.reset()
            if self._resend:
                self._resend = False
                for seq in sorted(self.unacked):
                    await self.send(self.unacked[seq])
            return msg
        if kind == "pong":
            self._clock(msg)
        elif kind == "ack" or (kind == "error" and msg.get("code") not in RESEND_CODES):
            self.unacked.pop(msg.get("seq"), None)  # type: ignore[arg-type]
        if kind == "error" and isinstance(msg.get("retry_after"), (int, float)):
            self._retry_after = float(msg["retry_after"])
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

    async def _reopen(self, closed: websockets.ConnectionClosed) -> None:
        """Open the socket again (``reconnect=True``): back off, ``hello`` with the held version,
        and resend :attr:`unacked` in seq order once the new socket's first ``state`` came. Raises
        ``closed`` once ``max_reconnects`` attempts in a row (without a ``state`` between) failed."""
        while self.backoff.attempt < self.max_reconnects:
            await asyncio.sleep(self.backoff.next(self._retry_after))
            self._retry_after = None
            try:
                await self.connect(self.version)
            except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.ConnectionClosed):
                continue
            self.reconnects += 1
            self._resend = True  # once its first state has come
            return
        raise closed

    async def close(self) -> None:
        self.reconnect = False  # closed by its owner: nothing to reconnect
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
               initial: dict[str, Any] | None = None,
               anytime: Callable[[dict[str, Any], dict[str, Any] | None], dict[str, Any] | None] | None = None
               ) -> dict[str, Any]:
    """Play until ``ended``: whenever the latest ``state`` gives this socket's seat a prompt to
    answer, call ``decide(view, prompt)`` and send the action; wait for its ack or error before
    deciding again. Returns the ``ended`` message. A rejected action is retried with a fresh
    decision, at most ``max_errors`` times in a row (then the seat waits for its deadline). An
    action answered with one of :data:`RESEND_CODES` was not applied and is not a rejection: after
    ``too_many_messages`` it is sent again with its seq once the error's ``retry_after`` (seconds)
    has passed (a seat without ``resend`` decides again instead); after the others the socket
    closes, and a reconnecting :class:`MatchSocket` resends it.
    ``initial``: a message already received on this socket (e.g. the first ``state``).
    ``anytime(view, prompt)``: asked on every state on which the seat has nothing to answer —
    ``prompt`` None (no prompt) or the seat's prompt with its submission on file; an action it
    returns is sent like the others (an action of any moment, such as Conquest's specials,
    docs/protocol.md "Actions without a prompt", or a replacement of the submission); None sends
    nothing.

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
        elif kind == "error" and msg.get("seq") == in_flight and msg.get("code") in RESEND_CODES:
            # not applied, and not a rejection: the others close the socket (a reconnect resends it)
            if msg.get("code") != "too_many_messages":
                continue
            retry_after = msg.get("retry_after")
            await asyncio.sleep(float(retry_after) if isinstance(retry_after, (int, float)) else 1.0)
            resend = getattr(sock, "resend", None)
            if resend is not None and await resend(in_flight):
                continue
            in_flight = None
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
            if anytime is None or kind not in ("state", "ack") or state.get("status") != "running":
                continue
            action = anytime(state["view"], prompt)
        else:
            action = decide(state["view"], prompt)
        if action is None:
            continue
        if delay:
            await asyncio.sleep(delay)
        in_flight = await sock.act(action, version=state["version"])
