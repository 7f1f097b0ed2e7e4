"""One live match: its single writer, deadlines, durable log and per-viewer fan-out.

Everything that changes a match runs synchronously on the event loop inside one method call
(:meth:`MatchRunner.act`, :meth:`MatchRunner.deadline`, :meth:`MatchRunner.abort`), so there is
exactly one writer per match without locks. The pipeline for an action (after boardgame.io's
``master.onUpdate``): match over? → seat? → duplicate client seq? → stale version? → seat has a
prompt? → ``Game.apply`` → new version, prompts, deadlines → log record handed to the group-commit
writer → *after* the commit: ack to the actor, ``state`` (view + the events it may see) to every
viewer, timers armed.
"""
from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from app.games.base import SPECTATOR, Event, Game, IllegalAction, Outcome, Prompt
from app.runtime import wire
from app.runtime.rows import LogRow, MatchRow, MatchUpdate
from app.runtime.wire import (
    CLOSE_MATCH_GONE,
    CLOSE_MOVED,
    CLOSE_REPLACED,
    CLOSE_SLOW,
    CLOSE_STORAGE,
    encode,
    error,
)

if TYPE_CHECKING:
    from app.runtime.logwriter import LogWriter

log = logging.getLogger("bannerfall.match")

__all__ = ["CLOSE_MATCH_GONE", "CLOSE_REPLACED", "CLOSE_SLOW", "MatchRunner", "Peer"]


class Peer(Protocol):
    """A connected viewer as the runtime sees it (a local socket, or a socket on another node)."""

    viewer: int
    player_id: str | None
    #: the last version whose events this peer has been sent
    sent_version: int

    def push(self, text: str) -> None:
        """Queue one message; never blocks (a full queue disconnects the peer)."""

    def close(self, code: int, reason: str) -> None: ...


class MatchRunner:
    """Owns one match's state while it is live on this node."""

    RECENT_PER_SEAT = 128
    HISTORY = 256

    def __init__(self, *, match: MatchRow, game: Game, state: Any, version: int,
                 log_writer: LogWriter, deadlines: dict[int, float] | None,
                 schedule: Callable[[str, int, float], None], on_finished: Callable[[MatchRunner], None],
                 history: list[tuple[int, list[Event]]] | None = None,
                 client_seqs: dict[int, dict[int, int]] | None = None, now: Callable[[], float] = time.time,
                 status: str = "running", cancel: Callable[[str, int], None] | None = None,
                 epoch: int | None = None, phase_starts: Mapping[int, int] | None = None,
                 holds_lease: Callable[[], bool] | None = None) -> None:
        self.match_id: str = match["id"]
        self.meta: MatchRow = MatchRow(**match)
        self.game = game
        self.state = state
        self.version = version
        self.durable_version = version
        #: the state, prompts and status as of ``durable_version``: what viewers are shown
        self.durable_state = state
        self.status = status
        self.log_writer = log_writer
        self._schedule = schedule
        self._cancel = cancel
        self._on_finished = on_finished
        self._now = now
        self.peers: set[Peer] = set()
        self.seat_peers: dict[int, Peer] = {}
        self.history: deque[tuple[int, list[Event]]] = deque(history or (), maxlen=self.HISTORY)
        self.prompts: list[Prompt] = game.prompts(state) if status == "running" else []
        self.deadlines: dict[int, float] = dict(deadlines or {})
        #: phase id -> the version at which it started (the stale rule; survives rebuilds: replay
        #: derives it from the log, issue 9 item 4)
        self._phase_start: dict[int, int] = {p.phase_id: (phase_starts or {}).get(p.phase_id, version)
                                             for p in self.prompts}
        #: the fencing token this runner writes with (``matches.owner_epoch`` when it took the match)
        self.epoch = epoch
        #: set by the log writer once a record of this match failed: nothing more of it is written
        self.log_failed = False
        #: whether this node may act for the match now (a valid lease); None: always
        self._holds_lease = holds_lease
        #: why the runner was dropped: None, "storage" (a write failed) or "fenced" (stale owner)
        self.failure: str | None = None
        # seat -> client_seq -> reply dict (or None while waiting for the commit)
        self._recent: dict[int, OrderedDict[int, dict | None]] = {}
        self._waiters: dict[tuple[int, int], list[Peer]] = {}
        for seat, seqs in (client_seqs or {}).items():
            cache = self._recent.setdefault(seat, OrderedDict())
            for cseq, ver in list(seqs.items())[-self.RECENT_PER_SEAT:]:
                cache[cseq] = wire.ack(cseq, ver)
        self.outcome: Outcome | None = game.outcome(state) if status == "running" else None
        self.durable_prompts: list[dict[str, Any]] = self.public_prompts()
        self.durable_status = status
        self.failed = False
        self._pending_phase: dict[int, int] = {}

    def may_write(self) -> bool:
        """Whether this node may change the match now: its lease is valid (always, without a
        lease check). Checked by ``act``, ``deadline``, ``abort`` and by the log writer before each
        commit attempt, so a node that woke up after its lease ran out writes nothing."""
        return self._holds_lease is None or self._holds_lease()

    # ------------------------------------------------------------------ viewers
    def attach(self, peer: Peer, *, since_version: int | None = None) -> None:
        """Add a viewer and send it the full ``state`` (with the events it missed since
        ``since_version`` when they are still in memory). A newer socket for a seat replaces the
        older one, which is closed with 4001."""
        if peer.viewer >= 0:
            old = self.seat_peers.get(peer.viewer)
            if old is not None and old is not peer:
                self.peers.discard(old)
                old.close(CLOSE_REPLACED, "replaced by a newer connection for this seat")
            self.seat_peers[peer.viewer] = peer
        self.peers.add(peer)
        events: list[dict[str, Any]] = []
        complete = True
        if since_version is not None and since_version < self.durable_version:
            oldest = self.history[0][0] if self.history else self.durable_version + 1
            complete = since_version + 1 >= oldest
            events = wire.history_events(self.history, peer.viewer, since_version, self.durable_version)
        peer.sent_version = self.durable_version
        peer.push(encode(self.current_state(peer.viewer, events, events_complete=complete)))
        if self.status != "running":
            peer.push(encode(self._ended()))

    def detach(self, peer: Peer) -> None:
        self.peers.discard(peer)
        if peer.viewer >= 0 and self.seat_peers.get(peer.viewer) is peer:
            del self.seat_peers[peer.viewer]

    # ------------------------------------------------------------------ messages (shaped in wire)
    def public_prompts(self) -> list[dict[str, Any]]:
        return wire.public_prompts(self.prompts, self.deadlines)

    def current_state(self, viewer: int, events: list[dict[str, Any]] = [], *,  # noqa: B006 (read only)
                      events_complete: bool = True) -> dict[str, Any]:
        """``viewer``'s ``state`` message as of the last durable version (never a state whose action
        is still being committed)."""
        return wire.state_message(match_id=self.match_id, game=self.game, state=self.durable_state,
                                  version=self.durable_version, status=self.durable_status, viewer=viewer,
                                  prompts=self.durable_prompts, events=events, events_complete=events_complete)

    def _ended(self) -> dict[str, Any]:
        return wire.ended_message(match_id=self.match_id, status=self.status, version=self.durable_version,
                                  outcome=self.outcome, seed=self.meta["seed"], seed_hash=self.meta["seed_hash"])

    # ------------------------------------------------------------------ the writer
    def act(self, peer: Peer, client_seq: int, action: Any, version: int | None = None) -> None:
        """A seat's action, as validated by :func:`app.runtime.protocol.route` (``client_seq`` an
        integer in [0, 2**62), ``version`` an integer or None). Replies go to ``peer``: ``ack`` after
        the commit, or ``error`` (not_a_player, match_over, match_moved + close 4503, bad_version,
        stale_version, not_your_turn, or the game's ``IllegalAction`` code). The pipeline, in order:
        seat? → duplicate seq? → match running? → lease? → version? → prompt? → apply."""
        seat = peer.viewer
        if seat < 0:
            peer.push(encode(error("not_a_player", "spectators and admins cannot act", seq=client_seq)))
            return
        recent = self._recent.setdefault(seat, OrderedDict())
        if client_seq in recent:
            reply = recent[client_seq]
            if reply is None:  # same action still committing: answer when it is durable
                self._waiters.setdefault((seat, client_seq), []).append(peer)
            else:
                peer.push(encode(reply))
            return
        if self.status != "running" or self.failed:
            peer.push(encode(error("match_over", "the match is not running", seq=client_seq)))
            return
        if not self.may_write():
            # no valid lease (this node was paused, or cannot reach Redis): another node may run the
            # match now; nothing is applied here (issue 9 item 2)
            peer.push(encode({**wire.moved(), "seq": client_seq}))
            peer.close(CLOSE_MOVED, "the match moved; reconnect and resume")
            return
        if version is not None:
            if version > self.version:
                peer.push(encode(error("bad_version", "version is not one the server sent", seq=client_seq)))
                return
            seat_prompt = next((p for p in self.prompts if p.seat == seat), None)
            if seat_prompt is not None and version < self._phase_start.get(seat_prompt.phase_id, 0):
                peer.push(encode(error("stale_version",
                                       f"the phase changed at version {self._phase_start[seat_prompt.phase_id]}; "
                                       "refresh your state", seq=client_seq, version=self.durable_version)))
                return
        if not any(p.seat == seat for p in self.prompts):
            peer.push(encode(error("not_your_turn", "you have nothing to decide now", seq=client_seq)))
            return
        try:
            self._apply(seat, action, kind="act", client_seq=client_seq, reply_to=peer)
        except IllegalAction as exc:
            reply = error(exc.code, exc.message, seq=client_seq)
            peer.push(encode(reply))

    def deadline(self, phase_id: int) -> int:
        """A deadline fired for ``phase_id``: apply the default action of every seat of that phase that
        has not submitted, in seat order. Does nothing if the phase has ended (idempotent).
        Returns how many defaults were applied."""
        if self.status != "running" or self.failed:
            return 0
        if not self.may_write():
            # no valid lease (e.g. this process was paused): another node may run the match now
            # (the lease may come back at the next renew, or the new owner re-arms the deadline)
            log.warning("deadline of match %s phase %s refused: no valid lease", self.match_id, phase_id)
            self._schedule(self.match_id, phase_id, max(self.deadlines.get(phase_id, 0.0), self._now() + 0.5))
            return 0
        applied = 0
        for _ in range(64):
            pending = [p for p in self.prompts if p.phase_id == phase_id and not p.submitted]
            if not pending:
                break
            prompt = pending[0]
            due = self.deadlines.get(phase_id)
            if due is not None and due > self._now() + 0.05:
                # fired early (clock skew between nodes): try again at the due time
                self._schedule(self.match_id, phase_id, due)
                break
            try:
                self._apply(prompt.seat, dict(prompt.default_action), kind="deadline")
                applied += 1
            except IllegalAction as exc:  # an engine bug: never let it stall the node
                log.error("default action rejected in match %s phase %s: %s", self.match_id, phase_id, exc.code)
                break
        return applied

    def _apply(self, seat: int, action: Any, *, kind: str, client_seq: int | None = None,
               reply_to: Peer | None = None) -> None:
        try:
            new_state, events = self.game.apply(self.state, seat, action)
        except IllegalAction:
            raise
        except Exception:
            log.exception("engine error in match %s (action type %r)", self.match_id,
                          action.get("type") if isinstance(action, dict) else None)
            raise IllegalAction("internal_error",
                                "the server could not apply this action; nothing changed") from None
        self.state = new_state
        self.version += 1
        version = self.version
        now = self._now()
        armed, ended = self._advance_phases(now, version)
        new_deadlines = self.deadlines
        self.outcome = self.game.outcome(new_state)
        match_update: MatchUpdate | None = None
        if self.outcome is not None:
            self.status = "finished"
            match_update = {"id": self.match_id, "status": "finished", "outcome": self.outcome.to_wire(),
                            "ended_at": now, "version": version}
        if client_seq is not None:
            self._committing(seat, client_seq)
        row: LogRow = {"match_id": self.match_id, "seq": version, "seat": seat, "kind": kind,
               "action": action, "client_seq": client_seq,
               "deadlines": {str(k): v for k, v in new_deadlines.items()}, "created_at": now}
        self.history.append((version, events))
        prompts_wire = self.public_prompts()
        status = self.status

        def on_durable(exc: BaseException | None) -> None:
            if exc is not None:
                self._storage_failed(exc)
                return
            self.durable_version = version
            self.durable_state = new_state
            self.durable_prompts = prompts_wire
            self.durable_status = status
            if client_seq is not None:
                self._acknowledge(seat, client_seq, version, reply_to)
            self._broadcast(new_state, version, events, prompts_wire, status)
            for phase_id, due in armed:
                self._schedule(self.match_id, phase_id, due)
            if self._cancel is not None:
                for phase_id in ended:
                    self._cancel(self.match_id, phase_id)
            if status != "running" and version == self.version:
                self._finish()

        self.log_writer.submit(self, row, match_update, on_durable)

    def _advance_phases(self, now: float, version: int) -> tuple[list[tuple[int, float]], set[int]]:
        """The prompts and deadlines after a change at ``version``: a phase still open keeps its
        deadline; a new phase gets ``now + deadline_seconds`` and starts at ``version`` (the stale
        rule). Returns (the deadlines to arm, the phases that ended)."""
        old_phases = {p.phase_id for p in self.prompts}
        self.prompts = self.game.prompts(self.state)
        new_deadlines: dict[int, float] = {}
        armed: list[tuple[int, float]] = []
        for p in self.prompts:
            if p.phase_id in self.deadlines:
                new_deadlines[p.phase_id] = self.deadlines[p.phase_id]
            elif p.phase_id not in new_deadlines:
                new_deadlines[p.phase_id] = now + p.deadline_seconds
                self._phase_start[p.phase_id] = version
                armed.append((p.phase_id, new_deadlines[p.phase_id]))
            else:
                new_deadlines[p.phase_id] = max(new_deadlines[p.phase_id], now + p.deadline_seconds)
        ended = old_phases - set(new_deadlines)
        for gone in ended:
            self._phase_start.pop(gone, None)
        self.deadlines = new_deadlines
        return armed, ended

    def _committing(self, seat: int, client_seq: int) -> None:
        """Remember ``client_seq`` as in flight (a duplicate waits for its answer)."""
        recent = self._recent.setdefault(seat, OrderedDict())
        recent[client_seq] = None
        while len(recent) > self.RECENT_PER_SEAT:
            recent.popitem(last=False)

    def _acknowledge(self, seat: int, client_seq: int, version: int, reply_to: Peer | None) -> None:
        """The action is durable: ``ack`` to the actor and to any duplicate waiting, and cached."""
        reply = wire.ack(client_seq, version)
        cache = self._recent.get(seat)
        if cache is not None and client_seq in cache:
            cache[client_seq] = reply
        text = encode(reply)
        if reply_to is not None:
            reply_to.push(text)
        for waiter in self._waiters.pop((seat, client_seq), ()):
            waiter.push(text)  # a duplicate gets the same answer

    def _broadcast(self, state: Any, version: int, events: list[Event], prompts: list[dict[str, Any]],
                   status: str) -> None:
        """Every viewer gets its ``state`` at ``version`` with the events it may see (and any it
        missed while attaching). Spectators with nothing private share one encoded message."""
        if not self.peers:
            return
        spectator_text: str | None = None
        for peer in list(self.peers):
            viewer = peer.viewer
            # versions this peer missed (it attached while they were committing), then this one
            events_out = wire.history_events(self.history, viewer, peer.sent_version, version - 1) \
                if peer.sent_version < version - 1 else []
            events_out += wire.wire_events(version, events, viewer)
            peer.sent_version = version
            if viewer == SPECTATOR and not events_out:
                if spectator_text is None:
                    spectator_text = encode(self._state_at(SPECTATOR, [], state, version, prompts, status))
                peer.push(spectator_text)
                continue
            peer.push(encode(self._state_at(viewer, events_out, state, version, prompts, status)))

    def _state_at(self, viewer: int, events: list[dict[str, Any]], state: Any, version: int,
                  prompts: list[dict[str, Any]], status: str) -> dict[str, Any]:
        return wire.state_message(match_id=self.match_id, game=self.game, state=state, version=version,
                                  status=status, viewer=viewer, prompts=prompts, events=events)

    def abort(self, reason: str, by: str | None,
              on_done: Callable[[BaseException | None], None] | None = None) -> None:
        """An admin ends the match: logged as an ``abort`` record; viewers get ``ended``. Once the
        record is durable the open phases' deadlines are cancelled (issue 9 item 12) and
        ``on_done(None)`` runs; ``on_done(exc)`` if the record could not be written.
        Raises IllegalAction ``match_over`` if the match is not running."""
        if self.status != "running" or self.failed:
            raise IllegalAction("match_over", "the match is not running")
        if not self.may_write():
            raise IllegalAction("match_moved", "this node does not hold the match's lease now; try again")
        open_phases = list(self.deadlines)
        self.version += 1
        version = self.version
        now = self._now()
        self.status = "aborted"
        self.prompts = []
        self.deadlines = {}
        row: LogRow = {"match_id": self.match_id, "seq": version, "seat": None, "kind": "abort",
               "action": {"type": "abort", "reason": reason, "by": by}, "client_seq": None,
               "deadlines": {}, "created_at": now}
        update: MatchUpdate = {"id": self.match_id, "status": "aborted", "ended_at": now, "version": version,
                  "outcome": {"ranks": {}, "scores": {}, "reason": f"aborted: {reason}"}}
        self.outcome = Outcome(ranks={}, scores={}, reason=f"aborted: {reason}")

        def on_durable(exc: BaseException | None) -> None:
            if exc is not None:
                self._storage_failed(exc)
                if on_done is not None:
                    on_done(exc)
                return
            self.durable_version = version
            self.durable_status = "aborted"
            self.durable_prompts = []
            if self._cancel is not None:
                for phase_id in open_phases:
                    self._cancel(self.match_id, phase_id)
            self._finish()
            if on_done is not None:
                on_done(None)

        self.log_writer.submit(self, row, update, on_durable)

    def _finish(self) -> None:
        self.meta["status"] = self.status
        self.meta["version"] = self.durable_version
        self.meta["outcome"] = self.outcome.to_wire() if self.outcome else None
        self.meta["ended_at"] = self._now()
        text = encode(self._ended())
        for peer in list(self.peers):
            peer.push(text)
        self._on_finished(self)

    def _storage_failed(self, exc: BaseException) -> None:
        """A record of this match was not written: drop the runner (nothing more of it is written,
        see :class:`app.runtime.logwriter.LogWriter`); viewers are told and closed. The manager
        rebuilds the match from its durable log (or another node runs it: ``Fenced``)."""
        if self.failed:
            return
        from app.runtime.logwriter import Fenced

        self.failed = True
        if isinstance(exc, Fenced):
            self.failure = "fenced"
            text = encode(wire.moved())
            code, reason = CLOSE_MOVED, "the match moved; reconnect and resume"
        else:
            self.failure = "storage"
            text = encode(error("storage_unavailable", "the match could not be saved; reconnect to resume"))
            code, reason = CLOSE_STORAGE, "storage unavailable"
        for peer in list(self.peers):
            peer.push(text)
            peer.close(code, reason)
        self._on_finished(self)
