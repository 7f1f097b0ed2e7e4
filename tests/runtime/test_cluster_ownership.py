"""Two in-process nodes on the real Postgres and Redis (own key prefix): a remote abort answers once
durable, a node that stops renewing has its matches taken over with a new epoch and their deadlines
re-armed, and Redis losing every key makes the owner re-acquire (issue 9 "faster takeover",
"outages", item 12)."""
from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio import Redis

from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.repo import Repository
from app.infra.backends import make_backends
from app.infra.leases import LeaseKeeper
from app.runtime.cluster import Cluster
from app.runtime.logwriter import LogWriter
from app.runtime.manager import MatchManager
from tests.conftest import REDIS_URL, PostgresDatabase
from tests.infra.conftest import wait_until
from tests.runtime.twins import FakePeer
from tests.timing import scaled

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

SEATS = [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(2)]
LEASE = 2.0  # the production default


class Node:
    def __init__(self, engine, node_id: str, prefix: str) -> None:
        self.node_id = node_id
        self.repo = Repository(engine)
        self.writer = LogWriter(self.repo, retry_seconds=1.0)
        self.backends = make_backends(REDIS_URL, node_id, prefix, poll_interval=0.02)
        self.manager = MatchManager(self.repo, self.writer, self.backends.timers, node_id=node_id)
        self.keeper = LeaseKeeper(self.backends.leases, node_id, LEASE, on_lost=self.manager.lease_lost)
        self.cluster = Cluster(node_id, self.backends.pubsub, self.keeper, self.manager, lease_seconds=LEASE,
                               multi_node=True, takeover_interval=0.2)
        self.manager.bind(self.cluster)

    async def start(self) -> "Node":
        self.writer.start()
        await self.cluster.start()
        await self.manager.start()
        return self

    async def stop(self) -> None:
        await self.manager.stop()
        await self.writer.stop()
        await self.cluster.stop()
        await self.backends.close()
        await self.repo.aclose()


@pytest.fixture
async def two_nodes():
    db = PostgresDatabase()
    url = await asyncio.to_thread(db.create)
    prefix = f"bftest:{uuid.uuid4().hex}:"
    engine = make_engine(url)
    nodes: list[Node] = []
    try:
        await upgrade_async(url)
        nodes = [await Node(engine, f"n{i}", prefix).start() for i in range(2)]
        yield nodes, prefix
    finally:
        for node in nodes:
            await node.stop()
        await engine.dispose()
        await asyncio.to_thread(db.drop)
        client = Redis.from_url(REDIS_URL)
        keys = [k async for k in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_a_remote_abort_answers_once_the_owner_made_it_durable(two_nodes):
    (a, b), prefix = two_nodes
    runner = await a.manager.create_match("conquest", {}, SEATS)
    phase = runner.prompts[0].phase_id
    got = await b.manager.abort(runner.match_id, "test", "admin")
    assert got is not None and got.match_id == runner.match_id
    assert got.meta["status"] == "aborted" and got.meta["outcome"]["reason"] == "aborted: test"
    assert (await b.repo.match(runner.match_id))["status"] == "aborted"
    assert await wait_until(lambda: runner.match_id not in a.manager.runners, timeout=5)
    timers = a.backends.timers
    for _ in range(100):
        if await timers.due_at(runner.match_id, phase) is None:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.02)
    assert await timers.due_at(runner.match_id, phase) is None  # type: ignore[attr-defined]


async def test_a_silent_owner_is_taken_over_with_a_new_epoch_and_its_deadlines_rearmed(two_nodes):
    (a, b), prefix = two_nodes
    runner = await a.manager.create_match("conquest", {}, SEATS)
    match_id = runner.match_id
    # a stops renewing (as if frozen): its lease runs out and b's takeover scan picks the match up
    await a.keeper.stop(release=False)
    assert await wait_until(lambda: match_id in b.manager.runners, timeout=LEASE + 3)
    new = b.manager.runners[match_id]
    assert new.epoch == runner.epoch + 1
    assert (await b.repo.match(match_id))["owner_node"] == "n1"
    phase = new.prompts[0].phase_id
    assert await b.backends.timers.due_at(match_id, phase) is not None  # type: ignore[attr-defined]
    # a's stale runner cannot fire the deadline: its lease is not valid any more
    assert not a.manager.owns(match_id)


async def test_redis_losing_every_key_makes_the_owner_reacquire_and_rearm(two_nodes):
    (a, b), prefix = two_nodes
    runner = await a.manager.create_match("conquest", {}, SEATS)
    match_id = runner.match_id
    phase = runner.prompts[0].phase_id
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [k async for k in client.scan_iter(match=prefix + "*")]
        await client.delete(*keys)  # as after a restart without persistence
        # the owner notices at its next renewal, drops the runner; some node re-acquires the match
        # with a new epoch, rebuilds it and re-arms its deadline
        def rerun() -> bool:
            return any(match_id in n.manager.runners and n.manager.runners[match_id] is not runner
                       for n in (a, b))
        assert await wait_until(rerun, timeout=LEASE + 3)
        # the old runner is dropped at its node's next renewal (it was fenced by the epoch anyway)
        assert await wait_until(lambda: a.manager.runners.get(match_id) is not runner, timeout=LEASE + 1)

        async def settled():  # the lease names a node that runs the match under a newer epoch
            holder = await client.get(prefix + "lease:" + match_id)
            node = next((n for n in (a, b) if holder is not None and n.node_id == holder.decode()), None)
            live = node.manager.runners.get(match_id) if node is not None else None
            return live if live is not None and live.epoch > runner.epoch else None

        assert await wait_until_async(settled, 5)
        assert await wait_until_async(lambda: client.zscore(prefix + "deadlines", f"{match_id}:{phase}"), 5)
    finally:
        await client.aclose()


async def wait_until_async(make, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    ends = loop.time() + scaled(timeout)
    while loop.time() < ends:
        if await make() is not None:
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_linked_socket_carries_its_hello_deltas_to_the_owner(two_nodes):
    """The link's attach carries the socket's ``deltas`` (its hello's): the owner's RemotePeer has
    the same, so the runtime encodes for it as for a local socket (an older node's attach without
    it gets the default, True: ``Cluster._on_attach``)."""
    (a, b), _prefix = two_nodes
    runner = await a.manager.create_match("conquest", {}, SEATS)
    conns = [FakePeer(0, "p0", deltas=False), FakePeer(1, "p1", deltas=True), FakePeer(-1, None, deltas=True)]
    links = [b.cluster.open_link(c, runner.match_id, a.node_id, None, answer_seconds=5, retry_after=1)
             for c in conns]
    try:
        assert await wait_until(lambda: all(c.of_type("state") for c in conns), timeout=5)
        peers = {p.viewer: p for p in a.cluster.remote_peers.values()}
        assert {v: p.deltas for v, p in peers.items()} == {0: False, 1: True, -1: True}
        assert all(p in runner.peers for p in peers.values())
    finally:
        for link in links:
            link.close()
