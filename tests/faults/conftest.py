"""Harness of the fault tests (issue 9): a private PostgreSQL cluster and a private redis-server per
test, which a test may stop, kill and start again without touching the machine's own servers, plus
``bannerfall serve`` nodes on them and a socket client that records every answer and close code.

Nothing here is skipped: a missing ``initdb`` or ``redis-server`` fails loudly with one line.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
import websockets

from app.client.socket import ws_url
from app.runtime.rows import LogRow, MatchRow
from tests.conftest import ROOT, ServerProcess, free_port
from tests.timing import scaled

PG_BIN = Path(os.environ.get("BANNERFALL_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"

#: what the protocol documents as the close codes of a fault (docs/protocol.md): storage unavailable,
#: the match moved (reconnect and resume), replaced by a newer socket
DOCUMENTED_FAULT_CLOSES = {1011, 4503, 4001}
#: how long an ``act`` may wait for its ``ack``/``error`` (or a documented close) before we call it a
#: silent hang: the log writer's retry window (10 s) plus slack for a loaded 2-core machine
ACT_ANSWER_BOUND = 16.0


def _need(path: Path | str, what: str) -> None:
    if not Path(path).exists():
        pytest.fail(f"fault tests need {what} at {path} (install it; these tests are never skipped)", pytrace=False)


def _as_postgres(args: list[str], **kw) -> subprocess.CompletedProcess:
    if os.geteuid() == 0:
        args = ["runuser", "-u", "postgres", "--", *args]
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


class PrivatePostgres:
    """A PostgreSQL cluster of its own in a temp dir owned by ``postgres``, on a free port.

    ``stop()`` is an outage (``pg_ctl stop -m immediate``); ``start()`` brings it back on the same
    port. ``url`` is the database the nodes use (``bannerfall``, already migrated in the template)."""

    def __init__(self, template: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bf-faultpg-"))
        os.chmod(self.dir, 0o755)
        self.data = self.dir / "data"
        subprocess.run(["cp", "-a", str(template), str(self.data)], check=True)
        shutil.chown(self.dir, "postgres", "postgres")
        self.port = free_port()
        self.url = f"postgresql+asyncpg://root@127.0.0.1:{self.port}/bannerfall"
        self.plain_url = f"postgresql://root@127.0.0.1:{self.port}/bannerfall"
        self.running = False
        self.paused = False

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c full_page_writes=off -c shared_buffers=16MB -c max_connections=120")
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.dir / "pg.log"),
                      "-w", "-t", "60", "start"])
        self.running = True

    def stop(self) -> None:
        """An outage: immediate shutdown (no checkpoint; clients see their connections drop)."""
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        self.running = False

    async def astart(self) -> None:
        await asyncio.to_thread(self.start)

    async def astop(self) -> None:
        await asyncio.to_thread(self.stop)

    def pids(self) -> list[int]:
        """The postmaster and every process it forked (its backends and workers)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        found = [postmaster]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                    found.append(int(entry.name))
        return found

    def pause(self) -> None:
        """A hung Postgres: SIGSTOP to the postmaster and all its processes. Connections stay open
        and new ones are accepted by the kernel, but nothing answers until :meth:`resume`."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.paused = False

    def create_database(self) -> None:
        import asyncpg

        async def make() -> None:
            conn = await asyncpg.connect(f"postgresql://root@127.0.0.1:{self.port}/postgres")
            try:
                await conn.execute("CREATE DATABASE bannerfall")
            finally:
                await conn.close()

        asyncio.run(make())

    def destroy(self) -> None:
        if getattr(self, "paused", False):
            with contextlib.suppress(OSError, ValueError):
                self.resume()
        if self.running or (self.data / "postmaster.pid").exists():
            try:
                self.stop()
            except subprocess.CalledProcessError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRedis:
    """``redis-server`` of its own on a free port, no persistence: ``kill()`` is SIGKILL, ``start()``
    brings it back *empty* on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--save", "", "--appendonly", "no", "--daemonize", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        end = time.time() + scaled(20)
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis.RedisError as exc:
                    if self.proc.poll() is not None or time.time() > end:
                        self.kill()  # never left running behind a failed start
                        raise RuntimeError(f"redis-server on port {self.port} did not start") from exc
                    time.sleep(0.05)
        finally:
            client.close()

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def pause(self) -> None:
        """A hung Redis: SIGSTOP (connections stay open, nothing answers) until :meth:`resume`."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    async def astart(self) -> None:
        await asyncio.to_thread(self.start)

    async def akill(self) -> None:
        await asyncio.to_thread(self.kill)


@pytest.fixture(scope="session")
def pg_template(tmp_path_factory):
    """One ``initdb`` per test process; each test copies it (much faster than initdb each time)."""
    _need(PG_BIN / "initdb", "PostgreSQL 15's initdb")
    _need(REDIS_SERVER, "redis-server")
    base = Path(tempfile.mkdtemp(prefix="bf-faultpg-template-"))
    os.chmod(base, 0o755)
    shutil.chown(base, "postgres", "postgres")
    data = base / "data"
    _as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "root", "--no-sync",
                  "-E", "UTF8", "--locale=C"])
    # the schema is made once here with `bannerfall migrate` (as the production compose file does);
    # nodes then start with MIGRATE_ON_START=false, which saves seconds per node on a loaded machine
    pg = PrivatePostgres.__new__(PrivatePostgres)
    pg.dir, pg.data, pg.port, pg.running = base, data, free_port(), False
    pg.url = f"postgresql+asyncpg://root@127.0.0.1:{pg.port}/bannerfall"
    pg.start()
    try:
        pg.create_database()
        subprocess.run([sys.executable, "-m", "app.cli", "migrate", "--database-url", pg.url], cwd=ROOT,
                       check=True, capture_output=True, timeout=180)
    finally:
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
    yield data
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def private_pg(pg_template):
    pg = PrivatePostgres(pg_template)
    try:
        pg.start()
        yield pg
    finally:
        pg.destroy()


@pytest.fixture
def private_redis():
    _need(REDIS_SERVER, "redis-server")
    r = PrivateRedis()
    try:
        r.start()
        yield r
    finally:
        r.kill()


class Nodes:
    """``bannerfall serve`` nodes on the private engines; every node is stopped at the end (a paused
    one is continued first so it can be stopped)."""

    def __init__(self, pg: PrivatePostgres, redis: PrivateRedis | None) -> None:
        self.pg, self.redis = pg, redis
        self.all: list[ServerProcess] = []
        self.admin_token: str | None = None

    def start(self, name: str, **env: str) -> ServerProcess:
        """One node; every node of a test shares the first node's admin token."""
        node = self._start_one(name, env, self.admin_token)
        self.admin_token = node.admin_token
        return node

    def start_pair(self, names: tuple[str, str], **env: str) -> tuple[ServerProcess, ServerProcess]:
        """Two nodes started at the same time (saves seconds on a loaded machine), with the same admin
        token (a node started with another token, or none, revokes the old admin; inserting the admin
        row is idempotent, so two nodes starting together is safe: tests/e2e/test_admin_token.py)."""
        from concurrent.futures import ThreadPoolExecutor

        first, second = names
        with ThreadPoolExecutor(2) as pool:
            fa = pool.submit(self._start_one, first, env, self.admin_token)
            fb = pool.submit(self._start_one, second, env, self.admin_token)
            a, b = fa.result(), fb.result()
        b.admin_token = a.admin_token
        self.admin_token = a.admin_token
        return a, b

    def _start_one(self, name: str, env: dict[str, str], admin_token: str | None = None) -> ServerProcess:
        base = {"BANNERFALL_NODE_ID": name, "BANNERFALL_LOG_LEVEL": "info", "BANNERFALL_MIGRATE_ON_START": "false"}
        if self.redis is not None:
            base["BANNERFALL_REDIS_URL"] = self.redis.url
        node = ServerProcess(self.pg.url, env={**base, **env})
        node.node_id = name  # type: ignore[attr-defined]
        if admin_token is not None:
            node.admin_token = admin_token
        self.all.append(node)
        return node.start()

    def restart(self, node: ServerProcess) -> ServerProcess:
        node.start()
        return node

    def stop_all(self) -> None:
        for node in self.all:
            if node.proc is not None and node.proc.poll() is None:
                try:
                    node.proc.send_signal(signal.SIGCONT)
                except ProcessLookupError:
                    pass
            node.stop()


@pytest.fixture
def nodes(private_pg, private_redis):
    n = Nodes(private_pg, private_redis)
    yield n
    n.stop_all()


def pause(node: ServerProcess) -> None:
    """SIGSTOP: the node stops dead (sockets, timers, lease renewals) until :func:`resume`."""
    assert node.proc is not None
    node.proc.send_signal(signal.SIGSTOP)


def resume(node: ServerProcess) -> None:
    assert node.proc is not None
    node.proc.send_signal(signal.SIGCONT)


# ---------------------------------------------------------------------------------------------- client
class Sock:
    """One match socket: ``hello``, then a reader task records every message and the close code.

    ``answer(seq)`` is the bounded wait the protocol promises: the ``ack`` or ``error`` echoing
    ``seq``, or the socket closed (with its code)."""

    def __init__(self, base_url: str, match_id: str, token: str, label: str = "") -> None:
        self.url = ws_url(base_url, match_id)
        self.token = token
        self.label = label
        self.msgs: list[dict[str, Any]] = []
        self.close_code: int | None = None
        self.closed_at: float | None = None
        self._changed = asyncio.Event()
        self._reader: asyncio.Task | None = None
        self.ws: Any = None

    async def open(self, since_version: int | None = None) -> None:
        self.ws = await websockets.connect(self.url, open_timeout=10, max_size=2**24, ping_interval=None)
        # full states: the drivers read every version's state (deltas are proven in tests/e2e)
        hello: dict[str, Any] = {"type": "hello", "token": self.token, "deltas": False}
        if since_version is not None:
            hello["since_version"] = since_version
        await self.ws.send(json.dumps(hello))
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                self.msgs.append(json.loads(raw))
                self._changed.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            code = getattr(self.ws, "close_code", None)
            self.close_code = code if code is not None else 1006
            self.closed_at = time.monotonic()
            self._changed.set()

    @property
    def closed(self) -> bool:
        return self.close_code is not None

    async def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any] | None:
        """The first message (oldest first) matching ``pred``; None if the socket closed without one.
        Raises TimeoutError after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while True:
            for m in self.msgs:
                if pred(m):
                    return m
            if self.closed:
                return None
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.label}: nothing matching in {timeout} s")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                pass

    def last_state(self) -> dict[str, Any] | None:
        return next((m for m in reversed(self.msgs) if m["type"] == "state"), None)

    async def newest_state(self, min_version: int, timeout: float) -> dict[str, Any] | None:
        await self.wait(lambda m: m["type"] == "state" and m["version"] >= min_version, timeout)
        return self.last_state()

    async def act(self, seq: int, action: dict[str, Any], version: int | None = None) -> None:
        msg: dict[str, Any] = {"type": "act", "seq": seq, "action": action}
        if version is not None:
            msg["version"] = version
        try:
            await self.ws.send(json.dumps(msg))
        except websockets.ConnectionClosed:
            pass

    async def answer(self, seq: int, timeout: float = ACT_ANSWER_BOUND) -> tuple[str, Any]:
        """("ack", msg) | ("error", msg) | ("closed", close code) | ("hang", None)."""
        try:
            m = await self.wait(lambda m: m["type"] in ("ack", "error") and m.get("seq") == seq, timeout)
        except TimeoutError:
            return "hang", None
        if m is None:
            return "closed", self.close_code
        return m["type"], m

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(OSError, TimeoutError, websockets.WebSocketException):
                await asyncio.wait_for(self.ws.close(), 5)
        if self._reader is not None:
            self._reader.cancel()


async def join(base_url: str, match_id: str, token: str, *, within: float = 30.0, label: str = "",
               since_version: int | None = None, first_timeout: float = 8.0,
               attempts: list | None = None) -> tuple[Sock, dict[str, Any]]:
    """Connect until a node answers ``hello`` with a ``state`` (retrying after errors and closes, as
    the protocol tells a client to); ``attempts`` collects (outcome, seconds) of each try."""
    end = time.monotonic() + within
    last = None
    while True:
        t0 = time.monotonic()
        sock = Sock(base_url, match_id, token, label)
        outcome: str
        try:
            await sock.open(since_version)
            first = await sock.wait(lambda m: True, first_timeout)
            if first is not None and first["type"] == "state":
                if attempts is not None:
                    attempts.append(("state", time.monotonic() - t0))
                return sock, first
            outcome = f"error {first.get('code')}" if first else f"closed {sock.close_code}"
        except TimeoutError:
            outcome = "no answer"
        except (OSError, websockets.WebSocketException) as exc:
            outcome = f"connect failed {type(exc).__name__}"
        if attempts is not None:
            attempts.append((outcome, time.monotonic() - t0))
        last = outcome
        await sock.close()
        if time.monotonic() > end:
            raise AssertionError(f"{label}: no node gave a state within {within} s (last try: {last})")
        await asyncio.sleep(0.2)


# ---------------------------------------------------------------------------------------------- checks
async def read_log(db_url: str, match_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The match row and its log rows, read with the project's own repository."""
    from app.db.database import make_engine
    from app.db.repo import Repository

    engine = make_engine(db_url)
    try:
        repo = Repository(engine)
        match = await repo.match(match_id)
        actions = await repo.actions(match_id)
    finally:
        await engine.dispose()
    assert match is not None, f"match {match_id} is not in the database"
    return match, actions


def verify(db_url: str, match_id: str) -> str:
    """``bannerfall verify MATCH_ID``; fails the test with its output unless it says OK."""
    out = subprocess.run([sys.executable, "-m", "app.cli", "verify", match_id, "--database-url", db_url],
                         check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"bannerfall verify failed: {out.stdout.strip()} {out.stderr.strip()[-500:]}"
    return out.stdout.strip()


def check_log(match: dict[str, Any], actions: list[dict[str, Any]],
              acks: list[tuple[int, int, int]]) -> None:
    """No gap, it replays, and every acknowledged ``(seat, client_seq, version)`` is in it. An ack's
    version is the seat's audience version: it is mapped to the log record at which the seat's
    audience reached it (derived by the replay, as the server derives it)."""
    from app.runtime.replay import replay

    seqs = [a["seq"] for a in actions]
    assert seqs == list(range(1, len(seqs) + 1)), f"log gap or duplicate: seqs {seqs}"
    result = replay(cast(MatchRow, match), cast(list[LogRow], actions), keep_events=len(actions) + 1)
    reached: dict[int, dict[int, int]] = {}
    for seq, _events, audiences in result.history:
        for seat_index, audience_version in enumerate(audiences):
            reached.setdefault(seat_index, {}).setdefault(audience_version, seq)
    by_seq = {a["seq"]: a for a in actions}
    for seat, cseq, audience_version in acks:
        version = reached.get(seat, {}).get(audience_version, -1)
        row = by_seq.get(version)
        assert row is not None, f"acknowledged action (seat {seat}, seq {cseq}) at version {version} is not in the log"
        assert (row["seat"], row["client_seq"]) == (seat, cseq), (
            f"version {version} was acknowledged to seat {seat} seq {cseq} but the log holds "
            f"seat {row['seat']} seq {row['client_seq']} ({row['kind']})")


def deadline_rows_by_phase(match: dict[str, Any], actions: list[dict[str, Any]]) -> dict[tuple[int, int], list[int]]:
    """For each ``deadline`` row, the (phase_id, seat) it answered (from the prompts before it):
    ``{(phase_id, seat): [seq, ...]}``."""
    from app.games import registry
    from app.runtime.replay import initial_state

    game = registry()[match["game"]]
    state = initial_state(game, cast(MatchRow, match))
    out: dict[tuple[int, int], list[int]] = {}
    for row in actions:
        if row["kind"] == "abort":
            continue
        if row["kind"] == "deadline":
            prompt = next(p for p in game.prompts(state) if p.seat == row["seat"])
            out.setdefault((prompt.phase_id, row["seat"]), []).append(row["seq"])
        state, _ = game.apply(state, row["seat"], row["action"])
    return out


def node_log_tail(*nodes: ServerProcess, lines: int = 25) -> str:
    parts = []
    for n in nodes:
        text = n.logs().splitlines()[-lines:]
        parts.append(f"--- {getattr(n, 'node_id', n.port)} ---\n" + "\n".join(text))
    return "\n".join(parts)


def unique_name() -> str:
    return uuid.uuid4().hex[:8]


END_TURN = {"type": "end_turn"}


async def sleep_until(t: float) -> None:
    left = t - time.monotonic()
    if left > 0:
        await asyncio.sleep(left)


class Driver:
    """Plays a Provinces match the way the protocol tells a client to behave under faults: the seat
    with the turn ends it (``version`` = the newest state it saw); an unanswered action is resent
    with the same ``seq`` and ``version`` after reconnecting; a closed socket is reopened (on the
    seat's node from ``urls``). Records every answer: acks, errors, close codes, silent hangs."""

    def __init__(self, table, urls: dict[int, str], label: str = "", step_delay: float = 0.0) -> None:
        self.table = table
        self.match_id = table.match_id
        self.urls = urls
        self.label = label
        self.step_delay = step_delay
        self.socks: dict[int, Sock | None] = {seat: None for seat in urls}
        self.acks: list[tuple[int, int, int]] = []
        self.errors: list[str] = []
        self.closes: list[int] = []
        self.hangs: list[tuple[int, int, float]] = []
        self.join_attempts: list[tuple[str, float]] = []
        self.latencies: list[float] = []
        self.pending: dict[int, tuple[int, dict[str, Any], int]] = {}
        self.ended = False
        self._seq = 0

    async def _ensure(self, seat: int, within: float) -> Sock:
        s = self.socks.get(seat)
        if s is not None and not s.closed:
            return s
        if s is not None:
            self.closes.append(s.close_code or 0)
            await s.close()
        s, _ = await join(self.urls[seat], self.match_id, self.table.players[seat].token, within=within,
                          label=f"{self.label} seat {seat}", attempts=self.join_attempts)
        self.socks[seat] = s
        return s

    def newest_state(self) -> dict[str, Any] | None:
        states = [st for s in self.socks.values() if s is not None and (st := s.last_state()) is not None]
        return max(states, key=lambda st: st["version"]) if states else None

    async def step(self, within: float = 60.0) -> None:
        for seat in self.socks:
            await self._ensure(seat, within)
        state = self.newest_state()
        if state is None or state["status"] != "running" or any(
                m["type"] == "ended" for s in self.socks.values() if s for m in s.msgs):
            self.ended = True
            return
        if not state["prompts"]:
            await asyncio.sleep(0.05)
            return
        seat = state["prompts"][0]["seat"]
        if seat not in self.socks:
            await asyncio.sleep(0.05)
            return
        sock = self.socks[seat]
        assert sock is not None
        if seat in self.pending:
            seq, action, version = self.pending[seat]
        else:
            self._seq += 1
            seq, action, version = self._seq, END_TURN, state["version"]
            self.pending[seat] = (seq, action, version)
        t = time.monotonic()
        await sock.act(seq, action, version)
        kind, msg = await sock.answer(seq)
        self.latencies.append(time.monotonic() - t)
        if kind == "ack":
            self.acks.append((seat, seq, msg["version"]))
            del self.pending[seat]
            try:
                await sock.newest_state(msg["version"], 10)
            except TimeoutError:
                pass
        elif kind == "error":
            self.errors.append(msg["code"])
            if msg["code"] in ("stale_version", "not_your_turn", "bad_version", "match_over"):
                del self.pending[seat]
                await asyncio.sleep(0.2)
        elif kind == "hang":
            self.hangs.append((seat, seq, time.monotonic() - t))
            await sock.close()
            sock.close_code = sock.close_code or -1
        if self.step_delay:
            await asyncio.sleep(self.step_delay)

    async def play_until(self, done: Callable[[], bool], within: float) -> None:
        end = time.monotonic() + within
        while not done() and not self.ended:
            if time.monotonic() > end:
                raise AssertionError(f"{self.label}: play did not get there in {within} s: acks {len(self.acks)}, "
                                     f"errors {self.errors}, closes {self.closes}, hangs {self.hangs}")
            await self.step(within=max(5.0, end - time.monotonic()))

    async def play_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.ended:
            await self.step(within=max(5.0, end - time.monotonic() + 30))

    def closes_since(self, start: int = 0) -> list[int]:
        return self.closes[start:] + [s.close_code for s in self.socks.values() if s and s.close_code is not None]

    async def close(self) -> None:
        for s in self.socks.values():
            if s is not None:
                await s.close()

    def summary(self) -> str:
        hellos: dict[str, list[float]] = {}
        for outcome, seconds in self.join_attempts:
            hellos.setdefault(outcome, []).append(seconds)
        hello_text = ", ".join(f"{o} x{len(v)} (max {max(v):.1f}s)" for o, v in hellos.items())
        return (f"acks {len(self.acks)}, errors {self.errors}, closes {self.closes}, "
                f"max act latency {max(self.latencies, default=0):.1f}s, hellos: {hello_text}")

    def assert_answered(self) -> None:
        """Every act got its answer in bounded time, every close carried a documented code."""
        assert not self.hangs, f"{self.label}: acts with no ack/error/close within {ACT_ANSWER_BOUND} s: {self.hangs}"
        odd = [c for c in self.closes if c not in DOCUMENTED_FAULT_CLOSES]
        assert not odd, f"{self.label}: sockets closed with undocumented codes {odd} (all closes {self.closes})"


async def lease_owner(redis_url: str, db_url: str, match_id: str) -> str:
    """Who holds ``match_id`` now: the Redis lease's value (``{prefix}lease:{id}``), else ''."""
    import redis.asyncio as aredis

    client = aredis.Redis.from_url(redis_url, socket_timeout=2)
    try:
        value = await client.get(f"bannerfall:lease:{match_id}")
    except (aredis.RedisError, OSError):
        value = None  # Redis down (a test may have killed it): nobody holds anything
    finally:
        await client.aclose()
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""


async def wait_owner(redis_url: str, db_url: str, match_id: str, node_id: str, within: float) -> float:
    """Wait until ``node_id`` holds the match's lease; returns the seconds waited."""
    t0 = time.monotonic()
    while True:
        if node_id in await lease_owner(redis_url, db_url, match_id):
            return time.monotonic() - t0
        if time.monotonic() - t0 > within:
            raise AssertionError(f"{node_id} did not take match {match_id} over within {within} s "
                                 f"(lease holder: {await lease_owner(redis_url, db_url, match_id)!r})")
        await asyncio.sleep(0.05)
