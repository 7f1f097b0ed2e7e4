"""Rebuild a match from its seed and action log: crash recovery, ``bannerfall replay|verify``, admin replay."""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from app.games import versions
from app.games.base import Event, Game, IllegalAction, Outcome
from app.runtime.audience import AudienceBook
from app.runtime.history import EventHistory
from app.runtime.rows import LogRow, MatchRow
from app.runtime.step import Effects, RecordRefused, Snapshot, apply_record, recorded_deadlines, start

#: one record's history entry: (the match's version, its events, every audience's version after it)
HistoryEntry = tuple[int, list[Event], tuple[int, ...]]


class Replayed:
    """A match rebuilt from its log: the :class:`~app.runtime.step.Snapshot` after its last record
    replayed, the events history, and each seat's client seqs (what a rebuilt runner starts from)."""

    __slots__ = ("client_seqs", "history", "snapshot")

    def __init__(self, snapshot: Snapshot, history: EventHistory | deque[HistoryEntry],
                 client_seqs: dict[int, dict[int, int]]) -> None:
        self.snapshot = snapshot
        #: with audiences: the runner's own :class:`EventHistory` (``keep_events`` records, and every
        #: audience's last ``keep_events`` visible ones); without: the last ``keep_events``
        #: ``(version, events, ())``. Iterating either gives ``(version, events, audience versions)``.
        self.history = history
        #: per seat: client_seq -> that seat's audience version after the action (the dedupe cache)
        self.client_seqs = client_seqs

    @property
    def game(self) -> Game:
        return self.snapshot.game

    @property
    def state(self) -> Any:
        return self.snapshot.state

    @property
    def version(self) -> int:
        return self.snapshot.version

    @property
    def book(self) -> AudienceBook | None:
        return self.snapshot.book

    @property
    def history_floor(self) -> tuple[int, ...]:
        """Every audience's version before the oldest record of :attr:`history`."""
        return self.history.start if isinstance(self.history, EventHistory) else ()


class ReplayMismatch(Exception):
    """The log does not replay: an action the engine now rejects (code, at version)."""


class RulesUnavailable(ReplayMismatch):
    """No engine here plays the rules version the match was started under (``matches.rules_version``):
    it was dropped, or is newer than this installation. ``game``, ``needed`` (the match's version)
    and ``available`` (the versions this installation plays, ascending) say which."""

    def __init__(self, game: str, needed: int | None, available: list[int]) -> None:
        have = ", ".join(map(str, available)) or "none"
        super().__init__(f"the match was played under {game} rules version {needed}; this server has "
                         f"{game} rules version{'s' if len(available) > 1 else ''} {have}")
        self.game = game
        self.needed = needed
        self.available = available

    @property
    def newer(self) -> bool:
        """Whether the match's rules are newer than any installed here (a node not upgraded yet)."""
        return self.needed is not None and all(self.needed > v for v in self.available)


def engine_of(match: MatchRow) -> Game:
    """The engine of the match's rules version (``app.games.versions.engine``). Raises
    :class:`RulesUnavailable` when this installation has none."""
    needed = versions.match_rules_version(match)
    game = versions.engine(match["game"], needed)
    if game is None:
        raise RulesUnavailable(match["game"], needed, versions.available_versions(match["game"]))
    return game


def initial_state(game: Game, match: MatchRow):
    options = game.Options.model_validate(match["options"])
    return game.setup(match["seat_count"], options, bytes.fromhex(match["seed"]))


def replay(match: MatchRow, actions: Iterable[LogRow], *, keep_events: int = 256,
           until: int | None = None, audiences: bool = True) -> Replayed:
    """Re-run ``actions`` (log rows in ``seq`` order) from the match's seed, each through
    :func:`app.runtime.step.apply_record` (the step the live runner takes).

    Raises :class:`ReplayMismatch` if a logged action is rejected, a ``seq`` is missing or a record
    follows the end, and :class:`RulesUnavailable` (a ReplayMismatch) before anything is replayed
    when no engine here plays the match's rules version (``matches.rules_version``): a log is never
    replayed by rules it was not played under.
    ``until``: stop after that version (admin step-through). ``audiences``: also derive every
    audience's versions and documents and keep the events history as the runner keeps it (what a
    runner rebuilt from the log needs). Without them (``bannerfall verify``/``replay``, the admin
    step-through) no view is built and the history is the last ``keep_events`` records with ``()``
    for their audience versions."""
    game = engine_of(match)
    state = initial_state(game, match)
    snapshot = start(game, match["seat_count"], state, parsed_deadlines(match.get("deadlines")),
                     audiences=audiences)
    history: EventHistory | deque[HistoryEntry]
    history = EventHistory(keep_events, len(snapshot.versions), (), snapshot.versions) if audiences \
        else deque(maxlen=keep_events)
    client_seqs: dict[int, dict[int, int]] = {}
    for row in actions:
        if until is not None and row["seq"] > until:
            break
        snapshot, effects = _replayed_step(snapshot, row)
        if isinstance(history, EventHistory):
            history.append(snapshot.version, effects.events, snapshot.versions)
        else:
            history.append((snapshot.version, effects.events, ()))
        client_seq = row.get("client_seq")
        seat = row["seat"]
        if client_seq is not None and seat is not None and audiences:
            client_seqs.setdefault(seat, {})[client_seq] = snapshot.versions[seat]
    return Replayed(snapshot, history, client_seqs)


def _replayed_step(snapshot: Snapshot, row: LogRow) -> tuple[Snapshot, Effects]:
    """:func:`apply_record` of a logged record; a record the step refuses raises
    :class:`ReplayMismatch` (with its seq and the rule code)."""
    try:
        return apply_record(snapshot, row, ())
    except RecordRefused as exc:
        raise ReplayMismatch(exc.message) from exc
    except IllegalAction as exc:
        raise ReplayMismatch(f"seq {row['seq']}: {exc.code}: {exc.message}") from exc


def parsed_deadlines(deadlines: Mapping[str, float] | None) -> dict[int, float]:
    """A match row's deadlines (phase id string -> epoch s) keyed by phase id."""
    return {int(k): float(v) for k, v in (deadlines or {}).items()}


def deadline_disagreements(match: MatchRow, actions: Iterable[LogRow]) -> list[str]:
    """The records whose logged ``deadlines`` are not those the step derives (``bannerfall
    verify``): ``["seq 12: logged {...}, derived {...}"]``. Raises as :func:`replay`."""
    game = engine_of(match)
    snapshot = start(game, match["seat_count"], initial_state(game, match),
                     parsed_deadlines(match.get("deadlines")), audiences=False)
    found: list[str] = []
    for row in actions:
        snapshot, _effects = _replayed_step(snapshot, row)
        derived = recorded_deadlines(snapshot)
        if (row["deadlines"] or {}) != derived:
            found.append(f"seq {row['seq']}: logged {row['deadlines']}, derived {derived}")
    return found


def outcome_of(result: Replayed) -> Outcome | None:
    return result.game.outcome(result.state)
