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
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from starlette.routing import Match
from websockets.protocol import State

from app.api.deps import player_for_token
from app.api.limits import admit_socket, refuse_if_limited, release_socket
from app.api.wsproto import WebSocketsSansIOProtocol, internals_problem
from app.games.base import ADMIN, SPECTATOR
from app.runtime.interfaces import Link, MatchDirectory
from app.runtime.match import MatchRunner
from app.runtime.protocol import (
    CLOSE_BAD_REQUEST,
    CLOSE_FORBIDDEN,
    CLOSE_HELLO_TIMEOUT,
    CLOSE_NOT_FOUND,
    CLOSE_RESEND,
    CLOSE_SLOW,
    CLOSE_TRY_AGAIN,
    CLOSE_UNAUTHORIZED,
    Hello,
    ProtocolError,
    check_message,
    decode,
    has_nul,
    parse_hello,
    route,
    utf8_size_over,
)
from app.runtime.rows import MatchRow
from app.runtime.wire import encode, error

log = logging.getLogger("bannerfall.ws")
router = APIRouter()

__all__ = ["corked", "CLOSE_BAD_REQUEST", "CLOSE_FORBIDDEN", "CLOSE_HELLO_TIMEOUT", "CLOSE_NOT_FOUND", "CLOSE_RESEND",
           "CLOSE_TRY_AGAIN", "CLOSE_UNAUTHORIZED", "Connection", "has_nul", "router", "utf8_size_over"]

_ANSWER_PREFIXES = ('{"type":"ack"', '{"type":"error"')


#: the last text framed by :func:`text_frame` and its frame: one message pushed to many sockets in a
#: row (an audience's shared message) is encoded and framed once
_last_frame: tuple[str, bytes] | None = None


def text_frame(text: str) -> bytes:
    """``text`` as one unmasked, unfragmented server text frame without extensions (RFC 6455 5.2:
    FIN + opcode 1, the payload length in 7, 16 or 64 bits, the UTF-8 payload). The frame of the
    last text is reused when the same ``str`` object comes again."""
    global _last_frame
    last = _last_frame
    if last is not None and last[0] is text:
        return last[1]
    payload = text.encode()
    n = len(payload)
    if n < 126:
        header = bytes((0x81, n))
    elif n < 65536:
        header = struct.pack("!BBH", 0x81, 126, n)
    else:
        header = struct.pack("!BBQ", 0x81, 127, n)
    frame = header + payload
    _last_frame = (text, frame)
    return frame


#: inside :func:`corked`: the frames the fast path wrote, per socket, in order (else None)
_corked: dict[Connection, list[bytes]] | None = None


@contextmanager
def corked() -> Iterator[None]:
    """Frames a socket's fast path writes inside are written at the end, in order, in one
    ``transport.write`` per socket: the log writer delivers each durable record inside one, so the
    ``delta`` of an action and its ``ack`` leave in one write (one system call), not two. Nested:
    the outermost one writes. Nothing is reordered: while corked, a socket's every push takes the
    same path (the fast path's conditions change only with I/O, and there is none inside)."""
    global _corked
    if _corked is not None:
        yield
        return
    _corked = {}
    try:
        yield
    finally:
        batch, _corked = _corked, None
        for conn, frames in batch.items():
            conn._write_frames(frames)


def _sansio_protocol(ws: WebSocket) -> Any:
    """uvicorn's ``websockets-sansio`` protocol object under ``ws`` (the ``__self__`` of the raw
    ``send`` kept by ``RawSendMiddleware``), or None under any other server or implementation, or
    when uvicorn's internals are not the ones the fast path uses (``app.api.wsproto.internals_problem``)."""
    raw = ws.scope.get("bannerfall.raw_send")
    proto = getattr(raw, "__self__", None)
    if proto is None or internals_problem() is not None:
        return None
    return proto if isinstance(proto, WebSocketsSansIOProtocol) else None


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
    """A local socket as a runtime :class:`~app.runtime.match.Peer`: what cannot be written at once
    waits in a bounded send queue, drained by a writer task that runs only while something waits. A
    client that stops reading fills its queue and is closed with 4008.

    ``close_seconds``: the bound on a close (flush + close frame + closing handshake) before the
    transport is aborted. ``act_timeout``: an ``act`` whose ``ack``/``error`` has not been pushed
    within this many seconds closes the socket with 4503 (resend after resume); None: no bound.

    Fast path (uvicorn ``websockets-sansio`` only): a message pushed while nothing waits (no queue,
    no writer task) and the socket is writable is framed and handed to the transport at once, as
    uvicorn's own ``send`` does (``docs/benchmarks/server.md``, "Where the time goes"). Anything
    else (a paused transport: the client is not reading; a closing socket; another server) goes
    through the queue in order, so the order, the 4008 bound and the closes are the same either way.
    An idle socket holds no queue and no task (``docs/benchmarks/server.md``, "Memory")."""

    __slots__ = (
        "act_timeout",
        "close_code",
        "close_seconds",
        "closed",
        "closer",
        "deltas",
        "handler",
        "metrics",
        "on_close",
        "pending",
        "player_id",
        "proto",
        "queue",
        "queue_size",
        "sent_version",
        "transport",
        "viewer",
        "writer",
        "ws",
    )

    def __init__(self, ws: WebSocket, queue_size: int, metrics: Any = None, *, close_seconds: float = 2.0,
                 act_timeout: float | None = None) -> None:
        self.ws = ws
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
        #: uvicorn's sans-I/O protocol (the fast path), else None
        self.proto = _sansio_protocol(ws)

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
        if self.writer is None and self.proto is not None and self._send_now(text):
            return
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

    def _send_now(self, text: str) -> bool:
        """Frame ``text`` and write it to the transport now, as uvicorn's ``send`` does, if the socket
        is open and writable (the caller checked that nothing waits); False (nothing done): queue it."""
        proto = self.proto
        if (not proto.handshake_complete or proto.close_sent or proto.disconnected
                or proto.initial_response is not None or not proto.writable.is_set()
                or proto.transport.is_closing()):
            return False
        conn = proto.conn
        if conn.state is not State.OPEN:  # the client's close arrived: the writer path decides
            return False
        try:
            if conn.extensions or conn.writes or conn.expect_continuation_frame or conn.debug:
                conn.send_text(text.encode())  # websockets frames it (compression, frame logging)
                data = b"".join(conn.data_to_send())
            else:  # what websockets would produce, framed once for every socket sent this text
                data = text_frame(text)
        except Exception:
            return False
        batch = _corked
        if batch is not None:
            frames = batch.get(self)
            if frames is None:
                batch[self] = [data]
            else:
                frames.append(data)
            return True
        try:
            proto.transport.write(data)
        except Exception:  # the connection broke under us: its disconnect ends the socket
            pass
        return True

    def _write_frames(self, frames: list[bytes]) -> None:
        """The frames :func:`corked` held for this socket, in one write (dropped if it is closing)."""
        transport = self.proto.transport
        if transport.is_closing():
            return
        try:
            transport.write(frames[0] if len(frames) == 1 else b"".join(frames))
        except Exception:  # the connection broke under us: its disconnect ends the socket
            pass

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
            # ``self.writer`` still set that was a reference cycle per such socket (found 2 Dec 2026 by
            # tests/runtime/test_cyclic_garbage.py under load)
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


def _viewer_for(meta: MatchRow, player: dict[str, Any], as_: str | None) -> int | None:
    """The viewer a player connects as: its seat, else (``as``) a spectator or the admin view; None
    if it asks for the admin view without the admin role. An unseated admin without ``as`` watches
    as a spectator (docs/protocol.md, "Your role": the admin view only when asked for, so an admin's
    screen shows no hidden card by accident; until 2 Dec 2026 it got the admin view)."""
    seats = [i for i, s in enumerate(meta["seats"]) if s.get("player_id") == player["id"]]
    if as_ == "admin":
        return ADMIN if player["role"] == "admin" else None
    if as_ == "spectator":
        return SPECTATOR
    if seats:
        return seats[0]
    return SPECTATOR


class _Unavailable(Exception):
    pass


class _Refused(Exception):
    """The socket is refused: send ``message``, then close with ``code``."""

    def __init__(self, message: dict[str, Any], code: int) -> None:
        super().__init__(message["code"])
        self.message = message
        self.code = code


async def _guarded(awaitable, seconds: float, what: str, match_id: str):
    """``await awaitable`` within ``seconds``; a storage failure or a timeout becomes one log line
    and :class:`_Unavailable` (answered ``storage_unavailable`` + 1013)."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        log.warning("socket for match %s refused: %s took over %g s", match_id, what, seconds)
    except Exception as exc:  # the database or Redis is down: one line, no traceback
        log.warning("socket for match %s refused: %s failed (%s)", match_id, what, type(exc).__name__)
    raise _Unavailable(what)


@dataclass
class _Admitted:
    """Who connects to which match, and where the match runs (``runner`` here, else ``owner``)."""

    player: dict[str, Any]
    viewer: int
    runner: MatchRunner | None
    owner: str | None


# -- the socket, step by step ----------------------------------------------------------------------
async def _read_hello(ws: WebSocket, match_id: str, settings: Any, metrics: Any) -> Hello | None:
    """Step 1: the first frame, within ``hello_timeout_seconds``, must be a valid ``hello``.
    None: the client left. Raises :class:`_Refused`."""
    try:
        first = await asyncio.wait_for(ws.receive(), settings.hello_timeout_seconds)
    except TimeoutError:
        raise _Refused(error("hello_timeout", "send hello with your token first"), CLOSE_HELLO_TIMEOUT) from None
    except (WebSocketDisconnect, RuntimeError):
        return None
    if first["type"] == "websocket.disconnect":
        return None
    nul = "\x00" in match_id
    try:
        value = decode(first, settings.max_message_bytes)
    except ProtocolError as exc:
        if exc.code == "message_too_large" and not nul:  # said as such, before hello too (protocol.md)
            metrics.errors.labels("message_too_large").inc()
            raise _Refused(error(exc.code, exc.message), CLOSE_UNAUTHORIZED) from None
        value = None  # binary or not JSON: answered as a missing hello
        nul = nul or exc.code == "invalid_text"
    if nul:
        metrics.errors.labels("invalid_text").inc()
        raise _Refused(error("invalid_text", "text may not contain NUL (\\u0000) characters"), CLOSE_BAD_REQUEST)
    try:
        return parse_hello(value)
    except ProtocolError as exc:
        raise _Refused(error(exc.code, exc.message), exc.close or CLOSE_UNAUTHORIZED) from None


async def _admit(ws: WebSocket, match_id: str, hello: Hello, settings: Any, repo: Any,
                 matches: MatchDirectory) -> _Admitted:
    """Step 2: who asks (the token), where the match runs, as which viewer, within the socket
    limits; every lookup bounded by ``socket_setup_seconds``. Raises :class:`_Refused`."""
    setup = settings.socket_setup_seconds
    retry_after = max(1, round(settings.lease_seconds))
    try:
        player = await _guarded(player_for_token(repo, hello.token), setup, "player lookup", match_id)
        if player is None:
            raise _Refused(error("unauthorized", "unknown token"), CLOSE_UNAUTHORIZED)
        runner, owner = await _guarded(matches.locate(match_id), setup, "locating the match", match_id)
        meta = runner.meta if runner is not None else (
            None if owner is None else await _guarded(repo.match(match_id), setup, "match lookup", match_id))
        if meta is None:
            raise _Refused(error("not_found", "no such match"), CLOSE_NOT_FOUND)
        if runner is None and not await _guarded(matches.node_alive(owner), setup,
                                                 "checking the match's node", match_id):
            # the owner died and its lease has not run out yet: say so now, not after the lease
            raise _Refused(error("match_unavailable", "the node running this match is gone; another "
                                 "takes it over shortly: reconnect after retry_after seconds",
                                 retry_after=retry_after), CLOSE_TRY_AGAIN)
    except _Unavailable:
        ws.app.state.metrics.errors.labels("storage_unavailable").inc()
        raise _Refused(error("storage_unavailable", "storage is unavailable; reconnect after retry_after "
                             "seconds", retry_after=retry_after), CLOSE_TRY_AGAIN) from None
    viewer = _viewer_for(meta, player, hello.as_)
    if viewer is None:
        raise _Refused(error("forbidden", "admins only"), CLOSE_FORBIDDEN)
    refused = admit_socket(ws, player, meta, hello.as_)  # seated admin, sockets per player
    if refused is not None:
        raise _Refused(error(refused[0], refused[1]), refused[2])
    return _Admitted(player=player, viewer=viewer, runner=runner, owner=owner)


def _join(conn: Connection, match_id: str, admitted: _Admitted, hello: Hello, settings: Any,
          matches: MatchDirectory) -> Callable[[dict[str, Any]], None]:
    """Step 3: attach the socket to the match's runner here, or link it to the owner node.
    Returns where its messages go from now on."""
    runner = admitted.runner
    if runner is not None:
        def detach() -> None:
            current = matches.live(match_id)
            if current is not None and current is not runner:
                current.detach(conn)
            runner.detach(conn)

        conn.on_close = detach
        runner.attach(conn, since_version=hello.since_version, from_hello=True)
        return lambda msg: route(matches.live(match_id) or runner, conn, msg)
    link: Link = matches.open_link(conn, match_id, admitted.owner or "", hello.since_version,
                                   answer_seconds=settings.link_answer_seconds,
                                   retry_after=max(1, round(settings.lease_seconds)))
    conn.on_close = link.close
    return link.forward


async def _serve(ws: WebSocket, conn: Connection, send_on: Callable[[dict[str, Any]], None], limit: int,
                 metrics: Any) -> None:
    """Step 4: every frame until the socket closes: decoded and checked (``app.runtime.protocol``),
    then handed on; a bad frame (a binary one too: ``malformed_message``) gets an ``error`` and
    changes nothing."""
    while not conn.closed:
        frame = await ws.receive()
        if frame["type"] == "websocket.disconnect":
            return
        try:
            msg = check_message(decode(frame, limit))
        except ProtocolError as exc:
            if exc.code != "malformed_message":
                metrics.errors.labels(exc.code).inc()
            conn.push(encode(error(exc.code, exc.message, seq=_act_seq(frame) if exc.code == "invalid_text" else None)))
            continue
        if msg.get("type") == "act":
            metrics.actions.inc()
            conn.expect_answer(msg.get("seq"))
        send_on(msg)


def _act_seq(frame: Mapping[str, Any]) -> int | None:
    """The ``seq`` of an ``act`` refused for its text (a NUL): echoed, as every answer to an act is
    (protocol.md); None for anything else. Only on that error's path: the frame is parsed again."""
    try:
        value = orjson.loads(frame.get("text") or "")
    except orjson.JSONDecodeError:
        return None
    seq = value.get("seq") if isinstance(value, dict) and value.get("type") == "act" else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq < 2**62 else None


async def serve_direct(scope: dict[str, Any], receive: Any, send: Any) -> bool:
    """Serve ``scope`` if it is a match socket (``/ws/matches/{id}``, matched as the router matches
    it), without the router and the middleware inside ``app.main.RawSendMiddleware``, which calls
    this; False (nothing done) for anything else. Those layers do nothing for a socket but the
    per-address rate limit (:func:`app.api.limits.refuse_if_limited`, checked here the same way),
    yet each would keep a suspended coroutine frame (and FastAPI's exit stacks) for the socket's
    whole life: ~12 KB per idle socket (``docs/benchmarks/server.md``, "Memory")."""
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
    try:
        hello = await _read_hello(ws, match_id, settings, metrics)
        if hello is None:
            return
        admitted = await _admit(ws, match_id, hello, settings, app.state.repo, matches)
    except _Refused as refused:
        await _refuse(ws, refused.message, refused.code, close_seconds)
        return
    # acts forwarded to another node are bounded here; on the owner node an act is answered once
    # durable, or the socket gets storage_unavailable + 1011 when its commit fails (the log writer)
    conn = Connection(ws, settings.send_queue_size, metrics, close_seconds=close_seconds,
                      act_timeout=settings.act_timeout_seconds if admitted.runner is None else None)
    conn.viewer = admitted.viewer
    conn.player_id = admitted.player["id"]
    conn.deltas = hello.deltas
    conn.start()
    send_on = _join(conn, match_id, admitted, hello, settings, matches)
    metrics.sockets.inc()
    try:
        await _serve(ws, conn, send_on, settings.max_message_bytes, metrics)
    except (WebSocketDisconnect, RuntimeError):
        pass
    except asyncio.CancelledError:
        if conn.closer is None or not conn.closed:
            raise  # the server is stopping
        # cancelled by our own close (no transport to abort): the socket is released below
    finally:
        release_socket(ws, admitted.player)
        conn.gone()
        if conn.closer is not None and not conn.closer.done():
            try:
                await asyncio.shield(conn.closer)
            except asyncio.CancelledError:
                pass
        metrics.sockets.dec()


#: the match socket's route, for :func:`serve_direct`
_MATCH_ROUTE = router.routes[0]
