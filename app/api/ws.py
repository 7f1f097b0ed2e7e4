"""``/ws/matches/{id}``: the match socket. Protocol: ``docs/protocol.md``.

The first message must be ``hello`` with the player's token (never in the URL, so tokens stay out
of access logs). Every bad message gets an ``error`` with a code and changes nothing.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

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
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_HELLO_TIMEOUT = 4408


class Connection:
    """A local socket as a runtime :class:`~app.runtime.match.Peer`: a bounded send queue drained by
    one writer task. A client that stops reading fills its queue and is closed with 4008."""

    __slots__ = ("ws", "queue", "viewer", "player_id", "sent_version", "closed", "writer", "close_code",
                 "metrics")

    def __init__(self, ws: WebSocket, queue_size: int, metrics: Any = None) -> None:
        self.ws = ws
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(queue_size)
        self.viewer = SPECTATOR
        self.player_id: str | None = None
        self.sent_version = 0
        self.closed = False
        self.close_code: tuple[int, str] | None = None
        self.writer: asyncio.Task | None = None
        self.metrics = metrics

    def start(self) -> None:
        self.writer = asyncio.get_running_loop().create_task(self._write())

    def push(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            if self.metrics:
                self.metrics.slow_disconnects.inc()
            self.close(CLOSE_SLOW, "send queue full: the client is not reading")

    def close(self, code: int, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_code = (code, reason)
        if self.writer is not None:
            self.writer.cancel()
        asyncio.get_running_loop().create_task(self._close(code, reason))

    async def _close(self, code: int, reason: str) -> None:
        try:
            await self.ws.close(code, reason)
        except Exception:
            pass

    async def _write(self) -> None:
        queue = self.queue
        raw = self.ws.scope.get("bannerfall.raw_send")
        try:
            if raw is None:
                send = self.ws.send_text
                while True:
                    await send(await queue.get())
            while True:
                await raw({"type": "websocket.send", "text": await queue.get()})
        except (asyncio.CancelledError, WebSocketDisconnect, RuntimeError, OSError):
            pass
        except Exception:  # the socket is gone in some other way
            pass


async def _send_now(ws: WebSocket, message: dict[str, Any]) -> None:
    try:
        await ws.send_text(encode(message))
    except Exception:
        pass


def _viewer_for(meta: dict[str, Any], player: dict[str, Any], as_: Any) -> int | None:
    seats = [i for i, s in enumerate(meta["seats"]) if s.get("player_id") == player["id"]]
    if as_ == "admin":
        return ADMIN if player["role"] == "admin" else None
    if as_ == "spectator":
        return SPECTATOR
    if seats:
        return seats[0]
    return ADMIN if player["role"] == "admin" else SPECTATOR


@router.websocket("/ws/matches/{match_id}")
async def match_socket(ws: WebSocket, match_id: str) -> None:
    app = ws.app
    settings, repo, manager = app.state.settings, app.state.repo, app.state.manager
    metrics = app.state.metrics
    await ws.accept()
    # -- hello -----------------------------------------------------------------------------
    try:
        first = await asyncio.wait_for(ws.receive(), settings.hello_timeout_seconds)
    except asyncio.TimeoutError:
        await _send_now(ws, error("hello_timeout", "send hello with your token first"))
        await ws.close(CLOSE_HELLO_TIMEOUT)
        return
    except (WebSocketDisconnect, RuntimeError):
        return
    if first["type"] == "websocket.disconnect":
        return
    raw = first.get("text")
    if raw is None:
        raw = first.get("bytes") or b""
    try:
        hello = orjson.loads(raw) if len(raw) <= settings.max_message_bytes else None
    except orjson.JSONDecodeError:
        hello = None
    if not isinstance(hello, dict) or hello.get("type") != "hello" or not isinstance(hello.get("token"), str):
        await _send_now(ws, error("hello_required", "the first message must be {\"type\":\"hello\",\"token\":...}"))
        await ws.close(CLOSE_UNAUTHORIZED)
        return
    since = hello.get("since_version")
    if hello.get("as") not in (None, "spectator", "admin") or (
            since is not None and (not isinstance(since, int) or isinstance(since, bool) or since < 0)):
        await _send_now(ws, error("bad_hello", "'as' must be \"spectator\" or \"admin\"; "
                                               "'since_version' a version number"))
        await ws.close(CLOSE_UNAUTHORIZED)
        return
    player = await player_for_token(repo, hello["token"])
    if player is None:
        await _send_now(ws, error("unauthorized", "unknown token"))
        await ws.close(CLOSE_UNAUTHORIZED)
        return
    runner, owner = await manager.locate(match_id)
    if runner is None and owner is None:
        await _send_now(ws, error("not_found", "no such match"))
        await ws.close(CLOSE_NOT_FOUND)
        return
    meta = runner.meta if runner is not None else await repo.match(match_id)
    viewer = _viewer_for(meta, player, hello.get("as"))
    if viewer is None:
        await _send_now(ws, error("forbidden", "admins only"))
        await ws.close(CLOSE_FORBIDDEN)
        return
    refused = admit_socket(ws, player, meta, hello.get("as"))  # seated admin, sockets per player
    if refused is not None:
        await _send_now(ws, error(refused[0], refused[1]))
        await ws.close(refused[2])
        return
    conn = Connection(ws, settings.send_queue_size, metrics)
    conn.viewer = viewer
    conn.player_id = player["id"]
    conn.start()
    link = None
    if runner is not None:
        runner.attach(conn, since_version=since)
    else:
        from app.runtime.cluster import Link

        link = Link(manager.cluster, conn, match_id, owner)
        link.open(since)
    metrics.sockets.inc()
    # -- messages ----------------------------------------------------------------------------
    limit = settings.max_message_bytes
    try:
        while not conn.closed:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                break
            raw = message.get("text")
            if raw is None:
                raw = message.get("bytes") or b""
            if len(raw) > limit:
                metrics.errors.labels("message_too_large").inc()
                conn.push(encode(error("message_too_large", f"messages are limited to {limit} bytes")))
                continue
            try:
                msg = orjson.loads(raw)
            except orjson.JSONDecodeError:
                metrics.errors.labels("malformed_json").inc()
                conn.push(encode(error("malformed_json", "the message is not valid JSON")))
                continue
            if not isinstance(msg, dict):
                conn.push(encode(error("malformed_message", "a message must be a JSON object")))
                continue
            if msg.get("type") == "act":
                metrics.actions.inc()
            if link is not None:
                link.forward(msg)
            else:
                manager.dispatch(manager.runners.get(match_id) or runner, conn, msg)
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        release_socket(ws, player)
        metrics.sockets.dec()
        if link is not None:
            link.close()
        else:
            (manager.runners.get(match_id) or runner).detach(conn)
            runner.detach(conn)
        if conn.writer is not None:
            conn.writer.cancel()
