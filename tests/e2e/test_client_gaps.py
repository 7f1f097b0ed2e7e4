"""What a client writer needs of the server (docs/protocol.md): ``server_time`` in every ``state``
and ``pong`` (epoch seconds with three decimals, the clock of ``deadline_at``), the protocol version
of ``hello`` (absent: 1; another: ``unsupported_protocol``, close 4426) and ``GET /api/v1/version``,
and the lobby long-poll ``GET /lobbies/{id}?wait=&state=`` — on SQLite, and on two nodes sharing
Postgres and Redis, where the wake-up crosses nodes on the matchmaking event channel."""
from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
import pytest
import websockets

from app.client import ApiError, RestClient
from tests.conftest import TEST_LIMITS_OFF, PostgresDatabase, ServerProcess
from tests.e2e.helpers import connect, start_match
from tests.timing import scaled


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    db = tmp_path_factory.mktemp("gapsdb") / "bannerfall.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", env=TEST_LIMITS_OFF).start()
    yield srv
    srv.stop()


async def guests(url: str, n: int, name: str = "g") -> list[RestClient]:
    out = []
    for i in range(n):
        c = RestClient(url, timeout=40.0)
        await c.register(f"{name}{i}")
        out.append(c)
    return out


async def _long_polls_waiting(url: str, count: int) -> None:
    """Until ``count`` long-polls wait on the node (its metric), so what follows wakes them."""
    deadline = time.monotonic() + scaled(10)
    async with httpx.AsyncClient() as raw:
        while f"bannerfall_matchmaking_long_polls {count:.1f}" not in (await raw.get(url + "/metrics")).text:
            assert time.monotonic() < deadline, "the long-poll never started waiting"
            await asyncio.sleep(0.02)


# ------------------------------------------------------------------------------------ server time
async def test_every_state_and_pong_carries_server_time_on_the_clock_of_the_deadlines(node):
    table = await start_match(node.url, "provinces", 2, options={"turn_seconds": 600})
    sock, first = await connect(node.url, table.match_id, table.players[0].token, record=True)
    try:
        before = time.time()
        assert first["type"] == "state" and isinstance(first["server_time"], float)
        assert abs(first["server_time"] - before) < 60, first["server_time"]
        deadline = first["prompts"][0]["deadline_at"]
        # the prompt's deadline is on the same clock: about turn_seconds after the state was sent
        assert 540 < deadline - first["server_time"] <= 600, (deadline, first["server_time"])
        await sock.send({"type": "resume", "since_version": 0})
        again = await sock.recv(timeout=scaled(10))
        assert again["type"] == "state" and again["server_time"] >= first["server_time"]
        await sock.ping()
        pong = await sock.recv(timeout=scaled(10))
        assert pong["type"] == "pong" and isinstance(pong["server_time"], float)
        assert pong["server_time"] >= again["server_time"]
        assert sock.clock_offset is not None and abs(sock.clock_offset) < 5   # one machine: no offset
        assert 540 < sock.seconds_left(first["prompts"][0]) <= 600
        # three decimals, whatever the value: the message's size says nothing but its content
        for kind, raw in sock.raw_received:
            if kind in ("state", "pong"):
                assert re.search(rb'"server_time":\d{10}\.\d{3}[,}]', raw), raw[-80:]
    finally:
        await sock.close()
        await table.close()


# ------------------------------------------------------------------------------------ protocol version
async def _hello(url: str, match_id: str, hello: dict) -> tuple[dict, int | None]:
    """The first answer to ``hello`` and the close code that followed it (None: still open)."""
    async with websockets.connect(url.replace("http", "ws") + f"/ws/matches/{match_id}") as ws:
        await ws.send(json.dumps(hello))
        first = json.loads(await asyncio.wait_for(ws.recv(), scaled(10)))
        if first["type"] == "state":
            return first, None
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), scaled(10))
        return first, closed.value.rcvd.code if closed.value.rcvd else None


async def test_hello_takes_the_protocol_version_and_refuses_one_the_server_does_not_speak(node):
    table = await start_match(node.url, "provinces", 2, options={"turn_seconds": 600})
    token = table.players[0].token
    try:
        for protocol in (1, None, "absent"):
            hello = {"type": "hello", "token": token}
            if protocol != "absent":
                hello["protocol"] = protocol
            first, code = await _hello(node.url, table.match_id, hello)
            assert first["type"] == "state" and code is None, (protocol, first)
        for protocol in (0, 2, 99):
            first, code = await _hello(node.url, table.match_id, {"type": "hello", "token": token,
                                                                   "protocol": protocol})
            assert (first["code"], code) == ("unsupported_protocol", 4426), (protocol, first)
            assert "1" in first["message"]
        for protocol in ("1", 1.5, True):
            first, code = await _hello(node.url, table.match_id, {"type": "hello", "token": token,
                                                                   "protocol": protocol})
            assert (first["code"], code) == ("bad_hello", 4401), (protocol, first)
        async with RestClient(node.url) as anyone:   # no token needed
            assert await anyone.version() == {"server": "0.1.0", "protocol": 1, "protocols": [1]}
    finally:
        await table.close()


# ------------------------------------------------------------------------------------ lobby long-poll
async def test_a_member_long_polling_the_lobby_learns_of_the_start_and_its_match(node):
    host, member = await guests(node.url, 2, "lp")
    try:
        lobby = await host.create_lobby("provinces", 2, {"turn_seconds": 600})
        with pytest.raises(ApiError) as err:
            await member.lobby(lobby["id"], wait=31, state=lobby["state"])
        assert (err.value.status, err.value.code) == (422, "invalid_request")
        # unchanged: the poll answers after its wait with the same state
        same = await member.lobby(lobby["id"], wait=0.3, state=lobby["state"])
        assert same["state"] == lobby["state"] and same["status"] == "open"
        # the host waits; the member's join answers it
        watch = asyncio.create_task(host.lobby(lobby["id"], wait=20, state=lobby["state"]))
        await _long_polls_waiting(node.url, 1)
        joined = await member.join(lobby["id"])
        seen = await asyncio.wait_for(watch, scaled(10))
        assert seen["state"] == joined["state"] != lobby["state"]
        assert seen["seats"][1]["player"]["id"] == joined["seats"][1]["player"]["id"]
        # the member waits; the host's start answers it with the match id
        watch = asyncio.create_task(member.lobby(lobby["id"], wait=20, state=seen["state"]))
        await _long_polls_waiting(node.url, 1)
        started = await host.start(lobby["id"])
        told = await asyncio.wait_for(watch, scaled(10))
        assert told["status"] == "started" and told["match_id"] == started["match_id"] is not None
        assert told["state"] == started["state"]
        # a lobby no longer open answers at once, whatever the state
        t0 = time.monotonic()
        again = await member.lobby(lobby["id"], wait=20, state=told["state"])
        assert again["match_id"] == told["match_id"] and time.monotonic() - t0 < scaled(5)
        sock, state = await connect(node.url, told["match_id"], member.token)
        assert state["type"] == "state" and state["seat"] == 1
        await sock.close()
        # the host leaving a lobby closes it: a waiting member is told
        other = await host.create_lobby("provinces", 2, {"turn_seconds": 600})
        other = await member.join(other["id"])
        watch = asyncio.create_task(member.lobby(other["id"], wait=20, state=other["state"]))
        await _long_polls_waiting(node.url, 1)
        await host.leave(other["id"])
        assert (await asyncio.wait_for(watch, scaled(10)))["status"] == "closed"
    finally:
        await host.close()
        await member.close()


async def test_the_lobby_long_poll_counts_against_the_players_long_polls(node):
    [p] = await guests(node.url, 1, "cap")
    try:
        lobby = await p.create_lobby("provinces", 2, {"turn_seconds": 600})
        polls = [asyncio.create_task(p.lobby(lobby["id"], wait=15, state=lobby["state"])) for _ in range(4)]
        await _long_polls_waiting(node.url, 4)
        with pytest.raises(ApiError) as err:
            await p.lobby(lobby["id"], wait=5, state=lobby["state"])
        assert (err.value.status, err.value.code) == (429, "too_many_long_polls")
        await p.fill_bots(lobby["id"])   # a change: every waiting poll answers
        answers = await asyncio.wait_for(asyncio.gather(*polls), scaled(10))
        assert {a["seats"][1]["bot"] for a in answers} == {"random"}
    finally:
        await p.close()


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_lobby_long_poll_on_one_node_is_woken_by_a_start_on_another(postgres_server, redis_env):
    """Two nodes sharing Postgres and Redis: the member waits on node b, the host joins and starts
    on node a; node a publishes ``lobby:{id}`` on ``<prefix>mm:events`` and node b's long-poll
    answers with the match id."""
    import redis.asyncio as aioredis

    db = PostgresDatabase()
    url = await asyncio.to_thread(db.create)
    env = {**redis_env, **TEST_LIMITS_OFF, "BANNERFALL_RUN_BOTS": "false"}
    nodes = [ServerProcess(url, env={**env, "BANNERFALL_NODE_ID": f"lobby-node-{i}"}) for i in range(2)]
    client = aioredis.Redis.from_url(redis_env["BANNERFALL_REDIS_URL"])
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    try:
        await asyncio.to_thread(nodes[0].start)
        nodes[1].admin_token = nodes[0].admin_token
        await asyncio.to_thread(nodes[1].start)
        a, b = nodes
        [host] = await guests(a.url, 1, "ha")
        [member] = await guests(b.url, 1, "mb")
        await pubsub.subscribe(redis_env["BANNERFALL_REDIS_PREFIX"] + "mm:events")
        lobby = await host.create_lobby("provinces", 2, {"turn_seconds": 600})
        watch = asyncio.create_task(member.lobby(lobby["id"], wait=25, state=lobby["state"]))
        await _long_polls_waiting(b.url, 1)
        await member.join(lobby["id"])            # on node b: its own poll answers
        joined = await asyncio.wait_for(watch, scaled(10))
        watch = asyncio.create_task(member.lobby(lobby["id"], wait=25, state=joined["state"]))
        await _long_polls_waiting(b.url, 1)
        started = await host.start(lobby["id"])   # on node a
        told = await asyncio.wait_for(watch, scaled(15))
        assert told["status"] == "started" and told["match_id"] == started["match_id"]
        published = []
        end = time.monotonic() + scaled(10)
        while published.count(f"lobby:{lobby['id']}") < 2:
            assert time.monotonic() < end, published
            msg = await pubsub.get_message(timeout=1.0)
            if msg is not None:
                published.append(msg["data"].decode())
        assert published.count(f"lobby:{lobby['id']}") >= 2, published   # the join's and the start's
        await host.close()
        await member.close()
    finally:
        await pubsub.aclose()
        await client.aclose()
        for n in nodes:
            await asyncio.to_thread(n.stop)
        await asyncio.to_thread(db.drop)


# ------------------------------------------------------------------------------------ admin answers
def test_every_admin_answer_has_a_shape_in_openapi(node):
    """No admin route answers a free-form object: each success answer of ``/api/v1/admin/…`` names a
    model whose properties OpenAPI lists (what a client generator needs)."""
    doc = httpx.get(node.url + "/openapi.json").json()
    schemas = doc["components"]["schemas"]
    checked = 0
    for path, ops in doc["paths"].items():
        if not path.startswith("/api/v1/admin"):
            continue
        for method, op in ops.items():
            for status, answer in op["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                schema = answer["content"]["application/json"]["schema"]
                if schema.get("type") == "array":
                    schema = schema["items"]
                assert "$ref" in schema, (method, path, status, schema)
                model = schemas[schema["$ref"].rsplit("/", 1)[1]]
                assert model.get("properties"), (method, path, model)
                checked += 1
    assert checked >= 9, checked   # matches, a match, its log, its replay, abort, grants, inventory, ledger
    state = schemas["AdminMatchState"]["properties"]
    assert {"prompts", "view", "server_time", "match", "seed", "hidden_from"} <= set(state)
    lobby = next(v for k, v in schemas.items() if k.startswith("LobbyPublic"))
    assert "state" in lobby["properties"] and "state" in lobby["required"]   # the long-poll's fingerprint
    waits = {p["name"] for p in doc["paths"]["/api/v1/lobbies/{lobby_id}"]["get"]["parameters"]}
    assert {"wait", "state"} <= waits


# ------------------------------------------------------------------------------------ a restart
async def test_a_reconnecting_socket_outlives_a_server_restart(tmp_path):
    """The node stops (its sockets are closed with 1012) and starts again on the same database: a
    ``MatchSocket(reconnect=True)`` opens again by itself with its version and plays on."""
    from app.client.socket import Backoff, MatchSocket

    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}", env=TEST_LIMITS_OFF)
    sock = None
    try:
        await asyncio.to_thread(srv.start)
        table = await start_match(srv.url, "provinces", 2, options={"turn_seconds": 600})
        seat = None
        for i, player in enumerate(table.players):
            probe, state = await connect(srv.url, table.match_id, player.token)
            await probe.close()
            if any(p["seat"] == state["seat"] for p in state["prompts"]):
                seat = i
        assert seat is not None
        sock = MatchSocket(srv.url, table.match_id, table.players[seat].token, reconnect=True,
                           backoff=Backoff(first=0.2, cap=2.0), max_reconnects=200)
        await sock.connect()
        state = await sock.recv(timeout=scaled(10))
        held = state["version"]
        waiting = asyncio.create_task(sock.recv(timeout=scaled(120)))
        await asyncio.to_thread(srv.stop)
        await asyncio.to_thread(srv.start)
        again = await waiting
        assert again["type"] == "state" and again["version"] == held, again
        assert sock.last_close == 1012 and sock.reconnects >= 1
        seq = await sock.act({"type": "end_turn"}, version=held)
        answer = None
        while answer is None:
            msg = await sock.recv(timeout=scaled(10))
            if msg.get("seq") == seq:
                answer = msg
        assert answer["type"] == "ack" and answer["version"] == held + 1, answer
        await table.close()
    finally:
        if sock is not None:
            await sock.close()
        await asyncio.to_thread(srv.stop)
