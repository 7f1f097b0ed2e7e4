"""Rebuild a match from its seed and action log: crash recovery, ``bannerfall replay|verify``, admin replay."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app.games import registry
from app.games.base import Event, Game, IllegalAction, Outcome
from app.runtime.rows import LogRow, MatchRow


@dataclass
class Replayed:
    game: Game
    state: Any
    version: int
    #: (version, events) of the last ``keep_events`` versions
    history: list[tuple[int, list[Event]]] = field(default_factory=list)
    #: per seat: client_seq -> version, for the dedupe cache after a restart
    client_seqs: dict[int, dict[int, int]] = field(default_factory=dict)
    last_deadlines: dict[str, float] | None = None
    #: phase id -> the version at which each phase open at the end started (the stale rule):
    #: where the phase id first appears in the rows' ``deadlines`` in the run that reaches the end;
    #: 0 for phases of the match's initial deadlines
    phase_starts: dict[int, int] = field(default_factory=dict)


class ReplayMismatch(Exception):
    """The log does not replay: an action the engine now rejects (code, at version)."""


def initial_state(game: Game, match: MatchRow):
    options = game.Options.model_validate(match["options"])
    return game.setup(match["seat_count"], options, bytes.fromhex(match["seed"]))


def replay(match: MatchRow, actions: Iterable[LogRow], *, keep_events: int = 256,
           until: int | None = None) -> Replayed:
    """Re-run ``actions`` (log rows in ``seq`` order) from the match's seed.

    Raises :class:`ReplayMismatch` if a logged action is rejected or a ``seq`` is missing.
    ``until``: stop after that version (admin step-through)."""
    game = registry()[match["game"]]
    state = initial_state(game, match)
    out = Replayed(game=game, state=state, version=0, last_deadlines=match.get("deadlines"))
    out.phase_starts = {int(k): 0 for k in (match.get("deadlines") or {})}
    for row in actions:
        if until is not None and row["seq"] > until:
            break
        if row["seq"] != out.version + 1:
            raise ReplayMismatch(f"log gap: expected seq {out.version + 1}, got {row['seq']}")
        if row["kind"] == "abort":
            out.version = row["seq"]
            out.last_deadlines = row["deadlines"]
            out.phase_starts = _starts(out.phase_starts, row)
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
        client_seq = row.get("client_seq")
        if client_seq is not None:
            out.client_seqs.setdefault(seat, {})[client_seq] = row["seq"]
        out.history.append((row["seq"], events))
        if len(out.history) > keep_events:
            del out.history[: len(out.history) - keep_events]
    out.state = state
    return out


def _starts(before: dict[int, int], row: LogRow) -> dict[int, int]:
    return {int(k): before.get(int(k), row["seq"]) for k in (row["deadlines"] or {})}


def outcome_of(result: Replayed) -> Outcome | None:
    return result.game.outcome(result.state)
