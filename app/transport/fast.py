"""The lean transport: a match socket as one ``asyncio.Protocol`` object (:class:`FastSocket`),
served by uvicorn as its WebSocket protocol (``uvicorn.Config(ws=...)``, see :func:`protocol_for`).

uvicorn's HTTP protocol parses the request; when it asks for a WebSocket upgrade, uvicorn hands the
connection to this class, which answers the opening handshake (``app/transport/handshake.py``) and
from there on reads and writes frames itself (``app/transport/frames.py``) and calls the match runtime
directly. There is no ASGI app, task or coroutine per socket: a message is decoded, checked and
handed to the match's runner inside ``data_received``; only the handshake's rate limit and the
``hello``'s lookups (the database) run in a short task of their own. An idle socket is this object,
its transport and two ``bytearray``s, so the cyclic collector has about three objects per socket to
walk (``docs/benchmarks/capacity.md``).

Behaviour is the ASGI transport's (``app/transport/asgi.py``; ``docs/protocol.md``):

- what cannot be written at once (the client is not reading: uvicorn's transport paused writing)
  waits in a queue of at most ``send_queue_size`` messages; one more closes the socket with 4008;
- a close flushes what was queued before it, sends the close frame and waits for the client's; after
  ``socket_close_seconds`` the TCP connection is aborted (reset);
- a socket silent for ``heartbeat_seconds`` is pinged, one silent for three times that is dropped
  (``app/transport/hub.py``: one sweep for the node);
- an ``act`` forwarded to another node is answered within ``act_timeout_seconds`` or the socket is
  closed with 4503;
- client messages past the socket's budget get ``too_many_messages`` (``app.transport.session.BudgetRules``);
- a server shutting down closes every socket with 1012.

``permessage-deflate`` is not offered here: a server with ``BANNERFALL_WS_COMPRESSION=true`` serves
its sockets with the ASGI transport (``app/transport/__init__.py``).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import socket
import struct
import time
from collections import deque
from typing import Any
from urllib.parse import unquote

import orjson

from app.api.limits import CLOSE_RATE_LIMITED, address_key, client_address
from app.logsetup import BAD_UTF8_LINE
from app.runtime.protocol import ProtocolError, check_message, decode_text
from app.runtime.wire import CLOSE_HELLO_TIMEOUT, CLOSE_RESEND, CLOSE_SLOW, encode, error
from app.transport import handshake, session
from app.transport.frames import (
    OP_BINARY,
    OP_CLOSE,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    FrameReading,
    ProtocolViolation,
    close_frame,
    frame,
    parse_close,
)
from app.transport.session import BudgetRules, Refused

log = logging.getLogger("bannerfall.ws")

__all__ = ["FastSocket", "protocol_for"]

_ANSWER_PREFIXES = ('{"type":"ack"', '{"type":"error"')
#: the largest message a client may send before the socket is closed with 1009 (a message over
#: ``max_message_bytes`` but under this is answered ``message_too_large`` and changes nothing)
MAX_FRAME_BYTES = 1 << 20

# states of a socket
_HANDSHAKE, _HELLO, _ADMITTING, _OPEN, _CLOSING, _CLOSED = range(6)


def protocol_for(app: Any) -> Any:
    """The ``ws`` protocol factory for ``uvicorn.Config`` serving ``app`` (the FastAPI app, whose
    lifespan makes ``app.state.sockets``)."""
    return functools.partial(FastSocket, app=app)


# the two mixins have no slots at run time (mypy sees their state's names as theirs: TYPE_CHECKING)
class FastSocket(FrameReading, BudgetRules, asyncio.Protocol):  # type: ignore[misc]
    """One match socket (a :class:`~app.runtime.match.Peer` once admitted). uvicorn makes it with
    ``config``, ``server_state`` and ``app_state`` when a request asks for a WebSocket upgrade."""

    __slots__ = (
        "__weakref__", "app", "client", "close_code", "config", "connections", "deltas", "held",
        "last_seen", "link", "match_id", "opened", "pending", "pinged", "player_id", "queue", "reading", "runner",
        "sent_version", "state", "task", "timer", "transport", "viewer", "writable", "handshake", "paused",
        # the frame reader's (FrameReading) and the message budget's (BudgetRules): one object per socket
        "_opcode", "_partial", "_unread", "max_size", "burst", "over", "rate", "stamp", "tokens",
    )

    def __init__(self, config: Any, server_state: Any, app_state: Any = None, *, app: Any) -> None:
        self.app = app
        self.config = config
        self.connections = server_state.connections
        self.transport: Any = None
        #: the request's bytes until the handshake is answered, then those that came after it
        self.handshake: bytes | None = None
        #: whether frames are read (from the handshake's answer until a framing violation)
        self.reading = False
        self.state = _HANDSHAKE
        self.client: str | None = None
        self.match_id = ""
        self.viewer = -1
        self.player_id: str | None = None
        self.sent_version = 0
        self.deltas = True
        self.runner: Any = None
        self.link: Any = None
        #: messages waiting for the client to read (None: nothing waits); a None item is the close mark
        self.queue: deque[str | bytes | None] | None = None
        self.writable = True
        self.close_code: tuple[int, str] | None = None
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.held: list[tuple[int, str | bytes]] | None = None
        self.pending: dict[int, asyncio.TimerHandle] | None = None
        self.rate = 0.0  # no budget until the socket is open
        self.last_seen = time.monotonic()
        self.pinged = 0.0
        #: whether the socket counts in ``bannerfall_sockets`` and holds a socket slot
        self.opened = False
        #: whether reading is paused (during the handshake's and the hello's lookups)
        self.paused = False

    def _reading(self, on: bool) -> None:
        """Resume (``on``) or pause reading the client's bytes."""
        if self.paused == (not on):
            return
        self.paused = not on
        try:
            if on:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()
        except (RuntimeError, AttributeError):  # the transport is closing
            pass

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.connections.add(self)
        peer = transport.get_extra_info("peername")
        self.client = peer[0] if isinstance(peer, (tuple, list)) and peer else None
        size = self.app.state.settings.socket_send_buffer_bytes
        if size:  # a bounded kernel buffer: a client that stops reading is noticed (and costs) that much
            try:
                transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
            except (OSError, AttributeError):
                pass

    def data_received(self, data: bytes) -> None:
        self.last_seen = time.monotonic()
        state = self.state
        if state == _HANDSHAKE:
            self._handshake_data(data)
            return
        if not self.reading or state == _CLOSED:
            return
        try:
            frames = self.feed(data)
        except ProtocolViolation as exc:
            self.reading = False
            self._violation(exc.code, exc.reason)
            return
        for opcode, payload in frames:
            if self.state == _CLOSED:
                return
            self._frame(opcode, payload)

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself

    def pause_writing(self) -> None:
        self.writable = False

    def resume_writing(self) -> None:
        self.writable = True
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.state = _CLOSED
        self.connections.discard(self)
        hub = getattr(self.app.state, "sockets", None)
        if hub is not None:
            hub.sockets.discard(self)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self.queue = None
        self.held = None
        self._end()

    def shutdown(self) -> None:
        """The server is stopping (uvicorn calls this on every connection): close with 1012."""
        if self.state == _HANDSHAKE:
            self.transport.close()
            return
        self.close(1012, "server restarting")

    # ------------------------------------------------------------------ the handshake
    def _handshake_data(self, data: bytes) -> None:
        buffered = self.handshake = (self.handshake or b"") + data
        try:
            request = handshake.parse_request(buffered)
        except handshake.HandshakeError as exc:
            self._reject(exc.status, exc.body, exc.headers)
            return
        if request is None:
            return
        end = buffered.find(b"\r\n\r\n") + 4
        self.handshake = buffered[end:]  # bytes the client sent after the request: frames, read later
        self._reading(False)
        self.task = asyncio.get_running_loop().create_task(self._open(request))

    def _reject(self, status: int, body: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.handshake = None
        self.state = _CLOSED
        self.transport.write(handshake.refusal(status, body, headers))
        self.transport.close()

    async def _open(self, request: handshake.Handshake) -> None:
        """The request is read: route it, check the address's rate limit, answer the handshake."""
        self.task = None
        path = unquote(request.target.partition("?")[0])
        match_id = session.match_id_of(path)
        if match_id is None:
            self._reject(404, "Not Found")
            return
        try:
            accept = handshake.check(request)
        except handshake.HandshakeError as exc:
            self._reject(exc.status, exc.body, exc.headers)
            return
        self.match_id = match_id
        state = self.app.state
        retry = None
        try:
            address = self._client_address(request)
            limiter = state.rate_limiter
            if limiter.per_ip and address not in limiter.exempt:
                retry = await limiter.hit(limiter.per_ip, "ip", address_key(address))
        except Exception as exc:  # the limiter's storage is away: the socket is let in (hello still checks)
            log.warning("socket rate limit not checked: %s", type(exc).__name__)
        if self.state != _HANDSHAKE:  # the client left meanwhile
            return
        self.transport.write(handshake.switching(accept))
        leftover, self.handshake = self.handshake, None
        settings = state.settings
        self.reset_reader(MAX_FRAME_BYTES)
        self.reading = True
        self.reset_budget(settings.socket_messages_per_second, settings.socket_message_burst, time.monotonic())
        state.sockets.sockets.add(self)
        if retry is not None:
            state.metrics.errors.labels("rate_limited").inc()
            self.state = _OPEN
            self.push(encode({"type": "error", "code": "rate_limited",
                              "message": f"too many requests: retry in {retry} s"}))
            self.close(CLOSE_RATE_LIMITED, "rate limited")
            return
        self.state = _HELLO
        self.timer = asyncio.get_running_loop().call_later(settings.hello_timeout_seconds, self._hello_timeout)
        self._reading(True)
        if leftover:
            self.data_received(leftover)

    def _client_address(self, request: Any) -> str:
        """The client's address as the REST routes see it: behind the proxies the node trusts
        (``BANNERFALL_TRUSTED_PROXIES``, ``app.api.limits.TrustedProxies``), as the ASGI transport
        finds it in ``app.main.RawSendMiddleware``."""
        scope: dict[str, Any] = {"type": "websocket", "client": (self.client or "unknown", 0),
                                 "headers": request.headers}  # lower-case names, as ASGI has them
        self.app.state.trusted_proxies.resolve(scope)
        return client_address(scope)

    # ------------------------------------------------------------------ frames
    def _frame(self, opcode: int, payload: str | bytes) -> None:
        if opcode == OP_TEXT or opcode == OP_BINARY:
            state = self.state
            if state == _OPEN:
                self._message(payload)
            elif state == _HELLO:
                self._hello(payload)
            elif state == _ADMITTING:
                if self.held is None:
                    self.held = []
                self.held.append((opcode, payload))
            return  # closing: what the client still sends is dropped
        if opcode == OP_PING:
            if self.state < _CLOSING:
                self._write(frame(OP_PONG, payload))  # type: ignore[arg-type]
        elif opcode == OP_CLOSE:
            try:
                code, reason = parse_close(payload)  # type: ignore[arg-type]
            except ProtocolViolation as exc:
                self._violation(exc.code, exc.reason)
                return
            if self.state >= _CLOSING:  # the answer to our close: done
                self.transport.close()
                return
            # the client closes: answer with its code, then end the connection (RFC 6455 5.5.1)
            self.state = _CLOSING
            self._end()
            self.queue = None
            self._write(close_frame(code or 1000, ""))
            self.transport.close()
        elif opcode == OP_PONG:
            pass  # last_seen moved already

    def _violation(self, code: int, reason: str) -> None:
        """The client broke the framing rules: close with ``code`` at once (nothing more is read),
        with one INFO line in the log (a client cannot fill the log)."""
        self.reading = False
        log.info("%s", BAD_UTF8_LINE if code == 1007 and "text" in reason else f"socket closed with {code}: {reason}")
        if self.state >= _CLOSING:
            self.transport.close()
            return
        self.state = _CLOSING
        self._end()
        self.queue = None
        self._write(close_frame(code, reason))
        self.transport.close()
        self._arm_abort()

    # ------------------------------------------------------------------ hello and admission
    def _hello_timeout(self) -> None:
        self.timer = None
        if self.state == _HELLO:
            self._refuse(Refused(error("hello_timeout", "send hello with your token first"), CLOSE_HELLO_TIMEOUT))

    def _hello(self, payload: str | bytes) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        state = self.app.state
        try:
            hello = session.read_hello(payload, self.match_id, state.settings, state.metrics)
        except Refused as refused:
            self._refuse(refused)
            return
        self.state = _ADMITTING
        self._reading(False)
        self.task = asyncio.get_running_loop().create_task(self._admit(hello))

    def _refuse(self, refused: Refused) -> None:
        was = self.state
        self.state = _OPEN if was < _OPEN else was
        self.push(encode(refused.message))
        self.close(refused.code, refused.message["code"])

    async def _admit(self, hello: Any) -> None:
        try:
            admitted = await session.admit(self, self.match_id, hello)
        except Refused as refused:
            self.task = None
            if self.state == _ADMITTING:
                self._refuse(refused)
            return
        except Exception:  # never let a lookup fail the connection without an answer
            self.task = None
            log.exception("admitting a socket for match %s failed", self.match_id)
            if self.state == _ADMITTING:
                self._refuse(Refused(error("internal_error", "the server could not open this socket"), 1011))
            return
        self.task = None
        state = self.app.state
        if self.state != _ADMITTING:  # the client left meanwhile: give its slot back
            state.socket_slots.give_back(admitted.player["id"], self)
            return
        settings = state.settings
        self.viewer = admitted.viewer
        self.player_id = admitted.player["id"]
        self.deltas = hello.deltas
        self.opened = True
        state.metrics.sockets.inc()
        self.state = _OPEN
        if admitted.runner is None:  # a link to another node: every act answered in bounded time
            self.pending = {}
        self.runner, self.link = session.attach(self, self.match_id, admitted, hello, settings, state.manager)
        if self.state != _OPEN:
            return
        held, self.held = self.held, None
        self._reading(True)
        for _opcode, payload in held or ():
            if self.state != _OPEN:
                break
            self._message(payload)

    # ------------------------------------------------------------------ messages
    def _message(self, payload: str | bytes) -> None:
        state = self.app.state
        metrics = state.metrics
        if not self.take(self.last_seen):
            metrics.errors.labels("too_many_messages").inc()
            if self.exhausted():
                self.push(encode(error("too_many_messages", "too many messages: this socket is closed")))
                self.close(CLOSE_RATE_LIMITED, "too many messages")
                return
            self.push(encode(error("too_many_messages", f"more than {self.rate:g} messages a second: this one "
                                   "was not served; retry after retry_after seconds",
                                   seq=session.act_seq(payload),
                                   retry_after=round(self.retry_after(), 3))))
            return
        if isinstance(payload, bytes):
            self.push(encode(error("malformed_message", "send JSON in text frames")))
            return
        try:
            msg = check_message(decode_text(payload, state.settings.max_message_bytes))
        except ProtocolError as exc:
            if exc.code != "malformed_message":
                metrics.errors.labels(exc.code).inc()
            seq = session.act_seq(payload) if exc.code == "invalid_text" else None
            self.push(encode(error(exc.code, exc.message, seq=seq)))
            return
        if msg.get("type") == "act":
            metrics.actions.inc()
            if self.pending is not None:
                self._expect_answer(msg.get("seq"))
        try:
            session.forward(state.manager, self.match_id, self.runner, self.link, self, msg)
        except Exception:  # a bug must not take the node's loop: this socket is closed, nothing else
            log.exception("a message on a socket of match %s failed", self.match_id)
            self.push(encode(error("internal_error", "the server could not handle this message")))
            self.close(1011, "internal error")

    def _expect_answer(self, seq: Any) -> None:
        pending = self.pending
        if (pending is None or not isinstance(seq, int) or isinstance(seq, bool) or seq in pending
                or self.state != _OPEN):
            return
        timeout = self.app.state.settings.act_timeout_seconds
        pending[seq] = asyncio.get_running_loop().call_later(timeout, self._unanswered, seq)

    def _answered(self, text: str) -> None:
        try:
            seq = orjson.loads(text).get("seq")
        except (orjson.JSONDecodeError, AttributeError):
            return
        pending = self.pending
        timer = pending.pop(seq, None) if pending is not None and isinstance(seq, int) else None
        if timer is not None:
            timer.cancel()

    def _unanswered(self, seq: int) -> None:
        pending = self.pending
        if pending is None or pending.pop(seq, None) is None or self.state != _OPEN:
            return
        state = self.app.state
        state.metrics.acts_unanswered.inc()
        timeout = state.settings.act_timeout_seconds
        self.push(encode(error("act_unanswered", f"no answer to act {seq} within {timeout:g} s; "
                                                 "reconnect, resume and resend it with the same seq")))
        self.close(CLOSE_RESEND, "an action got no answer: reconnect, resume and resend")

    # ------------------------------------------------------------------ Peer: push and close
    def push(self, text: str) -> None:
        """Send one message (never blocks): framed and written now, or queued while the client is
        not reading; a full queue closes the socket with 4008."""
        if self.state != _OPEN:
            return
        if self.pending and text.startswith(_ANSWER_PREFIXES):
            self._answered(text)
        queue = self.queue
        if queue is None and self.writable:
            data = self.app.state.sockets.text_frame(text)
            if not self.app.state.sockets.hold(self, data):
                self.transport.write(data)
            return
        if queue is None:
            queue = self.queue = deque()
        elif len(queue) >= self.app.state.settings.send_queue_size:
            self.app.state.metrics.slow_disconnects.inc()
            self.close(CLOSE_SLOW, "send queue full: the client is not reading")
            return
        queue.append(text)

    def write_frames(self, frames: list[bytes]) -> None:
        """The frames a batch held for this socket (``SocketHub.corked``), in one write."""
        if self.state == _CLOSED:
            return
        if self.queue is not None or not self.writable:  # a pause came between: keep the order
            queue = self.queue if self.queue is not None else deque()
            self.queue = queue
            queue.extendleft(reversed(frames))
            return
        self.transport.write(frames[0] if len(frames) == 1 else b"".join(frames))

    def _write(self, data: bytes) -> None:
        """A frame of the socket's own (pong, close): after what a batch holds, else now."""
        if self.state == _CLOSED:
            return
        if not self.app.state.sockets.hold(self, data):
            self.transport.write(data)

    def _flush(self) -> None:
        queue = self.queue
        while queue and self.writable and self.state != _CLOSED:
            item = queue.popleft()
            if item is None:  # the close mark: everything before it is out
                self.queue = None
                code, reason = self.close_code or (1000, "")
                self.transport.write(close_frame(code, reason))
                return
            self.transport.write(item if isinstance(item, bytes) else self.app.state.sockets.text_frame(item))
        if queue is not None and not queue:
            self.queue = None

    def close(self, code: int, reason: str) -> None:
        """Close with ``code``: what was pushed before is sent first, then the close frame, all within
        ``socket_close_seconds``; after that the TCP connection is aborted. Returns at once."""
        if self.state >= _CLOSING:
            return
        if self.state == _HANDSHAKE:
            self.state = _CLOSED
            self.transport.close()
            return
        self.state = _CLOSING
        self.close_code = (code, reason)
        self._end()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.paused:  # the client's close must come in
            self._reading(True)
        if self.queue:
            self.queue.append(None)  # sent after what waits, once the client reads
        else:
            self.queue = None
            self._write(close_frame(code, reason))
        self._arm_abort()

    def _arm_abort(self) -> None:
        if self.timer is None and self.state != _CLOSED:
            seconds = self.app.state.settings.socket_close_seconds
            self.timer = asyncio.get_running_loop().call_later(seconds, self._abort)

    def _abort(self) -> None:
        """The close did not finish in time (a client that stopped reading): reset the connection."""
        self.timer = None
        if self.state == _CLOSED:
            return
        transport = self.transport
        try:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except (OSError, AttributeError, TypeError):
            pass
        transport.abort()
        self.app.state.metrics.socket_aborts.inc()

    def keepalive(self, now: float, idle_ping: float, idle_drop: float) -> None:
        """Called by the keepalive sweep for a socket silent for ``idle_ping`` seconds or more."""
        if self.state >= _CLOSING:
            return
        if now - self.last_seen >= idle_drop:
            self._abort_gone()
        elif now - self.pinged >= idle_ping:
            self.pinged = now
            self._write(frame(OP_PING, b""))

    def _abort_gone(self) -> None:
        """The client is gone without a close (no pong for three heartbeats): end the socket now."""
        self.state = _CLOSING
        self._end()
        self._abort()

    def _end(self) -> None:
        """The socket leaves its match (runner or link), its slot and the count; once."""
        pending, self.pending = self.pending, None
        for timer in (pending or {}).values():
            timer.cancel()
        runner, link = self.runner, self.link
        self.runner = self.link = None
        state = self.app.state
        if runner is not None or link is not None:
            try:
                session.detach(state.manager, self.match_id, runner, link, self)
            except Exception:
                log.exception("detaching a closed socket failed")
        if self.opened:
            self.opened = False
            state.metrics.sockets.dec()
            if self.player_id is not None:
                state.socket_slots.give_back(self.player_id, self)
