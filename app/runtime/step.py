"""One log record applied to a match: the pure step that the live runner, the rebuild after a crash
or a takeover, the admin replay and ``bannerfall replay``/``verify`` all call.

A :class:`Snapshot` is a match as of one version: the game state, the status, the prompts and the
deadlines of their phases, where each open phase started (the stale rule), the outcome, and every
audience's version and document (``app/runtime/audience.py``). :func:`apply_record` takes a
snapshot and the next log record (a :class:`~app.runtime.rows.LogRow`) and returns the next
snapshot and the record's :class:`Effects` (its events, the audiences that changed, the deadlines
to arm and cancel, the match's final columns), changing nothing it was given. Everything in it is
a function of the log alone — the record's ``created_at`` dates the deadlines of the phases it
opens — so a match rebuilt from its log on any node holds the very snapshot its runner held, and
every audience keeps the versions its sockets were sent (``resume`` across nodes).

A snapshot is a small ``__slots__`` object holding references: the engine's state (never mutated:
``Game.apply`` returns a new one, the conformance suite checks it), the prompts list, the deadline
and phase-start dicts, and tuples of the audiences' versions and documents (documents are flat
dicts of encoded parts, never changed once built). A record makes one snapshot and shares every
piece it does not change with the one before: no copy of the state is made.
"""
from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from app.games.base import Event, Game, Outcome, Prompt
from app.parts import Document, Part, Shape
from app.runtime.audience import AudienceBook
from app.runtime.rows import LogRow, MatchUpdate
from app.runtime.wire import prompts_part, status_part

__all__ = ["Effects", "RecordRefused", "Snapshot", "apply_record", "recorded_deadlines", "start"]


class RecordRefused(Exception):
    """A record that cannot follow the snapshot: out of sequence, after the match ended, or a
    seat's record without a seat. ``code`` says which (``out_of_sequence``, ``match_over``,
    ``no_seat``). The engine refusing the action raises its own ``IllegalAction`` instead."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Snapshot:
    """A match as of log record ``version`` (0: the deal). Read only: :func:`apply_record` makes a
    new one. ``deadlines``: phase id -> epoch seconds of the open phases; ``phase_starts``: phase id
    -> every audience's version at the phase's start; ``versions``/``docs``: per audience of
    ``book`` (seats, then spectators; empty without a book); ``prompts_part``: the prompts encoded
    (``wire.prompts_part``, what the documents show; ``()`` without a book); ``ended_at``: the
    ``created_at`` of the record that ended the match (None while it runs, or when it ended before
    the log was read: a stored match)."""

    __slots__ = ("book", "deadlines", "docs", "ended_at", "game", "outcome", "phase_starts", "prompts",
                 "prompts_part", "shapes", "state", "status", "version", "versions")

    def __init__(self, *, game: Game, book: AudienceBook | None, state: Any, version: int, status: str,
                 prompts: list[Prompt], deadlines: Mapping[int, float], prompts_part: Part,
                 phase_starts: Mapping[int, tuple[int, ...]], versions: tuple[int, ...],
                 docs: tuple[Document, ...], outcome: Outcome | None, ended_at: float | None,
                 shapes: tuple[Shape, ...] = ()) -> None:
        self.game = game
        self.book = book
        self.state = state
        self.version = version
        self.status = status
        self.prompts = prompts
        self.deadlines = deadlines
        self.prompts_part = prompts_part
        self.phase_starts = phase_starts
        self.versions = versions
        self.docs = docs
        self.shapes = shapes
        self.outcome = outcome
        self.ended_at = ended_at

    @property
    def phases(self) -> tuple[int, ...]:
        """The phase ids of the open prompts."""
        return tuple(p.phase_id for p in self.prompts)

    def replace(self, **changes: Any) -> Snapshot:
        """A copy with ``changes`` (slot name -> value)."""
        values = {name: getattr(self, name) for name in self.__slots__}
        if "docs" in changes and "shapes" not in changes:
            values["shapes"] = ()  # the shapes describe the documents they came with
        values.update(changes)
        return Snapshot(**values)

    def __repr__(self) -> str:
        return f"<Snapshot v{self.version} {self.status} versions={self.versions}>"


class Effects:
    """What one record did, beyond the snapshot: its ``events``; ``changed``: audience index -> patch
    (:meth:`AudienceBook.step`) for every audience whose version rose; ``armed``: (phase id, due)
    of the phases it opened; ``ended``: the phases it closed (their timers are cancelled);
    ``match_update``: the ``matches`` columns written with it when it ends the match."""

    __slots__ = ("armed", "changed", "ended", "events", "match_update")

    def __init__(self, events: list[Event], changed: dict[int, list[dict[str, Any]] | None],
                 armed: list[tuple[int, float]], ended: tuple[int, ...], match_update: MatchUpdate | None) -> None:
        self.events = events
        self.changed = changed
        self.armed = armed
        self.ended = ended
        self.match_update = match_update


def start(game: Game, seat_count: int, state: Any, deadlines: Mapping[int, float] | None, *,
          status: str = "running", version: int = 0, versions: Sequence[int] | None = None,
          phase_starts: Mapping[int, Sequence[int]] | None = None, outcome: Outcome | None = None,
          audiences: bool = True) -> Snapshot:
    """The snapshot a match starts from: ``state`` at ``version`` (0 for a new match; a stand-in
    engine's runner starts at the log's end), its open phases' ``deadlines`` (phase id -> epoch s;
    the match row's), every audience at ``versions`` (default 0). A running match's prompts come
    from the engine, its outcome too; an ended one has no prompts and ``outcome`` as stored.
    ``phase_starts`` (phase id -> audience versions) default to ``versions`` for every open phase.
    ``audiences`` False: no book, no documents (``verify``, the admin step-through)."""
    running = status == "running"
    prompts = game.prompts(state) if running else []
    deadlines = dict(deadlines or {})
    book = AudienceBook(game, seat_count, state, status_part(status), prompts_part(prompts, deadlines),
                        versions) if audiences else None
    at, docs, shapes = book.hand_over() if book is not None else ((), (), ())
    starts = {p.phase_id: tuple((phase_starts or {}).get(p.phase_id, at)) for p in prompts}
    return Snapshot(game=game, book=book, state=state, version=version, status=status, prompts=prompts,
                    deadlines=deadlines, prompts_part=prompts_part(prompts, deadlines) if book is not None else (),
                    phase_starts=starts, versions=at, docs=docs, shapes=shapes,
                    outcome=game.outcome(state) if running else outcome, ended_at=None)


def recorded_deadlines(snapshot: Snapshot) -> dict[str, float]:
    """The deadlines as a log row records them (``LogRow.deadlines``: phase id string -> epoch s)."""
    return {str(k): v for k, v in snapshot.deadlines.items()}


def apply_record(snapshot: Snapshot, row: LogRow, wanted: Container[int] | None = ()) -> tuple[Snapshot, Effects]:
    """Apply log record ``row`` (``seq`` = ``snapshot.version + 1``) to ``snapshot``; returns the
    match after it and what it did. Nothing given is changed.

    - ``abort`` (``action.reason``): status ``aborted``, no prompts, every open phase closed, the
      outcome ``aborted: <reason>`` without ranks.
    - ``act``/``deadline``: ``Game.apply(state, seat, action)``; then the prompts (equal prompts keep
      their objects, the list's and each seat's); a phase still open keeps its deadline, a new one gets ``created_at +
      deadline_seconds`` and starts at the audience versions after the record; status ``finished``
      once the engine gives an outcome.
    - every record: each audience's version and document (:meth:`AudienceBook.step`; patches only
      for the audiences in ``wanted``, ``None`` for all) — not without a book.

    ``row["deadlines"]`` is not read: the step derives them, and the runner records what it derived
    (:func:`recorded_deadlines`; ``bannerfall verify`` checks that a log's agree).
    Raises :class:`RecordRefused` (out of sequence, the match not running, no seat) and the engine's
    ``IllegalAction``; an engine that fails otherwise raises what it raised."""
    version = row["seq"]
    if version != snapshot.version + 1:
        raise RecordRefused("out_of_sequence", f"log gap: expected seq {snapshot.version + 1}, got {version}")
    if snapshot.status != "running":
        raise RecordRefused("match_over", f"seq {version}: a record after the match ended ({snapshot.status})")
    game = snapshot.game
    book = snapshot.book
    now = row["created_at"]
    match_update: MatchUpdate | None = None
    if row["kind"] == "abort":
        action = row["action"] or {}
        outcome: Outcome | None = Outcome(ranks={}, scores={}, reason=f"aborted: {action.get('reason')}")
        assert outcome is not None
        events: list[Event] = []
        state, status = snapshot.state, "aborted"
        prompts: list[Prompt] = []
        deadlines: Mapping[int, float] = {}
        armed: list[tuple[int, float]] = []
        ended = tuple(snapshot.deadlines)
        match_update = {"id": row["match_id"], "status": status, "ended_at": now, "version": version,
                        "outcome": outcome.to_wire()}
    else:
        seat = row["seat"]
        if seat is None:
            raise RecordRefused("no_seat", f"seq {version}: a {row['kind']} record without a seat")
        state, events = game.apply(snapshot.state, seat, row["action"])
        prompts = game.prompts(state)
        if prompts == snapshot.prompts:  # equal prompts keep their objects (nothing new for the collector)
            prompts = snapshot.prompts
        elif snapshot.prompts and prompts:  # and so does each seat's prompt that did not change
            kept = {p.seat: p for p in snapshot.prompts}
            prompts = [old if (old := kept.get(p.seat)) is not None and old == p else p for p in prompts]
        deadlines, armed, ended = _phases(snapshot.deadlines, prompts, now)
        outcome = game.outcome(state)
        status = "running"
        if outcome is not None:
            status = "finished"
            match_update = {"id": row["match_id"], "status": status, "outcome": outcome.to_wire(),
                            "ended_at": now, "version": version}
    if book is not None:
        part = snapshot.prompts_part if prompts is snapshot.prompts and deadlines is snapshot.deadlines \
            else prompts_part(prompts, deadlines)
        versions, docs, changed, shapes = book.step(snapshot.versions, snapshot.docs, state, status_part(status),
                                                    part, events, wanted, snapshot.shapes)
    else:
        part, versions, docs, changed, shapes = (), (), (), {}, ()
    starts = snapshot.phase_starts
    if armed or ended:
        starts = {phase: at for phase, at in starts.items() if phase not in ended}
        for phase, _due in armed:
            starts[phase] = versions
    after = Snapshot(game=game, book=book, state=state, version=version, status=status, prompts=prompts,
                     deadlines=deadlines, prompts_part=part, phase_starts=starts, versions=versions, docs=docs,
                     shapes=shapes,
                     outcome=outcome, ended_at=now if status != "running" else None)
    return after, Effects(events, changed, armed, ended, match_update)


def _phases(before: Mapping[int, float], prompts: Sequence[Prompt], now: float
            ) -> tuple[Mapping[int, float], list[tuple[int, float]], tuple[int, ...]]:
    """The deadlines after a record (a phase still open keeps its deadline; a new phase gets ``now +
    deadline_seconds``, the latest of its prompts'), the phases it opened with their due times, and
    the phases it closed. Unchanged phases keep the ``before`` dict itself."""
    if all(p.phase_id in before for p in prompts) and len(before) == len({p.phase_id for p in prompts}):
        return before, [], ()
    deadlines: dict[int, float] = {}
    opened: dict[int, float] = {}
    for p in prompts:
        phase = p.phase_id
        if phase in before:
            deadlines[phase] = before[phase]
        else:
            due = now + p.deadline_seconds
            if phase not in opened or due > opened[phase]:
                opened[phase] = due
            deadlines[phase] = opened[phase]
    ended = tuple(phase for phase in before if phase not in deadlines)
    return deadlines, list(opened.items()), ended
