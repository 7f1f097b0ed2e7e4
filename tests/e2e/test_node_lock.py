"""A node without Redis serves its database alone; nodes with Redis serve it together, never beside
a node without it (app/db/node_lock.py). Real ``bannerfall serve`` processes, real sockets, the real
local Postgres and Redis."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from app.client import RestClient
from tests.conftest import ROOT, PostgresDatabase, ServerProcess, free_port
from tests.e2e.helpers import connect, recv_until, start_match
from tests.timing import scaled

ENV = {k: v for k, v in os.environ.items() if not k.startswith("BANNERFALL_")}


def _serve(cwd, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", "serve", *args], cwd=cwd, check=False, text=True,
                          capture_output=True, timeout=timeout,
                          env={**ENV, "PYTHONPATH": str(ROOT), "BANNERFALL_LOG_LEVEL": "info", **(env or {})})


def _one_line(res: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("bannerfall: ") and "Traceback" not in res.stderr, res.stderr
    return lines[0]


@pytest.fixture
def first_in_folder(tmp_path):
    """``bannerfall serve`` started in ``tmp_path`` with the defaults (./bannerfall.db), as a newcomer
    does, plus a running match on it."""
    srv = ServerProcess("sqlite+aiosqlite:///./bannerfall.db")
    srv.cwd = tmp_path  # type: ignore[attr-defined]
    srv.start(cwd=tmp_path)
    try:
        yield srv
    finally:
        srv.stop()


async def test_a_second_embedded_server_in_the_same_folder_is_refused_and_the_first_keeps_its_match(
        first_in_folder, tmp_path):
    first = first_in_folder
    table = await start_match(first.url, "provinces", 2)
    socks = {}
    try:
        for seat in (0, 1):
            socks[seat] = await connect(first.url, table.match_id, table.players[seat].token)
        started = time.monotonic()
        # with another admin token, as the newcomer of the issue did (a second start would revoke the first's)
        res = await asyncio.to_thread(_serve, tmp_path, "--port", str(free_port()),
                                      env={"BANNERFALL_ADMIN_TOKEN": "Other-" + "x1y2" * 6})
        assert res.returncode == 1
        line = _one_line(res)
        assert str(tmp_path / "bannerfall.db") in line and "in use by another bannerfall serve" in line
        assert f"pid {first.proc.pid}" in line and f"127.0.0.1:{first.port}" in line
        assert "BANNERFALL_REDIS_URL" in line and "--database-url" in line
        assert time.monotonic() - started < scaled(30)
        assert "ready" not in res.stdout + res.stderr
        # the first server's admin token still works, its sockets are open and the match plays on
        async with RestClient(first.url, first.admin_token) as admin:
            assert (await admin.me())["role"] == "admin"
        state = socks[0][1]
        seat = state["prompts"][0]["seat"]
        sock, st = socks[seat]
        await sock.send({"type": "act", "seq": 1, "action": {"type": "end_turn"}, "version": st["version"]})
        answer = await recv_until(sock, lambda m: m["type"] in ("ack", "error"))
        assert answer["type"] == "ack", answer
    finally:
        for sock, _ in socks.values():
            await sock.close()
        await table.close()


def test_the_claim_ends_with_the_process_however_it_ends(first_in_folder, tmp_path):
    """A server killed with SIGKILL leaves its lock file, but not its claim: the next one starts."""
    first_in_folder.kill9()
    assert (tmp_path / "bannerfall.db.serve-lock").exists()
    nxt = ServerProcess("sqlite+aiosqlite:///./bannerfall.db", port=first_in_folder.port)
    try:
        nxt.start(cwd=tmp_path)
        assert httpx.get(nxt.url + "/healthz", timeout=10).status_code == 200
    finally:
        nxt.stop()


def test_another_spelling_of_the_same_file_is_the_same_database(first_in_folder, tmp_path):
    res = _serve(ROOT, "--port", str(free_port()), "--database-url", f"sqlite:///{tmp_path}/./bannerfall.db")
    assert res.returncode == 1 and "in use by another bannerfall serve" in _one_line(res)


@pytest.fixture
def pg_database(postgres_server):
    db = PostgresDatabase()
    db.create()
    try:
        yield db
    finally:
        db.drop()


def test_postgres_without_redis_is_one_node_and_nodes_with_redis_are_refused_beside_it(pg_database, redis_env):
    first = ServerProcess(pg_database.url).start()
    try:
        for env, words in (({}, "stop it, or give this server its own database"),
                           (redis_env, "nodes run together only when each has BANNERFALL_REDIS_URL")):
            res = _serve(ROOT, env={"BANNERFALL_DATABASE_URL": pg_database.url, "BANNERFALL_PORT": str(free_port()),
                                    **env})
            assert res.returncode == 1, res.stderr
            line = _one_line(res)
            assert pg_database.name in line and f"127.0.0.1:{first.port}" in line and words in line
        assert httpx.get(first.url + "/readyz", timeout=10).status_code == 200
    finally:
        first.stop()
    # stopped: the claim is free again
    again = ServerProcess(pg_database.url).start()
    again.stop()


def test_nodes_with_redis_run_together_and_refuse_a_node_without_it(pg_database, redis_env):
    nodes = [ServerProcess(pg_database.url, env={**redis_env, "BANNERFALL_NODE_ID": f"lock-node-{i}",
                                                 "BANNERFALL_MIGRATE_ON_START": "true" if i == 0 else "false"})
             for i in range(2)]
    try:
        for node in nodes:
            node.start()
        res = _serve(ROOT, env={"BANNERFALL_DATABASE_URL": pg_database.url, "BANNERFALL_PORT": str(free_port())})
        assert res.returncode == 1, res.stderr
        line = _one_line(res)
        assert "lock-node-0" in line and "lock-node-1" in line and "(with Redis)" in line
        assert all(httpx.get(n.url + "/readyz", timeout=10).status_code == 200 for n in nodes)
    finally:
        for node in nodes:
            node.stop()


def test_sqlite_nodes_with_redis_share_the_file_and_refuse_one_without(tmp_path, redis_env):
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    nodes = [ServerProcess(url, env={**redis_env, "BANNERFALL_NODE_ID": f"sq-node-{i}"}) for i in range(2)]
    try:
        for node in nodes:
            node.start()
        res = _serve(ROOT, env={"BANNERFALL_DATABASE_URL": url, "BANNERFALL_PORT": str(free_port())})
        assert res.returncode == 1
        assert "in use by nodes that share a Redis" in _one_line(res)
    finally:
        for node in nodes:
            node.stop()


def test_the_postgres_claim_is_taken_again_after_its_connection_drops(pg_database, monkeypatch):
    """Postgres ends the claim's connection (a restart, an admin's pg_terminate_backend): the claim
    reconnects and holds the database again, so a second node alone is still refused."""
    import asyncpg

    from app.db import node_lock

    monkeypatch.setattr(node_lock, "KEEPALIVE_SECONDS", 0.2)
    plain = pg_database.url.replace("postgresql+asyncpg://", "postgresql://", 1)

    async def holders() -> list[int]:
        conn = await asyncpg.connect(plain)
        try:
            rows = await conn.fetch("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = $1 "
                                    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                                    node_lock.NODE_LOCK_KEY)
            return [r["pid"] for r in rows]
        finally:
            await conn.close()

    async def terminate(pid: int) -> None:
        conn = await asyncpg.connect(plain)
        try:
            await conn.execute("SELECT pg_terminate_backend($1)", pid)
        finally:
            await conn.close()

    claim = node_lock.claim_database(pg_database.url, shared=False, holder={"node": "t", "address": "here"})
    assert claim is not None
    try:
        [pid] = asyncio.run(holders())
        asyncio.run(terminate(pid))
        deadline = time.monotonic() + 30
        while True:
            now = asyncio.run(holders())
            if now and now != [pid]:
                break
            assert time.monotonic() < deadline, "the claim was not taken again"
            time.sleep(0.1)
        with pytest.raises(node_lock.DatabaseInUse, match="bannerfall serve t here"):
            node_lock.claim_database(pg_database.url, shared=False, holder={"node": "u", "address": "there"})
    finally:
        claim.release()
    assert asyncio.run(holders()) == []


def test_a_server_stopped_by_sigterm_frees_its_claim_at_once(tmp_path):
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}").start()
    assert srv.proc is not None
    srv.proc.send_signal(signal.SIGTERM)
    srv.proc.wait(30)
    srv.stop()
    again = ServerProcess(srv.database_url, port=srv.port).start()
    again.stop()
