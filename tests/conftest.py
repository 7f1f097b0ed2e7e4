"""Shared fixtures: a fresh database per test module (SQLite file or a uniquely named Postgres
database on the local server, dropped afterwards) and real server processes on free ports.

The suite needs the local PostgreSQL and Redis (see the README): ``BANNERFALL_TEST_PG`` (default
``postgresql://root@127.0.0.1:5432/test``, a role allowed to create databases) and
``BANNERFALL_TEST_REDIS`` (default ``redis://127.0.0.1:6379/0``). When one is not usable, every test
that needs it errors with one line saying what is missing and how to fix it; nothing is skipped."""
from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

import app._native

# The suite runs the .py sources of the compiled hot paths (coverage and monkeypatching need Python
# code); tests/runtime/test_native.py checks the compiled modules against them, and the servers the
# tests start run what is installed (compiled, after pip install).
app._native.prefer_source("the test suite runs the sources")

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN_URL = os.environ.get("BANNERFALL_TEST_PG", "postgresql://root@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("BANNERFALL_TEST_REDIS", "redis://127.0.0.1:6379/0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_service_problems: dict[str, str | None] = {}


async def _pg_probe() -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
    try:
        if not await conn.fetchval("SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user"):
            raise PermissionError("its role may not create databases")
    finally:
        await conn.close()


def postgres_problem() -> str | None:
    """None when ``BANNERFALL_TEST_PG`` can create databases, else one line saying what is missing
    (checked once per test session)."""
    if "pg" not in _service_problems:
        try:
            asyncio.run(_pg_probe())
            _service_problems["pg"] = None
        except Exception as exc:  # noqa: BLE001 - reported in one line
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            from urllib.parse import urlsplit

            parts = urlsplit(PG_ADMIN_URL)
            role, database = parts.username or "root", parts.path.lstrip("/") or "test"
            _service_problems["pg"] = (
                f"the tests need PostgreSQL at {PG_ADMIN_URL} (BANNERFALL_TEST_PG) with a role that may create "
                f"databases, but: {reason}. Fix: sudo -u postgres createuser --superuser {role} && "
                f"sudo -u postgres createdb -O {role} {database}, or point BANNERFALL_TEST_PG at such a role "
                "(README, 'Tests')")
    return _service_problems["pg"]


def redis_problem() -> str | None:
    """None when ``BANNERFALL_TEST_REDIS`` answers a ping, else one line (checked once per session)."""
    if "redis" not in _service_problems:
        import redis

        try:
            client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3, socket_timeout=3)
            client.ping()
            client.close()
            _service_problems["redis"] = None
        except Exception as exc:  # noqa: BLE001 - reported in one line
            _service_problems["redis"] = (
                f"the tests need Redis at {REDIS_URL} (BANNERFALL_TEST_REDIS), but: {exc}. Fix: start redis-server "
                f"on 127.0.0.1:6379 or point BANNERFALL_TEST_REDIS at one (README, 'Tests')")
    return _service_problems["redis"]


def require_postgres() -> None:
    problem = postgres_problem()
    if problem:
        pytest.fail(problem, pytrace=False)


def require_redis() -> None:
    problem = redis_problem()
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The admin URL of the tests' PostgreSQL, checked once per session (one-line error when unusable)."""
    require_postgres()
    return PG_ADMIN_URL


@pytest.fixture(scope="session")
def redis_server() -> str:
    require_redis()
    return REDIS_URL


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
        require_postgres()
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
    if kind != "sqlite":
        request.getfixturevalue("postgres_server")
    if kind == "postgres+redis":
        request.getfixturevalue("redis_server")
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


_SESSION_SECRET = secrets.token_hex(16)
TEST_LIMITS_OFF = {"BANNERFALL_MAX_LOBBIES_PER_PLAYER": "0", "BANNERFALL_MAX_BOT_MATCHES_PER_PLAYER": "0",
                   "BANNERFALL_MAX_SOCKETS_PER_PLAYER": "0", "BANNERFALL_RATE_LIMIT_PLAYER": ""}


class ServerProcess:
    """``bannerfall serve`` in a real process on a free port.

    Its log goes to ``log_dir`` (set per session to a folder under pytest's own temporary
    directory, which pytest rotates); without it, to a private folder removed by :meth:`stop`."""

    #: set by the ``_server_logs`` session fixture
    log_dir: Path | None = None

    def __init__(self, database_url: str, *, env: dict[str, str] | None = None, port: int | None = None) -> None:
        self.database_url = database_url
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # One admin token per database: a node started with another token revokes the old admin
        # (issue 13 rotation), so every node of one database gets the same, derived from its URL and a
        # per-session secret.
        self.admin_token = "Adm-" + hashlib.sha256((_SESSION_SECRET + database_url).encode()).hexdigest()[:40]
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        own_dir = None if ServerProcess.log_dir else tempfile.mkdtemp(prefix="bannerfall-test-")
        self._own_dir = own_dir
        folder = ServerProcess.log_dir or Path(own_dir or tempfile.gettempdir())
        self.log_path = folder / f"bannerfall-test-{self.port}-{uuid.uuid4().hex[:6]}.log"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        env = {**os.environ, "BANNERFALL_PORT": str(self.port), "BANNERFALL_DATABASE_URL": self.database_url,
               "BANNERFALL_ADMIN_TOKEN": self.admin_token, "BANNERFALL_LOG_LEVEL": "warning",
               "PYTHONUNBUFFERED": "1", "BANNERFALL_NODE_ID": f"test-node-{self.port}",
               # tests play many lobbies and matches with one player from one machine: the per-player
               # caps and rate limit are off unless a test sets them (tests/e2e/test_limits.py does)
               **TEST_LIMITS_OFF, **self.extra_env}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
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
        if self._own_dir:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@pytest.fixture(scope="session", autouse=True)
def _server_logs(tmp_path_factory):
    """Test servers write their logs under pytest's temporary directory, not loose in /tmp."""
    ServerProcess.log_dir = tmp_path_factory.mktemp("server-logs")
    yield
    ServerProcess.log_dir = None


@pytest.fixture(scope="module")
def server(backend):
    srv = ServerProcess(backend.url, env=backend.env).start()
    yield srv
    srv.stop()
