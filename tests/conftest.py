"""Shared fixtures: a fresh database per test module (SQLite file or a uniquely named Postgres
database on the local server, dropped afterwards) and real server processes on free ports."""
from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN_URL = os.environ.get("BANNERFALL_TEST_PG", "postgresql://root@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("BANNERFALL_TEST_REDIS", "redis://127.0.0.1:6379/0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _pg_exec(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


class PostgresDatabase:
    """A uniquely named database on the local server; never touches any other database."""

    def __init__(self) -> None:
        self.name = f"bf_test_{uuid.uuid4().hex[:12]}"
        base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
        self.url = f"{base}/{self.name}"

    def create(self) -> str:
        asyncio.run(_pg_exec(f'CREATE DATABASE "{self.name}"'))
        return self.url

    def drop(self) -> None:
        asyncio.run(_pg_exec(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))


def make_db_url(kind: str, tmp_path: Path) -> tuple[str, PostgresDatabase | None]:
    if kind == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'bannerfall.db'}", None
    db = PostgresDatabase()
    return db.create(), db


class Backend:
    """Where a test server keeps its data: ``url`` (the database) and ``env`` (Redis, when used)."""

    def __init__(self, kind: str, url: str, env: dict[str, str]) -> None:
        self.kind, self.url, self.env = kind, url, env


@pytest.fixture(params=["sqlite", "postgres", "postgres+redis"], scope="module")
def backend(request, tmp_path_factory):
    """Embedded (SQLite, in-process timers), Postgres alone, and production mode (Postgres + Redis
    deadlines, pub/sub and leases, with a key prefix of its own)."""
    kind = request.param
    url, pg = make_db_url("sqlite" if kind == "sqlite" else "postgres", tmp_path_factory.mktemp("db"))
    env: dict[str, str] = {}
    prefix = None
    if kind == "postgres+redis":
        prefix = f"bftest:{uuid.uuid4().hex[:8]}:"
        env = {"BANNERFALL_REDIS_URL": REDIS_URL, "BANNERFALL_REDIS_PREFIX": prefix}
    yield Backend(kind, url, env)
    if pg:
        pg.drop()
    if prefix:
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=prefix + "*"))
        if keys:
            client.delete(*keys)
        client.close()


@pytest.fixture(scope="module")
def db_url(backend):
    return backend.url


class ServerProcess:
    """``bannerfall serve`` in a real process on a free port."""

    def __init__(self, database_url: str, *, env: dict[str, str] | None = None, port: int | None = None) -> None:
        self.database_url = database_url
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_token = secrets.token_urlsafe(24)
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bannerfall-test-{self.port}.log"

    def start(self, timeout: float = 60.0) -> "ServerProcess":
        env = {**os.environ, "BANNERFALL_PORT": str(self.port), "BANNERFALL_DATABASE_URL": self.database_url,
               "BANNERFALL_ADMIN_TOKEN": self.admin_token, "BANNERFALL_LOG_LEVEL": "warning",
               "PYTHONUNBUFFERED": "1", "BANNERFALL_NODE_ID": f"test-node-{self.port}", **self.extra_env}
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve"], cwd=ROOT, env=env,
                                     stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}: {self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=0.5).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not start: " + self.log_path.read_text()[-3000:])

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture(scope="module")
def server(backend):
    srv = ServerProcess(backend.url, env=backend.env).start()
    yield srv
    srv.stop()
