"""Issue 9 item 9: several nodes starting together on one fresh database. Alembic runs under a
database lock (Postgres advisory lock, SQLite file lock), so every one of them comes up."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import ROOT, PostgresDatabase, ServerProcess
from tests.timing import scaled


def _migrate_together(url: str, n: int = 4) -> list[tuple[int, str]]:
    """``n`` processes running what ``bannerfall migrate`` runs (``app.db.migrate.upgrade``, without
    the CLI's imports, to keep the test fast), all started before any is waited for."""
    env = {**os.environ, "BANNERFALL_DATABASE_URL": url, "BANNERFALL_LOG_LEVEL": "warning"}
    code = f"from app.db.migrate import upgrade; upgrade({url!r})"
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(n)]
    return [(p.wait(120), p.communicate()[0].decode(errors="replace")[-2000:]) for p in procs]


async def _schema(url: str) -> tuple[list[str], set[str]]:
    from sqlalchemy import inspect, text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            versions = [r[0] for r in (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()]
            tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
    finally:
        await engine.dispose()
    return versions, tables


def _wait_ready(node: ServerProcess, timeout: float) -> None:
    assert node.proc is not None
    deadline = time.time() + scaled(timeout)
    while time.time() < deadline:
        if node.proc.poll() is not None:
            raise AssertionError(f"node exited {node.proc.returncode}: {node.logs()[-3000:]}")
        try:
            if httpx.get(node.url + "/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("node did not come up: " + node.logs()[-3000:])


def _head() -> str:
    from alembic.script import ScriptDirectory

    from app.db.migrate import alembic_config

    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None
    return head


@pytest.mark.parametrize("trial", range(3))
def test_four_migrations_at_once_on_fresh_postgres(trial):
    db = PostgresDatabase()
    url = db.create()
    try:
        results = _migrate_together(url)
        assert all(rc == 0 for rc, _ in results), results
        versions, tables = asyncio.run(_schema(url))
        assert versions == [_head()]
        assert {"players", "lobbies", "lobby_seats", "matches", "match_actions"} <= tables
    finally:
        db.drop()


def test_four_migrations_at_once_on_fresh_sqlite(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path / 'bannerfall.db'}"
    results = _migrate_together(url)
    assert all(rc == 0 for rc, _ in results), results
    versions, _ = asyncio.run(_schema(url))
    assert versions == [_head()]


def test_four_nodes_start_together_on_fresh_postgres(redis_env):
    """Migrate-on-start (the default) on four `bannerfall serve` processes started at once, with
    Redis (several nodes on one database need it: app/db/node_lock.py). No admin token: its row is
    the issue-13 engineer's (made idempotent there)."""
    db = PostgresDatabase()
    url = db.create()
    nodes = [ServerProcess(url, env={"BANNERFALL_ADMIN_TOKEN": ""}) for _ in range(4)]
    try:
        for node in nodes:  # all four processes are running before any is waited for
            node._log = open(node.log_path, "ab")
            env = {**os.environ, "BANNERFALL_PORT": str(node.port), "BANNERFALL_DATABASE_URL": url,
                   "BANNERFALL_LOG_LEVEL": "warning", "BANNERFALL_NODE_ID": f"test-node-{node.port}",
                   "BANNERFALL_ADMIN_TOKEN": "", **redis_env}
            node.proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve"], cwd=ROOT, env=env,
                                         stdout=node._log, stderr=subprocess.STDOUT, start_new_session=True)
            ServerProcess.running.add(node)
        for node in nodes:
            _wait_ready(node, 90)
        versions, _ = asyncio.run(_schema(url))
        assert versions == [_head()]
    finally:
        for node in nodes:
            node.stop()
            node.log_path.unlink(missing_ok=True)
        db.drop()
