"""Several nodes, one match each: leases decide which node runs a match; sockets on other nodes
reach it through pub/sub.

- A node runs a match only while it holds the match's lease (``app.infra.leases``). Any node that
  gets a socket for a running match with no owner takes the lease and rebuilds the match from its log.
- A socket on a node that does not own the match becomes a *link*: its messages are published to
  the owner's channel ``node:{owner}``; on the owner a :class:`RemotePeer` stands for it in the
  runner, and everything the runner pushes to it is published back to ``node:{socket node}``.
- Every ``takeover_interval`` seconds (0.5 by default) each node takes over running matches whose
  lease is free (their node died), so deadlines fire and bots play even when no player reconnects,
  and closes links whose match changed owner (code 4503: reconnect and ``resume``).
- Fencing: taking a match raises ``matches.owner_epoch`` in the database before its log is read;
  every log write is conditional on the writer's epoch in the statement that writes
  (``Repository.commit_batch``). A node that lost a lease without noticing (it was paused) cannot
  commit anything for the match: its write is refused, its runner dropped, its viewers sent away
  with ``match_moved``; no other match is touched.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import orjson

from app.infra.leases import LeaseKeeper
from app.infra.pubsub import MessagesLost, PubSub
from app.runtime import wire
from app.runtime.interfaces import MatchHost
from app.runtime.protocol import CLOSE_MOVED, CLOSE_TRY_AGAIN, route
from app.runtime.wire import encode, error
from app.storage import log_failure

log = logging.getLogger("bannerfall.cluster")

__all__ = ["CLOSE_MOVED", "CLOSE_TRY_AGAIN", "Cluster", "Link", "RemotePeer"]
#: conn ids answered "gone" recently (so a burst of pushes for one closed socket costs one answer)
_GONE_MEMORY = 1024


class RemotePeer:
    """On the owner node: a socket that lives on another node. Dropped (detached from its runner) as
    soon as the link side says it closed, when the link side answers a push with "no such socket",
    when this node's inbox lost messages (the peer is closed with 4503 so the client resyncs), and
    when its node no longer exists (no subscriber on its channel, checked every ``lease/2`` s)."""

    __slots__ = ("closed", "cluster", "conn_id", "deltas", "match_id", "node", "player_id", "sent_version",
                 "viewer")

    def __init__(self, cluster: Cluster, node: str, conn_id: str, viewer: int, player_id: str | None,
                 match_id: str = "", deltas: bool = True) -> None:
        self.cluster = cluster
        #: the socket's hello ``deltas``: changes as ``delta`` messages (True) or full ``state``s
        self.deltas = deltas
        self.node = node
        self.conn_id = conn_id
        self.viewer = viewer
        self.player_id = player_id
        self.sent_version = 0
        self.closed = False
        self.match_id = match_id

    def push(self, text: str) -> None:
        if not self.closed:
            self.cluster.send(self.node, {"k": "push", "c": self.conn_id, "m": self.match_id,
                                          "o": self.cluster.node_id, "t": text})

    def close(self, code: int, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self.cluster.send(self.node, {"k": "close", "c": self.conn_id, "code": code, "reason": reason})
            self.cluster.drop_peer(self)


class Link:
    """On the socket's node: forwards a local connection's messages to the owner node.

    The owner's first message (the ``state`` answering the attach) must arrive within
    ``answer_seconds``; otherwise the socket gets ``match_unavailable`` (with ``retry_after``) and is
    closed with 1013, so a client never waits on a node that is gone. Acts forwarded and not answered
    are bounded by the connection (``Connection.expect_answer``)."""

    __slots__ = ("answered", "cluster", "conn", "conn_id", "match_id", "owner", "retry_after", "timer")

    def __init__(self, cluster: Cluster, conn: Any, match_id: str, owner: str) -> None:
        self.cluster = cluster
        self.conn = conn
        self.match_id = match_id
        self.owner = owner
        self.conn_id = uuid.uuid4().hex
        self.answered = False
        self.timer: asyncio.TimerHandle | None = None
        self.retry_after = 1

    def open(self, since_version: int | None, *, answer_seconds: float | None = None, retry_after: int = 1) -> None:
        self.cluster.links[self.conn_id] = self
        self.retry_after = retry_after
        self.cluster.send(self.owner, {"k": "attach", "m": self.match_id, "c": self.conn_id,
                                       "n": self.cluster.node_id, "v": self.conn.viewer,
                                       "p": self.conn.player_id, "since": since_version,
                                       "d": self.conn.deltas})
        if answer_seconds is not None:
            self.timer = asyncio.get_running_loop().call_later(answer_seconds, self._unanswered)

    def deliver(self, text: str) -> None:
        """A message from the owner for this socket."""
        if not self.answered:
            self.answered = True
            if self.timer is not None:
                self.timer.cancel()
        self.conn.push(text)

    def _unanswered(self) -> None:
        if self.answered or self.cluster.links.get(self.conn_id) is not self:
            return
        log.warning("node %s did not answer a socket for match %s", self.owner, self.match_id)
        self.conn.push(encode(error("match_unavailable", "the node running this match does not answer; "
                                    "reconnect after retry_after seconds", retry_after=self.retry_after)))
        self.conn.close(CLOSE_TRY_AGAIN, "the match's node does not answer; try again later")

    def forward(self, message: dict[str, Any]) -> None:
        try:
            self.cluster.send(self.owner, {"k": "msg", "m": self.match_id, "c": self.conn_id,
                                           "n": self.cluster.node_id, "msg": message})
        except TypeError:  # not encodable (e.g. an integer over 64 bits): nothing is forwarded
            self.conn.push(encode(error("malformed_message", "the message holds a value out of range")))

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.cluster.links.pop(self.conn_id, None) is not None:
            self.cluster.send(self.owner, {"k": "detach", "m": self.match_id, "c": self.conn_id})


class Cluster:
    """This node's view of the cluster. With in-process backends it is a one-node cluster.
    Implements :class:`~app.runtime.interfaces.Ownership`; sees the node's matches only through
    :class:`~app.runtime.interfaces.MatchHost` (``host``)."""

    def __init__(self, node_id: str, pubsub: PubSub, keeper: LeaseKeeper, host: MatchHost, *,
                 lease_seconds: float, multi_node: bool, takeover_interval: float | None = None) -> None:
        self.node_id = node_id
        self.pubsub = pubsub
        self.keeper = keeper
        self.host = host
        self.lease_seconds = lease_seconds
        self.multi_node = multi_node
        self.links: dict[str, Link] = {}
        self.remote_peers: dict[str, RemotePeer] = {}
        self._outbox: dict[str, asyncio.Queue] = {}
        self._tasks: list[asyncio.Task] = []
        self._senders: dict[str, asyncio.Task] = {}
        self._gone: dict[str, None] = {}
        self.takeovers = 0
        #: seconds between takeover scans (default: lease/4, at least 0.2)
        self.takeover_interval = takeover_interval or max(0.2, lease_seconds / 4)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self.keeper.start()
        if self.multi_node:
            ready = asyncio.Event()
            self._tasks.append(asyncio.create_task(self._inbox(ready), name="cluster-inbox"))
            await asyncio.wait_for(ready.wait(), 10)
            self._tasks.append(asyncio.create_task(self._watch(), name="cluster-watch"))

    async def stop(self) -> None:
        for task in self._tasks + list(self._senders.values()):
            task.cancel()
        await asyncio.gather(*self._tasks, *self._senders.values(), return_exceptions=True)
        await self.keeper.stop(release=True)

    # ------------------------------------------------------------------ ownership
    def holds(self, match_id: str) -> bool:
        """Whether this node holds the match's lease now (on the monotonic clock)."""
        return self.keeper.holds(match_id)

    async def claim(self, match_id: str) -> tuple[bool, str | None]:
        """Try to own a running match. Returns (owned here, the owner node otherwise)."""
        if self.keeper.holds(match_id):
            return True, self.node_id
        if await self.keeper.acquire(match_id):
            return True, self.node_id
        owner = await self.keeper.leases.owner(match_id)
        if owner is None and await self.keeper.acquire(match_id):
            return True, self.node_id
        return False, owner

    async def release(self, match_id: str) -> None:
        await self.keeper.release(match_id)

    # ------------------------------------------------------------------ messaging
    def send(self, node: str, message: dict[str, Any]) -> None:
        """Queue a message for ``node`` (published in order by one task per destination).
        Raises TypeError if ``message`` cannot be encoded (nothing is queued then)."""
        data = orjson.dumps(message)
        queue = self._outbox.get(node)
        if queue is None:
            queue = self._outbox[node] = asyncio.Queue()
            self._senders[node] = asyncio.get_running_loop().create_task(self._sender(node, queue))
        queue.put_nowait(data)

    async def _sender(self, node: str, queue: asyncio.Queue) -> None:
        channel = f"node:{node}"
        while True:
            data = await queue.get()
            try:
                await self.pubsub.publish(channel, data)
            except Exception as exc:  # Redis down: the bounds on links and acts answer the clients
                log.warning("publish to %s failed: %s", channel, type(exc).__name__)

    def send_abort(self, node: str, match_id: str, reason: str, by: str | None) -> None:
        """Ask the owner ``node`` to abort ``match_id`` (it answers through the database)."""
        self.send(node, {"k": "abort", "m": match_id, "reason": reason, "by": by})

    def open_link(self, conn: Any, match_id: str, owner: str, since_version: int | None, *,
                  answer_seconds: float | None, retry_after: int) -> Link:
        """A local socket for a match that ``owner`` runs: attach it there through a :class:`Link`."""
        link = Link(self, conn, match_id, owner)
        link.open(since_version, answer_seconds=answer_seconds, retry_after=retry_after)
        return link

    async def node_alive(self, node: str) -> bool:
        """Whether ``node`` is listening on its channel (one node: always). Raises RedisError."""
        if not self.multi_node or node == self.node_id:
            return True
        return await self.pubsub.subscribers(f"node:{node}") > 0

    def drop_peer(self, peer: RemotePeer) -> None:
        """Forget a remote socket: no more pushes are published for it."""
        peer.closed = True
        if self.remote_peers.get(peer.conn_id) is peer:
            del self.remote_peers[peer.conn_id]
        runner = self.host.live(peer.match_id)
        if runner is not None:
            runner.detach(peer)

    def resync(self, reason: str) -> None:
        """Messages to or from this node may have been lost: close every link here and every remote
        peer here with 4503 (reconnect and resume; unanswered acts are resent)."""
        for link in list(self.links.values()):
            self.links.pop(link.conn_id, None)
            link.conn.push(encode(error("match_moved", f"{reason}; reconnect and resume")))  # wire.moved, with why
            link.conn.close(CLOSE_MOVED, "cluster messages lost; reconnect and resume")
        for peer in list(self.remote_peers.values()):
            peer.close(CLOSE_MOVED, "cluster messages lost; reconnect and resume")

    async def _inbox(self, ready: asyncio.Event) -> None:
        async with self.pubsub.subscribe(f"node:{self.node_id}") as sub:
            ready.set()
            while True:
                try:
                    async for data in sub:
                        try:
                            await self._handle(orjson.loads(data))
                        except Exception:
                            log.exception("cluster message failed")
                except MessagesLost as exc:
                    log.warning("node %s lost cluster messages (%s): links and remote sockets resync",
                                self.node_id, exc.reason)
                    self.resync("messages between nodes were lost")

    async def _handle(self, msg: dict[str, Any]) -> None:
        """One message from another node (``k``: push, close, attach, msg, abort, detach)."""
        handler = self._HANDLERS.get(msg.get("k"))  # type: ignore[arg-type]
        if handler is not None:
            handler(self, msg)

    # on the socket's node ------------------------------------------------------------------------
    def _on_push(self, msg: dict[str, Any]) -> None:
        """A message from the owner for a socket here."""
        link = self.links.get(msg["c"])
        if link is not None:
            link.deliver(msg["t"])
        elif msg.get("o") and msg["c"] not in self._gone:
            # the socket closed here: tell its owner to stop publishing for it
            self._gone[msg["c"]] = None
            while len(self._gone) > _GONE_MEMORY:
                self._gone.pop(next(iter(self._gone)))
            self.send(msg["o"], {"k": "detach", "m": msg.get("m", ""), "c": msg["c"]})

    def _on_close(self, msg: dict[str, Any]) -> None:
        """The owner closes a socket here."""
        link = self.links.pop(msg["c"], None)
        if link is not None:
            if link.timer is not None:
                link.timer.cancel()
            link.conn.close(msg.get("code", CLOSE_MOVED), msg.get("reason", "closed by the match's node"))

    # on the owner node ----------------------------------------------------------------------------
    def _on_attach(self, msg: dict[str, Any]) -> None:
        """A socket on another node joins a match running here: a :class:`RemotePeer` stands for it."""
        runner = self.host.live(msg["m"])
        peer = RemotePeer(self, msg["n"], msg["c"], int(msg["v"]), msg.get("p"), msg["m"],
                          deltas=msg.get("d") is not False)  # an older node's attach has no "d"
        if runner is None:
            peer.close(CLOSE_MOVED, "this node no longer runs the match; reconnect and resume")
            return
        self.remote_peers[peer.conn_id] = peer
        since = msg.get("since")
        runner.attach(peer, since_version=since if isinstance(since, int) else None, from_hello=True)

    def _on_msg(self, msg: dict[str, Any]) -> None:
        """A client message from a socket on another node: the same route as a local one."""
        sender = self.remote_peers.get(msg["c"])
        runner = self.host.live(msg["m"])
        if sender is None:
            # unknown here (this node restarted, or dropped it): the link must resync
            if msg.get("n"):
                self.send(msg["n"], {"k": "close", "c": msg["c"], "code": CLOSE_MOVED,
                                     "reason": "the match's node lost this socket; reconnect and resume"})
            return
        if runner is None:
            sender.close(CLOSE_MOVED, "this node no longer runs the match; reconnect and resume")
            return
        route(runner, sender, msg["msg"])

    def _on_abort(self, msg: dict[str, Any]) -> None:
        runner = self.host.live(msg["m"])
        if runner is not None and runner.status == "running":
            runner.abort(msg.get("reason") or "aborted by an admin", msg.get("by"))

    def _on_detach(self, msg: dict[str, Any]) -> None:
        gone = self.remote_peers.get(msg["c"])
        if gone is not None:
            self.drop_peer(gone)

    _HANDLERS = {"push": _on_push, "close": _on_close, "attach": _on_attach, "msg": _on_msg,
                 "abort": _on_abort, "detach": _on_detach}

    # ------------------------------------------------------------------ failover
    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.takeover_interval)
            try:
                await self.takeover_orphans()
                await self._check_links()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an engine down or hung: one line; a bug: its traceback
                log_failure(log, exc, "cluster watch round failed")

    async def takeover_orphans(self) -> int:
        """Own every running match whose lease is free (its node died, or Redis lost its keys) or
        already ours without a live runner (an earlier load failed); returns how many were loaded.
        One query for the running ids, one MGET for their lease holders."""
        candidates = [m for m in await self.host.running_match_ids() if self.host.live(m) is None]
        if not candidates:
            return 0
        owners = await self.keeper.leases.owners(candidates)
        taken = 0
        for match_id in candidates:
            if owners.get(match_id) not in (None, self.node_id) or self.host.live(match_id) is not None:
                continue
            if not await self.keeper.acquire(match_id):
                continue
            try:
                runner = await self.host.load(match_id, owned=True)
            except Exception as exc:
                log_failure(log, exc, "node %s could not take over match %s; retrying at the next scan",
                            self.node_id, match_id)
                continue
            if runner is not None and self.host.live(match_id) is not None:
                taken += 1
                self.takeovers += 1
                log.info("node %s took over match %s", self.node_id, match_id)
        return taken

    async def _check_links(self) -> None:
        """Links whose match changed owner are closed (4503); remote peers whose node is gone (no
        subscriber on its channel) are dropped."""
        nodes = {peer.node for peer in self.remote_peers.values()}
        for node in nodes:
            try:
                alive = await self.node_alive(node)
            except Exception as exc:  # Redis down: keep them; the inbox resyncs after the reconnect
                log.warning("could not check node %s: %s", node, type(exc).__name__)
                break
            if not alive:
                gone = [p for p in self.remote_peers.values() if p.node == node]
                log.warning("node %s is gone: dropping its %d sockets here", node, len(gone))
                for peer in gone:
                    self.drop_peer(peer)
        by_match: dict[str, list[Link]] = {}
        for link in self.links.values():
            by_match.setdefault(link.match_id, []).append(link)
        for match_id, links in by_match.items():
            owner = await self.keeper.leases.owner(match_id)
            if owner != links[0].owner:
                for link in links:
                    self.links.pop(link.conn_id, None)
                    link.conn.push(encode(wire.moved()))
                    link.conn.close(CLOSE_MOVED, "the match moved; reconnect and resume")
