"""Slow and dead clients: a client that stops reading is disconnected (4008) when its bounded send
queue fills while the players keep their pace; a client gone without a close frame is noticed by
the heartbeat. On both socket transports."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import socket
import time

import httpx
import pytest
import websockets

from app.client import RestClient
from app.client.socket import play
from app.runtime.bots import make_bot
from tests.conftest import ServerProcess, both_transports, transport_env
from tests.e2e.helpers import connect, recv_until, start_match

pytestmark = both_transports


@pytest.fixture
def tight_server(tmp_path, transport):
    """A small send queue (8 messages); heartbeat as configured by default (20 s)."""
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'slow.db'}",
                        env={"BANNERFALL_SEND_QUEUE_SIZE": "8", **transport_env(transport)}).start()
    yield srv
    srv.stop()


@pytest.fixture
def heartbeat_server(tmp_path, transport):
    """A 1-second heartbeat: a socket that answers no ping is dropped after about 3 s."""
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'hb.db'}",
                        env={"BANNERFALL_HEARTBEAT_SECONDS": "1", **transport_env(transport)}).start()
    yield srv
    srv.stop()


def _sockets_gauge(url: str) -> float:
    text = httpx.get(url + "/metrics").text
    found = re.search(r"^bannerfall_sockets (\S+)$", text, re.M)
    assert found is not None, text
    return float(found.group(1))


async def test_client_that_stops_reading_is_dropped_others_keep_pace(tight_server):
    """Six seats (one played here, five by server bots, which run in-process: no sockets) make big
    views quickly; a spectator whose
    socket reads nothing (4 KiB receive buffer) is closed with 4008 once the kernel buffers and its
    8-message queue are full, while the player here keeps getting its acks."""
    url = tight_server.url
    table = await start_match(url, "provinces", 1, bots=5, options={"turn_seconds": 600, "max_rounds": 1000})
    watcher = RestClient(url)
    await watcher.register("slow")
    try:
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect(("127.0.0.1", tight_server.port))
        slow = await websockets.connect(url.replace("http", "ws") + f"/ws/matches/{table.match_id}",
                                        sock=raw, max_queue=1, max_size=2**24)
        await slow.send(json.dumps({"type": "hello", "token": watcher.token}))
        me, state = await connect(url, table.match_id, table.players[0].token)
        bot = make_bot("provinces", "random", 3)
        for _ in range(100):
            if _sockets_gauge(url) == 2:
                break
            await asyncio.sleep(0.1)
        assert _sockets_gauge(url) == 2  # this player and the slow spectator (bots have no sockets)
        acks, started = 0, time.monotonic()

        def count(msg):
            nonlocal acks
            acks += msg["type"] in ("ack", "state")  # the match keeps moving for this player

        player = asyncio.create_task(play(me, bot.decide, initial=state, on_message=count))
        while _sockets_gauge(url) == 2 and time.monotonic() - started < 150 and not player.done():
            await asyncio.sleep(0.2)
        dropped_at_acks = acks
        while acks < dropped_at_acks + 3 and time.monotonic() - started < 150 and not player.done():
            await asyncio.sleep(0.1)
        while not player.done():  # Python 3.11's wait_for can swallow one cancel: insist
            player.cancel()
            await asyncio.wait({player}, timeout=1)
        assert _sockets_gauge(url) == 1, "the slow client was not disconnected"
        assert acks >= dropped_at_acks + 3  # the player kept its pace after the drop
        # the server closed it for a full queue (4008); the close frame itself may not get through a
        # socket that is not being read, so the client may only see the connection drop
        assert re.search(r"^bannerfall_slow_disconnects_total 1(\.0)?$", httpx.get(url + "/metrics").text, re.M)
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await asyncio.wait_for(slow.recv(), 10)
        assert closed.value.rcvd is None or closed.value.rcvd.code == 4008
        # the player's socket is still fine
        await me.send({"type": "ping", "t": 1})
        assert (await recv_until(me, lambda m: m["type"] == "pong"))["t"] == 1
        await me.close()
    finally:
        await table.close()
        await watcher.close()


def _frame(text: str) -> bytes:
    payload = text.encode()
    mask = os.urandom(4)
    head = bytes([0x81])
    n = len(payload)
    head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def test_client_gone_without_close_frame_is_noticed_by_heartbeat(heartbeat_server):
    tight_server = heartbeat_server
    url = tight_server.url
    table = await start_match(url, "provinces", 2, options={"turn_seconds": 600})
    watcher = RestClient(url)
    await watcher.register("ghost")
    try:
        before = _sockets_gauge(url)
        raw = socket.create_connection(("127.0.0.1", tight_server.port))
        key = base64.b64encode(os.urandom(16)).decode()
        raw.sendall((f"GET /ws/matches/{table.match_id} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        response = raw.recv(4096)
        assert response.startswith(b"HTTP/1.1 101")
        raw.sendall(_frame(json.dumps({"type": "hello", "token": watcher.token})))
        for _ in range(50):
            if _sockets_gauge(url) == before + 1:
                break
            await asyncio.sleep(0.1)
        assert _sockets_gauge(url) == before + 1
        # now the client vanishes: it never answers a ping, never closes
        for _ in range(100):
            if _sockets_gauge(url) == before:
                break
            await asyncio.sleep(0.1)
        assert _sockets_gauge(url) == before, "a dead client was not noticed"
        raw.close()
    finally:
        await table.close()
        await watcher.close()
