"""Several nodes on one Postgres and one Redis (real processes on loopback): a match played across
nodes, lobbies seen everywhere, and a node killed in the middle of a simultaneous phase."""
from __future__ import annotations

import uuid

import pytest
import websockets

from app.client import RestClient
from tests.conftest import REDIS_URL, PostgresDatabase, ServerProcess
from tests.e2e.helpers import by_owner, connect, my_prompt, recv_until, start_match, state_at_least

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture
def cluster_env():
    db = PostgresDatabase()
    url = db.create()
    prefix = f"bftest:{uuid.uuid4().hex[:8]}:"
    env = {"BANNERFALL_REDIS_URL": REDIS_URL, "BANNERFALL_REDIS_PREFIX": prefix, "BANNERFALL_LEASE_SECONDS": "3"}
    nodes = [ServerProcess(url, env={**env, "BANNERFALL_NODE_ID": f"node-{i}"}) for i in range(2)]
    for n in nodes:
        n.prefix, n.redis_url = prefix, REDIS_URL
    nodes[0].start()
    nodes[1].admin_token = nodes[0].admin_token
    nodes[1].start()
    yield nodes
    for n in nodes:
        n.stop()
    db.drop()
    import redis

    r = redis.Redis.from_url(REDIS_URL)
    keys = list(r.scan_iter(match=prefix + "*"))
    if keys:
        r.delete(*keys)
    r.close()


async def test_match_across_two_nodes(cluster_env):
    a, b = cluster_env
    table = await start_match(a.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        async with RestClient(b.url, table.players[1].token) as on_b:
            lobbies = await on_b.lobbies()  # started lobbies are not open any more...
            assert table.lobby_id and all(lob["id"] != table.lobby_id for lob in lobbies)
            fresh = await on_b.create_lobby("provinces", 2)
            async with RestClient(a.url, table.players[0].token) as on_a:
                assert fresh["id"] in [lob["id"] for lob in await on_a.lobbies()]  # ...but new ones show on every node
        s0, st0 = await connect(a.url, table.match_id, table.players[0].token)
        s1, st1 = await connect(b.url, table.match_id, table.players[1].token)  # a link to node a
        assert st1["seat"] == 1 and st1["version"] == st0["version"] == 0
        socks = {0: s0, 1: s1}
        states = {0: st0, 1: st1}
        for step in range(4):
            seat = states[0]["prompts"][0]["seat"]
            await socks[seat].act({"type": "end_turn"}, version=states[seat]["version"])
            ack = await recv_until(socks[seat], lambda m: m["type"] in ("ack", "error"))
            assert ack["type"] == "ack" and ack["version"] == step + 1
            for s in (0, 1):
                states[s] = await state_at_least(socks[s], step + 1)
                assert states[s]["version"] == step + 1
        assert states[1]["prompts"] == states[0]["prompts"]
        for s in socks.values():
            await s.close()
    finally:
        await table.close()


async def test_node_killed_mid_phase_another_takes_over(cluster_env):
    a, b = cluster_env
    admin = RestClient(b.url, a.admin_token)
    table = await start_match(a.url, "conquest", 2, options={"phase_seconds": 8})
    a, b = by_owner((a, b), table.match_id)  # another node's sweep may claim a new match first
    try:
        s0, st0 = await connect(a.url, table.match_id, table.players[0].token)
        s1, st1 = await connect(b.url, table.match_id, table.players[1].token)
        assert my_prompt(st0)["kind"] == "orders"
        await s0.act({"type": "orders", "attack": []}, version=st0["version"])
        ack = await recv_until(s0, lambda m: m["type"] == "ack")
        await state_at_least(s1, ack["version"])
        a.kill9()  # node a ran the match; seat 0's socket dies with it
        # seat 1's socket on node b is told the match moved; it reconnects to b and resumes
        seen: list[dict] = []
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:  # a timeout here fails the test: it is not a close
                seen.append(await s1.recv(timeout=20))
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4503
        assert [m.get("code") for m in seen if m["type"] == "error"] == ["match_moved"]  # the last word arrives
        s1b, st = await connect(b.url, table.match_id, table.players[1].token, since_version=ack["version"])
        assert st["version"] >= ack["version"]
        s0b, st0b = await connect(b.url, table.match_id, table.players[0].token, since_version=ack["version"])
        # the phase's deadline fires exactly once, on node b, keeping seat 0's submission
        deadline = st["prompts"][0]["deadline_at"] if st["prompts"] else None
        if st["version"] == ack["version"]:
            await recv_until(s1b, lambda m: m["type"] == "state" and m["version"] > ack["version"], timeout=30)
        log = (await admin.admin_log(table.match_id))["actions"]
        assert [r["seq"] for r in log] == list(range(1, len(log) + 1))
        assert log[0]["seat"] == 0 and log[0]["kind"] == "act"
        orders_defaults = [r for r in log if r["kind"] == "deadline" and r["action"]["type"] == "orders"]
        assert [(r["seq"], r["seat"]) for r in orders_defaults] == [(ack["version"] + 1, 1)]
        assert deadline is None or orders_defaults[0]["created_at"] >= deadline - 0.5
        for s in (s0, s1, s1b, s0b):
            try:
                await s.close()
            except Exception:
                pass
    finally:
        await table.close()
        await admin.close()
