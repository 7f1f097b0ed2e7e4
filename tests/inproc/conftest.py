"""The whole app in this process (issue 10 item 6): REST through ``httpx``'s ASGI transport and the
match socket through ``httpx-ws``'s ``ASGIWebSocketTransport``; the lifespan runs as under uvicorn
(embedded mode: SQLite in the test's temp dir, in-process timers, pub/sub and leases). No server
process, no port: a test takes well under a second of setup."""
from __future__ import annotations

import itertools
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from httpx_ws import WebSocketDisconnect, aconnect_ws
from httpx_ws.transport import ASGIWebSocketTransport

from app.client import RestClient
from app.client.socket import MatchSocket
from app.config import Settings
from app.main import create_app

BASE = "http://bannerfall.test"


class InprocSocket(MatchSocket):
    """A match socket to the in-process app: ``app.client.MatchSocket``'s protocol (``recv`` turns
    each ``delta`` into a full ``state``, resumes on a gap; ``act``, ``send``) over an httpx-ws
    session, so ``app.client.socket.play`` drives it."""

    def __init__(self, ws: Any) -> None:
        super().__init__(BASE, "", None)
        self.ws = ws
        self._seq = itertools.count(1)

    async def send(self, message: Any) -> None:
        await self.ws.send_text(message if isinstance(message, str) else orjson.dumps(message).decode())

    async def recv(self, timeout: float | None = 10.0) -> dict[str, Any]:
        while True:
            out = await self.take(orjson.loads(await self.ws.receive_text(timeout=timeout)))
            if out is not None:
                return out


@dataclass
class Node:
    app: Any
    transport: ASGIWebSocketTransport
    http: httpx.AsyncClient

    def rest(self, token: str | None = None) -> RestClient:
        return RestClient(BASE, token, transport=self.transport)

    def socket(self, match_id: str):
        """``async with node.socket(id) as ws``: an open socket (send hello yourself)."""
        return aconnect_ws(f"{BASE}/ws/matches/{match_id}", self.http)


@asynccontextmanager
async def running_node(tmp_path, **overrides: Any):
    """The app with its lifespan, as a :class:`Node`; entered and left in one task (the socket
    transport's task group must be), so tests use ``async with running_node(tmp_path) as node``."""
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/bannerfall.db", node_id="inproc",
                        rate_limit_ip="", rate_limit_player="", rate_limit_new_players="",
                        hello_timeout_seconds=2.0, **overrides)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = ASGIWebSocketTransport(app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
            yield Node(app, transport, http)


__all__ = ["InprocSocket", "Node", "WebSocketDisconnect", "running_node"]
