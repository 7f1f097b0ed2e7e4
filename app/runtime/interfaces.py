"""The small interfaces between the runtime's parts (``docs/runtime.md``).

Each part sees the others only through these Protocols, never through their attributes:

- :class:`Ownership`: what the match manager asks of the cluster (leases, other nodes);
  implemented by :class:`app.runtime.cluster.Cluster`.
- :class:`MatchHost`: what the cluster asks of the node's matches (the live runner of a match,
  loading one it took over, the running ids); implemented by
  :class:`app.runtime.manager.MatchManager`.
- :class:`MatchDirectory`: what the socket and the routes ask (where a match runs, its live
  version, a read-only snapshot, abort, a link to a match on another node); implemented by
  :class:`app.runtime.manager.MatchManager`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from app.runtime.match import MatchRunner, Peer


class Ownership(Protocol):
    """Which node runs a match: leases with fencing epochs (``app/infra/leases.py``)."""

    #: whether other nodes may exist (Redis backends); one process: False
    multi_node: bool

    def holds(self, match_id: str) -> bool:
        """Whether this node holds the match's lease now (on the monotonic clock)."""

    async def claim(self, match_id: str) -> tuple[bool, str | None]:
        """Try to own a running match: (owned here, the owner node otherwise)."""

    async def release(self, match_id: str) -> None: ...

    async def node_alive(self, node: str) -> bool:
        """Whether ``node`` still listens (one node: always). Raises RedisError."""

    def send_abort(self, node: str, match_id: str, reason: str, by: str | None) -> None:
        """Ask ``node`` (the owner) to abort the match."""

    def open_link(self, conn: Peer, match_id: str, owner: str, since_version: int | None, *,
                  answer_seconds: float | None, retry_after: int) -> Link:
        """A socket here for a match ``owner`` runs: its messages are forwarded there."""


class Link(Protocol):
    """A local socket's path to a match on another node (``app.runtime.cluster.Link``)."""

    def forward(self, message: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class MatchHost(Protocol):
    """The node's live matches as the cluster sees them."""

    def live(self, match_id: str) -> MatchRunner | None:
        """The running match's runner on this node, or None."""

    async def running_match_ids(self) -> list[str]:
        """Ids of every running match (all nodes), from the database."""

    async def load(self, match_id: str, *, owned: bool = False) -> MatchRunner | None: ...

    def lease_lost(self, match_id: str) -> None: ...


class MatchDirectory(Protocol):
    """The node's matches as the socket handler and the REST routes see them."""

    async def locate(self, match_id: str) -> tuple[MatchRunner | None, str | None]: ...

    def live(self, match_id: str) -> MatchRunner | None: ...

    def live_version(self, match_id: str) -> int | None:
        """The durable version of a match running on this node, else None."""

    def spectator_version(self, match_id: str) -> int | None:
        """The spectators' durable audience version of a match in memory here, else None."""

    async def node_alive(self, node: str) -> bool: ...

    def open_link(self, conn: Peer, match_id: str, owner: str, since_version: int | None, *,
                  answer_seconds: float | None, retry_after: int) -> Link: ...

    async def snapshot(self, match_id: str) -> MatchRunner | None: ...

    async def abort(self, match_id: str, reason: str, by: str | None) -> MatchRunner | None: ...
