"""``/ws/matches/{id}``: the match socket. Protocol: ``docs/protocol.md``.

The first message must be ``hello`` with the player's token (never in the URL, so tokens stay out
of access logs). Every bad message gets an ``error`` with a code and changes nothing.

Closing is bounded (``docs/protocol.md``, "Close codes and bounded times"): a close first flushes
what was queued before it (the last word: ``storage_unavailable``, ``match_moved``, ...), then sends
the close frame; if that has not finished within ``socket_close_seconds`` (a client that stopped
reading), the TCP transport is aborted, so a socket never outlives its close by more than that bound.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Any, Callable, Mapping

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from app.api.deps import player_for_token
from app.api.limits import admit_socket, release_socket
from app.games.base import ADMIN, SPECTATOR
from app.runtime.match import CLOSE_SLOW
from app.runtime.wire import encode, error

log = logging.getLogger("bannerfall.ws")
router = APIRouter()

CLOSE_UNAUTHORIZED = 4401
CLOSE_BAD_REQUEST = 4400
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_HELLO_TIMEOUT = 4408
#: an ``act`` got no answer in time: reconnect, ``resume`` and resend it with the same seq
CLOSE_RESEND = 4503
#: RFC 6455 "Try Again Later": storage or the match's node unavailable right now
CLOSE_TRY_AGAIN = 1013

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


def has_nul(value: Any) -> bool:
    """Whether a parsed JSON value holds a NUL character in any string (key or value)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_nul(v) for v in value)
    return False


def utf8_size_over(text: str | bytes, limit: int) -> bool:
    """Whether ``text`` is longer than ``limit`` bytes once UTF-8 encoded (without encoding short texts)."""
    if isinstance(text, bytes) or len(text) > limit:
        return len(text) > limit
    if len(text) * 4 <= limit:
        return False
    return len(text.encode("utf-8", "surrogatepass")) > limit


class Connection:
    """A local socket as a runtime :class:`~app.runtime.match.Peer`: a bounded send queue drained by
    one writer task. A client that stops reading fills its queue and is closed with 4008.

    ``close_seconds``: the bound on a close (flush + close frame + closing handshake) before the
    transport is aborted. ``act_timeout``: an ``act`` whose ``ack``/``error`` has not been pushed
    within this many seconds closes the socket with 4503 (resend after resume); None: no bound."""

    __slots__ = ("ws", "queue", "viewer", "player_id", "sent_version", "closed", "writer", "close_code",
                 "metrics", "closer", "on_close", "close_seconds", "act_timeout", "pending", "transport",
                 "handler")

    def __init__(self, ws: WebSocket, queue_size: int, metrics: Any = None, *, close_seconds: float = 2.0,
                 act_timeout: float | None = None) -> None:
        self.ws = ws
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(queue_size)
        self.viewer = SPECTATOR
        self.player_id: str | None = None
        self.sent_version = 0
        self.closed = False
        self.close_code: tuple[int, str] | None = None
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
        self.writer = asyncio.get_running_loop().create_task(self._write())
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
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            if self.metrics:
                self.metrics.slow_disconnects.inc()
            self.close(CLOSE_SLOW, "send queue full: the client is not reading")

    def close(self, code: int, reason: str) -> None:
        """Close with ``code``: what was pushed before is sent first, then the close frame, all within
        ``close_seconds``; after that the transport is aborted. Returns at once."""
        if self.closed:
            return
        self._end()
        self.close_code = (code, reason)
        try:
            self.queue.put_nowait(None)  # the writer stops after what was queued before the close
        except asyncio.QueueFull:
            pass  # a client that reads nothing: the writer cannot get there; the bound applies
        self.closer = asyncio.get_running_loop().create_task(self._close(code, reason))

    def gone(self) -> None:
        """The client side ended the socket (or the handler is leaving): stop everything at once."""
        if not self.closed:
            self._end()
        if self.writer is not None and self.closer is None:
            self.writer.cancel()

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
        if self.writer is not None and not self.writer.done():
            done, _ = await asyncio.wait({self.writer}, timeout=self.close_seconds)
            if not done:
                flushed = False
                self.writer.cancel()
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
        queue = self.queue
        raw = self.ws.scope.get("bannerfall.raw_send")
        try:
            if raw is None:
                send = self.ws.send_text
                while (text := await queue.get()) is not None:
                    await send(text)
                return
            while (text := await queue.get()) is not None:
                await raw({"type": "websocket.send", "text": text})
        except (asyncio.CancelledError, WebSocketDisconnect, RuntimeError, OSError):
            pass
        except Exception:  # the socket is gone in some other way
            pass


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


def _viewer_for(meta: dict[str, Any], player: dict[str, Any], as_: Any) -> int | None:
    seats = [i for i, s in enumerate(meta["seats"]) if s.get("player_id") == player["id"]]
    if as_ == "admin":
        return ADMIN if player["role"] == "admin" else None
    if as_ == "spectator":
        return SPECTATOR
    if seats:
        return seats[0]
    return ADMIN if player["role"] == "admin" else SPECTATOR


class _Unavailable(Exception):
    pass


async def _guarded(awaitable, seconds: float, what: str, match_id: str):
    """``await awaitable`` within ``seconds``; a storage failure or a timeout becomes one log line
    and :class:`_Unavailable` (answered ``storage_unavailable`` + 1013)."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        log.warning("socket for match %s refused: %s took over %g s", match_id, what, seconds)
    except Exception as exc:  # the database or Redis is down: one line, no traceback
        log.warning("socket for match %s refused: %s failed (%s)", match_id, what, type(exc).__name__)
    raise _Unavailable(what)


def _decode(message: Mapping[str, Any], limit: int) -> tuple[Any, str | None]:
    """A received frame as JSON: (value, None) or (None, error code)."""
    raw = message.get("text")
    if raw is None:
        raw = message.get("bytes") or b""
    if utf8_size_over(raw, limit):
        return None, "message_too_large"
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, "malformed_json"
    if ("\\u0000" in raw if isinstance(raw, str) else b"\\u0000" in raw) and has_nul(value):
        return None, "invalid_text"
    return value, None


_DECODE_ERRORS = {
    "message_too_large": "messages are limited to {limit} bytes (UTF-8)",
    "malformed_json": "the message is not valid JSON",
    "invalid_text": "text may not contain NUL (\\u0000) characters; nothing changed",
}


@router.websocket("/ws/matches/{match_id}")
async def match_socket(ws: WebSocket, match_id: str) -> None:
    app = ws.app
    settings, repo, manager = app.state.settings, app.state.repo, app.state.manager
    metrics = app.state.metrics
    close_seconds = settings.socket_close_seconds
    try:
        await ws.accept()
    except Exception:  # the client left during the handshake
        return
    # -- hello -----------------------------------------------------------------------------
    try:
        first = await asyncio.wait_for(ws.receive(), settings.hello_timeout_seconds)
    except asyncio.TimeoutError:
        await _refuse(ws, error("hello_timeout", "send hello with your token first"), CLOSE_HELLO_TIMEOUT,
                      close_seconds)
        return
    except (WebSocketDisconnect, RuntimeError):
        return
    if first["type"] == "websocket.disconnect":
        return
    hello, problem = _decode(first, settings.max_message_bytes)
    if problem == "invalid_text" or "\x00" in match_id:
        metrics.errors.labels("invalid_text").inc()
        await _refuse(ws, error("invalid_text", "text may not contain NUL (\\u0000) characters"),
                      CLOSE_BAD_REQUEST, close_seconds)
        return
    if not isinstance(hello, dict) or hello.get("type") != "hello" or not isinstance(hello.get("token"), str):
        await _refuse(ws, error("hello_required", "the first message must be {\"type\":\"hello\",\"token\":...}"),
                      CLOSE_UNAUTHORIZED, close_seconds)
        return
    since = hello.get("since_version")
    if hello.get("as") not in (None, "spectator", "admin") or (
            since is not None and (not isinstance(since, int) or isinstance(since, bool) or since < 0)):
        await _refuse(ws, error("bad_hello", "'as' must be \"spectator\" or \"admin\"; "
                                             "'since_version' a version number"), CLOSE_UNAUTHORIZED, close_seconds)
        return
    setup = settings.socket_setup_seconds
    retry_after = max(1, round(settings.lease_seconds))
    try:
        player = await _guarded(player_for_token(repo, hello["token"]), setup, "player lookup", match_id)
        if player is None:
            await _refuse(ws, error("unauthorized", "unknown token"), CLOSE_UNAUTHORIZED, close_seconds)
            return
        runner, owner = await _guarded(manager.locate(match_id), setup, "locating the match", match_id)
        if runner is None and owner is None:
            await _refuse(ws, error("not_found", "no such match"), CLOSE_NOT_FOUND, close_seconds)
            return
        meta = runner.meta if runner is not None else await _guarded(repo.match(match_id), setup,
                                                                     "match lookup", match_id)
        if meta is None:
            await _refuse(ws, error("not_found", "no such match"), CLOSE_NOT_FOUND, close_seconds)
            return
        if runner is None and not await _guarded(manager.cluster.node_alive(owner), setup,
                                                 "checking the match's node", match_id):
            # the owner died and its lease has not run out yet: say so now, not after the lease
            await _refuse(ws, error("match_unavailable", "the node running this match is gone; another "
                                    "takes it over shortly: reconnect after retry_after seconds",
                                    retry_after=retry_after), CLOSE_TRY_AGAIN, close_seconds)
            return
    except _Unavailable:
        metrics.errors.labels("storage_unavailable").inc()
        await _refuse(ws, error("storage_unavailable", "storage is unavailable; reconnect after retry_after "
                                "seconds", retry_after=retry_after), CLOSE_TRY_AGAIN, close_seconds)
        return
    viewer = _viewer_for(meta, player, hello.get("as"))
    if viewer is None:
        await _refuse(ws, error("forbidden", "admins only"), CLOSE_FORBIDDEN, close_seconds)
        return
    refused = admit_socket(ws, player, meta, hello.get("as"))  # seated admin, sockets per player
    if refused is not None:
        await _refuse(ws, error(refused[0], refused[1]), refused[2], close_seconds)
        return
    # acts forwarded to another node are bounded here; on the owner node an act is answered once
    # durable, or the socket gets storage_unavailable + 1011 when its commit fails (the log writer)
    conn = Connection(ws, settings.send_queue_size, metrics, close_seconds=close_seconds,
                      act_timeout=settings.act_timeout_seconds if runner is None else None)
    conn.viewer = viewer
    conn.player_id = player["id"]
    conn.start()
    link = None
    if runner is not None:
        local = runner

        def detach() -> None:
            current = manager.runners.get(match_id)
            if current is not None and current is not local:
                current.detach(conn)
            local.detach(conn)

        conn.on_close = detach
        runner.attach(conn, since_version=since)
    else:
        from app.runtime.cluster import Link

        link = Link(manager.cluster, conn, match_id, owner)
        conn.on_close = link.close
        link.open(since, answer_seconds=settings.link_answer_seconds, retry_after=retry_after)
    metrics.sockets.inc()
    # -- messages ----------------------------------------------------------------------------
    limit = settings.max_message_bytes
    try:
        while not conn.closed:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                break
            msg, problem = _decode(message, limit)
            if problem is not None:
                metrics.errors.labels(problem).inc()
                conn.push(encode(error(problem, _DECODE_ERRORS[problem].format(limit=limit))))
                continue
            if not isinstance(msg, dict):
                conn.push(encode(error("malformed_message", "a message must be a JSON object")))
                continue
            if msg.get("type") == "act":
                metrics.actions.inc()
                conn.expect_answer(msg.get("seq"))
            if link is not None:
                link.forward(msg)
            else:
                manager.dispatch(manager.runners.get(match_id) or runner, conn, msg)
    except (WebSocketDisconnect, RuntimeError):
        pass
    except asyncio.CancelledError:
        if conn.closer is None or not conn.closed:
            raise  # the server is stopping
        # cancelled by our own close (no transport to abort): the socket is released below
    finally:
        release_socket(ws, player)
        conn.gone()
        if conn.closer is not None and not conn.closer.done():
            try:
                await asyncio.shield(conn.closer)
            except asyncio.CancelledError:
                pass
        metrics.sockets.dec()
