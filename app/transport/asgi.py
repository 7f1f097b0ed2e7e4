"""The ASGI transport: ``/ws/matches/{id}`` as a FastAPI WebSocket route, for any ASGI server.

``bannerfall serve`` uses the lean transport (``app/transport/fast.py``) unless the settings ask
for this one (``BANNERFALL_SOCKET_TRANSPORT=asgi``), compression is on (``permessage-deflate`` is
uvicorn's), or uvicorn lacks what the lean one needs. Both give the same protocol
(``docs/protocol.md``); the socket tests run against both.

:class:`Connection` is a socket as a runtime :class:`~app.runtime.match.Peer`: every message goes
through a bounded queue drained by a writer task (``await send``) that runs only while something
waits. A client that stops reading fills its queue and is closed with 4008. A close first flushes
what was queued before it (the last word: ``storage_unavailable``, ``match_moved``, ...), then sends
the close frame; if that has not finished within ``socket_close_seconds`` (a client that stopped
reading), the TCP transport is aborted, so a socket never outlives its close by more than that bound.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from starlette.routing import Match

from app.api.limits import CLOSE_RATE_LIMITED, refuse_if_limited, release_socket
from app.games.base import SPECTATOR
from app.runtime.interfaces import MatchDirectory
from app.runtime.protocol import CLOSE_HELLO_TIMEOUT, CLOSE_RESEND, CLOSE_SLOW, ProtocolError, check_message, decode
from app.runtime.wire import encode, error
from app.transport import session
from app.transport.session import Budget, Refused

log = logging.getLogger("bannerfall.ws")
router = APIRouter()

__all__ = ["Connection", "bound_send_buffer", "router", "serve_direct"]

_ANSWER_PREFIXES = ('{"type":"ack"', '{"type":"error"')


def transport_of(ws: WebSocket) -> Any:
    """The asyncio transport under ``ws``, or None when it cannot be found.

    Under uvicorn the ASGI ``send`` is a bound method of the connection's protocol object, which
    keeps its transport in ``.transport``; ``RawSendMiddleware`` (app/main.py) keeps that ``send`` in
    ``scope["bannerfall.raw_send"]``. Anything that does not look like an asyncio transport
    (``abort``, ``is_closing``, ``get_write_buffer_size``) is ignored: closing then relies on the
    close frame and on cancelling the socket's handler (see :meth:`Connection._close`)."""
    raw = ws.scope.get("bannerfall.raw_send")
    transport = getattr(getattr(raw, "__self__", None), "transport", None)
    if all(callable(getattr(transport, name, None)) for name in ("abort", "is_closing", "get_write_buffer_size")):
        return transport
    return None


class Connection:
    """A socket of the ASGI transport as a :class:`~app.runtime.match.Peer` (see the module).

    ``close_seconds``: the bound on a close (flush + close frame + closing handshake) before the
    transport is aborted. ``act_timeout``: an ``act`` whose ``ack``/``error`` has not been pushed
    within this many seconds closes the socket with 4503 (resend after resume); None: no bound."""

    __slots__ = ("act_timeout", "app", "close_code", "close_seconds", "closed", "closer", "deltas", "handler",
                 "metrics", "on_close", "pending", "player_id", "queue", "queue_size", "sent_version", "transport",
                 "viewer", "writer", "ws", "__weakref__")

    def __init__(self, ws: WebSocket, queue_size: int, metrics: Any = None, *, close_seconds: float = 2.0,
                 act_timeout: float | None = None) -> None:
        self.ws = ws
        self.app = getattr(ws, "app", None) if "app" in getattr(ws, "scope", {}) else None
        #: messages waiting for the writer task (None: nothing waits); a None item is the close mark
        self.queue: deque[str | None] | None = None
        self.queue_size = queue_size
        self.viewer = SPECTATOR
        self.player_id: str | None = None
        self.sent_version = 0
        #: whether changes go out as ``delta`` messages (the hello's ``deltas``) or as full ``state``s
        self.deltas = True
        self.closed = False
        self.close_code: tuple[int, str] | None = None
        #: the task draining ``queue``, while it runs (it ends when the queue is empty)
        self.writer: asyncio.Task | None = None
        self.closer: asyncio.Task | None = None
        self.metrics = metrics
        #: called once when the socket closes (either side): detach from the runner or the link
        self.on_close: Callable[[], None] | None = None
        self.close_seconds = close_seconds
        self.act_timeout = act_timeout
        #: client seq -> timer of each forwarded ``act`` not answered yet
        self.pending: dict[int, asyncio.TimerHandle] = {}
        self.transport = transport_of(ws)
        self.handler: asyncio.Task | None = None

    def start(self) -> None:
        """Called by the socket's handler task once the socket is accepted (it is cancelled when a
        close without transport reaches its bound)."""
        self.handler = asyncio.current_task()

    # ------------------------------------------------------------------ acts in flight
    def expect_answer(self, seq: Any) -> None:
        """An ``act`` with this seq was handed on: its answer must be pushed within ``act_timeout``."""
        if (self.act_timeout is None or self.closed or not isinstance(seq, int) or isinstance(seq, bool)
                or seq in self.pending):
            return
        self.pending[seq] = asyncio.get_running_loop().call_later(self.act_timeout, self._unanswered, seq)

    def _answered(self, text: str) -> None:
        try:
            seq = orjson.loads(text).get("seq")
        except (orjson.JSONDecodeError, AttributeError):
            return
        timer = self.pending.pop(seq, None) if isinstance(seq, int) else None
        if timer is not None:
            timer.cancel()

    def _unanswered(self, seq: int) -> None:
        if self.pending.pop(seq, None) is None or self.closed:
            return
        if self.metrics:
            self.metrics.acts_unanswered.inc()
        self.push(encode(error("act_unanswered", f"no answer to act {seq} within {self.act_timeout:g} s; "
                                                 "reconnect, resume and resend it with the same seq")))
        self.close(CLOSE_RESEND, "an action got no answer: reconnect, resume and resend")

    # ------------------------------------------------------------------ Peer
    def push(self, text: str) -> None:
        if self.closed:
            return
        if self.pending and text.startswith(_ANSWER_PREFIXES):
            self._answered(text)
        queue = self.queue
        if queue is None:
            queue = self.queue = deque()
        elif len(queue) >= self.queue_size:
            if self.metrics:
                self.metrics.slow_disconnects.inc()
            self.close(CLOSE_SLOW, "send queue full: the client is not reading")
            return
        queue.append(text)
        if self.writer is None:
            self.writer = asyncio.get_running_loop().create_task(self._write())

    def close(self, code: int, reason: str) -> None:
        """Close with ``code``: what was pushed before is sent first, then the close frame, all within
        ``close_seconds``; after that the transport is aborted. Returns at once."""
        if self.closed:
            return
        self._end()
        self.close_code = (code, reason)
        if self.writer is not None and self.queue is not None:
            self.queue.append(None)  # the writer stops after what was queued before the close
        self.closer = asyncio.get_running_loop().create_task(self._close(code, reason))

    def gone(self) -> None:
        """The client side ended the socket (or the handler is leaving): stop everything at once."""
        if not self.closed:
            self._end()
        if self.writer is not None and self.closer is None:
            # the reference goes with the cancel: a writer cancelled before its first step keeps the
            # CancelledError, whose traceback holds its frame and so this connection: with
            # ``self.writer`` still set that would be a reference cycle per such socket
            writer, self.writer = self.writer, None
            writer.cancel()

    def _end(self) -> None:
        self.closed = True
        for timer in self.pending.values():
            timer.cancel()
        self.pending.clear()
        on_close, self.on_close = self.on_close, None
        if on_close is not None:
            try:
                on_close()
            except Exception:
                log.exception("detaching a closed socket failed")

    async def _close(self, code: int, reason: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.close_seconds
        flushed = True
        writer = self.writer
        if writer is not None and not writer.done():
            done, _ = await asyncio.wait({writer}, timeout=self.close_seconds)
            if not done:
                flushed = False
                self.writer = None  # as in gone(): no cycle through a cancelled writer
                writer.cancel()
        if flushed:
            try:
                await asyncio.wait_for(self._send_close(code, reason), max(0.01, deadline - loop.time()))
            except Exception:  # timed out (not writable) or the socket is gone
                pass
        try:
            await release(self.ws, self.transport, deadline, self.metrics)
        except Exception as exc:  # never let a close fail the socket's handler
            log.warning("releasing a socket failed: %s", type(exc).__name__)
        if self.transport is None and self.handler is not None and not self.handler.done():
            # no transport to abort: end the handler so the socket leaves every count and subscription
            await asyncio.sleep(0)
            self.handler.cancel()

    async def _send_close(self, code: int, reason: str) -> None:
        raw = self.ws.scope.get("bannerfall.raw_send")
        if raw is None:
            await self.ws.close(code, reason)
        else:
            await raw({"type": "websocket.close", "code": code, "reason": reason})

    async def _write(self) -> None:
        """Send the queue in order until it is empty (then the task ends and the queue is dropped) or
        reaches the close mark."""
        queue = self.queue
        raw = self.ws.scope.get("bannerfall.raw_send")
        try:
            while queue:
                text = queue.popleft()
                if text is None:
                    return
                if raw is None:
                    await self.ws.send_text(text)
                else:
                    await raw({"type": "websocket.send", "text": text})
        except (asyncio.CancelledError, WebSocketDisconnect, RuntimeError, OSError):
            pass
        except Exception:  # the socket is gone in some other way
            pass
        finally:
            if not self.closed:
                self.writer = None
                self.queue = None


async def release(ws: WebSocket, transport: Any, deadline: float, metrics: Any = None) -> None:
    """Wait (until the loop time ``deadline``) for the transport to finish closing; abort it then.
    After the close frame the client answers with its own and the server closes the TCP connection;
    a client that reads nothing never does, and without this its connection would stay open."""
    if transport is None:
        return
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        if transport.is_closing() and transport.get_write_buffer_size() == 0:
            return
        await asyncio.sleep(0.05)
    if transport.is_closing() and transport.get_write_buffer_size() == 0:
        return
    _reset_on_close(transport)
    transport.abort()
    if metrics is not None:
        metrics.socket_aborts.inc()


def bound_send_buffer(transport: Any, size: int) -> None:
    """Bound the kernel's send buffer of ``transport``'s socket to ``size`` bytes
    (``SOCKET_SEND_BUFFER_BYTES``; 0: the system's), as the lean transport does: with the system's
    default (megabytes on loopback) a client that stopped reading would hold that much before its
    queue fills and it is closed with 4008."""
    if not size or transport is None:
        return
    try:
        transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
    except (OSError, AttributeError, TypeError):
        pass


def _reset_on_close(transport: Any) -> None:
    """Make closing the socket send a TCP reset (``SO_LINGER`` 0): otherwise the kernel keeps an
    orphaned connection with the unsent bytes, probing a zero window for minutes."""
    try:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except (OSError, AttributeError, TypeError):
        pass


async def _refuse(ws: WebSocket, message: dict[str, Any], code: int, close_seconds: float) -> None:
    """Send ``message`` then close with ``code``, all bounded by ``close_seconds`` (then abort)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + close_seconds
    transport = transport_of(ws)
    try:
        await asyncio.wait_for(ws.send_text(encode(message)), close_seconds)
        await asyncio.wait_for(ws.close(code), max(0.01, deadline - loop.time()))
    except Exception:
        pass
    await release(ws, transport, deadline)


async def _read_hello(ws: WebSocket, match_id: str, settings: Any, metrics: Any) -> Any:
    """Step 1: the first frame, within ``hello_timeout_seconds``, must be a valid ``hello``
    (:func:`app.transport.session.read_hello`). None: the client left. Raises :class:`Refused`."""
    try:
        first = await asyncio.wait_for(ws.receive(), settings.hello_timeout_seconds)
    except TimeoutError:
        raise Refused(error("hello_timeout", "send hello with your token first"), CLOSE_HELLO_TIMEOUT) from None
    except (WebSocketDisconnect, RuntimeError):
        return None
    if first["type"] == "websocket.disconnect":
        return None
    payload = first.get("text")
    return session.read_hello(payload if payload is not None else first.get("bytes", b""), match_id,
                              settings, metrics)


async def _serve(ws: WebSocket, conn: Connection, send_on: Callable[[dict[str, Any]], None], settings: Any,
                 metrics: Any, match_id: str = "") -> None:
    """Step 4: every frame until the socket closes: within the socket's budget, decoded and checked
    (``app.runtime.protocol``), then handed on; a bad frame (a binary one too: ``malformed_message``)
    gets an ``error`` and changes nothing. A message whose handling raises (a bug) gets
    ``internal_error`` and closes this socket with 1011, as on the lean transport; nothing else is
    affected."""
    limit = settings.max_message_bytes
    budget = Budget(settings.socket_messages_per_second, settings.socket_message_burst, time.monotonic())
    while not conn.closed:
        frame = await ws.receive()
        if frame["type"] == "websocket.disconnect":
            return
        if not budget.take(time.monotonic()):
            metrics.errors.labels("too_many_messages").inc()
            if budget.exhausted():
                conn.push(encode(error("too_many_messages", "too many messages: this socket is closed")))
                conn.close(CLOSE_RATE_LIMITED, "too many messages")
                return
            conn.push(encode(error("too_many_messages", f"more than {budget.rate:g} messages a second: this one "
                                   "was not served; retry after retry_after seconds",
                                   seq=session.act_seq(frame.get("text")),
                                   retry_after=round(budget.retry_after(), 3))))
            continue
        try:
            msg = check_message(decode(frame, limit))
        except ProtocolError as exc:
            if exc.code != "malformed_message":
                metrics.errors.labels(exc.code).inc()
            conn.push(encode(error(exc.code, exc.message, seq=session.act_seq(frame.get("text"))
                                   if exc.code == "invalid_text" else None)))
            continue
        if msg.get("type") == "act":
            metrics.actions.inc()
            conn.expect_answer(msg.get("seq"))
        try:
            send_on(msg)
        except Exception:  # a bug must not take the node's loop: this socket is closed, nothing else
            log.exception("a message on a socket of match %s failed", match_id)
            conn.push(encode(error("internal_error", "the server could not handle this message")))
            conn.close(1011, "internal error")
            return


async def serve_direct(scope: dict[str, Any], receive: Any, send: Any) -> bool:
    """Serve ``scope`` if it is a match socket (``/ws/matches/{id}``, matched as the router matches
    it), without the router and the middleware inside ``app.main.RawSendMiddleware``, which calls
    this; False (nothing done) for anything else. Those layers do nothing for a socket but the
    per-address rate limit (:func:`app.api.limits.refuse_if_limited`, checked here the same way),
    yet each would keep a suspended coroutine frame (and FastAPI's exit stacks) for the socket's
    whole life (``docs/benchmarks/server.md``, "Memory")."""
    matched, child = _MATCH_ROUTE.matches(scope)
    if matched is not Match.FULL:
        return False
    app = scope["app"]
    if await refuse_if_limited(app.state.rate_limiter, scope, receive, send):
        return True
    scope.update(child)
    await match_socket(WebSocket(scope, receive, send), child["path_params"]["match_id"])
    return True


@router.websocket("/ws/matches/{match_id}")
async def match_socket(ws: WebSocket, match_id: str) -> None:
    """The match socket: hello → admit → join (here or through a link) → serve; closes bounded."""
    app = ws.app
    settings, metrics = app.state.settings, app.state.metrics
    matches: MatchDirectory = app.state.manager
    close_seconds = settings.socket_close_seconds
    try:
        await ws.accept()
    except Exception:  # the client left during the handshake
        return
    conn = Connection(ws, settings.send_queue_size, metrics, close_seconds=close_seconds)
    bound_send_buffer(conn.transport, settings.socket_send_buffer_bytes)
    try:
        hello = await _read_hello(ws, match_id, settings, metrics)
        if hello is None:
            return
        admitted = await session.admit(conn, match_id, hello)
    except Refused as refused:
        await _refuse(ws, refused.message, refused.code, close_seconds)
        return
    except Exception:  # never let a lookup fail the connection without an answer (as the lean transport)
        log.exception("admitting a socket for match %s failed", match_id)
        await _refuse(ws, error("internal_error", "the server could not open this socket"), 1011, close_seconds)
        return
    # acts forwarded to another node are bounded here; on the owner node an act is answered once
    # durable, or the socket gets storage_unavailable + 1011 when its commit fails (the log writer)
    conn.act_timeout = settings.act_timeout_seconds if admitted.runner is None else None
    conn.viewer = admitted.viewer
    conn.player_id = admitted.player["id"]
    conn.deltas = hello.deltas
    conn.start()
    runner, link = session.attach(conn, match_id, admitted, hello, settings, matches)
    conn.on_close = lambda: session.detach(matches, match_id, runner, link, conn)
    if conn.closed:  # closed while attaching (a refused since_version)
        conn.on_close()
    metrics.sockets.inc()
    try:
        await _serve(ws, conn, lambda msg: session.forward(matches, match_id, runner, link, conn, msg),
                     settings, metrics, match_id)
    except (WebSocketDisconnect, RuntimeError):
        pass
    except asyncio.CancelledError:
        if conn.closer is None or not conn.closed:
            raise  # the server is stopping
        # cancelled by our own close (no transport to abort): the socket is released below
    finally:
        release_socket(conn, admitted.player)
        conn.gone()
        if conn.closer is not None and not conn.closer.done():
            try:
                await asyncio.shield(conn.closer)
            except asyncio.CancelledError:
                pass
        metrics.sockets.dec()


#: the match socket's route, for :func:`serve_direct`
_MATCH_ROUTE = router.routes[0]
