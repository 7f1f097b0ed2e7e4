"""The matchmaking service on a real database (SQLite with the in-process store, Postgres with the
real Redis): matches are made through the lobby start path, and a claim that stalls or whose node
dies is settled by another node through the lobby row, so no ticket is ever in two matches."""
from __future__ import annotations

import asyncio
import time
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from redis.asyncio import Redis

from app.api.deps import hash_token
from app.db.database import make_engine
from app.db.migrate import upgrade
from app.db.repo import Repository
from app.matchmaking.matcher import Window
from app.matchmaking.parties import LocalParties, RedisParties
from app.matchmaking.service import (
    MatchmakingConfig,
    MatchmakingService,
    bot_player_factory,
    pool_key,
)
from tests.conftest import REDIS_URL, make_db_url
from tests.matchmaking.conftest import new_ticket

SETUPS = [pytest.param("sqlite", id="sqlite-local"),
          pytest.param("postgres", id="postgres-redis", marks=[pytest.mark.postgres, pytest.mark.redis])]


@pytest.fixture(params=SETUPS, scope="module")
def mm_db(request, tmp_path_factory):
    url, pg = make_db_url(request.param, tmp_path_factory.mktemp("mmdb"))
    upgrade(url)
    yield request.param, url
    if pg:
        pg.drop()


class Starts:
    """A ``create_match`` that starts the lobby's match through ``Repository.start_lobby_match`` (the
    lobby start's database path); ``gate`` can hold it to simulate a stalled node."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.gate: asyncio.Event | None = None
        #: set when a start reached a closed ``gate`` (the node is stalled there)
        self.held = asyncio.Event()
        self.started: list[dict[str, Any]] = []

    async def __call__(self, game: str, options: dict, seats: list, *, lobby_id: str) -> Any:
        if self.gate is not None:
            self.held.set()
            await self.gate.wait()
        base = {"id": uuid.uuid4().hex, "game": game, "options": options, "seat_count": len(seats), "seed": "00",
                "seed_hash": "00", "status": "running", "lobby_id": lobby_id, "deadlines": {}, "outcome": None,
                "version": 0, "created_at": time.time(), "ended_at": None}
        match = await self.repo.start_lobby_match(lobby_id, lambda locked: {**base, "seats": locked})
        self.started.append(match)
        return SimpleNamespace(match_id=match["id"])


@pytest.fixture
async def nodes(mm_db):
    """Two services ("nodes") on one database and one queue, with claims of 0.3 s."""
    kind, url = mm_db
    prefix = f"bftest:{uuid.uuid4().hex}:"
    engines, clients, made = [], [], []
    local = LocalParties()
    for _ in range(2):
        engine = make_engine(url)
        engines.append(engine)
        repo = Repository(engine)
        if kind == "sqlite":
            store: Any = local
        else:
            client = Redis.from_url(REDIS_URL)
            clients.append(client)
            store = RedisParties(client, REDIS_URL, prefix, ticket_ttl=300)
        await store.start()
        config = MatchmakingConfig(window=Window(3.0, 0.5, 30.0), tick_seconds=0.05, claim_seconds=0.3)
        starts = Starts(repo)
        service = MatchmakingService(store, repo, starts, config, make_bot=bot_player_factory("smart", hash_token))
        service.starts = starts  # type: ignore[attr-defined]
        made.append(service)
    yield made
    for s in made:
        await s.store.close()
    for e in engines:
        await e.dispose()
    if clients:
        keys = [k async for k in clients[0].scan_iter(match=prefix + "*", count=1000)]
        if keys:
            await clients[0].delete(*keys)
    for c in clients:
        await c.aclose()


async def queue(service: MatchmakingService, n: int, **kw: Any) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        pid = uuid.uuid4().hex
        await service.repo.create_player(pid, "p", "player", hash_token(uuid.uuid4().hex))
        out.append(await service.store.create(new_ticket(pid, **kw)))
    return out


async def test_a_match_is_made_through_a_server_lobby(nodes):
    a, _b = nodes
    tickets = await queue(a, 2)
    assert await a.tick() == 1
    done = [await a.store.get(t["id"]) for t in tickets]
    assert {t["status"] for t in done} == {"matched"}
    assert len({t["match_id"] for t in done}) == 1
    lobby = await a.repo.lobby(done[0]["lobby_id"])
    assert lobby["status"] == "started" and lobby["match_id"] == done[0]["match_id"]
    assert sorted(s["player_id"] for s in lobby["seats"]) == sorted(t["player_id"] for t in tickets)


async def test_bots_fill_after_the_ticket_wait(nodes):
    a, _b = nodes
    [ticket] = await queue(a, 1, seats=3, bots_after_seconds=0.0)
    assert await a.tick() == 1
    done = await a.store.get(ticket["id"])
    lobby = await a.repo.lobby(done["lobby_id"])
    assert [bool(s["bot"]) for s in lobby["seats"]] == [False, True, True]
    assert lobby["seats"][0]["player_id"] == ticket["player_id"]


async def test_a_stalled_claim_is_fenced_off_and_its_tickets_matched_once(nodes):
    a, b = nodes
    tickets = await queue(a, 2)
    a.starts.gate = asyncio.Event()
    stalled = asyncio.create_task(a.tick())  # a claims, makes the lobby, then stalls before the start
    await asyncio.wait_for(a.starts.held.wait(), 10)
    deadline = time.monotonic() + 10
    while not await b.store.expired_claims(time.time()):  # past the 0.3 s claim
        assert time.monotonic() < deadline, "a's claim never expired"
        await asyncio.sleep(0.02)
    assert await b.tick() == 1  # b settles the claim (closes a's lobby), then matches the tickets
    a.starts.gate.set()
    assert await asyncio.wait_for(stalled, 10) == 0  # a's start is refused: the lobby is closed
    done = [await b.store.get(t["id"]) for t in tickets]
    assert {t["status"] for t in done} == {"matched"} and len({t["match_id"] for t in done}) == 1
    started = a.starts.started + b.starts.started
    assert len(started) == 1 and started[0]["id"] == done[0]["match_id"]


async def test_a_claim_whose_node_died_before_the_lobby_is_tombstoned(nodes):
    a, b = nodes
    tickets = await queue(a, 2)
    ids = [t["id"] for t in tickets]
    assert await a.store.claim("c" * 32, tickets[0]["pool"], ids, time.time() - 1)  # a "dies" here
    await b.reap()
    assert {(await b.store.get(i))["status"] for i in ids} == {"waiting"}
    assert (await b.repo.lobby("c" * 32))["status"] == "closed"  # the tombstone
    from app.matchmaking.service import Fenced

    with pytest.raises(Fenced):  # a coming back cannot use the old claim
        await a._start("c" * 32, tickets, 0)


async def test_a_claim_whose_match_started_before_its_node_died_is_matched(nodes):
    a, b = nodes
    tickets = await queue(a, 2)
    ids = [t["id"] for t in tickets]
    claim = "d" * 32
    assert await a.store.claim(claim, tickets[0]["pool"], ids, time.time() - 1)
    match_id = await a._start(claim, tickets, 0)  # ... and a dies before marking the tickets
    await b.reap()
    done = [await b.store.get(i) for i in ids]
    assert {(t["status"], t["match_id"]) for t in done} == {("matched", match_id)}


async def test_two_nodes_racing_never_put_a_ticket_in_two_matches(nodes):
    a, b = nodes
    tickets = await queue(a, 24)
    for _ in range(6):
        await asyncio.gather(a.tick(), b.tick())
    done = [await a.store.get(t["id"]) for t in tickets]
    assert {t["status"] for t in done} == {"matched"}
    started = a.starts.started + b.starts.started
    seats = [s["player_id"] for m in started for s in m["seats"]]
    assert len(seats) == len(set(seats)) == 24 and len(started) == 12
    assert pool_key("provinces", 2, {}) == tickets[0]["pool"]


async def test_ratings_decide_who_plays_whom_and_the_window_widens(nodes):
    """Ratings come from ``RatingsRepository`` (issue 14 item 3): two strong and two new players
    queue; the strong play each other and the new play each other; a lone strong and a lone new
    player meet only once the window has widened to their difference."""
    from sqlalchemy import insert

    from app.db.models import PlayerRating
    from app.matchmaking.service import rating_of

    a, _b = nodes

    async def player(ordinal: float) -> str:
        pid = uuid.uuid4().hex
        await a.repo.create_player(pid, "p", "player", hash_token(uuid.uuid4().hex))
        if ordinal:
            async with a.repo.engine.begin() as conn:
                await conn.execute(insert(PlayerRating), [{"player_id": pid, "game": "provinces", "mu": ordinal + 6.0,
                                                           "sigma": 2.0, "ordinal": ordinal, "matches": 9, "wins": 5,
                                                           "updated_at": time.time()}])
        return pid

    strong = [await player(20.0), await player(21.0)]
    new = [await player(0.0), await player(0.0)]
    assert await rating_of(a.repo.engine, strong[0], "provinces") == 20.0
    assert await rating_of(a.repo.engine, new[0], "provinces") == 0.0
    now = time.time()
    order = [strong[0], new[0], strong[1], new[1]]  # interleaved in time
    tickets = {}
    for i, pid in enumerate(order):
        t = new_ticket(pid, rating=await rating_of(a.repo.engine, pid, "provinces"), created_at=now + i * 0.01)
        tickets[pid] = await a.store.create(t)
    assert await a.tick(now=now + 1) == 2
    match_of = {pid: (await a.store.get(t["id"]))["match_id"] for pid, t in tickets.items()}
    assert match_of[strong[0]] == match_of[strong[1]] != match_of[new[0]] == match_of[new[1]]
    # 20 apart: base 3 + 0.5/s reaches 20 after 34 s of waiting
    lone = [await player(20.0), await player(0.0)]
    t0 = await a.store.create(new_ticket(lone[0], rating=20.0, created_at=now))
    t1 = await a.store.create(new_ticket(lone[1], rating=0.0, created_at=now))
    assert await a.tick(now=now + 33.0) == 0
    assert {(await a.store.get(t["id"]))["status"] for t in (t0, t1)} == {"waiting"}
    assert await a.tick(now=now + 34.0) == 1


async def _party_ticket(service: MatchmakingService, size: int, seats: int, **kw: Any) -> dict[str, Any]:
    """A party of ``size`` real players queued for ``seats`` seats (through the store's party step)."""
    ids = []
    for _ in range(size):
        pid = uuid.uuid4().hex
        await service.repo.create_player(pid, "p", "player", hash_token(uuid.uuid4().hex))
        ids.append(pid)
    now = time.time()
    party = {"id": uuid.uuid4().hex, "leader_id": ids[0], "game": "provinces", "seats": seats, "options": {},
             "code": uuid.uuid4().hex, "code_expires_at": now + 600, "created_at": now}
    store: Any = service.store
    await store.create_party(party)
    for pid in ids[1:]:
        await store.join_party(party["code"], pid)
    return await store.queue_party(party["id"], ids[0], ids, new_ticket(ids[0], seats=seats, **kw))


async def test_parties_and_strangers_racing_on_two_nodes_each_party_whole_in_one_match(nodes):
    """Parties of 2 and 3 and strangers for 4-seat tables, both nodes forming matches at once: every
    party sits whole in one match, its leader first, nobody in two matches, every table full."""
    a, b = nodes
    parties = [await _party_ticket(a, 3, 4) for _ in range(3)] + [await _party_ticket(b, 2, 4) for _ in range(2)]
    strangers = await queue(a, 3, seats=4) + await queue(b, 4, seats=4)
    for _ in range(6):
        await asyncio.gather(a.tick(), b.tick())
    done = {t["id"]: await a.store.get(t["id"]) for t in parties + strangers}
    assert {t["status"] for t in done.values()} == {"matched"}
    started = {m["id"]: m for m in a.starts.started + b.starts.started}
    seated = [s["player_id"] for m in started.values() for s in m["seats"]]
    assert len(seated) == len(set(seated)) == 3 * 3 + 2 * 2 + 7 and len(started) == 5
    for p in parties:
        match = started[done[p["id"]]["match_id"]]
        ids = [s["player_id"] for s in match["seats"]]
        assert set(p["members"]) <= set(ids)
        at = ids.index(p["members"][0])
        assert ids[at:at + len(p["members"])] == p["members"]   # side by side, the leader first
