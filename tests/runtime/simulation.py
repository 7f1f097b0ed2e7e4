"""In-process twins of the runtime's outside world, for the deterministic simulation
(``tests/runtime/test_simulation.py``): a database holding each match's log and fencing epoch, a log
writer that commits (or fails) when told, leases, deadline timers and a clock — all synchronous,
so a run is a function of the rules Hypothesis draws and replays from its seed.

A :class:`World` runs one match on two nodes (``a``, ``b``) as the manager would: the owner's
:class:`~app.runtime.match.MatchRunner` is made by :func:`app.runtime.replay.replay` of the durable
log (a rebuild) with the epoch the take raised, its open phases' timers armed; a runner whose record
failed is dropped and rebuilt. A paused owner keeps its runner, believing it still holds the lease,
until it resumes and learns otherwise.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, cast

from app.delta import apply_patch
from app.games.base import ADMIN, SPECTATOR, Game
from app.runtime.logwriter import Fenced, LogWriteError, StreamFailed
from app.runtime.match import MatchRunner
from app.runtime.replay import replay
from app.runtime.rows import LogRow, MatchRow, MatchUpdate
from app.runtime.step import start


class Clock:
    """The wall clock (epoch seconds); steps forward or back when told."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@dataclass
class Database:
    """What Postgres holds of one match: its log (each row with the epoch it was written under),
    its ``owner_epoch``, and its final columns."""

    epoch: int = 1
    rows: list[LogRow] = field(default_factory=list)
    written_under: list[int] = field(default_factory=list)
    update: MatchUpdate | None = None

    def take(self) -> int:
        """``Repository.take_match``: raise the fencing token, committed before the log is read."""
        self.epoch += 1
        return self.epoch


class SimLogWriter:
    """The group-commit writer's contract (``app.runtime.logwriter``) over :class:`Database`:
    records queue until :meth:`commit` writes the first ``n`` of them in submission order — each
    refused with ``Fenced`` unless its stream's epoch is the database's and its ``seq`` the next one,
    and once a stream failed its later records fail with ``StreamFailed`` unwritten — or
    :meth:`fail` answers them with the error that outlived the retries."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.pending: list[tuple[Any, LogRow, MatchUpdate | None, Callable[[BaseException | None], None]]] = []

    def submit(self, stream: Any, row: LogRow, match_update: MatchUpdate | None,
               on_durable: Callable[[BaseException | None], None]) -> None:
        self.pending.append((stream, row, match_update, on_durable))

    def commit(self, n: int) -> None:
        batch, self.pending = self.pending[:n], self.pending[n:]
        results: list[BaseException | None] = []
        for stream, row, update, _cb in batch:
            if stream.log_failed:
                results.append(StreamFailed("an earlier record of this match failed"))
            elif not stream.may_write() or stream.epoch != self.db.epoch or row["seq"] != len(self.db.rows) + 1:
                stream.log_failed = True
                results.append(Fenced("owner epoch or version changed; not written"))
            else:
                self.db.rows.append(json.loads(json.dumps(row)))  # as the database returns it
                self.db.written_under.append(stream.epoch)
                if update is not None:
                    self.db.update = update
                results.append(None)
        for (_stream, _row, _update, cb), result in zip(batch, results, strict=True):
            cb(result)

    def fail(self, n: int) -> None:
        """The database stays down past the retries: the first ``n`` records fail, unwritten."""
        batch, self.pending = self.pending[:n], self.pending[n:]
        for stream, _row, _update, _cb in batch:
            stream.log_failed = True
        for _stream, _row, _update, cb in batch:
            cb(LogWriteError("the database did not answer"))


class SimTimers:
    """Deadline timers (the ``Timers`` protocol, synchronous): one entry per (match, phase); only
    the lease holder claims a due entry (the Redis claim), and a claim removes it."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, int], float] = {}

    def schedule_now(self, match_id: str, phase_id: int, due_at: float) -> None:
        self.entries[(match_id, phase_id)] = due_at

    def cancel_now(self, match_id: str, phase_id: int) -> None:
        self.entries.pop((match_id, phase_id), None)

    def due(self, now: float) -> list[tuple[str, int]]:
        found = sorted((due, key) for key, due in self.entries.items() if due <= now)
        for _due, key in found:
            del self.entries[key]
        return [key for _due, key in found]


class SimPeer:
    """A socket that applies what it gets: its audience's document (plain JSON) and version, from
    ``state`` and ``delta`` messages; the ``ack``s it got; a message can be lost on the way."""

    def __init__(self, viewer: int, deltas: bool) -> None:
        self.viewer = viewer
        self.player_id: str | None = None
        self.sent_version = 0
        self.deltas = deltas
        self.version: int | None = None
        self.doc: dict[str, Any] | None = None
        self.acks: list[tuple[int, int]] = []
        self.drop_next = False
        #: the peer missed a message: it must resume before its document means anything
        self.lost = False
        self.closed: tuple[int, str] | None = None

    def push(self, text: str) -> None:
        if self.drop_next:  # a pub/sub message that never arrived
            self.drop_next = False
            self.lost = True
            return
        msg = json.loads(text)
        kind = msg["type"]
        if kind == "state":
            self.version = msg["version"]
            self.doc = {"status": msg["status"], "prompts": msg["prompts"], "view": msg["view"]}
            self.lost = False
        elif kind == "delta" and not self.lost:
            assert self.version == msg["base"], (self.viewer, self.version, msg["base"])
            self.doc = apply_patch(self.doc, msg["patch"], in_place=True, copy_values=False)
            self.version = msg["version"]
        elif kind == "ack":
            self.acks.append((msg["seq"], msg["version"]))

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


class World:
    """One match of ``game`` run by nodes ``a`` and ``b`` over the twins."""

    def __init__(self, game: Game, seats: int, seed: bytes) -> None:
        self.game = game
        self.seats = seats
        self.clock = Clock()
        self.db = Database()
        self.writer = SimLogWriter(self.db)
        self.timers = SimTimers()
        state = game.setup(seats, game.Options.model_validate(dict(game.info.test_options)), seed)
        #: the deal (states are never changed: the reference follows the log from it)
        self.initial_state = state
        deadlines = {p.phase_id: self.clock() + p.deadline_seconds for p in game.prompts(state)}
        self.match = cast(MatchRow, {
            "id": "sim", "game": game.id, "options": dict(game.info.test_options), "seat_count": seats,
            "seats": [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(seats)],
            "seed": seed.hex(), "seed_hash": "h", "status": "running", "lobby_id": None,
            "deadlines": {str(k): v for k, v in deadlines.items()}, "outcome": None, "version": 0,
            "created_at": self.clock(), "ended_at": None})
        #: which node holds the lease (None: nobody, until a node takes the match)
        self.lease: str | None = "a"
        #: the runner each node has; a paused node's runner outlives its lease
        self.runners: dict[str, MatchRunner] = {}
        self.paused: set[str] = set()
        self.peers: list[SimPeer] = []
        self.finished: list[MatchRunner] = []
        snapshot = start(game, seats, state, deadlines)
        self.runners["a"] = self._runner("a", snapshot=snapshot, epoch=1)
        for phase, due in deadlines.items():
            self.timers.schedule_now("sim", phase, due)

    # ------------------------------------------------------------------ nodes
    def _runner(self, node: str, *, epoch: int, **kwargs: Any) -> MatchRunner:
        return MatchRunner(match=self.match, game=self.game, log_writer=cast(Any, self.writer),
                           schedule=self.timers.schedule_now, cancel=self.timers.cancel_now,
                           on_finished=lambda r: self._finished(node, r), now=self.clock, epoch=epoch,
                           holds_lease=lambda: self.lease == node or node in self.paused, **kwargs)

    def _finished(self, node: str, runner: MatchRunner) -> None:
        self.finished.append(runner)
        if runner.failed and self.runners.get(node) is runner:
            del self.runners[node]
            if self.lease == node and node not in self.paused:
                self.take(node)  # the manager's recovery: rebuilt from the durable log

    def owner(self) -> MatchRunner | None:
        """The runner of the lease holder (None while it is rebuilding or the match ended)."""
        if self.lease is None or self.lease in self.paused:
            return None
        runner = self.runners.get(self.lease)
        return runner if runner is not None and not runner.failed else None

    def take(self, node: str) -> None:
        """``node`` takes the match: the lease, the epoch raised, the log replayed, timers armed,
        the sockets reattached with their versions (they reconnect and resume)."""
        self.lease = node
        epoch = self.db.take()
        result = replay(self.match, self.db.rows, keep_events=MatchRunner.HISTORY)
        runner = self._runner(node, snapshot=result.snapshot, epoch=epoch, history=cast(Any, result.history),
                              client_seqs=result.client_seqs)
        self.runners[node] = runner
        for phase, due in runner.deadlines.items():
            if any(p.phase_id == phase for p in runner.prompts):
                self.timers.schedule_now("sim", phase, due)
        for peer in self.peers:
            self.resume(peer)

    def lose_lease(self) -> None:
        """The owner's lease runs out while it is paused; the other node takes the match."""
        old = self.lease
        if old is None or old in self.paused:
            return
        self.paused.add(old)
        self.take("b" if old == "a" else "a")

    def wake(self) -> None:
        """A paused node resumes: it learns its lease is gone and drops its runner."""
        for node in list(self.paused):
            self.paused.discard(node)
            runner = self.runners.get(node)
            if runner is not None and self.lease != node:
                runner.drop("moved")
                del self.runners[node]

    def stale(self) -> MatchRunner | None:
        """A paused node's runner, if any."""
        for node in self.paused:
            runner = self.runners.get(node)
            if runner is not None and not runner.failed:
                return runner
        return None

    # ------------------------------------------------------------------ viewers
    def attach(self, viewer: int, deltas: bool) -> None:
        peer = SimPeer(viewer, deltas)
        self.peers.append(peer)
        runner = self.owner()
        if runner is not None:
            runner.attach(peer)

    def resume(self, peer: SimPeer) -> None:
        runner = self.owner()
        if runner is None:
            return
        since = peer.version if peer.version is not None and not peer.lost else None
        runner.attach(peer, since_version=since)

    def peer_for(self, seat: int) -> SimPeer:
        for peer in self.peers:
            if peer.viewer == seat:
                return peer
        peer = SimPeer(seat, True)
        self.peers.append(peer)
        return peer

    # ------------------------------------------------------------------ time
    def fire_due(self) -> int:
        """The timers' claim: due entries go to the lease holder's runner (an entry whose match is
        not run by a node that may fire it is armed again, as the Redis claim's visibility timeout)."""
        fired = 0
        for match_id, phase in self.timers.due(self.clock()):
            runner = self.owner()
            if runner is None:
                self.timers.schedule_now(match_id, phase, self.clock() + 1.0)
                continue
            if phase not in runner.deadlines and phase not in runner.durable_phases:
                continue
            fired += runner.deadline(phase)
        return fired

    def viewers(self) -> tuple[int, ...]:
        return (*range(self.seats), SPECTATOR, ADMIN)
