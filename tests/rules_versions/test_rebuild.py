"""What a node does with a match whose rules version it does not play (``docs/decisions.md``, "Rules
versions"), over the real database (SQLite and Postgres): the test game Tally is "upgraded" between
two nodes of one database, as a restart with a new release would.

- a running match of dropped rules is aborted once, ``aborted: rules changed``, and settled;
- with the earlier engine kept it runs on under its own rules;
- one of newer rules than a node has is left running for a node that has them;
- an ended one is shown through the stand-in; a log that no longer replays under its own version
  (a change shipped without its bump) ends the same way, ``aborted: log does not replay``.
No case retries the rebuild, drops a runner for storage, or closes a socket with 1013."""
from __future__ import annotations

import asyncio

import pytest

from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.repo import Repository
from app.games.base import IllegalAction
from app.infra.leases import LeaseKeeper, LocalLeases
from app.infra.pubsub import LocalPubSub
from app.infra.timers import LocalTimers
from app.runtime.cluster import Cluster
from app.runtime.logwriter import LogWriter
from app.runtime.manager import MatchManager
from app.runtime.replay import RulesUnavailable, replay
from tests.conftest import make_db_url
from tests.infra.conftest import wait_until
from tests.runtime.twins import FakePeer

SEATS = [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(2)]


@pytest.fixture(params=["sqlite", "postgres"])
async def db(request, tmp_path):
    url, pg = await asyncio.to_thread(make_db_url, request.param, tmp_path)
    engine = None
    try:
        await upgrade_async(url)
        engine = make_engine(url)
        yield engine
    finally:
        if engine is not None:
            await engine.dispose()
        if pg:
            await asyncio.to_thread(pg.drop)


class Node:
    """One node's runtime (embedded wiring, leases shared by the test's nodes), recording the
    matches it settles (``on_match_ended``)."""

    def __init__(self, engine, node_id: str, leases: LocalLeases) -> None:
        self.repo = Repository(engine)
        self.writer = LogWriter(self.repo, retry_seconds=0.2)
        self.manager = MatchManager(self.repo, self.writer, LocalTimers(), node_id=node_id)
        self.ended: list[dict] = []
        self.manager.on_match_ended = lambda meta: self.ended.append(dict(meta))
        keeper = LeaseKeeper(leases, node_id, 2.0, on_lost=self.manager.lease_lost)
        self.cluster = Cluster(node_id, LocalPubSub(), keeper, self.manager, lease_seconds=2.0, multi_node=False)
        self.manager.bind(self.cluster)

    async def start(self) -> Node:
        self.writer.start()
        await self.cluster.start()
        await self.manager.start()
        return self

    async def stop(self) -> None:
        await self.manager.stop()
        await self.writer.stop()
        await self.cluster.stop()
        await self.repo.aclose()


@pytest.fixture
async def nodes(db):
    made: list[Node] = []
    leases = LocalLeases()

    async def make(node_id: str) -> Node:
        node = await Node(db, node_id, leases).start()
        made.append(node)
        return node

    yield make
    for node in made:
        await node.stop()


async def _add(runner, n: int, seq: int) -> dict:
    """The seat on turn adds ``n``; returns its ack (or error)."""
    seat = runner.prompts[0].seat
    peer = FakePeer(seat, f"p{seat}")
    runner.attach(peer)
    runner.act(peer, seq, {"type": "add", "n": n}, None)
    assert await wait_until(lambda: any(m.get("seq") == seq for m in peer.messages), 5.0), peer.messages
    runner.detach(peer)
    return next(m for m in peer.messages if m.get("seq") == seq)


async def _started_v1_match(nodes, tally, adds=(3,)) -> tuple[Node, str]:
    tally("tally_v1")
    node = await nodes("n1")
    runner = await node.manager.create_match("tally", {}, SEATS)
    for i, n in enumerate(adds):
        assert (await _add(runner, n, i + 1))["type"] == "ack"
    await node.stop()
    return node, runner.match_id


async def test_a_running_match_of_dropped_rules_is_aborted_once_settled_and_shown(nodes, tally):
    _old, match_id = await _started_v1_match(nodes, tally, adds=(3, 2))
    tally("tally_v2")  # the upgrade: version 1 is not kept
    b = await nodes("n2")
    assert await wait_until(lambda: b.ended, 5.0), "the rebuild did not end the match"
    row = await b.repo.match(match_id)
    assert row["status"] == "aborted" and row["rules_version"] == 1
    assert row["outcome"]["reason"] == "aborted: rules changed"
    log = await b.repo.actions(match_id)
    assert [r["kind"] for r in log] == ["act", "act", "abort"] and log[-1]["seq"] == 3
    assert log[-1]["action"]["reason"] == "rules changed"
    assert row["owner_epoch"] == 2  # written under the rebuilding node's own epoch
    assert [(m["id"], m["status"]) for m in b.ended] == [(match_id, "aborted")]  # settled once, as aborted
    assert b.manager.recoveries == 0 and match_id not in b.manager._recovering
    # a socket that comes back sees why, at versions never below the ones it had
    runner, owner = await b.manager.locate(match_id)
    assert runner is not None and owner is None
    peer = FakePeer(0, "p0")
    runner.attach(peer, since_version=2)
    state, ended = peer.messages
    assert state["type"] == "state" and state["status"] == "aborted" and state["version"] == 3
    assert state["view"] == {"unavailable": {"code": "rules_unavailable", "rules_version": 1, "message":
                             "the match was played under tally rules version 1; this server has tally "
                             "rules version 2"}}
    assert ended["type"] == "ended" and ended["outcome"]["reason"] == "aborted: rules changed"
    assert ended["seed"] == row["seed"] and peer.closed is None
    # another restart decides nothing again
    await b.stop()
    c = await nodes("n3")
    await asyncio.sleep(0.3)
    assert len(await c.repo.actions(match_id)) == 3 and c.ended == []


async def test_with_the_earlier_engine_kept_the_match_runs_on_under_its_own_rules(nodes, tally):
    _old, match_id = await _started_v1_match(nodes, tally, adds=(3,))
    tally("tally_v2_keeps_v1")
    b = await nodes("n2")
    runner = b.manager.live(match_id)
    assert runner is not None and runner.game.info.rules_version == 1
    assert runner.game.view(runner.state, 0)["target"] == 10
    assert (await _add(runner, 3, 2))["type"] == "ack"  # version 1 allows 3; version 2 would not
    assert (await b.repo.match(match_id))["status"] == "running" and b.ended == []
    fresh = await b.manager.create_match("tally", {}, SEATS)
    assert (await b.repo.match(fresh.match_id))["rules_version"] == 2
    assert (await _add(fresh, 3, 1))["code"] == "bad_amount"


async def test_a_node_without_the_newer_rules_leaves_the_match_running_for_one_that_has_them(nodes, tally):
    tally("tally_v2")
    a = await nodes("n1")
    runner = await a.manager.create_match("tally", {}, SEATS)
    assert (await _add(runner, 2, 1))["type"] == "ack"
    match_id = runner.match_id
    await a.stop()
    tally("tally_v1")  # a node of the previous release (a rolling upgrade, or a rollback)
    old = await nodes("n2")
    assert old.manager.live(match_id) is None
    assert await old.manager.load(match_id) is None
    with pytest.raises(RulesUnavailable) as caught:
        await old.manager.locate(match_id)
    assert caught.value.newer and caught.value.needed == 2 and caught.value.available == [1]
    with pytest.raises(IllegalAction) as refused:  # an admin aborts it from a node that has the rules
        await old.manager.abort(match_id, "by hand", None)
    assert refused.value.code == "rules_unavailable"
    snapshot = await old.manager.snapshot(match_id)  # an admin may still look (read-only)
    assert snapshot is not None and snapshot.current_state(0)["view"]["unavailable"]["rules_version"] == 2
    row = await old.repo.match(match_id)
    assert row["status"] == "running" and row["owner_epoch"] == 1 and len(await old.repo.actions(match_id)) == 1
    assert old.ended == []
    await old.stop()
    tally("tally_v2")
    new = await nodes("n3")
    again = new.manager.live(match_id)
    assert again is not None and again.state.totals == runner.state.totals


async def test_an_ended_match_of_dropped_rules_is_shown_with_its_stored_outcome(nodes, tally):
    _old, match_id = await _started_v1_match(nodes, tally, adds=(3, 3, 3, 3, 3, 3, 3))
    tally("tally_v2")
    b = await nodes("n2")
    row = await b.repo.match(match_id)
    assert row["status"] == "finished"
    runner = await b.manager.load(match_id)
    assert runner is not None
    peer = FakePeer(-1)
    runner.attach(peer)
    state, ended = peer.messages
    assert state["status"] == "finished" and state["view"]["unavailable"]["rules_version"] == 1
    assert ended["outcome"] == row["outcome"] and ended["outcome"]["reason"] == "target_reached"
    with pytest.raises(RulesUnavailable):
        replay(row, await b.repo.actions(match_id))
    assert b.ended == [] and len(await b.repo.actions(match_id)) == 7


async def test_a_change_shipped_without_its_bump_ends_the_match_instead_of_retrying(nodes, tally):
    _old, match_id = await _started_v1_match(nodes, tally, adds=(3,))
    tally("tally_unbumped")  # version 2's rules, still called version 1
    b = await nodes("n2")
    assert await wait_until(lambda: b.ended, 5.0)
    row = await b.repo.match(match_id)
    assert row["status"] == "aborted" and row["outcome"]["reason"] == "aborted: log does not replay"
    assert b.manager.recoveries == 0 and match_id not in b.manager._recovering
    runner, _owner = await b.manager.locate(match_id)
    peer = FakePeer(1, "p1")
    runner.attach(peer)
    assert peer.messages[0]["view"]["unavailable"]["message"].startswith("this match's log does not replay")
    assert "bad_amount" not in peer.messages[0]["view"]["unavailable"]["message"]  # details stay in the log
