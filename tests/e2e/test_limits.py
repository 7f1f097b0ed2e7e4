"""Issue 13 item 2: request-body limit, rate limits per address and per player, caps per player on
open lobbies, bot matches and sockets; and a load from one token that hits the limits while
another player keeps playing with normal latency.

Clients pick their source address in 127.0.0.0/8 (``local_address``), so one machine can be
several "addresses" for the per-address limits.
"""
from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import uuid

import httpx
import pytest
import websockets

from app.client import MatchSocket, RestClient
from app.client.rest import ApiError
from app.client.socket import play, ws_url
from app.runtime.bots import make_bot
from tests.conftest import REDIS_URL, PostgresDatabase, ServerProcess, both_transports, transport_env
from tests.timing import scaled

LIMITS_ENV = {
    "BANNERFALL_MAX_BODY_BYTES": "4096",
    "BANNERFALL_RATE_LIMIT_IP": "20/second",
    "BANNERFALL_RATE_LIMIT_PLAYER": "8/second",
    "BANNERFALL_RATE_LIMIT_NEW_PLAYERS": "5/minute",
    "BANNERFALL_MAX_LOBBIES_PER_PLAYER": "2",
    "BANNERFALL_MAX_BOT_MATCHES_PER_PLAYER": "1",
    "BANNERFALL_MAX_SOCKETS_PER_PLAYER": "3",
}
SECURITY_HEADERS = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    db = tmp_path_factory.mktemp("limits") / "limits.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", env=LIMITS_ENV).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def limited_sockets(tmp_path_factory, transport):
    """The limits of :func:`limited`, on one socket transport (the socket tests run on both)."""
    db = tmp_path_factory.mktemp("limits") / "sockets.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", env={**LIMITS_ENV, **transport_env(transport)}).start()
    yield srv
    srv.stop()


def client_from(url: str, address: str, token: str | None = None) -> RestClient:
    """A REST client whose connections come from ``address`` (any 127.x.y.z)."""
    rest = RestClient(url, token)
    rest._http = httpx.AsyncClient(base_url=url, timeout=30,
                                   transport=httpx.AsyncHTTPTransport(local_address=address))
    return rest


async def registered(url: str, address: str, name: str = "p") -> RestClient:
    rest = client_from(url, address)
    await rest.register(name)
    return rest


async def open_socket(url: str, match_id: str, token: str, address: str = "127.0.0.1", **hello):
    ws = await websockets.connect(ws_url(url, match_id), local_addr=(address, 0), open_timeout=20)
    try:
        await ws.send(json.dumps({"type": "hello", "token": token, **hello}))
    except websockets.ConnectionClosed:
        pass  # refused before the hello: the error is still there to read
    return ws, json.loads(await asyncio.wait_for(ws.recv(), 10))


async def closed_with(ws) -> int:
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None, "closed without a close frame"
    return closed.value.rcvd.code


def test_bodies_over_the_limit_get_413_whether_announced_or_streamed(limited):
    url = limited.url + "/api/v1/players"
    small = httpx.post(url, json={"name": "ok"}, timeout=10)
    assert small.status_code == 201
    big = json.dumps({"name": "x" * 5000}).encode()
    announced = httpx.post(url, content=big, headers={"content-type": "application/json"}, timeout=10)
    assert announced.status_code == 413 and announced.json()["code"] == "body_too_large"

    def chunks():
        for i in range(0, len(big), 1000):
            yield big[i:i + 1000]

    streamed = httpx.post(url, content=chunks(), headers={"content-type": "application/json"}, timeout=10)
    assert "content-length" not in streamed.request.headers       # sent chunked: counted as it arrives
    assert streamed.status_code == 413 and streamed.json()["code"] == "body_too_large"
    for answer in (announced, streamed):
        assert all(h in answer.headers for h in SECURITY_HEADERS)


async def test_new_players_per_address_are_rate_limited_with_retry_after(limited):
    address, other = "127.0.0.4", "127.0.0.5"
    answers = []
    async with client_from(limited.url, address) as rest:
        for _ in range(7):
            answers.append(await rest._http.post("/api/v1/players", json={"name": "g"}))
    codes = [a.status_code for a in answers]
    assert codes[:5] == [201] * 5 and codes[5:] == [429, 429], codes
    refused = answers[-1]
    assert refused.json()["code"] == "rate_limited" and 1 <= int(refused.headers["retry-after"]) <= 60
    assert all(h in refused.headers for h in SECURITY_HEADERS)
    async with client_from(limited.url, other) as rest:              # another address is not affected
        assert (await rest._http.post("/api/v1/players", json={"name": "g"})).status_code == 201


async def test_open_lobbies_are_capped_per_player(limited):
    host = await registered(limited.url, "127.0.0.6", "host")
    other = await registered(limited.url, "127.0.0.6", "other")
    try:
        first = await host.create_lobby("provinces", 2)
        await host.create_lobby("provinces", 2)
        with pytest.raises(ApiError) as refused:
            await host.create_lobby("provinces", 2)
        assert refused.value.status == 429 and refused.value.code == "too_many_lobbies"
        third = await other.create_lobby("provinces", 2)
        with pytest.raises(ApiError) as refused:
            await host.join(third["id"])
        assert refused.value.code == "too_many_lobbies"
        answer = await host._http.post("/api/v1/lobbies", json={"game": "provinces", "seats": 2},
                                       headers={"Authorization": f"Bearer {host.token}"})
        assert answer.status_code == 429 and int(answer.headers["retry-after"]) > 0
        assert first["status"] == "open"
    finally:
        await host.close()
        await other.close()


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    """A server with a lobby cap of 2 and no rate limits, so parallel requests meet only the cap."""
    db = tmp_path_factory.mktemp("capped") / "capped.db"
    env = {"BANNERFALL_MAX_LOBBIES_PER_PLAYER": "2", "BANNERFALL_RATE_LIMIT_IP": "",
           "BANNERFALL_RATE_LIMIT_PLAYER": "", "BANNERFALL_RATE_LIMIT_NEW_PLAYERS": ""}
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", env=env).start()
    yield srv
    srv.stop()


async def test_parallel_creates_and_joins_do_not_pass_the_lobby_cap(capped):
    """2 Dec 2026, found by a newcomer: 19 parallel creates with one token passed a cap of 3 (the
    checks all ran before any lobby existed). The check and the change now run under the player's
    lock on the node: with a cap of 2, of 10 parallel creates exactly 2 are made, and then parallel
    joins of 4 other lobbies are all refused, while parallel joins of a lobby the player sits in
    stay idempotent (200)."""
    host = await registered(capped.url, "127.0.0.10", "racer")
    others = [await registered(capped.url, f"127.0.0.1{i}", f"other {i}") for i in (1, 2)]
    try:
        auth = {"Authorization": f"Bearer {host.token}"}
        answers = await asyncio.gather(*[host._http.post("/api/v1/lobbies", json={"game": "provinces", "seats": 2},
                                                         headers=auth) for _ in range(10)])
        codes = sorted(a.status_code for a in answers)
        assert codes == [201, 201] + [429] * 8, [a.text for a in answers]
        assert {a.json()["code"] for a in answers if a.status_code == 429} == {"too_many_lobbies"}
        open_ids = [(await o.create_lobby("provinces", 2))["id"] for o in others for _ in range(2)]
        joins = await asyncio.gather(*[host._http.post(f"/api/v1/lobbies/{lobby}/join", json={}, headers=auth)
                                       for lobby in open_ids])
        assert [j.json()["code"] for j in joins] == ["too_many_lobbies"] * 4, [j.text for j in joins]
        # at the cap, joining a lobby the player sits in stays idempotent (200, its seat), in parallel too
        mine = [a.json()["id"] for a in answers if a.status_code == 201][0]
        again = await asyncio.gather(*[host._http.post(f"/api/v1/lobbies/{mine}/join", json={}, headers=auth)
                                       for _ in range(3)])
        assert [a.status_code for a in again] == [200] * 3, [a.text for a in again]
    finally:
        await host.close()
        for o in others:
            await o.close()


async def test_running_bot_matches_are_capped_per_host(limited):
    host = await registered(limited.url, "127.0.0.8", "host")
    try:
        # one running match with bots per host (the test server's cap)
        first = await host.create_lobby("provinces", 2)
        await host.fill_bots(first["id"], "random")
        await host.start(first["id"])
        second_bots = await host.create_lobby("provinces", 2)
        await host.fill_bots(second_bots["id"], "random")
        with pytest.raises(ApiError) as refused:
            await host.start(second_bots["id"])
        assert refused.value.status == 429 and refused.value.code == "too_many_bot_matches"
        assert (await host.lobby(second_bots["id"]))["status"] == "open"     # nothing changed
    finally:
        await host.close()


@both_transports
async def test_sockets_per_player_are_capped_with_close_4429(limited_sockets):
    host = await registered(limited_sockets.url, "127.0.0.7", "host")
    watcher = await registered(limited_sockets.url, "127.0.0.7", "watcher")
    sockets = []
    try:
        lobby = await host.create_lobby("provinces", 2)
        await host.fill_bots(lobby["id"], "random")
        match_id = (await host.start(lobby["id"]))["match_id"]
        for _ in range(3):
            ws, first = await open_socket(limited_sockets.url, match_id, watcher.token, "127.0.0.7")
            assert first["type"] == "state"
            sockets.append(ws)
        ws, first = await open_socket(limited_sockets.url, match_id, watcher.token, "127.0.0.7")
        assert first["type"] == "error" and first["code"] == "too_many_sockets"
        assert await closed_with(ws) == 4429
        await sockets.pop().close()
        # the slot is given back once the server has seen the close
        for _ in range(50):
            ws, first = await open_socket(limited_sockets.url, match_id, watcher.token, "127.0.0.7")
            if first["type"] == "state":
                sockets.append(ws)
                break
            await ws.close()
            await asyncio.sleep(0.1)
        assert first["type"] == "state"
        # another player is not affected
        ws, first = await open_socket(limited_sockets.url, match_id, host.token, "127.0.0.7")
        assert first["type"] == "state"
        sockets.append(ws)
    finally:
        for ws in sockets:
            await ws.close()
        await host.close()
        await watcher.close()


class TimedSocket(MatchSocket):
    """Records, per ``act``, the seconds until its ``ack``."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.sent: dict[int, float] = {}
        self.latencies: list[float] = []

    async def act(self, action, version=None) -> int:
        seq = await super().act(action, version)
        self.sent[seq] = time.perf_counter()
        return seq

    async def recv(self, timeout=None):
        msg = await super().recv(timeout)
        if msg.get("type") == "ack" and msg.get("seq") in self.sent:
            self.latencies.append(time.perf_counter() - self.sent.pop(msg["seq"]))
        return msg


FLOOD = """
import asyncio, json, sys, time
import httpx

async def main(url, address, token, seconds):
    statuses, retry_after = {}, []
    end = time.monotonic() + seconds

    async def loop(path, headers):
        async with httpx.AsyncClient(base_url=url, timeout=10,
                                     transport=httpx.AsyncHTTPTransport(local_address=address)) as http:
            for _ in range(3000):                      # bounded in count and time
                if time.monotonic() > end:
                    return
                answer = await http.get(path, headers=headers)
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
                if answer.status_code == 429:
                    assert answer.json()["code"] == "rate_limited"
                    retry_after.append(int(answer.headers["retry-after"]))

    auth = {"Authorization": "Bearer " + token}
    await asyncio.gather(*[loop("/api/v1/lobbies", auth) for _ in range(4)],
                         *[loop("/api/v1/games", {}) for _ in range(2)])
    print(json.dumps({"statuses": statuses, "retry_after": retry_after}))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
"""


async def test_a_load_from_one_token_hits_the_limits_while_another_player_keeps_playing(limited):
    attacker_address = "127.0.0.2"
    player = await registered(limited.url, "127.0.0.1", "player")
    attacker = await registered(limited.url, attacker_address, "attacker")
    # three rounds: the player's own actions vary with the (random) seed, and two rounds gave as few
    # as 4 acks to time in one CI run (6-14 usually)
    lobby = await player.create_lobby("provinces", 3, {"max_rounds": 3})
    await player.fill_bots(lobby["id"], "smart")
    match_id = (await player.start(lobby["id"]))["match_id"]
    sock = TimedSocket(limited.url, match_id, player.token)
    await sock.connect()
    socket_refusals: dict[int, int] = {}
    attacker_sockets = []

    async def open_spectators() -> None:
        for _ in range(12):
            try:
                ws, first = await open_socket(limited.url, match_id, attacker.token, attacker_address)
            except (OSError, websockets.InvalidHandshake):
                continue
            if first["type"] == "state":
                attacker_sockets.append(ws)
            else:
                code = await closed_with(ws)
                assert code == 4429 and first["code"] in ("too_many_sockets", "rate_limited"), first
                socket_refusals[code] = socket_refusals.get(code, 0) + 1

    # the flood runs in its own process, so it does not slow this process's player down
    flood = await asyncio.create_subprocess_exec(sys.executable, "-c", FLOOD, limited.url, attacker_address,
                                                 attacker.token, "12", stdout=asyncio.subprocess.PIPE)
    try:
        await open_spectators()
        ended = await asyncio.wait_for(play(sock, make_bot("provinces", "smart", 7).decide, idle_timeout=60), 180)
        out, _ = await asyncio.wait_for(flood.communicate(), 60)
    finally:
        if flood.returncode is None:
            flood.kill()
            await flood.wait()
        for ws in attacker_sockets:
            await ws.close()
        await sock.close()
        await player.close()
        await attacker.close()
    assert ended["type"] == "ended" and flood.returncode == 0
    result = json.loads(out)
    statuses = {int(k): v for k, v in result["statuses"].items()}
    assert statuses.get(429, 0) > 0 and statuses.get(200, 0) > 0, statuses
    assert result["retry_after"] and all(1 <= r <= 2 for r in result["retry_after"])
    assert len(attacker_sockets) <= 3 and sum(socket_refusals.values()) >= 9, socket_refusals
    lat = sorted(sock.latencies)
    assert len(lat) >= 5
    median, p95 = statistics.median(lat), lat[int(0.95 * (len(lat) - 1))]
    print(f"\nplayer acks under load: n={len(lat)} median={median * 1000:.1f} ms p95={p95 * 1000:.1f} ms "
          f"max={lat[-1] * 1000:.1f} ms; attacker answers {statuses}; sockets refused {socket_refusals}")
    # measured on the shared 2-core machine: ~19 ms median / 62 ms p95 without the load, 12-46 ms /
    # 17-205 ms with it; the bound leaves room for a busy CI machine
    assert median < 0.25 and p95 < 1.0, (median, p95)


@pytest.mark.postgres
@pytest.mark.redis
async def test_rate_limits_are_shared_by_nodes_through_redis():
    import redis.asyncio as aioredis

    db = PostgresDatabase()
    url = await asyncio.to_thread(db.create)
    prefix = f"bftest:{uuid.uuid4().hex[:8]}:"
    env = {"BANNERFALL_REDIS_URL": REDIS_URL, "BANNERFALL_REDIS_PREFIX": prefix,
           "BANNERFALL_RATE_LIMIT_PLAYER": "4/minute"}
    nodes = [ServerProcess(url, env={**env, "BANNERFALL_MIGRATE_ON_START": "true" if i == 0 else "false"})
             for i in range(2)]
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        await asyncio.to_thread(nodes[0].start)
        await asyncio.to_thread(nodes[1].start)
        async with RestClient(nodes[0].url) as rest:
            await rest.register("p")
            token = rest.token
        answers = []
        async with httpx.AsyncClient(timeout=10) as http:
            for i in range(6):                                    # alternate nodes
                answers.append(await http.get(nodes[i % 2].url + "/api/v1/players/me",
                                              headers={"Authorization": f"Bearer {token}"}))
        assert [a.status_code for a in answers] == [200] * 4 + [429] * 2
        keys = [k.decode() async for k in client.scan_iter(match=prefix + "limits*")]
        assert keys and not any(token in k for k in keys)
    finally:
        for n in nodes:
            await asyncio.to_thread(n.stop)
        keys = [k async for k in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
        await asyncio.to_thread(db.drop)




async def test_rate_limits_let_requests_through_when_redis_is_unreachable(caplog):
    from app.api.limits import RateLimiter
    from app.config import Settings
    from tests.conftest import free_port

    limiter = RateLimiter(Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", rate_limit_ip="1/minute"))
    started = time.monotonic()
    assert await limiter.hit(limiter.per_ip, "ip", "10.9.8.7") is None
    assert await limiter.hit(limiter.per_ip, "ip", "10.9.8.7") is None      # would be refused if counted
    assert time.monotonic() - started < scaled(10)
    assert "rate limits not checked" in caplog.text


async def test_credential_budgets_are_exact_across_a_window_edge(monkeypatch):
    """A credential budget (``exact=True``, a moving window) of 6 per minute refuses the 7th failure
    whenever 6 fell within the last 60 s, also when they straddle the counters' window edge; the
    request limits' sliding-window counter (the default) weighs the previous window's 3 by the share
    of it still in view and lets the 7th through there. Memory storage, a controlled clock."""
    from app.api.limits import RateLimiter, _parse
    from app.config import Settings

    now = [60.0 * 1_000_000 + 50.0]  # 10 s before a minute's edge
    monkeypatch.setattr(time, "time", lambda: now[0])
    limiter = RateLimiter(Settings())
    budget = _parse("6/minute")
    for exact in (True, False):
        now[0] = 60.0 * 1_000_000 + 50.0 + (0 if exact else 600)
        key = ("sign-in-user-ip", f"edge-{exact}", "addr")
        for _ in range(3):
            assert await limiter.hit(budget, *key, exact=exact) is None
        now[0] += 15.0  # 5 s past the edge: all 6 within 15 s
        for _ in range(3):
            assert await limiter.hit(budget, *key, exact=exact) is None
        retry = await limiter.test(budget, *key, exact=exact)
        if exact:
            assert retry == 45  # the oldest of the six leaves the window in 45 s
            now[0] += 46.0
            assert await limiter.test(budget, *key, exact=True) is None  # the oldest has left
        else:
            assert retry is None  # the approximation the credential budgets do not use
