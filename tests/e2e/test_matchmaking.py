"""Quick play against real server processes: on one node in each mode (SQLite, Postgres,
Postgres + Redis) and on two nodes sharing Postgres and Redis, racing matchers and a node killed
with SIGKILL while tickets wait."""
from __future__ import annotations

import asyncio
import re
import time
import uuid

import httpx
import pytest

from app.client import ApiError, RestClient
from app.games import registry
from tests.conftest import REDIS_URL, PostgresDatabase, ServerProcess
from tests.e2e.helpers import connect
from tests.timing import scaled


@pytest.fixture(scope="module")
def server(backend):
    """A node with the default cap on running bot matches (test servers turn it off elsewhere): quick
    play must obey it like the lobby start."""
    srv = ServerProcess(backend.url, env={**backend.env, "BANNERFALL_MAX_BOT_MATCHES_PER_PLAYER": "3"}).start()
    yield srv
    srv.stop()


async def players(url: str, n: int) -> list[RestClient]:
    out = []
    for i in range(n):
        c = RestClient(url)
        await c.register(f"q{i}")
        out.append(c)
    return out


async def test_two_players_queue_long_poll_and_meet_in_the_match(server):
    a, b = await players(server.url, 2)
    try:
        ta = await a.queue("provinces", 2, {"turn_seconds": 600})
        assert ta["status"] == "waiting" and ta["match_id"] is None and ta["window"] >= 0
        started = time.monotonic()
        polling = asyncio.create_task(a.ticket(ta["id"], wait=20))  # answers when matched
        async with httpx.AsyncClient() as raw:  # the long-poll is waiting before the second ticket
            deadline = time.monotonic() + 10
            while "bannerfall_matchmaking_long_polls 1.0" not in (await raw.get(server.url + "/metrics")).text:
                assert time.monotonic() < deadline, "the long-poll never started waiting"
        tb = await b.queue("provinces", 2, {"turn_seconds": 600})
        got = await asyncio.wait_for(polling, 25)
        assert got["status"] == "matched" and time.monotonic() - started < scaled(10)
        tb = await b.wait_for_match(tb["id"], timeout=20)
        assert tb["match_id"] == got["match_id"] and tb["lobby_id"] == got["lobby_id"]
        lobby = await a.lobby(got["lobby_id"])
        assert lobby["status"] == "started" and lobby["match_id"] == got["match_id"]
        seats = {}
        for c in (a, b):
            sock, state = await connect(server.url, got["match_id"], c.token)
            assert state["type"] == "state"
            seats[c] = state["seat"]
            await sock.close()
        assert sorted(seats.values()) == [0, 1]
        # matched: the player may queue again, and cancel that ticket
        again = await a.queue("provinces", 2, {"turn_seconds": 600})
        assert (await a.cancel_ticket(again["id"]))["status"] == "cancelled"
    finally:
        for c in (a, b):
            await c.close()


async def test_bad_tickets_are_refused_and_change_nothing(server):
    a, b = await players(server.url, 2)
    try:
        for args, status, code in [(("nogame", 2), 404, "unknown_game"), (("provinces", 9), 422, "bad_seat_count"),
                                   (("provinces", 2, {"turn_seconds": "x"}), 422, "invalid_options"),
                                   (("conquest", 2, {"loadouts": []}), 422, "reserved_option")]:
            with pytest.raises(ApiError) as err:
                await a.queue(*args)
            assert (err.value.status, err.value.code) == (status, code)
        async with httpx.AsyncClient(base_url=server.url) as raw:
            r = await raw.post("/api/v1/matchmaking/tickets", json={"game": "provinces", "seats": 2},
                               headers={"Authorization": "Bearer nope"})
            assert r.status_code == 401
            r = await raw.post("/api/v1/matchmaking/tickets", json={"game": "provinces", "seats": "2"},
                               headers={"Authorization": f"Bearer {a.token}"})
            assert (r.status_code, r.json()["code"]) == (422, "invalid_request")
        ticket = await a.queue("warrior", 3)  # alone in its pool: it waits
        with pytest.raises(ApiError) as err:
            await a.queue("provinces", 2)
        assert (err.value.status, err.value.code) == (409, "ticket_exists") and ticket["id"] in err.value.message
        for call in (b.ticket(ticket["id"]), b.cancel_ticket(ticket["id"])):  # another's ticket is not found
            with pytest.raises(ApiError) as err:
                await call
            assert err.value.status == 404
        with pytest.raises(ApiError) as err:
            await a.ticket(ticket["id"], wait=31)
        assert err.value.status == 422
        started = time.monotonic()
        assert (await a.ticket(ticket["id"], wait=0.5))["status"] == "waiting"  # the long-poll times out
        assert 0.4 < time.monotonic() - started < scaled(5)
        assert (await a.cancel_ticket(ticket["id"]))["status"] == "cancelled"
        with pytest.raises(ApiError) as err:
            await a.cancel_ticket(ticket["id"])
        assert (err.value.status, err.value.code) == (409, "ticket_cancelled")
    finally:
        for c in (a, b):
            await c.close()


async def test_bots_fill_after_the_wait_the_ticket_names(server):
    [a] = await players(server.url, 1)
    try:
        ticket = await a.queue("provinces", 3, {"turn_seconds": 600}, bots_after_seconds=1.0)
        early = await a.ticket(ticket["id"])
        assert early["status"] == "waiting"
        done = await a.wait_for_match(ticket["id"], timeout=20)
        assert done["status"] == "matched" and done["waited_seconds"] >= 1.0
        match = await a.match(done["match_id"])
        assert [bool(s["bot"]) for s in match["seats"]].count(True) == 2
        assert match["status"] == "running"
        # the lobby start's cap on running bot matches holds for quick play too (default 3)
        for _ in range(2):
            t = await a.queue("provinces", 2, {"turn_seconds": 600}, bots_after_seconds=0.0)
            assert (await a.wait_for_match(t["id"], timeout=20))["status"] == "matched"
        with pytest.raises(ApiError) as err:
            await a.queue("provinces", 2, {"turn_seconds": 600}, bots_after_seconds=0.0)
        assert (err.value.status, err.value.code) == (429, "too_many_bot_matches")
        alone = await a.queue("provinces", 2, {"turn_seconds": 599})  # without bots: no cap
        assert (await a.cancel_ticket(alone["id"]))["status"] == "cancelled"
    finally:
        await a.close()


@pytest.mark.parametrize("game", list(registry()))
async def test_people_and_a_bot_for_each_game(server, game):
    """For every registered game (its test options), people queue for a table of up to 3 seats
    accepting bots after 1 s: a bot of the game takes the last seat, the match starts through the
    lobby path (Conquest: loadouts filled at start, bots' included)."""
    info = registry()[game].info
    seats = min(3, info.max_seats)
    people = await players(server.url, seats - 1)
    try:
        tickets = [await c.queue(game, seats, dict(info.test_options), bots_after_seconds=1.0) for c in people]
        done = await asyncio.gather(*(c.wait_for_match(t["id"], timeout=20)
                                      for c, t in zip(people, tickets, strict=True)))
        assert {d["status"] for d in done} == {"matched"} and len({d["match_id"] for d in done}) == 1
        match = await people[0].match(done[0]["match_id"])
        assert match["status"] == "running"
        assert [bool(s["bot"]) for s in match["seats"]] == [False] * (seats - 1) + [True]
        assert match["seats"][-1]["bot"] in info.bots
        if game == "conquest":
            assert len(match["options"]["loadouts"]) == 3 and match["options"]["loadouts"][2]
    finally:
        for c in people:
            await c.close()


# --------------------------------------------------------------------------- two nodes
@pytest.fixture
def two_nodes():
    db = PostgresDatabase()
    url = db.create()
    prefix = f"bftest:{uuid.uuid4().hex[:8]}:"
    env = {"BANNERFALL_REDIS_URL": REDIS_URL, "BANNERFALL_REDIS_PREFIX": prefix, "BANNERFALL_LEASE_SECONDS": "3",
           "BANNERFALL_MATCHMAKING_TICK_SECONDS": "0.05", "BANNERFALL_RUN_BOTS": "false"}
    nodes = [ServerProcess(url, env={**env, "BANNERFALL_NODE_ID": f"mm-node-{i}"}) for i in range(2)]
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


@pytest.mark.postgres
@pytest.mark.redis
async def test_two_nodes_racing_put_each_ticket_in_exactly_one_match(two_nodes):
    a, b = two_nodes
    # half the players talk to node a, half to node b
    clients = await players(a.url, 20) + await players(b.url, 20)
    try:
        # every player queues on one node or the other at once; both matchers race for them
        tickets = await asyncio.gather(*(c.queue("provinces", 2, {"turn_seconds": 600}) for c in clients))
        done = await asyncio.gather(*(c.wait_for_match(t["id"], timeout=30)
                                      for c, t in zip(clients, tickets, strict=True)))
        assert {t["status"] for t in done} == {"matched"}
        admin = RestClient(a.url, a.admin_token)
        matches = [m for m in await admin.admin_matches() if m["game"] == "provinces"]
        await admin.close()
        seated = [s["player_id"] for m in matches for s in m["seats"]]
        assert len(seated) == len(set(seated)) == 40 and len(matches) == 20
        by_match: dict[str, list[str]] = {}
        for c, t in zip(clients, done, strict=True):
            by_match.setdefault(t["match_id"], []).append((await c.me())["id"])
        assert all(len(v) == 2 for v in by_match.values()) and len(by_match) == 20
        for m in matches:
            assert sorted(s["player_id"] for s in m["seats"]) == sorted(by_match[m["id"]])
        counts = {}
        async with httpx.AsyncClient() as raw:
            for node in (a, b):
                text = (await raw.get(node.url + "/metrics")).text
                counts[node.port] = {
                    k: float(re.search(rf"^bannerfall_matchmaking_{k}_total (\S+)$", text, re.MULTILINE)[1])
                    for k in ("formed", "claims_lost")}
        print("matchmaking race:", counts)
        assert sum(c["formed"] for c in counts.values()) == 20
    finally:
        for c in clients:
            await c.close()


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_node_killed_while_tickets_wait_the_other_forms_the_matches(two_nodes):
    a, b = two_nodes
    on_a = await players(a.url, 4)
    on_b = await players(b.url, 2)
    try:
        # three-seat tables: two players per table wait on node a, nobody can match them yet
        waiting = [await c.queue("provinces", 3, {"turn_seconds": 600 + i // 2}) for i, c in enumerate(on_a)]
        assert {(await c.ticket(t["id"]))["status"] for c, t in zip(on_a, waiting, strict=True)} == {"waiting"}
        a.kill9()
        # the third player of each table comes through node b, which alone forms both matches
        thirds = [await c.queue("provinces", 3, {"turn_seconds": 600 + i}) for i, c in enumerate(on_b)]
        done = [await c.wait_for_match(t["id"], timeout=30) for c, t in zip(on_b, thirds, strict=True)]
        assert {t["status"] for t in done} == {"matched"}
        for c in on_a:  # the players who queued on the dead node read their tickets on b
            c._http.base_url = httpx.URL(b.url)
        firsts = [await c.wait_for_match(t["id"], timeout=30) for c, t in zip(on_a, waiting, strict=True)]
        assert [t["match_id"] for t in firsts] == [done[0]["match_id"]] * 2 + [done[1]["match_id"]] * 2
        match = await on_b[0].match(done[0]["match_id"])
        assert match["status"] == "running" and len({s["player_id"] for s in match["seats"]}) == 3
    finally:
        for c in on_a + on_b:
            await c.close()


@pytest.fixture
def fresh_pg():
    db = PostgresDatabase()
    yield db.create()
    db.drop()


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_node_killed_while_forming_a_match_its_claim_is_settled_by_another(fresh_pg):
    """Node a claims two tickets and stalls making their lobby (its Postgres connection goes through
    a relay that stops relaying); a is killed with SIGKILL holding the claim. Node b, started
    afterwards, settles the claim after MATCHMAKING_CLAIM_SECONDS (the claim's lobby fenced off in
    the database) and forms the match: each ticket ends in exactly one match."""
    from redis.asyncio import Redis

    from app.db.database import make_engine
    from app.db.repo import Repository
    from app.matchmaking.store import RedisTicketStore
    from tests.infra.conftest import TcpProxy
    from tests.matchmaking.conftest import new_ticket

    url = fresh_pg
    relay = TcpProxy("127.0.0.1", 5432)
    await relay.start()
    relayed = url.replace("127.0.0.1:5432", f"127.0.0.1:{relay.port}")
    prefix = f"bftest:{uuid.uuid4().hex[:8]}:"
    env = {"BANNERFALL_REDIS_URL": REDIS_URL, "BANNERFALL_REDIS_PREFIX": prefix, "BANNERFALL_RUN_BOTS": "false",
           "BANNERFALL_MATCHMAKING_TICK_SECONDS": "0.05", "BANNERFALL_MATCHMAKING_CLAIM_SECONDS": "2"}
    a = ServerProcess(relayed, env={**env, "BANNERFALL_NODE_ID": "mm-a"})
    b = ServerProcess(url, env={**env, "BANNERFALL_NODE_ID": "mm-b"})
    client = Redis.from_url(REDIS_URL)
    engine = make_engine(url)
    try:
        await asyncio.to_thread(a.start)
        repo = Repository(engine)
        ids = []
        for _ in range(2):
            pid = uuid.uuid4().hex
            await repo.create_player(pid, "p", "player", uuid.uuid4().hex * 2)
            ids.append(pid)
        relay.frozen = True  # a's database stops answering (its connections stay open)
        store = RedisTicketStore(client, REDIS_URL, prefix)
        tickets = [await store.create(new_ticket(pid, options={"turn_seconds": 600})) for pid in ids]
        deadline = time.monotonic() + 20
        while not await client.zcard(prefix + "mm:claims"):
            assert time.monotonic() < deadline, "node a never claimed the tickets"
            await asyncio.sleep(0.05)
        [claim] = [c.decode() for c in await client.zrange(prefix + "mm:claims", 0, -1)]
        assert {(await store.get(t["id"]))["status"] for t in tickets} == {"claimed"}
        a.kill9()
        await asyncio.to_thread(b.start)
        deadline = time.monotonic() + 30
        while {(await store.get(t["id"]))["status"] for t in tickets} != {"matched"}:
            assert time.monotonic() < deadline, "node b never formed the match"
            await asyncio.sleep(0.1)
        done = [await store.get(t["id"]) for t in tickets]
        assert len({t["match_id"] for t in done}) == 1 and done[0]["lobby_id"] != claim
        fenced = await repo.lobby(claim)
        assert fenced is not None and fenced["status"] == "closed" and fenced["match_id"] is None
        match = await repo.match(done[0]["match_id"])
        assert sorted(s["player_id"] for s in match["seats"]) == sorted(ids)
        async with httpx.AsyncClient() as raw:
            text = (await raw.get(b.url + "/metrics")).text
        assert re.search(r"^bannerfall_matchmaking_settled_total [1-9]", text, re.MULTILINE)
    finally:
        a.kill9()
        a.stop()
        b.stop()
        await relay.close()
        await engine.dispose()
        keys = [k async for k in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
