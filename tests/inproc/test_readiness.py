"""``/readyz`` tells the truth in bounded time (app/readiness.py): a database that answers
``SELECT 1`` but cannot commit is not ready."""
from __future__ import annotations

import asyncio
import time

from app.client.socket import play
from app.runtime.bots import make_bot
from tests.inproc.conftest import InprocSocket, running_node
from tests.inproc.test_app_inproc import _bot_table


async def _ready(node) -> tuple[int, dict]:
    t = time.monotonic()
    resp = await node.http.get("/readyz")
    assert time.monotonic() - t < 1.0, "readyz took over a second"
    return resp.status_code, resp.json()


async def _until(node, status: int, within: float) -> dict:
    end = time.monotonic() + within
    while True:
        code, body = await _ready(node)
        if code == status:
            return body
        assert time.monotonic() < end, f"/readyz still {code} {body} after {within} s"
        await asyncio.sleep(0.05)


async def test_sqlite_that_cannot_commit_is_not_ready(tmp_path):
    """SQLite full (``max_page_count`` reached on the log writer's connection: the same
    ``SQLITE_FULL``, "database or disk is full", as a full disk) while a match is played: its
    commits fail, ``SELECT 1`` still answers. Before, ``/readyz`` stayed 200; now it is 503 with
    ``log_writer: failing`` and the failures counted, and ready again once commits succeed."""
    async with running_node(tmp_path, commit_retry_seconds=0.5) as node:
        code, body = await _ready(node)
        assert code == 200 and body["checks"] == {"database": "ok", "log_writer": "ok"}, body
        host, match_id, _seat = await _bot_table(node)
        committer = node.app.state.repo.log_committer

        def limit(conn, pages: int | None = None):
            count = conn.exec_driver_sql("PRAGMA page_count").scalar()
            return conn.exec_driver_sql(f"PRAGMA max_page_count = {pages or count}").scalar()

        await committer.run(limit)
        async with node.socket(match_id) as ws:
            sock = InprocSocket(ws)
            await sock.send({"type": "hello", "token": host.token})
            first = await sock.recv()
            player = asyncio.create_task(play(sock, make_bot("provinces", "random", 3).decide, initial=first))
            try:
                body = await _until(node, 503, 30)
            finally:
                player.cancel()
                await asyncio.gather(player, return_exceptions=True)
        assert body["checks"]["log_writer"] == "failing" and body["checks"]["database"] == "ok", body
        assert body["log_writer"]["failures_last_minute"] >= 1, body
        assert body["log_writer"]["last_failure_seconds_ago"] is not None
        # room again: the match is rebuilt from its durable log, the next commit succeeds
        await committer.run(lambda conn: limit(conn, 1_073_741_823))
        async with node.socket(match_id) as ws:
            sock = InprocSocket(ws)
            await sock.send({"type": "hello", "token": host.token})
            first = await sock.recv()
            player = asyncio.create_task(play(sock, make_bot("provinces", "random", 4).decide, initial=first))
            try:
                body = await _until(node, 200, 30)
            finally:
                player.cancel()
                await asyncio.gather(player, return_exceptions=True)
        assert body["checks"]["log_writer"] == "ok", body
        await host.close()
