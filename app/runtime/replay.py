"""Rebuild a match from its seed and action log: crash recovery, ``bannerfall replay|verify``, admin replay."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app.games import registry
from app.games.base import Event, Game, IllegalAction, Outcome
from app.runtime.audience import AudienceBook
from app.runtime.rows import LogRow, MatchRow
from app.runtime.wire import public_prompts

#: one record's history entry: (the match's version, its events, every audience's version after it)
HistoryEntry = tuple[int, list[Event], tuple[int, ...]]


@dataclass
class Replayed:
    game: Game
    state: Any
    version: int
    #: (version, events, audience versions after it) of the last ``keep_events`` versions
    history: list[HistoryEntry] = field(default_factory=list)
    #: every audience's version before the oldest entry of ``history`` (what a resume can still replay)
    history_floor: tuple[int, ...] = ()
    #: per seat: client_seq -> that seat's audience version after the action, for the dedupe cache
    client_seqs: dict[int, dict[int, int]] = field(default_factory=dict)
    last_deadlines: dict[str, float] | None = None
    #: phase id -> the version at which each phase open at the end started (the stale rule):
    #: where the phase id first appears in the rows' ``deadlines`` in the run that reaches the end;
    #: 0 for phases of the match's initial deadlines
    phase_starts: dict[int, int] = field(default_factory=dict)
    #: phase id -> every audience's version at the phase's start (the stale rule in audience versions)
    phase_start_versions: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: the audiences' versions and documents at the end (``app/runtime/audience.py``)
    book: AudienceBook | None = None


class ReplayMismatch(Exception):
    """The log does not replay: an action the engine now rejects (code, at version)."""


def initial_state(game: Game, match: MatchRow):
    options = game.Options.model_validate(match["options"])
    return game.setup(match["seat_count"], options, bytes.fromhex(match["seed"]))


def replay(match: MatchRow, actions: Iterable[LogRow], *, keep_events: int = 256,
           until: int | None = None, audiences: bool = True) -> Replayed:
    """Re-run ``actions`` (log rows in ``seq`` order) from the match's seed.

    Raises :class:`ReplayMismatch` if a logged action is rejected or a ``seq`` is missing.
    ``until``: stop after that version (admin step-through). ``audiences``: also derive every
    audience's versions and documents (``book``, the third member of each history entry,
    ``phase_start_versions``; what a runner rebuilt from the log needs). Without them (``bannerfall
    verify``/``replay``, the admin step-through) no view is built: history entries carry ``()``."""
    game = registry()[match["game"]]
    state = initial_state(game, match)
    out = Replayed(game=game, state=state, version=0, last_deadlines=match.get("deadlines"))
    out.phase_starts = {int(k): 0 for k in (match.get("deadlines") or {})}
    book = AudienceBook(game, match["seat_count"], state, "running",
                        public_prompts(game.prompts(state), _deadlines(match.get("deadlines")))) if audiences else None
    #: audience versions after each version (index = version), for phase starts
    after: list[tuple[int, ...]] = [tuple(book.versions) if book is not None else ()]
    out.history_floor = after[0]
    status = "running"
    for row in actions:
        if until is not None and row["seq"] > until:
            break
        if row["seq"] != out.version + 1:
            raise ReplayMismatch(f"log gap: expected seq {out.version + 1}, got {row['seq']}")
        if row["kind"] == "abort":
            out.version = row["seq"]
            out.last_deadlines = row["deadlines"]
            out.phase_starts = _starts(out.phase_starts, row)
            status = "aborted"
            if book is not None:
                book.advance(state, status, [], [], ())
            after.append(tuple(book.versions) if book is not None else ())
            _keep(out, (row["seq"], [], after[-1]), keep_events)
            continue
        seat = row["seat"]
        if seat is None:
            raise ReplayMismatch(f"seq {row['seq']}: a {row['kind']} record without a seat")
        try:
            state, events = game.apply(state, seat, row["action"])
        except IllegalAction as exc:
            raise ReplayMismatch(f"seq {row['seq']}: {exc.code}: {exc.message}") from exc
        out.version = row["seq"]
        out.last_deadlines = row["deadlines"]
        out.phase_starts = _starts(out.phase_starts, row)
        if status == "running" and game.outcome(state) is not None:
            status = "finished"
        if book is not None:
            book.advance(state, status, public_prompts(game.prompts(state), _deadlines(row["deadlines"])), events, ())
        after.append(tuple(book.versions) if book is not None else ())
        client_seq = row.get("client_seq")
        if client_seq is not None and book is not None:
            out.client_seqs.setdefault(seat, {})[client_seq] = book.versions[seat]
        _keep(out, (row["seq"], events, after[-1]), keep_events)
    out.state = state
    out.book = book
    out.phase_start_versions = {phase: after[start] for phase, start in out.phase_starts.items()}
    return out


def _keep(out: Replayed, entry: HistoryEntry, keep: int) -> None:
    out.history.append(entry)
    if len(out.history) > keep:
        drop = len(out.history) - keep
        out.history_floor = out.history[drop - 1][2]
        del out.history[:drop]


def _deadlines(deadlines: dict[str, float] | None) -> dict[int, float]:
    return {int(k): v for k, v in (deadlines or {}).items()}


def _starts(before: dict[int, int], row: LogRow) -> dict[int, int]:
    return {int(k): before.get(int(k), row["seq"]) for k in (row["deadlines"] or {})}


def outcome_of(result: Replayed) -> Outcome | None:
    return result.game.outcome(result.state)
