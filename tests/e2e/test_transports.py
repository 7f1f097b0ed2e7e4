"""Both socket transports (``app/transport/``: lean and ASGI) over real sockets: the same answers to
a played match, the per-socket message budget, a client that breaks the framing, a path that is not
a match socket. The other socket modules run on both transports too (``tests/conftest.py``:
``both_transports``, ``backends_and_transports``); ``tests/runtime/test_uvicorn_upgrade.py`` checks
the fallback to the ASGI transport when uvicorn's internals moved."""
from __future__ import annotations

import asyncio
import base64
import os
import re
import socket

import httpx
import pytest
import websockets

from tests.conftest import TRANSPORTS, ServerProcess
from tests.e2e.helpers import connect, recv_until, start_match


def _server(transport: str, folder, **env: str) -> ServerProcess:
    return ServerProcess(f"sqlite+aiosqlite:///{folder / 't.db'}",
                         env={"BANNERFALL_SOCKET_TRANSPORT": transport, **env}).start()


@pytest.fixture(params=TRANSPORTS, scope="module")
def transport_server(request, tmp_path_factory):
    """An embedded server per transport."""
    srv = _server(request.param, tmp_path_factory.mktemp("transport"))
    yield srv
    srv.stop()


@pytest.fixture(params=TRANSPORTS, scope="module")
def budget_server(request, tmp_path_factory):
    """An embedded server per transport with a small message budget (5 a second, bursts of 5)."""
    srv = _server(request.param, tmp_path_factory.mktemp("budget"), BANNERFALL_SOCKET_MESSAGES_PER_SECOND="5",
                  BANNERFALL_SOCKET_MESSAGE_BURST="5")
    yield srv
    srv.stop()


def _metric(url: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", httpx.get(url + "/metrics").text, re.M)
    return float(found.group(1)) if found else 0.0


async def test_hello_state_ping_pong(transport_server):
    table = await start_match(transport_server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        sock, state = await connect(transport_server.url, table.match_id, table.players[0].token)
        assert state["type"] == "state" and state["seat"] == 0
        await sock.send({"type": "ping", "t": 7})
        assert (await recv_until(sock, lambda m: m["type"] == "pong"))["t"] == 7
        await sock.close()
    finally:
        await table.close()
    assert "Traceback" not in transport_server.logs()


async def test_messages_past_the_budget_are_refused_then_the_socket_is_closed(budget_server):
    """Budget 5/s, burst 5: of 8 pings sent at once 5 are answered and 3 get ``too_many_messages``
    (with ``retry_after``); a socket that keeps sending past it is closed with 4429, others are not."""
    url = budget_server.url
    table = await start_match(url, "provinces", 2, options={"turn_seconds": 600})
    try:
        sock, _ = await connect(url, table.match_id, table.players[0].token)
        other, _ = await connect(url, table.match_id, table.players[1].token)
        for i in range(8):
            await sock.send({"type": "ping", "t": i})
        answers = [await sock.recv(timeout=10) for _ in range(8)]
        pongs = [m for m in answers if m["type"] == "pong"]
        refused = [m for m in answers if m["type"] == "error"]
        assert [m["t"] for m in pongs] == [0, 1, 2, 3, 4]
        assert len(refused) == 3 and all(m["code"] == "too_many_messages" and m["retry_after"] > 0 for m in refused)
        for i in range(10):  # 5 more refused in a row: closed
            await sock.send({"type": "ping", "t": 100 + i})
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await sock.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429
        await other.send({"type": "ping", "t": 1})  # another socket keeps its own budget
        assert (await recv_until(other, lambda m: m["type"] == "pong"))["t"] == 1
        await other.close()
    finally:
        await table.close()


async def test_an_act_past_the_budget_is_refused_with_its_seq_and_served_when_resent(budget_server):
    """Budget 5/s, burst 5: of 8 acts sent at once, acts 6-8 get ``too_many_messages`` carrying their
    own ``seq`` (so a client knows which act to resend); act 6 resent with its seq after the error's
    ``retry_after`` is served (answered by the game, not by the budget)."""
    url = budget_server.url
    table = await start_match(url, "provinces", 2, options={"turn_seconds": 600})
    try:
        sock, _ = await connect(url, table.match_id, table.players[0].token)
        for seq in range(1, 9):
            await sock.send({"type": "act", "seq": seq, "action": {"type": "end_turn"}})
        answers: dict[int, dict] = {}
        while len(answers) < 8:
            msg = await recv_until(sock, lambda m: m["type"] in ("ack", "error"))
            answers[msg["seq"]] = msg
        refused = {seq for seq, m in answers.items() if m.get("code") == "too_many_messages"}
        assert refused == {6, 7, 8}
        assert all(answers[seq]["retry_after"] > 0 for seq in refused)
        await asyncio.sleep(answers[8]["retry_after"])  # the wait the server asked for
        await sock.send({"type": "act", "seq": 6, "action": {"type": "end_turn"}})
        again = await recv_until(sock, lambda m: m["type"] in ("ack", "error") and m.get("seq") == 6)
        assert again.get("code") != "too_many_messages"
        await sock.close()
    finally:
        await table.close()


def _upgrade(port: int, path: str) -> tuple[socket.socket, bytes]:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    raw.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    return raw, raw.recv(4096)


def _read_close(raw: socket.socket) -> int | None:
    """Read frames until a close frame; its code (None: the connection ended without one)."""
    data = b""
    while True:
        chunk = raw.recv(65536)
        if not chunk:
            return None
        data += chunk
        while len(data) >= 2:
            n = data[1] & 0x7F
            head = 2 + (2 if n == 126 else 8 if n == 127 else 0)
            if n >= 126:
                if len(data) < head:
                    break
                n = int.from_bytes(data[2:head], "big")
            if len(data) < head + n:
                break
            opcode, payload, data = data[0] & 0x0F, data[head:head + n], data[head + n:]
            if opcode == 8:
                return int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005


def _masked(first: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    return bytes((first, 0x80 | len(payload))) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


@pytest.mark.parametrize("frame, code", [
    (_masked(0x81, b"\xff\xfe"), 1007),          # a text frame that is not UTF-8
    (bytes((0x81, 0x02)) + b"{}", 1002),          # an unmasked client frame
], ids=["not-utf8", "unmasked"])
async def test_a_client_that_breaks_the_framing_is_closed_with_its_code(transport_server, frame, code):
    table = await start_match(transport_server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        raw, response = await asyncio.to_thread(_upgrade, transport_server.port, f"/ws/matches/{table.match_id}")
        assert response.startswith(b"HTTP/1.1 101")
        raw.sendall(frame)
        assert await asyncio.to_thread(_read_close, raw) == code
        raw.close()
        assert "Traceback" not in transport_server.logs()
    finally:
        await table.close()


async def test_a_path_that_is_not_a_match_socket_is_not_upgraded(transport_server):
    raw, response = await asyncio.to_thread(_upgrade, transport_server.port, "/ws/elsewhere")
    raw.close()
    assert not response.startswith(b"HTTP/1.1 101")


async def test_a_whole_match_is_played_to_its_end(transport_server):
    """Two bot players over sockets play a short Provinces match to ``ended`` with no error, and
    the sockets gauge is back to 0 once they close."""
    from app.client.socket import play
    from app.runtime.bots import make_bot

    url = transport_server.url
    table = await start_match(url, "provinces", 2, options={"turn_seconds": 600, "max_rounds": 3})
    try:
        socks = [await connect(url, table.match_id, p.token) for p in table.players]
        bots = [make_bot("provinces", "random", 11 + i) for i in range(2)]
        types: list[str] = []
        plays = [asyncio.create_task(play(s, b.decide, initial=st, on_message=lambda m: types.append(m["type"])))
                 for (s, st), b in zip(socks, bots, strict=True)]
        await asyncio.wait_for(asyncio.gather(*plays), 120)
        assert "ended" in types and "ack" in types and "error" not in types
        for s, _ in socks:
            await s.close()
    finally:
        await table.close()
    assert _metric(url, "bannerfall_sockets") == 0
