"""Both socket transports answer a server-side failure alike (a bug: a step that raises): the
socket gets ``internal_error`` and is closed with 1011, one traceback is logged, and the server
and its other sockets go on. The server runs in this process as ``bannerfall serve`` runs it
(``app.cli.uvicorn_config``), so the failing step can be patched in; the clients are real sockets."""
from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from typing import Literal

import pytest
import uvicorn
import websockets

from app.cli import uvicorn_config
from app.client.socket import ws_url
from app.config import Settings
from app.main import create_app
from app.transport import session
from tests.conftest import TRANSPORTS, free_port
from tests.e2e.helpers import connect, recv_until, start_match
from tests.timing import scaled


async def _serve(tmp_path, transport: Literal["lean", "asgi"]):
    port = free_port()
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/parity.db", node_id="parity",
                        host="127.0.0.1", port=port, log_level="warning", admin_token="A" + secrets.token_urlsafe(32),
                        rate_limit_ip="", rate_limit_player="", rate_limit_new_players="", max_lobbies_per_player=0,
                        socket_transport=transport)
    server = uvicorn.Server(uvicorn_config(create_app(settings), settings))
    serving = asyncio.create_task(server.serve())
    deadline = time.monotonic() + scaled(30)  # uvicorn's start sets a flag, not an event: polled
    while not (server.started or serving.done()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert server.started, "the server did not start"
    return f"http://127.0.0.1:{port}", server, serving


async def _stop(server, serving) -> None:
    server.should_exit = True
    await asyncio.wait_for(serving, 30)


async def _answer_and_close(url: str, match_id: str, messages: list[dict]) -> tuple[list[dict], int | None]:
    async with websockets.connect(ws_url(url, match_id), open_timeout=20) as ws:
        for msg in messages:
            await ws.send(json.dumps(msg))
        got: list[dict] = []
        try:
            while True:
                got.append(json.loads(await asyncio.wait_for(ws.recv(), 20)))
        except websockets.ConnectionClosed as closed:
            return got, (closed.rcvd.code if closed.rcvd else None)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_failing_step_gets_internal_error_and_1011_on_either_transport(tmp_path, monkeypatch, caplog,
                                                                              transport):
    url, server, serving = await _serve(tmp_path, transport)
    try:
        table = await start_match(url, "provinces", 2, options={"turn_seconds": 600})
        token = table.players[0].token
        other, _ = await connect(url, table.match_id, table.players[1].token)
        forward = session.forward

        def failing_forward(matches, match_id, runner, link, peer, msg):
            if msg.get("type") == "ping" and msg.get("t") == 13:
                raise RuntimeError("a bug in routing")
            return forward(matches, match_id, runner, link, peer, msg)

        monkeypatch.setattr(session, "forward", failing_forward)
        with caplog.at_level(logging.ERROR, logger="bannerfall.ws"):
            got, code = await _answer_and_close(url, table.match_id, [{"type": "hello", "token": token},
                                                                      {"type": "ping", "t": 13}])
        assert [m["type"] for m in got] == ["state", "error"] and got[-1]["code"] == "internal_error"
        assert code == 1011
        assert len([r for r in caplog.records if r.name == "bannerfall.ws" and r.exc_info]) == 1

        async def failing_admit(sock, match_id, hello):
            raise RuntimeError("a bug in admission")

        monkeypatch.setattr(session, "admit", failing_admit)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="bannerfall.ws"):
            got, code = await _answer_and_close(url, table.match_id, [{"type": "hello", "token": token}])
        assert [(m["type"], m["code"]) for m in got] == [("error", "internal_error")] and code == 1011
        assert len([r for r in caplog.records if r.name == "bannerfall.ws" and r.exc_info]) == 1
        # the other socket and the match go on
        await other.send({"type": "ping", "t": 2})
        assert (await recv_until(other, lambda m: m["type"] == "pong"))["t"] == 2
        await other.close()
        await table.close()
    finally:
        await _stop(server, serving)
