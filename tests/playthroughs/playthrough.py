"""What a playthrough holds, how it is played and replayed, and how its file is laid out.

A playthrough file (``tests/playthroughs/<game>.json``) is one JSON object:

- ``game``, ``rules_version`` (``GameInfo.rules_version`` when it was recorded), ``regenerate``;
- ``matches``: a short seeded match, played to its end, with every step in full. Step 0 is the
  deal; each later step is one ``seat``'s ``action`` and what it led to. At each step ``documents``
  holds, for each viewer whose document changed (all of them at step 0), its whole document
  ``{"status", "prompts", "view"}`` — the wire's document with each prompt's ``deadline_seconds``
  instead of an absolute time — and ``events`` each viewer's events (``Event.to_wire``) of that
  step, for the viewers that got any; ``outcome`` is the outcome once over. Viewers: the seats
  ``"0"``, ``"1"``…, ``"spectator"`` and ``"admin"``;
- ``digests``: more seeded matches (every seat count, whole games) with their actions and, per
  step, the first 16 hex digits of the SHA-256 of that step's record in the form above with every
  viewer's document: wide coverage at a small size.

The actions are drawn once, at recording, by a seeded sampler over ``Game.legal_actions`` (the
conformance suite's ``random_step``); the test replays the recorded actions, so a change of the
sampler or of the bots changes nothing here.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.games import registry
from app.games.base import ADMIN, SPECTATOR, Event, Game, IllegalAction
from tests.games.test_conformance import random_step

HERE = Path(__file__).resolve().parent
COMMAND = "python -m tests.playthroughs.record"
#: a bound on one recorded match
MAX_STEPS = 6000


@dataclass(frozen=True)
class Case:
    """One seeded match of a playthrough: ``name`` (also the seed of the match and of the sampler),
    ``seats``, lobby ``options``."""

    name: str
    seats: int
    options: dict[str, Any]


#: per game: the match recorded in full (short: its options end it early), then the digested ones.
#: A game without an entry gets its minimum seat count in full and every seat count digested.
CASES: dict[str, tuple[Case, list[Case]]] = {
    "provinces": (Case("provinces-full-2", 2, {"max_rounds": 3}),
                  [Case(f"provinces-{s}", s, {"max_rounds": 6}) for s in range(2, 7)]),
    "conquest": (Case("conquest-full-2", 2, {"max_rounds": 3}),
                 [Case(f"conquest-{s}", s, {"max_rounds": 8}) for s in range(2, 5)]
                 + [Case("conquest-low-mana-3", 3, {"starting_mana": 3, "max_rounds": 8})]),
    "warrior": (Case("warrior-full-18", 2, {}),
                [Case(f"warrior-{s}", s, {}) for s in range(2, 5)]),
}


def cases(game: Game[Any, Any]) -> tuple[Case, list[Case]]:
    if game.info.id in CASES:
        return CASES[game.info.id]
    low, high = game.info.min_seats, game.info.max_seats
    return (Case(f"{game.info.id}-full-{low}", low, {}),
            [Case(f"{game.info.id}-{s}", s, {}) for s in range(low, high + 1)])


def viewer_keys(seats: int) -> list[tuple[str, int]]:
    return [*((str(s), s) for s in range(seats)), ("spectator", SPECTATOR), ("admin", ADMIN)]


def _plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value))


def documents(game: Game[Any, Any], state: Any, seats: int) -> dict[str, Any]:
    """Every viewer's document ``{"status", "prompts", "view"}`` at ``state``."""
    status = "running" if game.outcome(state) is None else "finished"
    prompts = [{"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "deadline_seconds": p.deadline_seconds,
                "default_action": dict(p.default_action), "simultaneous": p.simultaneous,
                "submitted": p.submitted} for p in game.prompts(state)]
    return _plain({key: {"status": status, "prompts": prompts, "view": game.view(state, viewer)}
                   for key, viewer in viewer_keys(seats)})


def events_by_viewer(events: list[Event], seats: int) -> dict[str, Any]:
    out = {}
    for key, viewer in viewer_keys(seats):
        seen = [e.to_wire() for e in events if e.visible_to(viewer)]
        if seen:
            out[key] = seen
    return _plain(out)


def step_record(game: Game[Any, Any], state: Any, seats: int, seat: int | None, action: Any,
                events: list[Event], before: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """One step's record (``documents`` only of the viewers whose document differs from ``before``;
    all of them when ``before`` is None) and every viewer's documents now."""
    docs = documents(game, state, seats)
    outcome = game.outcome(state)
    record = {"seat": seat, "action": _plain(action),
              "documents": {k: d for k, d in docs.items() if before is None or before.get(k) != d},
              "events": events_by_viewer(events, seats),
              "outcome": None if outcome is None else _plain(outcome.to_wire())}
    return record, docs


def digest(game: Game[Any, Any], state: Any, seats: int, seat: int | None, action: Any,
           events: list[Event]) -> str:
    record, _docs = step_record(game, state, seats, seat, action, events, None)
    return hashlib.sha256(json.dumps(record, separators=(",", ":"), sort_keys=True).encode()).hexdigest()[:16]


def play(game: Game[Any, Any], case: Case) -> list[tuple[int, dict[str, Any]]]:
    """The actions of ``case`` as the seeded sampler plays them, to the match's end."""
    seed = case.name.encode()
    rng = random.Random(seed)
    state = game.setup(case.seats, case.options, seed)
    actions: list[tuple[int, dict[str, Any]]] = []
    while game.outcome(state) is None:
        if len(actions) >= MAX_STEPS:
            raise RuntimeError(f"{case.name}: no end within {MAX_STEPS} actions")
        step = random_step(game, state, case.seats, rng, verify=False)
        if step is None:
            raise RuntimeError(f"{case.name}: a running match prompts nobody")
        seat, action = step
        state, _events = game.apply(state, seat, action)
        actions.append((seat, _plain(action)))
    return actions


class Refused(Exception):
    """A recorded action the engine now refuses: ``step`` (1-based), the IllegalAction."""

    def __init__(self, case: str, step: int, seat: int, action: Any, exc: IllegalAction) -> None:
        super().__init__(f"{case}: step {step}: seat {seat}'s recorded action {json.dumps(action)} is now refused: "
                         f"{exc.code}: {exc.message}")
        self.step = step


def replay_full(game: Game[Any, Any], case: Case, actions: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    """Every step's record (:func:`step_record`) of ``case`` with ``actions``. Raises :class:`Refused`."""
    seed = case.name.encode()
    state = game.setup(case.seats, case.options, seed)
    record, docs = step_record(game, state, case.seats, None, None, [], None)
    steps = [record]
    for n, (seat, action) in enumerate(actions, 1):
        try:
            state, events = game.apply(state, seat, action)
        except IllegalAction as exc:
            raise Refused(case.name, n, seat, action, exc) from None
        record, docs = step_record(game, state, case.seats, seat, action, events, docs)
        steps.append(record)
    return steps


def replay_digests(game: Game[Any, Any], case: Case, actions: list[tuple[int, Any]]) -> list[str]:
    """Every step's :func:`digest` of ``case`` with ``actions``. Raises :class:`Refused`."""
    seed = case.name.encode()
    state = game.setup(case.seats, case.options, seed)
    out = [digest(game, state, case.seats, None, None, [])]
    for n, (seat, action) in enumerate(actions, 1):
        try:
            state, events = game.apply(state, seat, action)
        except IllegalAction as exc:
            raise Refused(case.name, n, seat, action, exc) from None
        out.append(digest(game, state, case.seats, seat, action, events))
    return out


def record(game: Game[Any, Any]) -> dict[str, Any]:
    """A new playthrough of ``game`` (the file's content)."""
    full, digested = cases(game)
    actions = play(game, full)
    out: dict[str, Any] = {
        "game": game.info.id, "rules_version": game.info.rules_version,
        "regenerate": COMMAND,
        "matches": [{"name": full.name, "seats": full.seats, "options": full.options,
                     "steps": replay_full(game, full, actions)}],
        "digests": [],
    }
    for case in digested:
        acts = play(game, case)
        out["digests"].append({"name": case.name, "seats": case.seats, "options": case.options,
                               "actions": [[s, a] for s, a in acts], "steps": replay_digests(game, case, acts)})
    return out


def path_of(game_id: str) -> Path:
    return HERE / f"{game_id}.json"


def load(game_id: str) -> dict[str, Any] | None:
    """The recorded playthrough of ``game_id`` as :func:`record` makes it (the steps' numbers, which
    :func:`dumps` adds for the reader, left out), or None when there is none."""
    path = path_of(game_id)
    if not path.exists():
        return None
    out = json.loads(path.read_text())
    for match in out["matches"]:
        match["steps"] = [{k: v for k, v in step.items() if k != "step"} for step in match["steps"]]
    return out


def dumps(playthrough: dict[str, Any]) -> str:
    """The file's text: valid JSON laid out for line diffs — one line per viewer's document and per
    viewer's events of a step, one per digested match's actions and steps."""
    def one(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    lines = ["{", f'"game": {one(playthrough["game"])},', f'"rules_version": {one(playthrough["rules_version"])},',
             f'"regenerate": {one(playthrough["regenerate"])},', '"matches": [']
    for m, match in enumerate(playthrough["matches"]):
        lines.append(f'{{"name": {one(match["name"])}, "seats": {one(match["seats"])}, '
                     f'"options": {one(match["options"])}, "steps": [')
        for s, step in enumerate(match["steps"]):
            lines.append(f'{{"step": {s}, "seat": {one(step["seat"])}, "action": {one(step["action"])},')
            for part in ("documents", "events"):
                items = [f"  {one(k)}: {one(v)}" for k, v in step[part].items()]
                lines.append(f'"{part}": {{' + ("\n" + ",\n".join(items) + "\n" if items else "") + "},")
            lines.append(f'"outcome": {one(step["outcome"])}}}' + ("," if s < len(match["steps"]) - 1 else ""))
        lines.append("]}" + ("," if m < len(playthrough["matches"]) - 1 else ""))
    lines.append("],")
    lines.append('"digests": [')
    for d, case in enumerate(playthrough["digests"]):
        lines.append(f'{{"name": {one(case["name"])}, "seats": {one(case["seats"])}, '
                     f'"options": {one(case["options"])},')
        lines.append(f'"actions": {one(case["actions"])},')
        lines.append(f'"steps": {one(case["steps"])}}}' + ("," if d < len(playthrough["digests"]) - 1 else ""))
    lines.append("]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def games() -> list[Game[Any, Any]]:
    """The games that have a playthrough here: every game of the registry that Bannerfall itself
    ships (its engine in ``app.games``). A game of its own distribution keeps its playthroughs and
    their test in its own package (nothing of it lives in Bannerfall's tree)."""
    return [game for game in registry().values() if type(game).__module__.startswith("app.games.")]
