"""Issue 14 item 3 and 4: ratings change exactly once per finished match (under replay, retries, two
nodes and the sweep; never for aborted or running matches), each change recorded with its match;
the leaderboard's order agrees with the recorded changes, and its cursor is stable under inserts.

Storage tests run on real SQLite and Postgres with two engines (two connection pools, as two nodes
would have); the end-to-end test plays a real match on a real ``bannerfall serve``."""
from __future__ import annotations

import asyncio
import collections
import gc
import threading
import time
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import func, select, update

from app.client import MatchSocket, RestClient
from app.client.socket import play
from app.db import ratings as ratings_db
from app.db.database import make_engine
from app.db.migrate import upgrade, upgrade_async
from app.db.paging import BadCursor
from app.db.ratings import DEFAULT_RATING, RatingRules, RatingsRepository, ordinal
from app.db.repo import MatchWrite, Repository
from app.db.tables import accounts_t, actions_t, lobbies_t, marks_t, matches_t, ratings_t
from app.ratings import Rater
from app.runtime.bots import make_bot
from tests.conftest import ServerProcess, make_db_url
from tests.timing import scaled


@pytest.fixture(params=["sqlite", "postgres"], scope="module")
def rating_db(request, tmp_path_factory):
    if request.param == "postgres":
        request.getfixturevalue("postgres_server")
    url, pg = make_db_url(request.param, tmp_path_factory.mktemp("ratingdb"))
    upgrade(url)
    yield url
    if pg:
        pg.drop()


@pytest.fixture
async def two_nodes(rating_db):
    """A repository and two nodes' ratings. On SQLite the first node rates through its log
    committer's thread (as ``bannerfall serve`` does), the second through its engine (the path of
    SQLite without a committer), so both paths and their interplay are covered."""
    engines = [make_engine(rating_db), make_engine(rating_db)]
    repos = [Repository(e) for e in engines]
    if rating_db.startswith("sqlite"):
        assert repos[0].log_committer is not None
    yield repos[0], [RatingsRepository(engines[0], writer=repos[0].log_committer, rules=OPEN_RULES),
                     RatingsRepository(engines[1], rules=OPEN_RULES)]
    for r in repos:
        await r.aclose()
    for e in engines:
        await e.dispose()


#: the rules without the repeated-opponent rule and provisional ratings: for the tests of exactly
#: once, chaining and paging, which replay many matches between few players
OPEN_RULES = RatingRules(repeat_limit=0, provisional_matches=0)


async def new_player(repo: Repository, role: str = "player", *, account: bool = True) -> str:
    """A player; with ``account`` (players only) it has an account, as rated matches need."""
    pid = uuid.uuid4().hex
    await repo.create_player(pid, "p", role, uuid.uuid4().hex + uuid.uuid4().hex[:32])
    if account and role == "player":
        async with repo.engine.begin() as conn:
            await conn.execute(accounts_t.insert().values(player_id=pid, username=f"u{pid[:20]}",
                                                          username_key=f"u{pid}", password_hash="x",
                                                          created_at=time.time(), updated_at=time.time()))
    return pid


async def ended_match(repo: Repository, players: list[str | None], ranks: list[int], *, game: str = "provinces",
                      status: str = "finished", bots: frozenset[int] = frozenset(), rated: bool = True) -> dict:
    """A match row as the runtime leaves it: ``players`` by seat (None: a bot made for the seat),
    from a lobby that is ``rated`` (as quick play's are)."""
    seats = []
    for seat, pid in enumerate(players):
        if pid is None:
            pid = await new_player(repo, "bot")
            bots = frozenset({*bots, seat})
        seats.append({"player_id": pid, "name": "x", "bot": "smart" if seat in bots else None})
    lobby_id = uuid.uuid4().hex
    async with repo.engine.begin() as conn:
        await conn.execute(lobbies_t.insert().values(id=lobby_id, game=game, options={}, seat_count=len(seats),
                                                     host_id=seats[0]["player_id"], status="started",
                                                     created_at=time.time(), rated=rated))
    match: dict[str, Any] = {"id": uuid.uuid4().hex, "game": game, "options": {}, "seat_count": len(seats),
                             "seats": seats,
             "seed": "00", "seed_hash": "00", "status": "running", "lobby_id": lobby_id, "deadlines": {},
             "outcome": None, "version": 0, "created_at": time.time(), "ended_at": None}
    await repo.create_match(match)
    outcome = {"ranks": {str(s): r for s, r in enumerate(ranks)}, "scores": {}, "reason": "t"}
    if status == "aborted":
        outcome = {"ranks": {}, "scores": {}, "reason": "aborted: t"}
    if status != "running":  # the end as the runtime leaves it (written directly: no log needed here)
        async with repo.engine.begin() as conn:
            await conn.execute(update(matches_t).where(matches_t.c.id == match["id"])
                               .values(status=status, ended_at=time.time(), outcome=outcome))
    row = await repo.match(match["id"])
    assert row is not None
    return row


async def test_unrated_players_have_the_openskill_default(two_nodes):
    _, (a, _) = two_nodes
    assert DEFAULT_RATING.mu == 25.0 and abs(DEFAULT_RATING.sigma - 25 / 3) < 1e-12 and DEFAULT_RATING.ordinal == 0
    assert await a.rating("nobody", "provinces") == DEFAULT_RATING
    assert await a.ratings(["x", "y"], "warrior") == {"x": DEFAULT_RATING, "y": DEFAULT_RATING}


async def test_a_match_is_rated_once_across_nodes_retries_and_sweeps(two_nodes):
    repo, (a, b) = two_nodes
    winner, loser = await new_player(repo), await new_player(repo)
    match = await ended_match(repo, [loser, winner], [2, 1])
    # the node that ran it, a second node that saw the end, and both sweeps, all at once
    results = await asyncio.gather(a.rate_match(match), b.rate_match(match), a.rate_match(match), b.rate_match(match),
                                   Rater(a, sweep_seconds=60).sweep(), Rater(b, sweep_seconds=60).sweep())
    assert sorted(r for r in results[:4] if r is not None) == [2]
    w, l_ = await a.rating(winner, "provinces"), await a.rating(loser, "provinces")
    assert (w.matches, w.wins, l_.matches, l_.wins) == (1, 1, 1, 0)
    assert w.mu > 25 > l_.mu and w.ordinal > l_.ordinal
    changes = await a.changes(match_id=match["id"])
    assert sorted(c["player_id"] for c in changes) == sorted([winner, loser])
    # the end replayed (even with another outcome) changes nothing
    replayed = {**match, "outcome": {"ranks": {"0": 1, "1": 2}, "scores": {}, "reason": "t"}}
    assert await a.rate_match(replayed) is None and await b.rate_match(match) is None
    assert await a.rating(winner, "provinces") == w
    assert len(await a.changes(match_id=match["id"])) == 2
    assert match["id"] not in [m["id"] for m in await a.unrated_matches()]


async def test_aborted_and_running_matches_rate_nobody(two_nodes):
    repo, (a, _) = two_nodes
    p, q = await new_player(repo), await new_player(repo)
    aborted = await ended_match(repo, [p, q], [1, 2], status="aborted")
    running = await ended_match(repo, [p, q], [1, 2], status="running")
    assert await a.rate_match(aborted) == 0
    assert await a.rate_match(running) is None
    assert await a.rating(p, "provinces") == DEFAULT_RATING
    assert await a.changes(player_id=p) == []
    unrated = [m["id"] for m in await a.unrated_matches()]
    assert aborted["id"] not in unrated and running["id"] not in unrated


async def test_bots_guests_and_unrated_lobbies_never_move_a_rating(two_nodes):
    """Only a rated lobby's match whose every seat is a distinct account is rated: one bot, one
    guest, an unrated lobby, or one player in two seats, and the match rates nobody (marked, so
    the sweep does not come back to it)."""
    repo, (a, _) = two_nodes
    human, other = await new_player(repo), await new_player(repo)
    guest = await new_player(repo, account=False)
    cases = [await ended_match(repo, [None, human, other], [3, 1, 2]),   # a bot
             await ended_match(repo, [guest, human], [2, 1]),            # a guest
             await ended_match(repo, [other, human], [2, 1], rated=False),  # a lobby not rated
             await ended_match(repo, [human, human, other], [1, 2, 3])]  # one player twice
    for match in cases:
        assert await a.rate_match(match) == 0
        assert await a.changes(match_id=match["id"]) == []
    bot_ids = [s["player_id"] for s in cases[0]["seats"] if s["bot"]]
    assert all(r == DEFAULT_RATING for r in (await a.ratings([*bot_ids, human, other, guest], "provinces")).values())
    assert not {m["id"] for m in cases} & {m["id"] for m in await a.unrated_matches()}
    # the same two accounts in a rated lobby: rated
    rated = await ended_match(repo, [other, human], [2, 1])
    assert await a.rate_match(rated) == 2 and (await a.rating(human, "provinces")).wins == 1


async def test_two_matches_of_one_player_ending_together_chain_their_changes(two_nodes):
    repo, (a, b) = two_nodes
    p, x, y = await new_player(repo), await new_player(repo), await new_player(repo)
    m1 = await ended_match(repo, [p, x], [1, 2])
    m2 = await ended_match(repo, [y, p], [1, 2])
    assert sorted(await asyncio.gather(a.rate_match(m1), b.rate_match(m2))) == [2, 2]
    mine = await a.changes(player_id=p)
    assert len(mine) == 2
    first, second = sorted(mine, key=lambda c: c["mu_before"] != 25.0)
    # neither update was lost: the second started from the first's result
    assert (second["mu_before"], second["sigma_before"]) == (first["mu_after"], first["sigma_after"])
    final = await a.rating(p, "provinces")
    assert (final.mu, final.sigma, final.matches) == (second["mu_after"], second["sigma_after"], 2)


async def test_leaderboard_order_agrees_with_the_recorded_changes(two_nodes):
    repo, (a, b) = two_nodes
    game = "warrior"
    players = [await new_player(repo) for _ in range(5)]
    import random

    rng = random.Random(7)
    for i in range(12):
        seated = rng.sample(players, rng.randint(2, 4))
        ranks = list(range(1, len(seated) + 1))
        rng.shuffle(ranks)
        match = await ended_match(repo, seated, ranks, game=game)
        await (a if i % 2 else b).rate_match(match)
    # every player's rating is its last recorded change, and each change starts where the last ended
    expected = {}
    for pid in players:
        chain = await a.changes(player_id=pid, game=game)
        if not chain:
            continue
        mu, sigma = 25.0, 25.0 / 3.0
        for c in chain:
            assert (c["mu_before"], c["sigma_before"]) == (mu, sigma)
            mu, sigma = c["mu_after"], c["sigma_after"]
        expected[pid] = ordinal(mu, sigma)
    board = await a.leaderboard(game, limit=50, me=players[0])
    got = [(r["player_id"], r["ordinal"]) for r in board["items"]]
    assert got == sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))
    assert [r["rank"] for r in board["items"]] == list(range(1, len(got) + 1))
    assert board["me"]["rank"] == 1 + [pid for pid, _ in got].index(players[0])
    assert board["next_cursor"] is None


async def test_leaderboard_cursor_is_stable_under_inserts(two_nodes):
    repo, (a, _) = two_nodes
    game = "conquest"
    for _ in range(4):
        m = await ended_match(repo, [await new_player(repo), await new_player(repo)], [1, 2], game=game)
        await a.rate_match(m)
    seen: list[str] = []
    page = await a.leaderboard(game, limit=3)
    seen += [r["player_id"] for r in page["items"]]
    before = {r["player_id"] for r in (await a.leaderboard(game, limit=100))["items"]}
    # new players are rated between pages: some above the cursor, some below
    for _ in range(3):
        m = await ended_match(repo, [await new_player(repo), await new_player(repo)], [1, 2], game=game)
        await a.rate_match(m)
    cursor = page["next_cursor"]
    while cursor:
        page = await a.leaderboard(game, limit=3, cursor=cursor)
        seen += [r["player_id"] for r in page["items"]]
        cursor = page["next_cursor"]
    assert len(seen) == len(set(seen))  # nobody twice
    assert before <= set(seen)  # nobody who was there all along skipped
    with pytest.raises(BadCursor):
        await a.leaderboard("provinces", limit=3, cursor=(await a.leaderboard(game, limit=1))["next_cursor"])
    with pytest.raises(BadCursor):
        await a.leaderboard(game, limit=3, cursor="not-a-cursor!")


# -- end to end: a real match on a real server ---------------------------------------------------

# -- SQLite: rating on the log committer's thread (issue 11: no write lock across loop turns) --------
@pytest.fixture
async def embedded(tmp_path):
    """SQLite in a file, as ``bannerfall serve`` has it: ratings written through the repository's
    log committer."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'embedded.db'}"
    await upgrade_async(url)
    engine = make_engine(url)
    repo = Repository(engine)
    assert repo.log_committer is not None
    yield repo, RatingsRepository(engine, writer=repo.log_committer, rules=OPEN_RULES)
    await repo.aclose()
    await engine.dispose()


async def _count(repo: Repository, table, *where) -> int:
    async with repo.engine.connect() as conn:
        return (await conn.execute(select(func.count()).select_from(table).where(*where))).scalar_one()


async def test_on_sqlite_a_match_is_rated_in_one_job_on_the_log_committers_thread(embedded, monkeypatch):
    repo, ratings = embedded
    p, q = await new_player(repo), await new_player(repo)
    match = await ended_match(repo, [p, q], [1, 2])
    seen: list[tuple[str, bool]] = []
    real = ratings_db.rate_match_sync

    def spy(conn, match, now, rules):
        assert repo.log_committer is not None
        seen.append((threading.current_thread().name,
                     conn.connection.dbapi_connection is repo.log_committer._conn))
        return real(conn, match, now, rules)

    monkeypatch.setattr(ratings_db, "rate_match_sync", spy)
    assert await ratings.rate_match(match) == 2
    assert seen == [("sqlite-log", True)]  # the committer's thread and its own sqlite3 connection
    assert await ratings.rate_match(match) is None
    assert (await ratings.rating(p, "provinces")).wins == 1


async def test_on_sqlite_a_rating_that_fails_midway_leaves_nothing_and_the_committer_works_on(embedded, monkeypatch):
    repo, ratings = embedded
    p, q = await new_player(repo), await new_player(repo)
    match = await ended_match(repo, [p, q], [2, 1])

    def boom():  # after the marker and the new players' rows were written
        raise RuntimeError("openskill failed")

    monkeypatch.setattr(ratings_db, "_model", boom)
    with pytest.raises(RuntimeError, match="openskill failed"):
        await ratings.rate_match(match)
    monkeypatch.undo()
    assert await _count(repo, marks_t, marks_t.c.match_id == match["id"]) == 0
    assert await _count(repo, ratings_t, ratings_t.c.player_id.in_([p, q])) == 0
    assert match["id"] in [m["id"] for m in await ratings.unrated_matches()]
    # a driver error comes out as SQLAlchemy raises it, and is rolled back too (no such player:
    # the ratings row's foreign key fails after the marker was inserted)
    ghost = {**match, "seats": [match["seats"][0], {"player_id": "ghost", "name": "g", "bot": None}]}
    monkeypatch.setattr(ratings_db, "is_rated", lambda conn, m: True)  # the ghost has no account either
    with pytest.raises(sa_exc.IntegrityError):
        await ratings.rate_match(ghost)
    monkeypatch.undo()
    assert await _count(repo, marks_t, marks_t.c.match_id == match["id"]) == 0
    # no transaction was left open on the committer's connection: a group commit and the retry work
    running = await ended_match(repo, [p, q], [1, 2], status="running")
    row = {"match_id": running["id"], "seq": 1, "seat": 0, "kind": "act", "action": {"type": "x"},
           "client_seq": 1, "deadlines": {}, "created_at": time.time()}
    assert await repo.commit_batch([MatchWrite(running["id"], 0, [row])]) == set()
    assert await ratings.rate_match(match) == 2
    assert (await ratings.rating(q, "provinces")).wins == 1


async def test_on_sqlite_log_commits_and_ratings_running_together_all_succeed(embedded):
    repo, ratings = embedded
    players = [await new_player(repo) for _ in range(8)]
    pairs = [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3)]
    ended = [await ended_match(repo, [players[a], players[b]], [1, 2]) for a, b in pairs]
    ended += [await ended_match(repo, [players[0], players[3], players[5]], [2, 1, 3]) for _ in range(4)]
    running = [await ended_match(repo, [players[0], None], [1, 2], status="running") for _ in range(6)]
    other_node = RatingsRepository(repo.engine)  # through the engine: holds the lock across loop turns

    async def play_log(match_id: str) -> None:
        for seq in range(1, 21):
            row = {"match_id": match_id, "seq": seq, "seat": 0, "kind": "act", "action": {"n": seq},
                   "client_seq": seq, "deadlines": {}, "created_at": time.time()}
            assert await repo.commit_batch([MatchWrite(match_id, 0, [row])]) == set()

    results = await asyncio.gather(*(play_log(m["id"]) for m in running),
                                   *(ratings.rate_match(m) for m in ended), *(other_node.rate_match(m) for m in ended))
    rated = [r for r in results[len(running):] if r is not None]
    assert sorted(rated) == sorted([2] * 6 + [3] * 4)  # each match once, by one of the two
    assert await _count(repo, actions_t, actions_t.c.match_id.in_([m["id"] for m in running])) == 20 * len(running)
    assert await _count(repo, marks_t) == len(ended)
    p0 = await ratings.rating(players[0], "provinces")
    assert p0.matches == len(await ratings.changes(player_id=players[0])) == 6


async def test_rating_matches_leaves_no_cyclic_garbage_but_openskills(embedded):
    """The rating transaction's statements are constants (``in_list``): the per-match statements
    left ~40 objects (BindParameter, _anonymous_label, Comparator, dict, frozenset) in reference
    cycles per match. What is left is openskill's: its compiled ``_unwind`` closures (called twice
    per ``rate``) make 4 objects in a cycle each time."""
    repo, ratings = embedded
    matches = []
    for ranks in ([1, 2, 3, 4], [2, 1, 1, 3]) * 5:
        matches.append(await ended_match(repo, [await new_player(repo) for _ in range(4)], ranks))
    await ratings.rate_match(matches.pop())  # statements compiled and cached, openskill imported
    engine_path = RatingsRepository(repo.engine)  # the default rules: the repeated-opponent query too
    await engine_path.rate_match(matches.pop())
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        for m in matches[:4]:
            assert await ratings.rate_match(m) == 4
        for m in matches[4:]:
            assert await engine_path.rate_match(m) == 4
        found = gc.collect()
        kinds = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert all(k.startswith("openskill.") or k == "builtins.list" for k in kinds), kinds
    assert found <= 8 * len(matches), kinds


def test_a_played_match_changes_ratings_once_and_shows_on_the_leaderboard_and_profile(tmp_path):
    """Two accounts play a rated lobby's match to its end (a rated match needs accounts only)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'rated.db'}"
    srv = ServerProcess(url, env={"BANNERFALL_RATING_SWEEP_SECONDS": "0.5",
                                  "BANNERFALL_RATING_PROVISIONAL_MATCHES": "1"}).start()
    try:
        match_id, player = asyncio.run(_play_one(srv.url))
        auth = {"Authorization": f"Bearer {player['token']}"}
        profile = _wait_for(lambda: httpx.get(f"{srv.url}/api/v1/players/{player['id']}", headers=auth).json(),
                            lambda p: p["ratings"].get("provinces", {}).get("matches") == 1)
        assert profile["recent_matches"][0]["match_id"] == match_id
        assert "token" not in str(profile) and "token_hash" not in str(profile)
        board = httpx.get(f"{srv.url}/api/v1/games/provinces/leaderboard", headers=auth).json()
        assert board["me"]["player"]["id"] == player["id"]
        assert board["me"]["rating"] == profile["ratings"]["provinces"]
        # the admin's replay of the match, then a second node seeing the end (rating it from the
        # stored row, as its sweep would) change nothing
        admin = {"Authorization": f"Bearer {srv.admin_token}"}
        replayed = httpx.get(f"{srv.url}/api/v1/admin/matches/{match_id}/replay?version=1", headers=admin)
        assert replayed.status_code == 200
        assert asyncio.run(_rate_from_another_node(url, match_id)) is None
        again = httpx.get(f"{srv.url}/api/v1/players/{player['id']}", headers=auth).json()
        assert again["ratings"] == profile["ratings"] and len(again["recent_matches"]) == 1
    finally:
        srv.stop()


async def _rate_from_another_node(url: str, match_id: str):
    engine = make_engine(url)
    try:
        match = await Repository(engine).match(match_id)
        assert match is not None
        return await RatingsRepository(engine).rate_match(match)
    finally:
        await engine.dispose()


async def _play_one(url: str) -> tuple[str, dict]:
    async with RestClient(url, timeout=15.0) as host, RestClient(url, timeout=15.0) as guest:
        reg = await host.register("rated human")
        await guest.register("rated rival")
        for client in (host, guest):
            await client.claim(f"acct{uuid.uuid4().hex[:12]}", uuid.uuid4().hex)
        lobby = await host.create_lobby("provinces", 2, {"max_rounds": 2}, rated=True)
        assert lobby["rated"] is True
        await guest.join(lobby["id"])
        match_id = (await host.start(lobby["id"]))["match_id"]
        socks = [MatchSocket(url, match_id, c.token) for c in (host, guest)]
        for sock in socks:
            await sock.connect()
        ended = await asyncio.gather(*(play(sock, make_bot("provinces", "smart", i).decide, idle_timeout=120)
                                       for i, sock in enumerate(socks)))
        for sock in socks:
            await sock.close()
        assert [e["type"] for e in ended] == ["ended", "ended"]
        return match_id, {"id": reg["player"]["id"], "token": host.token}


def _wait_for(fetch, ok, timeout: float = 20.0):
    end = time.monotonic() + scaled(timeout)
    while True:
        value = fetch()
        if ok(value) or time.monotonic() > end:
            assert ok(value), value
            return value
        time.sleep(0.1)


def test_the_sweep_rates_a_match_that_ended_while_no_node_rated_it(tmp_path):
    """A match that finished with no rater running (a node died between its end and its rating):
    the next node's sweep at start rates it, once."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'sweep.db'}"
    upgrade(url)

    async def leave_an_unrated_match() -> tuple[str, str, str]:
        engine = make_engine(url)
        try:
            repo = Repository(engine)
            a, b = await new_player(repo), await new_player(repo)
            match = await ended_match(repo, [a, b], [2, 1])
            return a, b, match["id"]
        finally:
            await engine.dispose()

    loser, winner, match_id = asyncio.run(leave_an_unrated_match())
    srv = ServerProcess(url, env={"BANNERFALL_RATING_SWEEP_SECONDS": "0.3",
                                  "BANNERFALL_RATING_PROVISIONAL_MATCHES": "1"}).start()
    try:
        guest = httpx.post(f"{srv.url}/api/v1/players", json={"name": "looker"}).json()["token"]
        auth = {"Authorization": f"Bearer {guest}"}
        profile = _wait_for(lambda: httpx.get(f"{srv.url}/api/v1/players/{winner}", headers=auth).json(),
                            lambda p: "provinces" in p["ratings"])
        assert profile["ratings"]["provinces"]["wins"] == 1
        assert [m["match_id"] for m in profile["recent_matches"]] == [match_id]
        board = httpx.get(f"{srv.url}/api/v1/games/provinces/leaderboard", headers=auth).json()
        assert [r["player"]["id"] for r in board["items"]] == [winner, loser] and board["me"] is None
    finally:
        srv.stop()


# -- rated matches that cannot be farmed (the repeated-opponent rule, provisional ratings) ---------
@pytest.fixture
async def ruled(rating_db):
    """The default rules (repeated-opponent limit 3 a day, 10 weighted matches before the
    leaderboard), on a fresh game id per test so earlier tests' players are not on its board."""
    engine = make_engine(rating_db)
    repo = Repository(engine)
    yield repo, RatingsRepository(engine, writer=repo.log_committer), f"g{uuid.uuid4().hex[:8]}"
    await repo.aclose()
    await engine.dispose()


def _weighted_chain(wins: int, weights: list[float]) -> float:
    """The winner's ordinal after ``wins`` two-seat wins over a fresh opponent's chain, each
    openskill change scaled by its weight: the rule, computed independently of the server."""
    from openskill.models import PlackettLuce

    model = PlackettLuce(mu=25.0, sigma=25.0 / 3.0)
    me, other = model.rating(), model.rating()
    for w in weights[:wins]:
        new_me, new_other = (t[0] for t in model.rate([[me], [other]], ranks=[1.0, 2.0]))
        me = model.rating(mu=me.mu + w * (new_me.mu - me.mu), sigma=me.sigma + w * (new_me.sigma - me.sigma))
        other = model.rating(mu=other.mu + w * (new_other.mu - other.mu),
                             sigma=other.sigma + w * (new_other.sigma - other.sigma))
    return ordinal(me.mu, me.sigma)


async def test_a_second_account_beaten_six_times_moves_the_rating_only_as_the_rule_allows(ruled):
    """The scenario of the report: a player beats a second account of their own six times. With the
    rule (N = 3 a day) the wins count 1, 2/3, 1/3, 0, 0, 0; the farmer has 2 weighted matches, so
    the rating stays provisional: off the leaderboard, not rank 1, while established players are
    listed."""
    repo, ratings, game = ruled
    # eleven established accounts, each pair once (10 matches each, all of full weight)
    regulars = [await new_player(repo) for _ in range(11)]
    for i, a in enumerate(regulars):
        for b in regulars[i + 1:]:
            assert await ratings.rate_match(await ended_match(repo, [a, b], [1, 2], game=game)) == 2
    farmer, alt = await new_player(repo), await new_player(repo)
    for _ in range(6):
        assert await ratings.rate_match(await ended_match(repo, [farmer, alt], [1, 2], game=game)) == 2
    chain = await ratings.changes(player_id=farmer, game=game)
    assert [round(c["weight"], 6) for c in chain] == [1.0, round(2 / 3, 6), round(1 / 3, 6), 0.0, 0.0, 0.0]
    for c in chain[3:]:   # past the limit a win changes nothing
        assert (c["mu_after"], c["sigma_after"]) == (c["mu_before"], c["sigma_before"])
    mine = await ratings.rating(farmer, game)
    assert abs(mine.ordinal - _weighted_chain(6, [1, 2 / 3, 1 / 3, 0, 0, 0])) < 1e-9
    assert mine.ordinal < _weighted_chain(6, [1.0] * 6) - 5          # what six full wins would give
    assert (mine.matches, mine.wins, round(mine.weighted_matches, 6)) == (6, 6, 2.0)
    board = await ratings.leaderboard(game, limit=100, me=farmer)
    listed = [r["player_id"] for r in board["items"]]
    assert farmer not in listed and alt not in listed and sorted(listed) == sorted(regulars)
    assert board["me"]["player_id"] == farmer and board["me"]["rank"] is None   # provisional
    assert board["items"][0]["player_id"] != farmer and board["items"][0]["rank"] == 1
    assert ratings.provisional(mine) and not ratings.provisional(await ratings.rating(regulars[0], game))


async def test_the_weight_is_the_mean_over_the_opponents_and_the_window_rolls(ruled, monkeypatch):
    repo, ratings, game = ruled
    a, b, c = [await new_player(repo) for _ in range(3)]
    for _ in range(3):   # a and b meet three times: their next meeting counts nothing
        await ratings.rate_match(await ended_match(repo, [a, b], [1, 2], game=game))
    three = await ended_match(repo, [a, b, c], [1, 2, 3], game=game)
    await ratings.rate_match(three)
    weights = {ch["player_id"]: ch["weight"] for ch in await ratings.changes(match_id=three["id"])}
    # a: (0 with b + 1 with c) / 2; b the same; c met nobody before: 1
    assert weights == {a: 0.5, b: 0.5, c: 1.0}
    # a day later the window has rolled past their meetings: full weight again
    later = time.time() + 86_400 + 60
    monkeypatch.setattr(ratings_db.time, "time", lambda: later)
    again = await ended_match(repo, [a, b], [2, 1], game=game)
    await ratings.rate_match(again)
    assert [ch["weight"] for ch in await ratings.changes(match_id=again["id"])] == [1.0, 1.0]
