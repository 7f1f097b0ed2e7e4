"""One live match: its single writer, deadlines, durable log and per-viewer fan-out.

Everything that changes a match runs synchronously on the event loop inside one method call
(:meth:`MatchRunner.act`, :meth:`MatchRunner.deadline`, :meth:`MatchRunner.abort`), so there is
exactly one writer per match without locks. The pipeline for an action (after boardgame.io's
``master.onUpdate``): match over? → seat? → duplicate client seq? → stale version? → seat has a
prompt? → ``Game.apply`` → new version, prompts, deadlines, audience versions → log record handed to
the group-commit writer → *after* the commit: every audience that may see a change gets one message,
encoded once (a ``delta`` of its document, or a full ``state`` for sockets that asked for full
states), then the ``ack`` to the actor, then timers are armed.

Versions on the wire are per audience (``app/runtime/audience.py``): a change an audience may not
see sends it nothing and leaves its version alone (provinces.md 6.4). Spectators get their changes
at most every ``spectator_patch_seconds``, one delta covering all of them (issue 11 item 2).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from app.delta import diff
from app.games.base import ADMIN, SPECTATOR, Event, Game, IllegalAction, Outcome, Prompt
from app.runtime import wire
from app.runtime.audience import AudienceBook, audience_events
from app.runtime.history import EventHistory, RecentSeqs
from app.runtime.rows import LogRow, MatchRow, MatchUpdate
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

    def __init__(self, *, match: MatchRow, game: Game, state: Any, version: int,
                 log_writer: LogWriter, deadlines: dict[int, float] | None,
                 schedule: Callable[[str, int, float], None], on_finished: Callable[[MatchRunner], None],
                 history: Iterable[tuple[int, list[Event], tuple[int, ...]]] | None = None,
                 history_floor: Sequence[int] | None = None, book: AudienceBook | None = None,
                 client_seqs: dict[int, dict[int, int]] | None = None, now: Callable[[], float] = time.time,
                 status: str = "running", cancel: Callable[[str, int], None] | None = None,
                 epoch: int | None = None, phase_starts: Mapping[int, Sequence[int]] | None = None,
                 holds_lease: Callable[[], bool] | None = None, spectator_patch_seconds: float = 0.0,
                 call_later: Callable[[float, Callable[[], None]], Any] | None = None) -> None:
        """``history`` (``(version, events, audience versions after it)``), ``history_floor`` (the
        audience versions before its oldest entry), ``book`` (the audiences at ``version``),
        ``client_seqs`` (seat -> client seq -> that seat's audience version) and ``phase_starts``
        (phase id -> audience versions at its start) come from a replay of the log (rebuild); a new
        match passes none of them. ``call_later(seconds, fn)`` schedules the spectators' batched
        delta (None: spectators are sent every change at once)."""
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
        self.spectators: set[Peer] = set()
        self.admins: set[Peer] = set()
        self.prompts: list[Prompt] = game.prompts(state) if status == "running" else []
        self.deadlines: dict[int, float] = dict(deadlines or {})
        #: the audiences' versions and documents as of ``version`` (``app/runtime/audience.py``)
        self.book = book if book is not None else AudienceBook(game, match["seat_count"], state, status,
                                                                self.public_prompts())
        #: (version, events, audience versions after it) of the last HISTORY log records, compact
        #: (``app/runtime/history.py``); ``history.floor``: the audience versions before its oldest
        entries = list(history or ())
        self.history = EventHistory(self.HISTORY, len(self.book.keys), entries,
                                    history_floor if history_floor is not None or entries else self.book.versions)
        #: each audience's version and document as of ``durable_version`` (what it has been or is sent)
        self._durable_versions: list[int] = list(self.book.versions)
        self._durable_docs: list[dict[str, Any]] = list(self.book.docs)
        #: the admins' document, cached at the durable version it was built for
        self._admin_doc: tuple[int, dict[str, Any]] | None = None
        #: the spectators' last sent (version, document), and the pending batched send
        spectators = len(self.book.keys) - 1
        self._spectators_sent: tuple[int, dict[str, Any]] = (self._durable_versions[spectators],
                                                             self._durable_docs[spectators])
        self._spectator_patch = spectator_patch_seconds
        self._call_later = call_later
        self._flush_handle: Any = None
        #: phase id -> the audience versions at its start (the stale rule; survives rebuilds: replay
        #: derives it from the log, issue 9 item 4)
        here = tuple(self.book.versions)
        self._phase_start: dict[int, tuple[int, ...]] = {
            p.phase_id: tuple((phase_starts or {}).get(p.phase_id, here)) for p in self.prompts}
        #: the fencing token this runner writes with (``matches.owner_epoch`` when it took the match)
        self.epoch = epoch
        #: set by the log writer once a record of this match failed: nothing more of it is written
        self.log_failed = False
        #: whether this node may act for the match now (a valid lease); None: always
        self._holds_lease = holds_lease
        #: why the runner was dropped: None, "storage" (a write failed) or "fenced" (stale owner)
        self.failure: str | None = None
        #: seat -> its last client seqs and the version each was acked at (-1: waiting for the commit)
        self._recent: dict[int, RecentSeqs] = {}
        self._waiters: dict[tuple[int, int], list[Peer]] = {}
        for seat, seqs in (client_seqs or {}).items():
            cache = self._recent[seat] = RecentSeqs(self.RECENT_PER_SEAT)
            for cseq, ver in list(seqs.items())[-self.RECENT_PER_SEAT:]:
                cache.add(cseq, ver)
        self.outcome: Outcome | None = game.outcome(state) if status == "running" else _stored_outcome(match)
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
            self.admins.add(peer)
        else:
            self.spectators.add(peer)
        self.peers.add(peer)
        events: list[dict[str, Any]] = []
        complete = True
        if since_version is not None and since_version < current:
            complete = since_version >= self._floor_version(viewer)
            events = self._events_between(viewer, since_version, current)
        peer.sent_version = current
        peer.push(encode(self.current_state(viewer, events, events_complete=complete)))
        if self.status != "running":
            peer.push(encode(self._ended(viewer)))

    def detach(self, peer: Peer) -> None:
        self.peers.discard(peer)
        self.spectators.discard(peer)
        self.admins.discard(peer)
        if peer.viewer >= 0 and self.seat_peers.get(peer.viewer) is peer:
            del self.seat_peers[peer.viewer]

    # ------------------------------------------------------------------ audiences
    def _audience_version(self, viewer: int) -> int:
        """``viewer``'s audience version as of the durable version (admins: the match's version)."""
        if viewer == ADMIN:
            return self.durable_version
        return self._durable_versions[self.book.index(viewer)]

    def audience_version(self, viewer: int) -> int:
        """The durable version ``viewer``'s audience has seen (admins: the match's version;
        spectators: what ``GET /matches/{id}`` may show)."""
        return self._audience_version(viewer)

    def _document(self, viewer: int) -> dict[str, Any]:
        """``viewer``'s document ``{"status", "prompts", "view"}`` as of the durable version."""
        if viewer != ADMIN:
            return self._durable_docs[self.book.index(viewer)]
        if self._admin_doc is None or self._admin_doc[0] != self.durable_version:
            self._admin_doc = (self.durable_version, self.book.document(self.durable_state, ADMIN,
                                                                        self.durable_status, self.durable_prompts))
        return self._admin_doc[1]

    def _floor_version(self, viewer: int) -> int:
        """The oldest audience version after which every event of ``viewer`` is still in memory."""
        if viewer == ADMIN:
            oldest = self.history.oldest_version
            return oldest - 1 if oldest is not None else self.durable_version
        return self.history.floor[self.book.index(viewer)]

    def _events_between(self, viewer: int, after: int, upto: int) -> list[dict[str, Any]]:
        """The events ``viewer`` may see of its audience versions in ``(after, upto]`` still in memory."""
        audience = None if viewer == ADMIN else self.book.index(viewer)
        return self.history.events_between(audience, viewer, after, upto)

    def _remember(self, version: int, events: list[Event], versions: tuple[int, ...]) -> None:
        self.history.append(version, events, versions)

    # ------------------------------------------------------------------ messages (shaped in wire)
    def public_prompts(self) -> list[dict[str, Any]]:
        return wire.public_prompts(self.prompts, self.deadlines)

    def current_state(self, viewer: int, events: list[dict[str, Any]] = [], *,  # noqa: B006 (read only)
                      events_complete: bool = True) -> dict[str, Any]:
        """``viewer``'s ``state`` message as of the last durable version (never a state whose action
        is still being committed), at its audience's version."""
        return wire.state_of(match_id=self.match_id, game_id=self.game.id,
                             version=self._audience_version(viewer), viewer=viewer, doc=self._document(viewer),
                             events=events, events_complete=events_complete)

    def _ended(self, viewer: int) -> dict[str, Any]:
        return wire.ended_message(match_id=self.match_id, status=self.status,
                                  version=self._audience_version(viewer), outcome=self.outcome,
                                  seed=self.meta["seed"], seed_hash=self.meta["seed_hash"])

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
        recent = self._recent.get(seat)
        acked = recent.get(client_seq) if recent is not None else None
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
            # match now; nothing is applied here (issue 9 item 2)
            peer.push(encode({**wire.moved(), "seq": client_seq}))
            peer.close(CLOSE_MOVED, "the match moved; reconnect and resume")
            return
        if version is not None:
            # ``version`` is the seat's audience version (docs/protocol.md)
            if version < 0 or version > self.book.versions[seat]:
                peer.push(encode(error("bad_version", "version is not one the server sent", seq=client_seq,
                                       version=self._durable_versions[seat])))
                return
            seat_prompt = next((p for p in self.prompts if p.seat == seat), None)
            start = self._phase_start.get(seat_prompt.phase_id) if seat_prompt is not None else None
            if start is not None and version < start[seat]:
                peer.push(encode(error("stale_version", f"the phase changed at version {start[seat]}; "
                                       "refresh your state", seq=client_seq,
                                       version=self._durable_versions[seat])))
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
        armed, ended = self._advance_phases(now)
        new_deadlines = self.deadlines
        self.outcome = self.game.outcome(new_state)
        match_update: MatchUpdate | None = None
        if self.outcome is not None:
            self.status = "finished"
            match_update = {"id": self.match_id, "status": "finished", "outcome": self.outcome.to_wire(),
                            "ended_at": now, "version": version}
        prompts_wire = self.public_prompts()
        status = self.status
        # patches only for the seats whose socket takes deltas now; the others are only tested
        # for change (the spectators' messages are diffed when they are flushed)
        wanted = [seat for seat, peer in self.seat_peers.items() if peer.deltas] if self.seat_peers else ()
        changed = self.book.advance(new_state, status, prompts_wire, events, wanted)
        versions = tuple(self.book.versions)
        docs = {i: (self.book.docs[i], patch) for i, patch in changed.items()}
        for phase_id, _due in armed:
            self._phase_start[phase_id] = versions
        if client_seq is not None:
            self._committing(seat, client_seq)
        row: LogRow = {"match_id": self.match_id, "seq": version, "seat": seat, "kind": kind,
               "action": action, "client_seq": client_seq,
               "deadlines": {str(k): v for k, v in new_deadlines.items()}, "created_at": now}
        self._remember(version, events, versions)

        def on_durable(exc: BaseException | None) -> None:
            if exc is not None:
                self._storage_failed(exc)
                return
            self.durable_version = version
            self.durable_state = new_state
            self.durable_prompts = prompts_wire
            self.durable_status = status
            # the state of the version first, then the ack (docs/protocol.md "Order")
            self._broadcast(version, events, docs, versions)
            if client_seq is not None:
                self._acknowledge(seat, client_seq, versions[seat], reply_to)
            for phase_id, due in armed:
                self._schedule(self.match_id, phase_id, due)
            if self._cancel is not None:
                for phase_id in ended:
                    self._cancel(self.match_id, phase_id)
            if status != "running" and version == self.version:
                self._finish()

        self.log_writer.submit(self, row, match_update, on_durable)

    def _advance_phases(self, now: float) -> tuple[list[tuple[int, float]], set[int]]:
        """The prompts and deadlines after a change: a phase still open keeps its deadline; a new
        phase gets ``now + deadline_seconds`` (the caller records where it starts, for the stale
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
        recent = self._recent.get(seat)
        if recent is None:
            recent = self._recent[seat] = RecentSeqs(self.RECENT_PER_SEAT)
        recent.add(client_seq)

    def _acknowledge(self, seat: int, client_seq: int, version: int, reply_to: Peer | None) -> None:
        """The action is durable: ``ack`` to the actor and to any duplicate waiting, and cached."""
        cache = self._recent.get(seat)
        if cache is not None:
            cache.acknowledge(client_seq, version)
        text = encode(wire.ack(client_seq, version))
        if reply_to is not None:
            reply_to.push(text)
        for waiter in self._waiters.pop((seat, client_seq), ()):
            waiter.push(text)  # a duplicate gets the same answer

    def _broadcast(self, version: int, events: list[Event],
                   docs: Mapping[int, tuple[dict[str, Any], list[dict[str, Any]] | None]],
                   versions: tuple[int, ...]) -> None:
        """Log record ``version`` is durable: each audience in ``docs`` (index of the book → (its new
        document, the patch from its previous one)) moves to its version in ``versions``, and its
        sockets get one message encoded once: a ``delta`` (or a full ``state`` for sockets that asked
        for full states). Audiences not in ``docs`` get nothing. Spectators are sent at most every
        ``spectator_patch_seconds``; admins get every version (their version is the match's)."""
        for i, (doc, patch) in docs.items():
            viewer = self.book.keys[i]
            base, old_doc = self._durable_versions[i], self._durable_docs[i]
            self._durable_versions[i] = versions[i]
            self._durable_docs[i] = doc
            if viewer == SPECTATOR:
                self._spectators_changed()
                continue
            peer = self.seat_peers.get(viewer)
            if peer is not None:
                self._send((peer,), viewer, base, versions[i], old_doc, doc,
                           audience_events(versions[i], events, viewer), patch)
        if self.admins:
            previous = self._admin_doc
            doc = self._document(ADMIN)
            if previous is None:
                previous = (-1, doc)
            self._send(list(self.admins), ADMIN, previous[0], version, previous[1], doc,
                       audience_events(version, events, ADMIN), None)

    def _send(self, peers: Iterable[Peer], viewer: int, base: int, version: int, old_doc: dict[str, Any],
              doc: dict[str, Any], events: list[dict[str, Any]], patch: list[dict[str, Any]] | None) -> None:
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
                                                      version=version, viewer=viewer, doc=doc, events=events))
                peer.push(state_text)
            else:
                missed = self._events_between(viewer, held, version)
                peer.push(encode(wire.state_of(match_id=self.match_id, game_id=self.game.id, version=version,
                                               viewer=viewer, doc=doc, events=missed,
                                               events_complete=held >= self._floor_version(viewer))))
            peer.sent_version = version

    def _spectators_changed(self) -> None:
        """The spectators' document moved: send it now, or within ``spectator_patch_seconds``."""
        if not self.spectators:
            i = len(self.book.keys) - 1
            self._spectators_sent = (self._durable_versions[i], self._durable_docs[i])
            return
        if self._spectator_patch <= 0 or self._call_later is None:
            self._flush_spectators()
        elif self._flush_handle is None:
            self._flush_handle = self._call_later(self._spectator_patch, self._flush_spectators)

    def _flush_spectators(self) -> None:
        """One message for every spectator: what changed since the last one (one encoding)."""
        self._flush_handle = None
        i = len(self.book.keys) - 1
        version, doc = self._durable_versions[i], self._durable_docs[i]
        base, old_doc = self._spectators_sent
        if version == base:
            return
        self._spectators_sent = (version, doc)
        if base < self.history.floor[i]:  # more records than the event window since the last send
            for peer in list(self.spectators):
                peer.sent_version = -1  # a full state with the events still in memory
        self._send(list(self.spectators), SPECTATOR, base, version, old_doc, doc,
                   self._events_between(SPECTATOR, base, version), None)

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
        changed = self.book.advance(self.state, "aborted", [], [])
        versions = tuple(self.book.versions)
        docs = {i: (self.book.docs[i], patch) for i, patch in changed.items()}
        self._remember(version, [], versions)

        def on_durable(exc: BaseException | None) -> None:
            if exc is not None:
                self._storage_failed(exc)
                if on_done is not None:
                    on_done(exc)
                return
            self.durable_version = version
            self.durable_status = "aborted"
            self.durable_prompts = []
            self._broadcast(version, [], docs, versions)
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

        self.failed = True
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
