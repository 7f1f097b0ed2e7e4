"""Helpers for the Hold'em Conquest tests.

Exact positions are built with :func:`app.games.conquest.setup.stacked_position` (documented there
and in docs/games/conquest.md): chosen land owners and mana, stacked table decks (flop, then the
neutral's hand, turn, river) and stacked pools. The helpers here find lands with a given shape on
the map of a seed and drive phases.
"""
from __future__ import annotations

import json
from typing import Any

from app.games.base import CardTokens, IllegalAction, Rng
from app.games.conquest import GAME
from app.games.conquest.setup import stacked_position
from app.games.conquest.state import Battle, State

SEED = b"conquest-position"


def board_of(seats: int = 2, seed: bytes = SEED):
    return GAME.setup(seats, None, seed).board


def adjacent_pair(board) -> tuple[int, int]:
    """Two adjacent lands."""
    for land, near in enumerate(board.neighbours):
        if near:
            return land, near[0]
    raise AssertionError("no adjacent lands")


def fork(board) -> tuple[int, int, int]:
    """``(x, a, c)``: a land x with two different neighbours a and c that are not adjacent to each other."""
    for x, near in enumerate(board.neighbours):
        for a in near:
            for c in near:
                if a < c and c not in board.neighbours[a]:
                    return x, a, c
    raise AssertionError("no fork")


def far_land(board, land: int) -> int:
    """A land at least 2 steps from ``land``."""
    return next(other for other in range(board.size) if board.distance[land][other] >= 2)


def prompt_of(state: State, seat: int):
    return next((p for p in GAME.prompts(state) if p.seat == seat), None)


def act(state: State, seat: int, action: dict) -> tuple[State, list]:
    return GAME.apply(state, seat, action)


def finish_phase(state: State, actions: dict[int, dict] | None = None) -> tuple[State, list]:
    """Apply ``actions`` (seat -> action), then the default of every other unsubmitted prompt of the
    current phase. Returns the state after the phase and all events."""
    events = []
    phase_id = state.phase_id
    for seat, action in (actions or {}).items():
        state, ev = GAME.apply(state, seat, action)
        events += ev
    while state.phase_id == phase_id and GAME.outcome(state) is None:
        pending = [p for p in GAME.prompts(state) if not p.submitted]
        assert pending, "phase neither waiting nor ended"
        state, ev = GAME.apply(state, pending[0].seat, dict(pending[0].default_action))
        events += ev
    return state, events


def orders(attacks: dict[int, list[int]]) -> dict[int, dict]:
    return {seat: {"type": "orders", "attack": lands} for seat, lands in attacks.items()}


def decide(folds: dict[int, list[int]]) -> dict[int, dict]:
    return {seat: {"type": "decide", "folds": lands} for seat, lands in folds.items()}


def snapshot(value: Any) -> Any:
    """A deep, comparable picture of a state (slots objects, containers, the rng's position; not the
    view memo)."""
    if isinstance(value, (State, Battle)):
        # ``view_memo`` is a cache of built views, not part of the match
        return (type(value).__name__, tuple((name, snapshot(getattr(value, name))) for name in type(value).__slots__
                                            if name != "view_memo"))
    if isinstance(value, CardTokens):
        return ("CardTokens", value._key)
    if isinstance(value, Rng):
        return ("Rng", value._key, value._counter, value._pool, value._bits)
    if isinstance(value, dict):
        return ("dict", tuple((snapshot(k), snapshot(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(snapshot(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, value))))
    if isinstance(value, (int, str, float, bytes, type(None), bool)):
        return value
    return repr(value)


def assert_illegal(state: State, seat: int, action: Any, code: str) -> None:
    """``action`` raises IllegalAction ``code`` and leaves ``state`` unchanged."""
    before = snapshot(state)
    try:
        GAME.apply(state, seat, action)
    except IllegalAction as exc:
        assert exc.code == code, (exc.code, exc.message)
    else:
        raise AssertionError(f"{action!r} was accepted; expected {code}")
    assert snapshot(state) == before


def wire_prompt(prompt) -> dict:
    return {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
            "submitted": prompt.submitted, "simultaneous": prompt.simultaneous}


def play(seats: int, seed: bytes, bots: list, on_step=None, max_actions: int = 20000,
         options: dict | None = None) -> State:
    """Play a match with ``bots`` (one per seat) to its end; ``on_step(state, seat, action, events)``
    after every applied action. ``options``: lobby options (e.g. ``loadouts``, section 5)."""
    state = GAME.setup(seats, options, seed)
    for _ in range(max_actions):
        if GAME.outcome(state) is not None:
            return state
        pending = [p for p in GAME.prompts(state) if not p.submitted]
        prompt = pending[0]
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire_prompt(prompt))
        state, events = GAME.apply(state, prompt.seat, action)
        if on_step:
            on_step(state, prompt.seat, action, events)
    raise AssertionError("match did not end")


def events_json(events, viewer: int) -> str:
    return json.dumps([e.to_wire() for e in events if e.visible_to(viewer)])


def position(**kwargs) -> State:
    kwargs.setdefault("seed", SEED)
    return stacked_position(**kwargs)
