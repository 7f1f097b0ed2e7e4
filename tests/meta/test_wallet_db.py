"""The meta-game's storage on real SQLite and Postgres (conquest.md 5; Nakama: a balance and its
ledger change in one transaction, the ledger explains every unit).

Concurrency is real: two engines (two connection pools, as two nodes would have) race on one
database.
"""
from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Any

import pytest

from app.config import Settings
from app.db.database import make_engine
from app.db.migrate import upgrade
from app.db.repo import MatchWrite, Repository
from app.db.wallet import (
    CRYSTALS,
    InsufficientCrystals,
    LifetimeSpent,
    WalletRepository,
)
from tests.conftest import make_db_url

STRIP = list(Settings().spin_strip)
PAYTABLE = {"2": 3, "3": 10}


@pytest.fixture(params=["sqlite", "postgres"], scope="module")
def meta_db(request, tmp_path_factory):
    url, pg = make_db_url(request.param, tmp_path_factory.mktemp("metadb"))
    upgrade(url)
    yield url
    if pg:
        pg.drop()


@pytest.fixture
async def two_nodes(meta_db):
    """Two independent engines on the same database."""
    engines = [make_engine(meta_db), make_engine(meta_db)]
    yield Repository(engines[0]), [WalletRepository(e) for e in engines]
    for e in engines:
        await e.dispose()


async def new_player(repo: Repository) -> str:
    pid = uuid.uuid4().hex
    await repo.create_player(pid, "p", "player", uuid.uuid4().hex + uuid.uuid4().hex[:32])
    return pid


async def assert_ledger_explains_balances(wallets: WalletRepository, player_id: str) -> None:
    balances = await wallets.balances(player_id)
    sums = await wallets.ledger_sums(player_id)
    assets = set(balances) | set(sums)
    assert {k: balances.get(k, 0) for k in assets} == {k: sums.get(k, 0) for k in assets}


@pytest.mark.parametrize("balance_for", [1, 3])
async def test_racing_spins_on_a_balance_that_pays_for_n_5_2(two_nodes, balance_for):
    repo, (a, b) = two_nodes
    pid = await new_player(repo)
    price = 20
    await a.grant_crystals(pid, price * balance_for + price - 1, actor="admin", reason="race")

    async def one(w: WalletRepository, i: int):
        try:
            return await w.play_spin(pid, price=price, strip=STRIP, paytable=PAYTABLE, client_seed=str(i))
        except InsufficientCrystals as exc:
            return exc

    results = await asyncio.gather(*(one(a if i % 2 else b, i) for i in range(12)))
    won = [r for r in results if isinstance(r, dict)]
    assert len(won) == balance_for
    assert all(isinstance(r, InsufficientCrystals) for r in results if not isinstance(r, dict))
    assert (await a.wallet(pid))["crystals"] == price - 1
    # every successful spin used a different committed seed, and each verifies
    assert len({r["seed"] for r in won}) == balance_for
    for r in won:
        assert r["seed_hash"] != r["next_seed_hash"]
    await assert_ledger_explains_balances(a, pid)


async def test_spin_consumes_the_published_commitment(two_nodes):
    repo, (a, _b) = two_nodes
    pid = await new_player(repo)
    committed = (await a.wallet(pid))["next_spin_seed_hash"]
    with pytest.raises(InsufficientCrystals):
        await a.play_spin(pid, price=20, strip=STRIP, paytable=PAYTABLE)
    assert (await a.wallet(pid))["next_spin_seed_hash"] == committed  # a refused spin changes nothing
    await a.grant_crystals(pid, 20, actor="admin", reason="t")
    spin = await a.play_spin(pid, price=20, strip=STRIP, paytable=PAYTABLE, client_seed="x")
    assert spin["seed_hash"] == committed and spin["balance"] == 0
    assert (await a.wallet(pid))["next_spin_seed_hash"] == spin["next_seed_hash"] != committed
    assert (await a.spin(spin["id"]))["reels"] == spin["reels"]


async def test_negative_grant_never_overdraws(two_nodes):
    repo, (a, b) = two_nodes
    pid = await new_player(repo)
    await a.grant_crystals(pid, 10, actor="admin", reason="t")
    results = await asyncio.gather(*(w.grant_crystals(pid, -7, actor="admin", reason="t") for w in (a, b)),
                                   return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["InsufficientCrystals", "int"]
    assert (await a.wallet(pid))["crystals"] == 3
    rows = await a.ledger(pid)
    assert [(r["kind"], r["delta"], r["actor"], r["reason"]) for r in rows] == [
        ("grant", -7, "admin", "t"), ("grant", 10, "admin", "t")]


async def _finished_match(repo: Repository, seats: list[dict], status: str = "finished") -> dict:
    """A match that ended the way a runner ends one: its last log record and the end update in one
    fenced group commit (owner epoch 1, the creator's)."""
    loadouts = [s.get("loadout", []) for s in seats]
    match: dict[str, Any] = {
             "id": uuid.uuid4().hex, "game": "conquest", "options": {"loadouts": loadouts},
             "seat_count": len(seats), "seats": seats, "seed": "00", "seed_hash": "00", "status": "running",
             "lobby_id": None, "deadlines": {}, "outcome": None, "version": 0, "created_at": time.time(),
             "ended_at": None, "owner_epoch": 1, "owner_node": "test"}
    await repo.create_match(match)
    last = {"match_id": match["id"], "seq": 1, "seat": None, "kind": "abort" if status == "aborted" else "act",
            "action": {"type": status}, "client_seq": None, "deadlines": {}, "created_at": time.time()}
    refused = await repo.commit_batch([MatchWrite(match["id"], 1, [last],
                                                  {"status": status, "ended_at": time.time()})])
    assert refused == set()
    ended = await repo.match(match["id"])
    assert ended is not None and ended["status"] == status
    return ended


async def test_lifetime_counts_once_per_finished_match_across_nodes_5_1_2(two_nodes):
    repo, (a, b) = two_nodes
    p1, p2 = await new_player(repo), await new_player(repo)
    await a.grant_special(p1, "scout", 2, actor="admin", reason="t")
    await a.grant_special(p1, "hound", 1, actor="admin", reason="t")
    await a.grant_special(p2, "joker", 5, actor="admin", reason="t")
    seats = [{"player_id": p1, "name": "a", "bot": None, "loadout": ["scout", "hound"]},
             {"player_id": p2, "name": "b", "bot": None, "loadout": ["joker"]},
             {"player_id": uuid.uuid4().hex, "name": "bot", "bot": "smart", "loadout": ["spy"]}]
    match = await _finished_match(repo, seats)
    # the node that ran it, a second node, and both sweeps, all at once
    results = await asyncio.gather(a.settle_match(match), b.settle_match(match),
                                   a.settle_match(match), b.settle_match(match))
    assert sorted(r for r in results if r is not None) == [3]
    assert await a.owned(p1) == {"scout": 1}  # hound expired
    assert await a.owned(p2) == {"joker": 4}
    assert await b.settle_match(match) is None
    assert [m["id"] for m in await a.unsettled_matches()].count(match["id"]) == 0
    kinds = [(r["asset"], r["kind"], r["delta"], r["ref"]) for r in await a.ledger(p1)]
    assert ("hound", "expiry", 0, match["id"]) in kinds
    assert kinds.count(("scout", "match_use", -1, match["id"])) == 1
    await assert_ledger_explains_balances(a, p1)
    await assert_ledger_explains_balances(a, p2)


async def test_racing_spins_of_one_player_queue_and_all_paid_ones_succeed(two_nodes):
    """Many spins of one player at once on two nodes, with the balance for all of them: they queue on
    the wallet's row lock and every one succeeds, each with its own committed seed, in a chain."""
    repo, (a, b) = two_nodes
    pid = await new_player(repo)
    await a.grant_crystals(pid, 20 * 12, actor="admin", reason="t")
    first_commitment = (await a.wallet(pid))["next_spin_seed_hash"]
    results = await asyncio.gather(*(w.play_spin(pid, price=20, strip=STRIP, paytable=PAYTABLE, client_seed=str(i))
                                     for i, w in enumerate([a, b] * 6)))
    assert (await a.wallet(pid))["crystals"] == 0
    # the spins form one chain of commitments: each used the hash the previous one published
    by_hash = {r["seed_hash"]: r for r in results}
    assert len(by_hash) == 12 and first_commitment in by_hash
    chain, h = [], first_commitment
    while h in by_hash:
        chain.append(by_hash[h])
        h = by_hash[h]["next_seed_hash"]
    assert len(chain) == 12
    assert len(await a.spins(pid)) == 12
    await assert_ledger_explains_balances(a, pid)


async def test_a_special_never_owned_counts_nothing(two_nodes):
    repo, (a, _b) = two_nodes
    p1 = await new_player(repo)
    match = await _finished_match(repo, [{"player_id": p1, "name": "a", "bot": None, "loadout": ["spy"]}])
    assert await a.settle_match(match) == 0
    assert await a.ledger(p1) == [] and await a.owned(p1) == {}


async def test_aborted_match_counts_nothing_but_is_settled(two_nodes):
    repo, (a, _b) = two_nodes
    p1 = await new_player(repo)
    await a.grant_special(p1, "scout", 2, actor="admin", reason="t")
    match = await _finished_match(repo, [{"player_id": p1, "name": "a", "bot": None, "loadout": ["scout"]}],
                                  status="aborted")
    assert await a.settle_match(match) == 0
    assert await a.owned(p1) == {"scout": 2}
    assert await a.settle_match(match) is None


async def test_running_match_is_not_settled(two_nodes):
    repo, (a, _b) = two_nodes
    p1 = await new_player(repo)
    await a.grant_special(p1, "scout", 1, actor="admin", reason="t")
    match = await _finished_match(repo, [{"player_id": p1, "name": "a", "bot": None, "loadout": ["scout"]}],
                                  status="running")
    assert await a.settle_match(match) is None
    assert await a.owned(p1) == {"scout": 1}


async def test_ledger_explains_every_unit_after_a_random_sequence(two_nodes):
    """Grants (positive and refused negative ones), spins (won and refused), special grants and
    finished matches, in a random order on two nodes: every balance equals the sum of its ledger."""
    repo, nodes = two_nodes
    rng = random.Random(12)
    players = [await new_player(repo) for _ in range(3)]
    ops = 0
    for _ in range(60):
        w = rng.choice(nodes)
        pid = rng.choice(players)
        op = rng.random()
        try:
            if op < 0.25:
                await w.grant_crystals(pid, rng.randint(-30, 60) or 1, actor="admin", reason="random")
            elif op < 0.6:
                await w.play_spin(pid, price=20, strip=STRIP, paytable={"1": 1, "2": 3, "3": 10},
                                  client_seed=str(rng.random()))
            elif op < 0.75:
                await w.grant_special(pid, rng.choice(STRIP[:15]), rng.randint(1, 10), actor="admin", reason="r")
            else:
                owned = await w.owned(pid)
                loadout = rng.sample(sorted(owned), min(len(owned), rng.randint(0, 3)))
                match = await _finished_match(repo, [{"player_id": pid, "name": "p", "bot": None, "loadout": loadout}])
                await asyncio.gather(*(n.settle_match(match) for n in nodes))
            ops += 1
        except InsufficientCrystals:
            pass
    assert ops > 30
    for pid in players:
        await assert_ledger_explains_balances(nodes[0], pid)
        balances = await nodes[0].balances(pid)
        assert all(v >= 0 for v in balances.values())
        assert balances[CRYSTALS] == (await nodes[0].wallet(pid))["crystals"]


# ---- lifetimes reserved when a match is created (seed §5.1.2: at most as many matches as left) ----

def _new_match(seats: list[dict]) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "game": "conquest", "options": {"loadouts": [s.get("loadout", []) for s in seats]},
            "seat_count": len(seats), "seats": [{k: v for k, v in s.items() if k != "loadout"} for s in seats],
            "seed": "00", "seed_hash": "00", "status": "running", "lobby_id": None, "deadlines": {}, "outcome": None,
            "version": 0, "created_at": time.time(), "ended_at": None, "owner_epoch": 1, "owner_node": "test"}


async def _end(repo: Repository, match: dict[str, Any], status: str) -> dict[str, Any]:
    last = {"match_id": match["id"], "seq": 1, "seat": None, "kind": "abort" if status == "aborted" else "act",
            "action": {"type": status}, "client_seq": None, "deadlines": {}, "created_at": time.time()}
    assert await repo.commit_batch([MatchWrite(match["id"], 1, [last], {"status": status, "ended_at": time.time()})]) \
        == set()
    ended = await repo.match(match["id"])
    assert ended is not None
    return ended


@pytest.fixture
async def two_repos(meta_db):
    """Two nodes: each its own engine, with its Repository and WalletRepository."""
    engines = [make_engine(meta_db), make_engine(meta_db)]
    yield [(Repository(e), WalletRepository(e)) for e in engines]
    for e in engines:
        await e.dispose()


async def test_a_special_with_n_matches_left_starts_at_most_n_matches_across_nodes_5_1_2(two_repos):
    """Ten matches created at once on two nodes, each bringing a special with 2 matches left: exactly
    two are created (the others are refused with LifetimeSpent and leave nothing behind)."""
    (repo_a, a), (repo_b, b) = two_repos
    pid = await new_player(repo_a)
    await a.grant_special(pid, "hound", 2, actor="admin", reason="t")
    seats = [{"player_id": pid, "name": "p", "bot": None, "loadout": ["hound"]},
             {"player_id": uuid.uuid4().hex, "name": "bot", "bot": "smart", "loadout": ["spy"]}]
    matches = [_new_match(seats) for _ in range(10)]

    async def create(i: int, match: dict[str, Any]):
        repo, wallets = (repo_a, a) if i % 2 else (repo_b, b)
        try:
            await repo.create_match(match, also=wallets.reserve_lifetimes)
            return match["id"]
        except LifetimeSpent as exc:
            assert exc.player_id == pid and exc.special == "hound"
            return None

    made = [m for m in await asyncio.gather(*(create(i, m) for i, m in enumerate(matches))) if m]
    assert len(made) == 2
    assert [await repo_a.match(m["id"]) is not None for m in matches].count(True) == 2  # refused: not inserted
    assert await a.owned(pid) == {}
    uses = [(r["kind"], r["delta"], r["ref"]) for r in await a.ledger(pid) if r["kind"] == "match_use"]
    assert sorted(uses) == sorted(("match_use", -1, m) for m in made)
    await assert_ledger_explains_balances(a, pid)
    # finishing them counts nothing more, whoever settles, however often
    for mid in made:
        ended = await _end(repo_a, {"id": mid}, "finished")
        assert sorted(r for r in await asyncio.gather(a.settle_match(ended), b.settle_match(ended))
                      if r is not None) == [0]
    rows = await a.ledger(pid)
    assert not [r for r in rows if r["reason"] == "already expired"]
    assert [r["kind"] for r in rows].count("match_use") == 2
    assert (await a.balances(pid))["hound"] == 0
    await assert_ledger_explains_balances(a, pid)


async def test_an_aborted_match_gives_its_reserved_lifetimes_back_once(two_repos):
    (repo_a, a), (_repo_b, b) = two_repos
    pid = await new_player(repo_a)
    await a.grant_special(pid, "scout", 1, actor="admin", reason="t")
    await a.grant_special(pid, "joker", 3, actor="admin", reason="t")
    match = _new_match([{"player_id": pid, "name": "p", "bot": None, "loadout": ["scout", "joker"]}])
    await repo_a.create_match(match, also=a.reserve_lifetimes)
    assert await a.owned(pid) == {"joker": 2}  # scout's last match is in play
    with pytest.raises(LifetimeSpent):  # so a second match cannot bring it
        await repo_a.create_match(_new_match([{"player_id": pid, "name": "p", "bot": None, "loadout": ["scout"]}]),
                                  also=a.reserve_lifetimes)
    ended = await _end(repo_a, match, "aborted")
    results = await asyncio.gather(a.settle_match(ended), b.settle_match(ended), a.settle_match(ended))
    assert [r for r in results if r is not None] == [0]
    assert await a.owned(pid) == {"scout": 1, "joker": 3}
    releases = [(r["asset"], r["delta"], r["ref"]) for r in await a.ledger(pid) if r["kind"] == "match_release"]
    assert sorted(releases) == [("joker", 1, match["id"]), ("scout", 1, match["id"])]
    await assert_ledger_explains_balances(a, pid)
    # given back: it can be brought again
    again = _new_match([{"player_id": pid, "name": "p", "bot": None, "loadout": ["scout"]}])
    await repo_a.create_match(again, also=a.reserve_lifetimes)
    assert await a.owned(pid) == {"joker": 3}


async def test_reservation_skips_bots_and_specials_never_owned(two_repos):
    (repo_a, a), _ = two_repos
    pid = await new_player(repo_a)
    match = _new_match([{"player_id": pid, "name": "p", "bot": None, "loadout": ["spy"]},
                        {"player_id": uuid.uuid4().hex, "name": "bot", "bot": "smart", "loadout": ["spy"]}])
    await repo_a.create_match(match, also=a.reserve_lifetimes)
    assert await a.ledger(pid) == []


# ---- idempotency keys kept with what they spend (docs/protocol.md, "Idempotency keys") ----------

async def test_an_idempotency_key_spends_once_across_nodes_and_expires(two_nodes):
    from app.db.idempotency import Idempotency, IdempotencyKeyReused, fingerprint

    repo, (a, b) = two_nodes
    pid = await new_player(repo)
    await a.grant_crystals(pid, 100, actor="admin", reason="t")

    def idem(key: str, seed: str = "s", ttl: float = 3600.0) -> Idempotency:
        return Idempotency(pid, key, fingerprint("POST", "/spins", {"client_seed": seed}), ttl)

    results = await asyncio.gather(*(w.play_spin(pid, price=20, strip=STRIP, paytable=PAYTABLE, client_seed="s",
                                                 idem=idem("k1")) for w in [a, b] * 5))
    assert len({r["id"] for r in results}) == 1 and (await a.wallet(pid))["crystals"] == 80
    with pytest.raises(IdempotencyKeyReused):
        await b.play_spin(pid, price=20, strip=STRIP, paytable=PAYTABLE, client_seed="t", idem=idem("k1", "t"))
    assert (await a.wallet(pid))["crystals"] == 80
    # a kept answer lasts its retention: after it, the same key is a new request
    old = idem("k2", ttl=60.0)
    first = await a.play_spin(pid, price=20, strip=STRIP, paytable=PAYTABLE, client_seed="s", idem=old)
    from sqlalchemy import update

    from app.db.tables import idempotency_t
    async with a.engine.begin() as conn:
        await conn.execute(update(idempotency_t).where(idempotency_t.c.key == "k2")
                           .values(created_at=time.time() - 61))
    later = await b.play_spin(pid, price=20, strip=STRIP, paytable=PAYTABLE, client_seed="s", idem=idem("k2", ttl=60.0))
    assert later["id"] != first["id"] and (await a.wallet(pid))["crystals"] == 40
    await assert_ledger_explains_balances(a, pid)


async def test_keys_past_their_retention_are_pruned(two_nodes):
    from app.db.idempotency import Idempotency, fingerprint, lookup, prune

    repo, (a, _b) = two_nodes
    pid = await new_player(repo)
    keep = Idempotency(pid, "fresh", fingerprint("POST", "/x", None), 3600.0)
    gone = Idempotency(pid, "stale", fingerprint("POST", "/x", None), 3600.0)
    await a.grant_crystals(pid, 1, actor="admin", reason="t", idem=gone)
    await a.grant_crystals(pid, 1, actor="admin", reason="t", idem=keep)
    from sqlalchemy import update

    from app.db.tables import idempotency_t
    async with a.engine.begin() as conn:
        await conn.execute(update(idempotency_t).where(idempotency_t.c.key == "stale")
                           .values(created_at=time.time() - 7200))
    assert await prune(a.engine, time.time() - 3600) == 1
    assert (await lookup(a.engine, keep))[0] and not (await lookup(a.engine, gone))[0]
