"""Shared fixtures: a fresh database per test module (SQLite file or a uniquely named Postgres
database on the local server, dropped afterwards) and real server processes on free ports.

The suite needs the local PostgreSQL and Redis (see the README): ``BANNERFALL_TEST_PG`` (default
``postgresql://root@127.0.0.1:5432/test``, a role allowed to create databases) and
``BANNERFALL_TEST_REDIS`` (default ``redis://127.0.0.1:6379/0``). When one is not usable, every test
that needs it errors with one line saying what is missing and how to fix it; nothing is skipped."""
from __future__ import annotations

import asyncio
import atexit
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
from typing import Any

import httpx
import pytest

import app._native
from tests.timing import scaled

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
        delete_redis_prefix(prefix)


def delete_redis_prefix(prefix: str) -> None:
    """Delete every key of the test Redis under ``prefix`` (a test's own, ``bftest:…:``)."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=prefix + "*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def redis_env(redis_server):
    """The environment of nodes that run together (production mode): the test Redis under a key
    prefix of this test's own, deleted afterwards. Nodes without Redis claim their database alone
    (``app/db/node_lock.py``), so a test of several nodes on one database gives them this."""
    prefix = f"bftest:{uuid.uuid4().hex[:8]}:"
    yield {"BANNERFALL_REDIS_URL": redis_server, "BANNERFALL_REDIS_PREFIX": prefix}
    delete_redis_prefix(prefix)


@pytest.fixture(scope="module")
def db_url(backend):
    return backend.url


_SESSION_SECRET = secrets.token_hex(16)
TEST_LIMITS_OFF = {"BANNERFALL_MAX_LOBBIES_PER_PLAYER": "0", "BANNERFALL_MAX_BOT_MATCHES_PER_PLAYER": "0",
                   "BANNERFALL_MAX_SOCKETS_PER_PLAYER": "0", "BANNERFALL_RATE_LIMIT_PLAYER": "",
                   "BANNERFALL_SOCKET_MESSAGES_PER_SECOND": "0"}


class ServerProcess:
    """``bannerfall serve`` in a real process on a free port.

    The process leads a process group of its own, and is stopped whatever happens: :meth:`start`
    kills it when it does not come up in time (or the wait is interrupted); :meth:`stop` ends the
    group (SIGTERM, then SIGKILL); and every server still running when the test session ends, or
    when the test process exits, is killed (:func:`stop_every_server`). Its start is bounded by
    ``scaled(timeout)`` (``tests/timing.py``).

    Its log goes to ``log_dir`` (set per session to a folder under pytest's own temporary
    directory, which pytest rotates); without it, to a private folder removed by :meth:`stop`."""

    #: set by the ``_server_logs`` session fixture
    log_dir: Path | None = None
    #: every server started in this process and not yet stopped
    running: set[ServerProcess] = set()

    def __init__(self, database_url: str, *, env: dict[str, str] | None = None, port: int | None = None,
                 module: str = "app.cli") -> None:
        self.database_url = database_url
        #: the module run as ``python -m MODULE serve`` (a test's own launcher may register a test game)
        self.module = module
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # One admin token per database: a node started with another token revokes the old admin
        # (issue 13 rotation), so every node of one database gets the same, derived from its URL and a
        # per-session secret.
        self.admin_token = "Adm-" + hashlib.sha256((_SESSION_SECRET + database_url).encode()).hexdigest()[:40]
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        self._log: Any = None
        own_dir = None if ServerProcess.log_dir else tempfile.mkdtemp(prefix="bannerfall-test-")
        self._own_dir = own_dir
        folder = ServerProcess.log_dir or Path(own_dir or tempfile.gettempdir())
        self.log_path = folder / f"bannerfall-test-{self.port}-{uuid.uuid4().hex[:6]}.log"

    def start(self, timeout: float = 60.0, *, cwd: Path | None = None) -> ServerProcess:
        """Start the server (in ``cwd``, default the repository) and wait until ``/healthz`` answers,
        at most ``scaled(timeout)`` seconds; on failure the process is killed and RuntimeError raised
        with the end of its log."""
        env = {**os.environ, "BANNERFALL_PORT": str(self.port), "BANNERFALL_DATABASE_URL": self.database_url,
               "BANNERFALL_ADMIN_TOKEN": self.admin_token, "BANNERFALL_LOG_LEVEL": "warning",
               "PYTHONUNBUFFERED": "1", "BANNERFALL_NODE_ID": f"test-node-{self.port}",
               "PYTHONPATH": str(ROOT),
               # tests play many lobbies and matches with one player from one machine: the per-player
               # caps and rate limit are off unless a test sets them (tests/e2e/test_limits.py does)
               **TEST_LIMITS_OFF, **self.extra_env}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._log is not None:
            self._log.close()  # a restart
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", self.module, "serve"], cwd=cwd or ROOT, env=env,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        ServerProcess.running.add(self)
        try:
            self._wait_healthy(scaled(timeout))
        except BaseException:
            self._end_group()
            raise
        return self

    def _wait_healthy(self, timeout: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=1.0) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited {self.proc.returncode}: {self.logs()[-3000:]}")
                try:
                    if client.get(self.url + "/healthz").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        raise RuntimeError(f"server did not start within {timeout:.0f} s (killed): {self.logs()[-3000:]}")

    def _signal_group(self, sig: int) -> None:
        """``sig`` to the server's process group, or to the process alone when a test started it
        without a group of its own."""
        if self.proc is None:
            return
        try:
            if os.getpgid(self.proc.pid) == self.proc.pid:
                os.killpg(self.proc.pid, sig)
            elif self.proc.poll() is None:
                self.proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _end_group(self, grace: float = 15.0) -> None:
        """SIGTERM to the server's group, then SIGKILL after ``scaled(grace)`` s if it has not ended
        (a stopped process is continued first so it can end)."""
        proc = self.proc
        if proc is not None:
            if proc.poll() is None:
                self._signal_group(signal.SIGCONT)
                self._signal_group(signal.SIGTERM)
                try:
                    proc.wait(scaled(grace))
                except subprocess.TimeoutExpired:
                    pass
            self._signal_group(signal.SIGKILL)  # whatever is left of the group
            if proc.poll() is None:
                proc.wait(30)
        ServerProcess.running.discard(self)

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        ServerProcess.running.discard(self)

    def stop(self) -> None:
        self._end_group()
        if getattr(self, "_log", None):
            self._log.close()
        if self._own_dir:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def stop_every_server() -> None:
    """Kill every test server of this process still running (the session's end, or the process's)."""
    for srv in list(ServerProcess.running):
        srv._end_group(grace=5.0)


atexit.register(stop_every_server)


def _stop_servers_then_die(signum: int, _frame) -> None:
    """SIGTERM/SIGHUP to the test process (a CI job cancelled, a terminal closed): its servers first."""
    stop_every_server()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)



def pytest_configure(config) -> None:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _stop_servers_then_die)


def pytest_collection_modifyitems(config, items) -> None:
    """Every test's time limit scales with the load too (``tests/timing.py``): a test without its own
    ``timeout`` mark gets ``scaled(timeout)`` s (pyproject's ``timeout``, 300), measured when the run
    starts. pytest-timeout's ``signal`` method raises inside the test, so fixture finalizers still
    stop its servers."""
    if config.getoption("timeout", None) is not None:
        return  # a --timeout given on the command line wins
    try:
        nominal = float(config.getini("timeout") or 0)
    except (ValueError, KeyError):
        return
    if nominal <= 0:
        return
    limit = scaled(nominal)
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(limit, method="signal"))


@pytest.fixture(scope="session", autouse=True)
def _stop_every_server_at_the_end():
    """Whatever a test or fixture did, no server it started outlives the session."""
    yield
    stop_every_server()


@pytest.fixture(scope="session", autouse=True)
def _server_logs(tmp_path_factory):
    """Test servers write their logs under pytest's temporary directory, not loose in /tmp."""
    ServerProcess.log_dir = tmp_path_factory.mktemp("server-logs")
    yield
    ServerProcess.log_dir = None


#: the two match-socket transports (``app/transport/``: lean and ASGI)
TRANSPORTS = ("lean", "asgi")


@pytest.fixture(scope="module")
def transport(request) -> str:
    """The socket transport of the servers a test starts (``BANNERFALL_SOCKET_TRANSPORT``): ``lean``
    or ``asgi`` where the test runs on both (:data:`both_transports`), else ``auto`` (the default:
    lean). Fixtures that start servers pass :func:`transport_env` of it."""
    return getattr(request, "param", "auto")


def transport_env(transport: str) -> dict[str, str]:
    """The environment that gives a server ``transport`` (nothing for the default, ``auto``)."""
    return {} if transport == "auto" else {"BANNERFALL_SOCKET_TRANSPORT": transport}


#: a test's (or a module's ``pytestmark``) mark: it runs on each transport, with the servers its
#: fixtures start (the ``transport`` fixture, module-scoped: one server per transport)
both_transports = pytest.mark.parametrize("transport", TRANSPORTS, indirect=True, scope="module")

#: for the tests of the ``server`` fixture: every backend on the lean transport, and production mode
#: (Postgres + Redis) on the ASGI transport too; the transports do not depend on the backend, and
#: the whole cross product would add two servers' worth of tests per module to the suite's time
backends_and_transports = pytest.mark.parametrize(
    ("backend", "transport"),
    [pytest.param(b, t, id=f"{b}-{t}") for b, t in (("sqlite", "lean"), ("postgres", "lean"),
                                                      ("postgres+redis", "lean"), ("postgres+redis", "asgi"))],
    indirect=True, scope="module")


@pytest.fixture(scope="module")
def server(backend, transport):
    srv = ServerProcess(backend.url, env={**backend.env, **transport_env(transport)}).start()
    yield srv
    srv.stop()
