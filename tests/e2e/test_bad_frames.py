"""A text frame that is not UTF-8 closes the socket with 1007 (RFC 6455 8.1) and logs at most one
line, whether it comes before ``hello``, after it, or split into fragments: a client cannot fill the
server's log with tracebacks. The server's own log file is read after each case. On both socket transports."""
from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from app.client import RestClient
from app.client.socket import ws_url
from app.logsetup import BAD_UTF8_LINE
from tests.conftest import ServerProcess, both_transports, transport_env

BAD = b'{"type":"hello","token":"\xff\xfe"}'


pytestmark = both_transports


@pytest.fixture(scope="module")
def node(tmp_path_factory, transport):
    db = tmp_path_factory.mktemp("frames") / "frames.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}",
                        env={"BANNERFALL_LOG_LEVEL": "info", **transport_env(transport)}).start()
    yield srv
    srv.stop()


async def _closed_with(ws) -> int:
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None, "closed without a close frame"
    return closed.value.rcvd.code


async def _match(url: str) -> tuple[str, str]:
    async with RestClient(url) as host:
        token = (await host.register("frames"))["token"]
        lobby = await host.create_lobby("provinces", 2)
        await host.fill_bots(lobby["id"], "random")
        return (await host.start(lobby["id"]))["match_id"], token


def _new_lines(srv: ServerProcess, start: int) -> list[str]:
    return [line for line in srv.logs()[start:].splitlines() if "WebSocket /ws/" not in line]


@pytest.mark.parametrize("when", ["before hello", "after hello", "fragmented"])
async def test_a_text_frame_that_is_not_utf8_closes_1007_and_logs_one_line_at_most(node, when):
    match_id, token = await _match(node.url)
    start = len(node.logs())
    ws = await websockets.connect(ws_url(node.url, match_id), open_timeout=20)
    try:
        if when == "after hello":
            await ws.send(json.dumps({"type": "hello", "token": token}))
            first = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert first["type"] == "state"
        if when == "fragmented":
            await ws.send([BAD[:20], BAD[20:]], text=True)  # the bad bytes in the second fragment
        else:
            await ws.send(BAD, text=True)
        assert await _closed_with(ws) == 1007
    finally:
        await ws.close()
    # the node still serves (a fresh socket gets its state), and the log is read after the close
    ok = await websockets.connect(ws_url(node.url, match_id), open_timeout=20)
    try:
        await ok.send(json.dumps({"type": "hello", "token": token}))
        assert json.loads(await asyncio.wait_for(ok.recv(), 10))["type"] == "state"
    finally:
        await ok.close()
    lines = _new_lines(node, start)
    assert not any("Traceback" in line or "UnicodeDecodeError" in line for line in lines), lines
    assert len([line for line in lines if "UTF-8" in line or "utf-8" in line]) <= 1, lines
    assert sum(BAD_UTF8_LINE in line for line in lines) == 1, lines  # the one line, at info
    assert not any("ERROR" in line for line in lines), lines
