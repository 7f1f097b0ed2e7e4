"""Issue 9, the socket items, against real `bannerfall serve` processes over real sockets:

- a client that stops reading is released: its TCP connection is aborted within the documented
  bound after the 4008, and (two nodes) the owner stops publishing for it;
- forwarded actions are never silently lost: an ``act`` gets its answer or a 4503 within a bound,
  also when the owner's pub/sub connection is killed or the owner is paused;
- a socket that reaches a live node while the owner is dead or paused is answered at once
  (``match_unavailable`` with ``retry_after``, close 1013), and the error arrives before the close;
- a new socket during a Redis outage gets ``storage_unavailable`` and 1013, with one log line;
- NUL characters and byte-counted size limits on the socket.

Every test runs on both socket transports (lean and ASGI: ``tests/conftest.py``, ``both_transports``).
"""
from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import httpx
import pytest
import redis
import websockets

from app.client import RestClient
from app.client.socket import play, ws_url
from app.runtime.bots import make_bot
from tests.conftest import REDIS_URL, PostgresDatabase, ServerProcess, both_transports, free_port, transport_env
from tests.e2e.helpers import by_owner, connect, my_prompt, recv_until, start_match, state_at_least
from tests.e2e.test_slow_clients import _frame
from tests.timing import scaled

TCP_ESTABLISHED = 1

pytestmark = both_transports


def metric(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


async def wait_for(pred, timeout: float, step: float = 0.1) -> bool:
    end = time.monotonic() + scaled(timeout)
    while time.monotonic() < end:
        if pred():
            return True
        await asyncio.sleep(step)
    return pred()


def tcp_state(sock: socket.socket) -> int:
    """The kernel's TCP state of ``sock`` (1 established, 7 closed/reset, 8 close-wait)."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)[0]


def non_reading_socket(port: int, match_id: str, token: str) -> socket.socket:
    """A match socket whose client never reads after the handshake (4 KiB receive buffer)."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(("127.0.0.1", port))
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    raw.sendall((f"GET /ws/matches/{match_id} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += raw.recv(1)
    assert head.startswith(b"HTTP/1.1 101")
    raw.sendall(_frame(json.dumps({"type": "hello", "token": token})))
    return raw


async def expect_close(sock, timeout: float) -> tuple[list[dict], int | None]:
    """Read until the server closes; returns the messages read and the close code received."""
    got: list[dict] = []
    try:
        while True:
            got.append(json.loads(await asyncio.wait_for(sock.ws.recv(), timeout)))
    except websockets.ConnectionClosed as closed:
        return got, (closed.rcvd.code if closed.rcvd else None)


async def raw_connect(url: str, match_id: str, hello: dict) -> tuple[list[dict], int | None, float]:
    """Open a socket, send ``hello``, read until the close: (messages, close code, seconds)."""
    started = time.monotonic()
    async with websockets.connect(ws_url(url, match_id), open_timeout=20) as ws:
        await ws.send(json.dumps(hello))
        got: list[dict] = []
        try:
            while True:
                got.append(json.loads(await asyncio.wait_for(ws.recv(), 20)))
                if got[-1]["type"] == "state":
                    return got, None, time.monotonic() - started
        except websockets.ConnectionClosed as closed:
            return got, (closed.rcvd.code if closed.rcvd else None), time.monotonic() - started


# ---------------------------------------------------------------------------------- fixtures
def _cluster(extra: dict[str, str], transport: str, redis_url: str = REDIS_URL):
    db = PostgresDatabase()
    url = db.create()
    prefix = f"bftest:{uuid.uuid4().hex[:8]}:"
    env = {"BANNERFALL_REDIS_URL": redis_url, "BANNERFALL_REDIS_PREFIX": prefix, "BANNERFALL_LEASE_SECONDS": "3",
           **transport_env(transport), **extra}
    nodes = [ServerProcess(url, env={**env, "BANNERFALL_NODE_ID": f"node-{i}-{uuid.uuid4().hex[:4]}"})
             for i in range(2)]
    for n in nodes:
        # extra fields the helpers read (tests/e2e/helpers.py); ServerProcess does not declare them
        n.prefix, n.redis_url = prefix, redis_url  # type: ignore[attr-defined]
    nodes[0].start()
    nodes[1].admin_token = nodes[0].admin_token
    nodes[1].start()
    return db, prefix, nodes



def _cleanup(db, prefix, nodes, redis_url: str = REDIS_URL) -> None:
    for n in nodes:
        if n.proc and n.proc.poll() is None:
            n.proc.send_signal(signal.SIGCONT)
        n.stop()
    db.drop()
    try:
        r = redis.Redis.from_url(redis_url, socket_connect_timeout=1)
        keys = list(r.scan_iter(match=prefix + "*"))
        if keys:
            r.delete(*keys)
        r.close()
    except redis.RedisError:
        pass


@pytest.fixture
def tight_cluster(transport):
    db, prefix, nodes = _cluster({"BANNERFALL_SEND_QUEUE_SIZE": "8", "BANNERFALL_SOCKET_CLOSE_SECONDS": "1"}, transport)
    yield nodes
    _cleanup(db, prefix, nodes)


@pytest.fixture
def cluster_env(transport):
    db, prefix, nodes = _cluster({"BANNERFALL_ACT_TIMEOUT_SECONDS": "3"}, transport)
    yield prefix, nodes
    _cleanup(db, prefix, nodes)


@pytest.fixture
def slow_owner_cluster(transport):
    """A long lease (no takeover during the test), short bounds on links and acts."""
    db, prefix, nodes = _cluster({"BANNERFALL_LEASE_SECONDS": "15", "BANNERFALL_ACT_TIMEOUT_SECONDS": "2",
                                  "BANNERFALL_LINK_ANSWER_SECONDS": "1"}, transport)
    yield nodes
    _cleanup(db, prefix, nodes)


@pytest.fixture
def private_redis():
    """A redis-server of our own on a free port, so the test can stop it."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    folder = tempfile.mkdtemp(prefix="bf-redis-")
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.RedisError:
            time.sleep(0.05)
    client.close()
    yield url, proc
    if proc.poll() is None:
        proc.kill()
        proc.wait(5)
    shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------- item 5
async def _fill_until_dropped(url: str, table, on_dropped) -> None:
    """Play seat 0 with a random bot until ``on_dropped()`` holds (at most 150 s)."""
    me, state = await connect(url, table.match_id, table.players[0].token)
    bot = make_bot("provinces", "random", 3)
    player = asyncio.create_task(play(me, bot.decide, initial=state))
    try:
        started = time.monotonic()
        while not on_dropped() and time.monotonic() - started < 150 and not player.done():
            await asyncio.sleep(0.1)
    finally:
        while not player.done():  # Python 3.11's wait_for can swallow one cancel: insist
            player.cancel()
            await asyncio.wait({player}, timeout=1)
        await me.close()


async def test_slow_reader_on_a_non_owner_node_is_released_and_the_owner_stops_publishing(tight_cluster):
    """A spectator on node b reads nothing; the match runs on node a. After its 4008 the TCP
    connection is aborted within SOCKET_CLOSE_SECONDS (1 s, checked with 2 s of slack), node b's
    socket and link counts go back down, and node a drops the remote peer (no more fan-out)."""
    a, b = tight_cluster
    table = await start_match(a.url, "provinces", 1, bots=5, options={"turn_seconds": 600, "max_rounds": 1000})
    a, b = by_owner((a, b), table.match_id)
    watcher = RestClient(b.url)
    await watcher.register("slow")
    try:
        raw = non_reading_socket(b.port, table.match_id, watcher.token)
        assert await wait_for(lambda: metric(a.url, "bannerfall_remote_peers") == 1, 20)
        assert metric(b.url, "bannerfall_links") == 1 and metric(b.url, "bannerfall_sockets") == 1
        await _fill_until_dropped(a.url, table, lambda: metric(b.url, "bannerfall_slow_disconnects_total") >= 1)
        dropped_at = time.monotonic()
        assert metric(b.url, "bannerfall_slow_disconnects_total") == 1, "the slow reader was never dropped"
        assert await wait_for(lambda: tcp_state(raw) != TCP_ESTABLISHED, 3, 0.02), \
            "the server kept the TCP connection of a closed slow reader"
        released_after = time.monotonic() - dropped_at
        assert released_after <= 3.0
        assert await wait_for(lambda: metric(b.url, "bannerfall_sockets") == 0, 5)
        assert metric(b.url, "bannerfall_links") == 0
        assert metric(b.url, "bannerfall_socket_aborts_total") == 1
        assert await wait_for(lambda: metric(a.url, "bannerfall_remote_peers") == 0, 5), \
            "the owner still publishes for a closed socket"
        raw.close()
    finally:
        await table.close()
        await watcher.close()


# ---------------------------------------------------------------------------------- item 6
def _kill_pubsub_connection(prefix: str, node_id: str) -> int:
    r = redis.Redis.from_url(REDIS_URL)
    try:
        name = f"{prefix}pubsub:{node_id}"
        ids = [c["id"] for c in r.client_list(_type="pubsub") if c.get("name") == name]
        for client_id in ids:
            r.client_kill_filter(_id=client_id)
        return len(ids)
    finally:
        r.close()


async def test_forwarded_act_answered_or_4503_when_the_owner_pubsub_connection_is_killed(cluster_env):
    """Seat 1 plays on node b, the match runs on node a. Three times: kill node a's pub/sub
    connection, send an act at once. Each act gets its ack/error within ACT_TIMEOUT_SECONDS (3 s,
    checked with 3 s of slack) or the socket closes with 4503; after a reconnect the same seq is
    answered, and no act is applied twice."""
    prefix, (a, b) = cluster_env
    admin = RestClient(a.url, a.admin_token)
    table = await start_match(a.url, "conquest", 2, options={"phase_seconds": 600})
    a, b = by_owner((a, b), table.match_id)
    try:
        s0, st0 = await connect(a.url, table.match_id, table.players[0].token)
        s1, st1 = await connect(b.url, table.match_id, table.players[1].token)
        a_node = a.extra_env["BANNERFALL_NODE_ID"]
        closed_rounds = 0
        answers = []
        for seq in (1, 2, 3):  # explicit: a reconnected MatchSocket would count from 1 again
            assert _kill_pubsub_connection(prefix, a_node) == 1
            started = time.monotonic()
            await s1.send({"type": "act", "seq": seq, "action": {"type": "orders", "attack": []},
                           "version": st1["version"]})
            try:
                answer = await recv_until(s1, lambda m, seq=seq: m["type"] in ("ack", "error") and m.get("seq") == seq,
                                          timeout=6)
                assert answer["type"] == "ack", answer
            except websockets.ConnectionClosed as closed:
                assert closed.rcvd is not None and closed.rcvd.code == 4503, closed
                closed_rounds += 1
                s1, st1 = await connect(b.url, table.match_id, table.players[1].token)
                await s1.send({"type": "act", "seq": seq, "action": {"type": "orders", "attack": []},
                               "version": st1["version"]})
                answer = await recv_until(s1, lambda m, seq=seq: m["type"] in ("ack", "error") and m.get("seq") == seq,
                                          timeout=6)
                assert answer["type"] == "ack", answer
            answers.append(answer)
            assert time.monotonic() - started < scaled(12)
            if st1["version"] < answer["version"]:
                acked = answer["version"]
                st1 = await state_at_least(s1, acked)
            # a new act for the next round must see a connected pub/sub again
            await asyncio.sleep(0.3)
        log = (await admin.admin_log(table.match_id))["actions"]
        seqs = [r["client_seq"] for r in log if r["seat"] == 1 and r["kind"] == "act"]
        assert sorted(seqs) == [1, 2, 3], (log, answers)
        print(f"closed with 4503 in {closed_rounds} of 3 rounds")
        for s in (s0, s1):
            await s.close()
    finally:
        await table.close()
        await admin.close()


async def test_act_to_a_paused_owner_gets_act_unanswered_then_4503_and_a_new_socket_is_answered(
        slow_owner_cluster):
    """Node a (the owner) is paused (SIGSTOP) while seat 1's socket on node b is linked to it. The
    act is answered within ACT_TIMEOUT_SECONDS (2 s) by the error ``act_unanswered`` *before* the
    close 4503; a new socket on b gets ``match_unavailable`` (retry_after) then 1013 within
    LINK_ANSWER_SECONDS (1 s); both checked with 2 s of slack."""
    a, b = slow_owner_cluster
    table = await start_match(a.url, "conquest", 2, options={"phase_seconds": 600})
    a, b = by_owner((a, b), table.match_id)
    try:
        s1, st1 = await connect(b.url, table.match_id, table.players[1].token)
        a.proc.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            await s1.act({"type": "orders", "attack": []}, version=st1["version"])
            got, code = await expect_close(s1, 10)
            assert time.monotonic() - started < scaled(4)
            assert code == 4503
            assert [m["code"] for m in got if m["type"] == "error"] == ["act_unanswered"]
            got, code, seconds = await raw_connect(b.url, table.match_id,
                                                   {"type": "hello", "token": table.players[1].token})
            assert code == 1013 and seconds < 3
            assert got[-1]["code"] == "match_unavailable" and got[-1]["retry_after"] >= 1
        finally:
            a.proc.send_signal(signal.SIGCONT)
        assert metric(b.url, "bannerfall_acts_unanswered_total") == 1
    finally:
        await table.close()


# ---------------------------------------------------------------------------------- answered at once
async def test_socket_for_a_dead_owner_is_answered_at_once_then_reconnects(cluster_env):
    """Node a runs the match and is killed (-9); a socket on node b before the lease ran out gets
    ``match_unavailable`` with ``retry_after`` and 1013 within 2 s; a reconnect soon gets the state."""
    _prefix, (a, b) = cluster_env
    table = await start_match(a.url, "conquest", 2, options={"phase_seconds": 600})
    a, b = by_owner((a, b), table.match_id)
    try:
        a.kill9()
        got, code, seconds = await raw_connect(b.url, table.match_id,
                                               {"type": "hello", "token": table.players[1].token})
        if code is None:  # b already took the match over (the lease is 3 s): nothing to answer
            assert got[-1]["type"] == "state"
        else:
            assert code == 1013 and seconds < 2, (code, seconds)
            assert got[-1]["code"] == "match_unavailable" and got[-1]["retry_after"] >= 1
        end = time.monotonic() + 20
        while True:
            got, code, _ = await raw_connect(b.url, table.match_id, {"type": "hello", "token": table.players[1].token})
            if code is None:
                break
            assert time.monotonic() < end, "the match never came back"
            await asyncio.sleep(got[-1].get("retry_after", 1) if got else 1)
        assert got[-1]["type"] == "state" and got[-1]["seat"] == 1
    finally:
        await table.close()


# ---------------------------------------------------------------------------------- item 11
@pytest.fixture
def outage_cluster(private_redis, transport):
    redis_url, proc = private_redis
    db, prefix, nodes = _cluster({"BANNERFALL_SOCKET_SETUP_SECONDS": "2"}, transport, redis_url=redis_url)
    yield proc, nodes, prefix, redis_url
    _cleanup(db, prefix, nodes, redis_url)


async def test_new_socket_during_a_redis_outage_gets_storage_unavailable_and_1013(outage_cluster):
    """Two nodes on a Redis of our own; the match runs on node a; Redis is stopped. A socket on node
    b (which must ask Redis who owns the match) gets ``storage_unavailable`` and 1013 within
    SOCKET_SETUP_SECONDS (2 s here, with 3 s of slack), and node b logs one line per attempt, with
    no traceback from the socket."""
    proc, (a, b), prefix, redis_url = outage_cluster
    table = await start_match(a.url, "conquest", 2, options={"phase_seconds": 600})
    try:
        a, b = by_owner((a, b), table.match_id)
        proc.kill()
        proc.wait(5)
        for _ in range(2):
            got, code, seconds = await raw_connect(b.url, table.match_id,
                                                   {"type": "hello", "token": table.players[1].token})
            assert code == 1013 and seconds < 5, (code, seconds)
            assert got[-1]["code"] == "storage_unavailable" and got[-1]["retry_after"] >= 1
        logs = b.logs()
        assert logs.count("bannerfall.ws: socket for match") == 2, logs[-2000:]
        # no traceback from the socket (other components may log theirs while Redis is down)
        assert "Exception in ASGI application" not in logs and "app/api/ws.py" not in logs
    finally:
        await table.close()


# ---------------------------------------------------------------------------------- input edges
@pytest.fixture
def pg_server(transport):
    db = PostgresDatabase()
    srv = ServerProcess(db.create(), env=transport_env(transport)).start()
    srv.db = db
    yield srv
    srv.stop()
    db.drop()


async def test_new_socket_when_the_database_is_gone_gets_storage_unavailable_and_1013(pg_server):
    """The server's database disappears (dropped WITH (FORCE): every connection is cut, every new one
    fails): a new socket gets ``storage_unavailable`` with ``retry_after`` and 1013, one log line per
    attempt and no traceback from the socket."""
    import asyncpg

    from tests.conftest import PG_ADMIN_URL

    url = pg_server.url
    table = await start_match(url, "conquest", 2, options={"phase_seconds": 600})
    try:
        conn = await asyncpg.connect(PG_ADMIN_URL)
        try:
            await conn.execute(f'DROP DATABASE "{pg_server.db.name}" WITH (FORCE)')
        finally:
            await conn.close()
        for _ in range(2):
            got, code, seconds = await raw_connect(url, table.match_id, {"type": "hello",
                                                                         "token": table.players[1].token})
            assert code == 1013 and seconds < 8, (code, seconds)
            assert got[-1]["code"] == "storage_unavailable" and got[-1]["retry_after"] >= 1
        logs = pg_server.logs()
        assert logs.count("bannerfall.ws: socket for match") == 2, logs[-2000:]
        assert "Exception in ASGI application" not in logs and "app/api/ws.py" not in logs
    finally:
        await table.close()


async def test_nul_and_utf8_size_on_the_socket(pg_server):
    """A NUL in the socket path's match id: ``invalid_text`` then 4400 (Postgres never sees it). A NUL
    anywhere in a message: ``invalid_text``, nothing changes, the socket stays open. The 16 KiB
    limit counts UTF-8 bytes: 6000 three-byte characters are too large."""
    url = pg_server.url
    table = await start_match(url, "conquest", 2, options={"phase_seconds": 600})
    try:
        got, code, _ = await raw_connect(url, "abc%00def", {"type": "hello", "token": table.players[0].token})
        assert code == 4400 and got[-1]["code"] == "invalid_text"
        got, code, _ = await raw_connect(url, table.match_id, {"type": "hello", "token": "x\u0000y"})
        assert code == 4400 and got[-1]["code"] == "invalid_text"
        # a first message over the limit is said to be that (then closed as a hello refused)
        got, code, _ = await raw_connect(url, table.match_id, {"type": "hello", "token": "t" * 20_000})
        assert code == 4401 and got[-1]["code"] == "message_too_large"
        s0, st0 = await connect(url, table.match_id, table.players[0].token)
        assert my_prompt(st0)["kind"] == "orders"
        await s0.send({"type": "act", "seq": 1, "action": {"type": "orders\u0000", "attack": []}})
        m = await recv_until(s0, lambda m: m["type"] in ("error", "ack"))
        assert m["code"] == "invalid_text" and m["seq"] == 1  # an act's answer echoes its seq
        # 6000 characters, 18 000 bytes: too large (sent as UTF-8, not as \u escapes)
        await s0.ws.send(json.dumps({"type": "ping", "t": "\u20ac" * 6000}, ensure_ascii=False))
        m = await recv_until(s0, lambda m: m["type"] in ("error", "pong"))
        assert m["code"] == "message_too_large"
        await s0.ws.send(json.dumps({"type": "ping", "t": "\u20ac" * 5000}, ensure_ascii=False))  # 15 000 bytes
        assert (await recv_until(s0, lambda m: m["type"] in ("error", "pong")))["type"] == "pong"
        await s0.send({"type": "act", "seq": 10**30, "action": {"type": "orders", "attack": []}})
        assert (await recv_until(s0, lambda m: m["type"] == "error"))["code"] == "bad_seq"
        await s0.send({"type": "resume", "since_version": 2**70})
        assert (await recv_until(s0, lambda m: m["type"] in ("error", "state")))["type"] in ("error", "state")
        await s0.send({"type": "ping", "t": 1})
        assert (await recv_until(s0, lambda m: m["type"] == "pong"))["t"] == 1
        match = await table.players[0].match(table.match_id)
        assert match["version"] == 0  # nothing was applied
        await s0.close()
    finally:
        await table.close()
