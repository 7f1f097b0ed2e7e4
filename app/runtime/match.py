"""One live match: its single writer, deadlines, durable log and per-viewer fan-out.

Everything that changes a match runs synchronously on the event loop inside one method call
(:meth:`MatchRunner.act`, :meth:`MatchRunner.deadline`, :meth:`MatchRunner.abort`), so there is
exactly one writer per match without locks. The pipeline for an action (after boardgame.io's
``master.onUpdate``): match over? → seat? → duplicate client seq? → stale version? → seat has a
prompt (or the action is one of any moment, ``GameInfo.unprompted_actions``)? → the record applied
by :func:`app.runtime.step.apply_record` (``Game.apply``, new version, prompts, deadlines, audience
versions: the step every replay takes) → log record handed to the group-commit writer → *after*
the commit: the durable snapshot becomes the record's, whole, and every audience that may see a
change gets one message, encoded once (a
``delta`` of its document, or a full ``state`` for sockets that asked for full states), then the
``ack`` to the actor, then timers are armed.

Versions on the wire are per audience (``app/runtime/audience.py``): a change an audience may not
see sends it nothing and leaves its version alone (provinces.md 6.4). Spectators get their changes
at most every ``spectator_patch_seconds``, one delta covering all of them.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from app.games.base import ADMIN, SPECTATOR, Game, IllegalAction, Outcome, Prompt
from app.parts import Document, assemble, diff, to_json
from app.runtime import wire
from app.runtime.audience import AudienceBook, audience_events
from app.runtime.history import EventHistory, RecentSeqs
from app.runtime.rows import LogRow, MatchRow
from app.runtime.step import Effects, Snapshot, apply_record, recorded_deadlines, start
from app.runtime.wire import (
    CLOSE_MATCH_GONE,
    CLOSE_MOVED,
    CLOSE_REPLACED,
    CLOSE_SLOW,
    CLOSE_STORAGE,
    CLOSE_UNAUTHORIZED,
    encode,
    error,
)

if TYPE_CHECKING:
    from app.runtime.logwriter import LogWriter

log = logging.getLogger("bannerfall.match")

__all__ = ["CLOSE_MATCH_GONE", "CLOSE_REPLACED", "CLOSE_SLOW", "MatchRunner", "Peer"]


def _stored_outcome(match: Mapping[str, Any]) -> Outcome | None:
    """The outcome of an ended match as its row holds it (``{"ranks", "scores", "reason"}``, seats as
    strings), for the ``ended`` of a match loaded after it ended (a rebuild, another node)."""
    stored = match.get("outcome")
    if not isinstance(stored, dict):
        return None
    return Outcome(ranks={int(k): v for k, v in stored.get("ranks", {}).items()},
                   scores={int(k): v for k, v in stored.get("scores", {}).items()},
                   reason=str(stored.get("reason", "")))


class Peer(Protocol):
    """A connected viewer as the runtime sees it (a local socket, or a socket on another node)."""

    viewer: int
    player_id: str | None
    #: the audience version of the last ``state``/``delta`` this peer has been sent
    sent_version: int
    #: whether the peer takes ``delta`` messages (``hello`` ``"deltas"``, default true) or full states
    deltas: bool

    def push(self, text: str) -> None:
        """Queue one message; never blocks (a full queue disconnects the peer)."""

    def close(self, code: int, reason: str) -> None: ...


class MatchRunner:
    """Owns one match's state while it is live on this node."""

    RECENT_PER_SEAT: ClassVar[int] = 128
    #: log records whose events stay in memory for ``resume`` (docs/protocol.md)
    HISTORY: ClassVar[int] = 256

    def __init__(self, *, match: MatchRow, game: Game, log_writer: LogWriter,
                 schedule: Callable[[str, int, float], None], on_finished: Callable[[MatchRunner], None],
                 snapshot: Snapshot | None = None, state: Any = None, version: int = 0,
                 deadlines: Mapping[int, float] | None = None, status: str = "running",
                 history: EventHistory | None = None, client_seqs: dict[int, dict[int, int]] | None = None,
                 now: Callable[[], float] = time.time, cancel: Callable[[str, int], None] | None = None,
                 epoch: int | None = None, holds_lease: Callable[[], bool] | None = None,
                 spectator_patch_seconds: float = 0.0,
                 call_later: Callable[[float, Callable[[], None]], Any] | None = None) -> None:
        """``snapshot`` (the match as of its last durable record), ``history`` (the events history the
        replay kept) and ``client_seqs`` (seat -> client seq -> that seat's audience version) come
        from a replay of the log (:func:`app.runtime.replay.replay`: a rebuild); a new match passes
        none of them but its ``state``, ``version`` (0) and the ``deadlines`` of its first phases
        (phase id -> epoch s). An ended match (``status`` or the snapshot's) says the outcome its row
        holds. ``call_later(seconds, fn)`` schedules the spectators' batched delta (None: spectators
        are sent every change at once)."""
        self.match_id: str = match["id"]
        self.meta: MatchRow = MatchRow(**match)
        self.game = game
        if snapshot is None:
            snapshot = start(game, match["seat_count"], state, deadlines, status=status, version=version)
        if snapshot.status != "running" and match.get("outcome") is not None:
            snapshot = snapshot.replace(outcome=_stored_outcome(match))
        #: the match as of the last record applied (what the next action is checked against) and as of
        #: the last durable one (what viewers are shown); ``durable`` becomes each applied snapshot
        #: in turn, whole, when its record is durable (``app/runtime/step.py``)
        self.applied: Snapshot = snapshot
        self.durable: Snapshot = snapshot
        self.log_writer = log_writer
        self._schedule = schedule
        self._cancel = cancel
        self._on_finished = on_finished
        self._now = now
        self.peers: set[Peer] = set()
        self.seat_peers: dict[int, Peer] = {}
        #: the spectators' and the admins' peers (dicts used as ordered sets: an empty dict is not
        #: tracked by the cyclic collector, and most matches have neither)
        self.spectators: dict[Peer, None] = {}
        self.admins: dict[Peer, None] = {}
        book = snapshot.book
        if book is None:
            raise ValueError("a runner needs a snapshot with its audiences (replay with audiences=True)")
        self.book: AudienceBook = book
        #: (version, events, audience versions after it) of the last HISTORY log records and of each
        #: audience's last HISTORY visible ones, compact (``app/runtime/history.py``);
        #: ``history.floor``: per audience, the version after which it has every event it could see
        self.history = history if history is not None else EventHistory(self.HISTORY, len(book.keys), (),
                                                                       snapshot.versions)
        #: the admins' document, cached at the durable version it was built for
        self._admin_doc: tuple[int, Document] | None = None
        #: the spectators' last sent (version, document), and the pending batched send
        spectators = len(book.keys) - 1
        #: (two attributes, not a tuple: a tuple holding a dict stays tracked by the cyclic collector)
        self._spectators_version: int = snapshot.versions[spectators]
        self._spectators_doc: Document = snapshot.docs[spectators]
        self._spectator_patch = spectator_patch_seconds
        self._call_later = call_later
        self._flush_handle: Any = None
        #: the fencing token this runner writes with (``matches.owner_epoch`` when it took the match)
        self.epoch = epoch
        #: set by the log writer once a record of this match failed: nothing more of it is written
        self.log_failed = False
        #: whether this node may act for the match now (a valid lease); None: always
        self._holds_lease = holds_lease
        #: why the runner was dropped: None (it runs), "storage" (a write failed), "fenced" (stale
        #: owner: the database refused its epoch) or "moved" (its lease went: ``drop``)
        self.failure: str | None = None
        #: per seat, its last client seqs and the version each was acked at (-1: waiting for the commit)
        self._recent = RecentSeqs(self.RECENT_PER_SEAT)
        self._waiters: dict[tuple[int, int], list[Peer]] = {}
        for seat, seqs in (client_seqs or {}).items():
            for cseq, ver in list(seqs.items())[-self.RECENT_PER_SEAT:]:
                self._recent.add(seat, cseq, ver)

    # ------------------------------------------------------------------ the two snapshots, read
    @property
    def state(self) -> Any:
        """The game state after the last record applied (maybe not durable yet)."""
        return self.applied.state

    @property
    def version(self) -> int:
        """The match's version: the last record applied (maybe not durable yet)."""
        return self.applied.version

    @property
    def status(self) -> str:
        """``running``, ``finished`` or ``aborted`` after the last record applied."""
        return self.applied.status

    @property
    def prompts(self) -> list[Prompt]:
        """Who must act now (after the last record applied)."""
        return self.applied.prompts

    @property
    def deadlines(self) -> Mapping[int, float]:
        """The open phases' deadlines (phase id -> epoch s) after the last record applied."""
        return self.applied.deadlines

    @property
    def outcome(self) -> Outcome | None:
        """The outcome after the last record applied (None while the match runs)."""
        return self.applied.outcome

    @property
    def durable_version(self) -> int:
        """The version of the last durable record: what viewers have been shown."""
        return self.durable.version

    @property
    def durable_phases(self) -> tuple[int, ...]:
        """The phases open as of the durable version."""
        return self.durable.phases

    @property
    def failed(self) -> bool:
        """Whether the runner was dropped (:attr:`failure` says why)."""
        return self.failure is not None

    def drop(self, failure: str) -> None:
        """Mark the runner dropped for ``failure`` (``"moved"``: its lease went); it writes no more."""
        if self.failure is None:
            self.failure = failure

    def may_write(self) -> bool:
        """Whether this node may change the match now: its lease is valid (always, without a
        lease check). Checked by ``act``, ``deadline``, ``abort`` and by the log writer before each
        commit attempt, so a node that woke up after its lease ran out writes nothing."""
        return self._holds_lease is None or self._holds_lease()

    # ------------------------------------------------------------------ viewers
    def attach(self, peer: Peer, *, since_version: int | None = None, from_hello: bool = False) -> None:
        """Add a viewer and send it the full ``state`` at its audience's durable version, with the
        events it missed since ``since_version`` (an audience version) while they are still in memory
        (``events_complete: false`` otherwise). A ``since_version`` beyond that version (one the server
        never sent) gets ``bad_version`` and changes nothing; with ``from_hello`` the socket is also
        closed with 4401. A newer socket for a seat replaces the older one (closed with 4001)."""
        viewer = peer.viewer
        current = self._audience_version(viewer)
        if since_version is not None and since_version > current:
            peer.push(encode(error("bad_version", f"since_version {since_version} is beyond the newest version "
                                                  f"({current}) of this match for you", version=current)))
            if from_hello:
                peer.close(CLOSE_UNAUTHORIZED, "bad since_version")
            return
        if viewer >= 0:
            old = self.seat_peers.get(viewer)
            if old is not None and old is not peer:
                self.peers.discard(old)
                old.close(CLOSE_REPLACED, "replaced by a newer connection for this seat")
            self.seat_peers[viewer] = peer
        elif viewer == ADMIN:
            self.admins[peer] = None
        else:
            self.spectators[peer] = None
        self.peers.add(peer)
        events: list[dict[str, Any]] = []
        complete = True
        if since_version is not None and since_version < current:
            complete = since_version >= self._floor_version(viewer)
            events = self._events_between(viewer, since_version, current)
        peer.sent_version = current
        peer.push(encode(self._state_message(viewer, events, events_complete=complete)))
        if self.durable.status != "running":
            peer.push(encode(self._ended(viewer)))

    def detach(self, peer: Peer) -> None:
        self.peers.discard(peer)
        self.spectators.pop(peer, None)
        self.admins.pop(peer, None)
        if peer.viewer >= 0 and self.seat_peers.get(peer.viewer) is peer:
            del self.seat_peers[peer.viewer]

    # ------------------------------------------------------------------ audiences
    def _audience_version(self, viewer: int) -> int:
        """``viewer``'s audience version as of the durable version (admins: the match's version)."""
        if viewer == ADMIN:
            return self.durable.version
        return self.durable.versions[self.book.index(viewer)]

    def now(self) -> float:
        """The runner's clock: epoch seconds, the clock of ``deadline_at`` and ``server_time``."""
        return self._now()

    def audience_version(self, viewer: int) -> int:
        """The durable version ``viewer``'s audience has seen (admins: the match's version;
        spectators: what ``GET /matches/{id}`` may show)."""
        return self._audience_version(viewer)

    def _document(self, viewer: int) -> Document:
        """``viewer``'s document (``app.parts.Document``: ``{"status", "prompts", "view"}`` as encoded
        parts) as of the durable version."""
        durable = self.durable
        if viewer != ADMIN:
            return durable.docs[self.book.index(viewer)]
        if self._admin_doc is None or self._admin_doc[0] != durable.version:
            self._admin_doc = (durable.version, self.book.document(
                durable.state, ADMIN, wire.status_part(durable.status), durable.prompts_part))
        return self._admin_doc[1]

    def document(self, viewer: int) -> dict[str, Any]:
        """``viewer``'s document as plain JSON values ``{"status", "prompts", "view"}`` (tools and
        tests; the wire embeds the encoded parts)."""
        return to_json(self._document(viewer))

    def _floor_version(self, viewer: int) -> int:
        """The oldest audience version after which every event of ``viewer`` is still in memory."""
        if viewer == ADMIN:
            oldest = self.history.oldest_version
            return oldest - 1 if oldest is not None else self.durable.version
        return self.history.floor[self.book.index(viewer)]

    def _events_between(self, viewer: int, after: int, upto: int) -> list[dict[str, Any]]:
        """The events ``viewer`` may see of its audience versions in ``(after, upto]`` still in memory."""
        audience = None if viewer == ADMIN else self.book.index(viewer)
        return self.history.events_between(audience, viewer, after, upto)

    # ------------------------------------------------------------------ messages (shaped in wire)
    def public_prompts(self) -> list[dict[str, Any]]:
        """The prompts as every viewer sees them (``PromptInfo``), as of the last record applied."""
        return wire.public_prompts(self.applied.prompts, self.applied.deadlines)

    def _state_message(self, viewer: int, events: list[dict[str, Any]] = [], *,  # noqa: B006 (read only)
                       events_complete: bool = True) -> dict[str, Any]:
        """``viewer``'s ``state`` message as of the last durable version (never a state whose action
        is still being committed), at its audience's version; its document's values are
        ``orjson.Fragment`` (encode it with ``wire.encode``)."""
        return wire.state_of(match_id=self.match_id, game_id=self.game.id,
                             version=self._audience_version(viewer), viewer=viewer,
                             doc=assemble(self._document(viewer)), events=events, now=self._now(),
                             events_complete=events_complete)

    def current_state(self, viewer: int, events: list[dict[str, Any]] = [], *,  # noqa: B006 (read only)
                      events_complete: bool = True) -> dict[str, Any]:
        """:meth:`_state_message` as plain JSON values (the admin's REST view, tools, tests)."""
        return to_json(self._state_message(viewer, events, events_complete=events_complete))

    def _ended(self, viewer: int) -> dict[str, Any]:
        return wire.ended_message(match_id=self.match_id, status=self.durable.status,
                                  version=self._audience_version(viewer), outcome=self.durable.outcome,
                                  seed=self.meta["seed"], seed_hash=self.meta["seed_hash"])

    # ------------------------------------------------------------------ the writer
    def act(self, peer: Peer, client_seq: int, action: Any, version: int | None = None) -> None:
        """A seat's action, as validated by :func:`app.runtime.protocol.route` (``client_seq`` an
        integer in [0, 2**62), ``version`` an integer or None). Replies go to ``peer``: ``ack`` after
        the commit, or ``error`` (not_a_player, match_over, match_moved + close 4503, bad_version,
        stale_version, not_your_turn, or the game's ``IllegalAction`` code). The pipeline, in order:
        seat? → duplicate seq? → match running? → lease? → version? → prompt? → apply.

        An action of a type in ``game.info.unprompted_actions`` (Conquest's ``special``, seed 5.1.3)
        needs no prompt: it is applied for any seat the engine lets act, and its stale check is
        against the start of the current phase (the phase of the prompts now) when the seat has no
        prompt of its own; an engine's ``no_prompt`` for it (a seat that may not act at all, e.g.
        eliminated) is answered ``not_your_turn``, as for any seat with nothing to decide."""
        seat = peer.viewer
        if seat < 0:
            peer.push(encode(error("not_a_player", "spectators and admins cannot act", seq=client_seq)))
            return
        acked = self._recent.get(seat, client_seq)
        if acked is not None:
            if acked < 0:  # same action still committing: answer when it is durable
                self._waiters.setdefault((seat, client_seq), []).append(peer)
            else:
                peer.push(encode(wire.ack(client_seq, acked)))
            return
        if self.status != "running" or self.failed:
            peer.push(encode(error("match_over", "the match is not running", seq=client_seq)))
            return
        if not self.may_write():
            # no valid lease (this node was paused, or cannot reach Redis): another node may run the
            # match now; nothing is applied here
            peer.push(encode({**wire.moved(), "seq": client_seq}))
            peer.close(CLOSE_MOVED, "the match moved; reconnect and resume")
            return
        seat_prompt = next((p for p in self.prompts if p.seat == seat), None)
        # an action of any moment (docs/protocol.md, "Actions without a prompt") needs no prompt
        anytime = type(action) is dict and action.get("type") in self.game.info.unprompted_actions
        if version is not None:
            # ``version`` is the seat's audience version (docs/protocol.md)
            if version < 0 or version > self.applied.versions[seat]:
                peer.push(encode(error("bad_version", "version is not one the server sent", seq=client_seq,
                                       version=self.durable.versions[seat])))
                return
            # the phase the version is checked against: the seat's prompt's, or (an action of any
            # moment from a seat without a prompt) the current one
            phase_prompt = seat_prompt if seat_prompt is not None or not anytime or not self.prompts \
                else self.prompts[0]
            start = self.applied.phase_starts.get(phase_prompt.phase_id) if phase_prompt is not None else None
            if start is not None and version < start[seat]:
                peer.push(encode(error("stale_version", f"the phase changed at version {start[seat]}; "
                                       "refresh your state", seq=client_seq,
                                       version=self.durable.versions[seat])))
                return
        if seat_prompt is None and not anytime:
            peer.push(encode(error("not_your_turn", "you have nothing to decide now", seq=client_seq)))
            return
        try:
            self._apply(seat, action, kind="act", client_seq=client_seq, reply_to=peer)
        except IllegalAction as exc:
            if exc.code == "no_prompt" and seat_prompt is None:  # a seat that may not act at all
                reply = error("not_your_turn", "you have nothing to decide now", seq=client_seq)
            else:
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
        """Apply one seat's record (``act`` or ``deadline``) with :func:`apply_record` and hand it to
        the log writer; the durable swap and the fan-out follow its commit (:meth:`_submit`). Raises
        the engine's IllegalAction (``internal_error`` for any other failure of the engine)."""
        before = self.applied
        row: LogRow = {"match_id": self.match_id, "seq": before.version + 1, "seat": seat, "kind": kind,
                       "action": action, "client_seq": client_seq, "deadlines": {}, "created_at": self._now()}
        # patches only for the seats whose socket takes deltas now; the others are only tested
        # for change (the spectators' messages are diffed when they are flushed)
        wanted = [s for s, peer in self.seat_peers.items() if peer.deltas] if self.seat_peers else ()
        try:
            after, effects = apply_record(before, row, wanted)
        except IllegalAction:
            raise
        except Exception:
            log.exception("engine error in match %s (action type %r)", self.match_id,
                          action.get("type") if isinstance(action, dict) else None)
            raise IllegalAction("internal_error",
                                "the server could not apply this action; nothing changed") from None
        row["deadlines"] = recorded_deadlines(after)
        if client_seq is not None:
            self._committing(seat, client_seq)
        self._submit(row, after, effects, reply_to)
        version = after.version
        if after.status == "running" and version >= self.game.info.max_actions:
            # the game's bound on a match's length (GameInfo.max_actions): the match ends here
            log.warning("match %s reached max_actions (%d): aborted", self.match_id, version)
            try:
                self.abort("max_actions", None)
            except IllegalAction as exc:  # the lease went meanwhile: the match's next owner ends it
                log.warning("match %s: max_actions abort refused (%s)", self.match_id, exc.code)

    def _submit(self, row: LogRow, after: Snapshot, effects: Effects, reply_to: Peer | None,
                on_done: Callable[[BaseException | None], None] | None = None) -> None:
        """``after`` is the applied snapshot now; ``row`` goes to the log writer. Once it is durable,
        ``after`` is the durable snapshot, whole (records become durable in order, so the durable
        snapshot before it is the one it was applied to), and what is sent follows from the two
        snapshots and the effects: each audience that changed gets its message, then the actor its
        ``ack``, then the timers of the phases opened are armed and those of the phases closed
        cancelled; the match's end is announced. ``on_done(None)`` then, or ``on_done(exc)`` when
        the record was not written (the runner is dropped)."""
        self.applied = after
        self.history.append(after.version, effects.events, after.versions)
        seat, client_seq = row["seat"], row["client_seq"]

        def on_durable(exc: BaseException | None) -> None:
            if exc is not None:
                self._storage_failed(exc)
                if on_done is not None:
                    on_done(exc)
                return
            before, self.durable = self.durable, after
            # the state of the version first, then the ack (docs/protocol.md "Order")
            self._broadcast(before, after, effects)
            if client_seq is not None and seat is not None:
                self._acknowledge(seat, client_seq, after.versions[seat], reply_to)
            for phase_id, due in effects.armed:
                self._schedule(self.match_id, phase_id, due)
            if self._cancel is not None:
                for phase_id in effects.ended:
                    self._cancel(self.match_id, phase_id)
            if after.status != "running":
                self._finish()
            if on_done is not None:
                on_done(None)

        self.log_writer.submit(self, row, effects.match_update, on_durable)

    def _committing(self, seat: int, client_seq: int) -> None:
        """Remember ``client_seq`` as in flight (a duplicate waits for its answer)."""
        self._recent.add(seat, client_seq)

    def _acknowledge(self, seat: int, client_seq: int, version: int, reply_to: Peer | None) -> None:
        """The action is durable: ``ack`` to the actor and to any duplicate waiting, and cached."""
        self._recent.acknowledge(seat, client_seq, version)
        text = encode(wire.ack(client_seq, version))
        if reply_to is not None:
            reply_to.push(text)
        for waiter in self._waiters.pop((seat, client_seq), ()):
            waiter.push(text)  # a duplicate gets the same answer

    def _broadcast(self, before: Snapshot, after: Snapshot, effects: Effects) -> None:
        """Log record ``after.version`` is durable, ``before`` the durable snapshot it was applied
        to: each audience in ``effects.changed`` (index of the book → the patch from its document in
        ``before`` to the one in ``after``, or None: diffed here if needed) moves from its version in
        ``before`` to its version in ``after``, and its sockets get one message encoded once: a
        ``delta`` (or a full ``state`` for sockets that asked for full states). Audiences not in
        ``changed`` get nothing. Spectators are sent at most every ``spectator_patch_seconds``;
        admins get every version (their version is the match's)."""
        events = effects.events
        versions = after.versions
        for i, patch in effects.changed.items():
            viewer = self.book.keys[i]
            if viewer == SPECTATOR:
                self._spectators_changed()
                continue
            peer = self.seat_peers.get(viewer)
            if peer is not None:
                self._send((peer,), viewer, before.versions[i], versions[i], before.docs[i], after.docs[i],
                           audience_events(versions[i], events, viewer), patch)
        if self.admins:
            previous = self._admin_doc
            doc = self._document(ADMIN)
            if previous is None:
                previous = (-1, doc)
            self._send(list(self.admins), ADMIN, previous[0], after.version, previous[1], doc,
                       audience_events(after.version, events, ADMIN), None)

    def _send(self, peers: Iterable[Peer], viewer: int, base: int, version: int, old_doc: Document,
              doc: Document, events: list[dict[str, Any]], patch: list[dict[str, Any]] | None) -> None:
        """Send ``peers`` of ``viewer``'s audience its move from ``base`` to ``version``: the ``delta``
        (``patch``, or ``diff(old_doc, doc)`` when None) or the full ``state``, each built and encoded
        at most once.
        A peer that does not hold ``base`` (it attached in between) gets a full ``state`` with the
        events it missed."""
        delta_text: str | None = None
        state_text: str | None = None
        for peer in peers:
            held = peer.sent_version
            if held == version:
                continue
            if held == base and peer.deltas:
                if delta_text is None:
                    if patch is None:
                        patch = diff(old_doc, doc)
                    delta_text = encode(wire.delta_message(match_id=self.match_id, base=base, version=version,
                                                           patch=patch, events=events))
                peer.push(delta_text)
            elif held == base:
                if state_text is None:
                    state_text = encode(wire.state_of(match_id=self.match_id, game_id=self.game.id,
                                                      version=version, viewer=viewer, doc=assemble(doc),
                                                      events=events, now=self._now()))
                peer.push(state_text)
            else:
                missed = self._events_between(viewer, held, version)
                peer.push(encode(wire.state_of(match_id=self.match_id, game_id=self.game.id, version=version,
                                               viewer=viewer, doc=assemble(doc), events=missed, now=self._now(),
                                               events_complete=held >= self._floor_version(viewer))))
            peer.sent_version = version

    def _spectators_changed(self) -> None:
        """The spectators' document moved: send it now, or within ``spectator_patch_seconds``."""
        if not self.spectators:
            i = len(self.book.keys) - 1
            self._spectators_version = self.durable.versions[i]
            self._spectators_doc = self.durable.docs[i]
            return
        if self._spectator_patch <= 0 or self._call_later is None:
            self._flush_spectators()
        elif self._flush_handle is None:
            self._flush_handle = self._call_later(self._spectator_patch, self._flush_spectators)

    def _flush_spectators(self) -> None:
        """One message for every spectator: what changed since the last one (one encoding)."""
        self._flush_handle = None
        i = len(self.book.keys) - 1
        version, doc = self.durable.versions[i], self.durable.docs[i]
        base, old_doc = self._spectators_version, self._spectators_doc
        if version == base:
            return
        self._spectators_version, self._spectators_doc = version, doc
        if base < self.history.floor[i]:  # more records than the event window since the last send
            for peer in list(self.spectators):
                peer.sent_version = -1  # a full state with the events still in memory
        self._send(list(self.spectators), SPECTATOR, base, version, old_doc, doc,
                   self._events_between(SPECTATOR, base, version), None)

    def abort(self, reason: str, by: str | None,
              on_done: Callable[[BaseException | None], None] | None = None) -> None:
        """An admin ends the match: logged as an ``abort`` record (:func:`apply_record`); viewers get
        ``ended``. Once the record is durable the open phases' deadlines are cancelled and
        ``on_done(None)`` runs; ``on_done(exc)`` if the record could not be written.
        Raises IllegalAction ``match_over`` if the match is not running, ``match_moved`` without a
        valid lease."""
        if self.status != "running" or self.failed:
            raise IllegalAction("match_over", "the match is not running")
        if not self.may_write():
            raise IllegalAction("match_moved", "this node does not hold the match's lease now; try again")
        before = self.applied
        row: LogRow = {"match_id": self.match_id, "seq": before.version + 1, "seat": None, "kind": "abort",
                       "action": {"type": "abort", "reason": reason, "by": by}, "client_seq": None,
                       "deadlines": {}, "created_at": self._now()}
        after, effects = apply_record(before, row, ())
        self._submit(row, after, effects, None, on_done)

    def _finish(self) -> None:
        """The record that ended the match is durable: the row's columns as written with it (one
        ``ended_at``: that record's ``created_at``), the spectators' last delta, ``ended`` to every
        viewer."""
        durable = self.durable
        self.meta["status"] = durable.status
        self.meta["version"] = durable.version
        self.meta["outcome"] = durable.outcome.to_wire() if durable.outcome else None
        self.meta["ended_at"] = durable.ended_at
        if self._flush_handle is not None:  # the spectators' last delta before ``ended``
            self._flush_handle.cancel()
            self._flush_spectators()
        texts: dict[int, str] = {}
        for peer in list(self.peers):
            viewer = peer.viewer
            text = texts.get(viewer)
            if text is None:
                text = texts[viewer] = encode(self._ended(viewer))
            peer.push(text)
        self._on_finished(self)

    def _storage_failed(self, exc: BaseException) -> None:
        """A record of this match was not written: drop the runner (nothing more of it is written,
        see :class:`app.runtime.logwriter.LogWriter`); viewers are told and closed. The manager
        rebuilds the match from its durable log (or another node runs it: ``Fenced``)."""
        if self.failed:
            return
        from app.runtime.logwriter import Fenced

        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
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
