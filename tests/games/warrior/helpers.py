"""Shared helpers for the Warrior tests: acting, playing bot matches, fingerprints of states."""
from __future__ import annotations

import json
from typing import Any

from app.games.base import SPECTATOR, Event, IllegalAction
from app.games.warrior import GAME
from app.games.warrior.bots import CaptainBot, RandomBot
from app.games.warrior.state import WarriorState


def fingerprint(s: WarriorState) -> str:
    """Every field of the state (rng by its internal position), for equality checks."""
    rng = s.rng
    parts = [repr((rng._key, rng._counter, rng._pool, rng._bits, getattr(rng, "_at", None)))]  # noqa: SLF001
    for name in WarriorState.__slots__:
        if name in ("rng", "card_set", "token_source", "rng_owned"):
            continue
        parts.append(f"{name}={getattr(s, name)!r}")
    return "\n".join(parts)


def act(s: WarriorState, seat: int, action: dict[str, Any]) -> tuple[WarriorState, list[Event]]:
    """Apply and check the input state is unchanged."""
    before = fingerprint(s)
    new, events = GAME.apply(s, seat, action)
    assert fingerprint(s) == before, "apply mutated its input state"
    return new, events


def illegal(s: WarriorState, seat: int, action: Any) -> str:
    """The IllegalAction code of ``action`` (asserting the state is unchanged)."""
    before = fingerprint(s)
    try:
        GAME.apply(s, seat, action)
    except IllegalAction as exc:
        assert fingerprint(s) == before
        return exc.code
    raise AssertionError(f"action was accepted: {action!r}")


def defaults(s: WarriorState) -> tuple[WarriorState, list[Event]]:
    """Apply the default action of every unsubmitted prompt of the current phase."""
    events: list[Event] = []
    phase_id = s.phase_id
    for p in GAME.prompts(s):
        if p.submitted or s.phase_id != phase_id:
            continue
        s, ev = act(s, p.seat, dict(p.default_action))
        events.extend(ev)
    return s, events


def prompt_dict(p) -> dict[str, Any]:
    return {"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "submitted": p.submitted,
            "simultaneous": p.simultaneous}


def play_match(seed: int, seats: int, bot_cls=RandomBot, *, on_step=None, max_steps: int = 20000):
    """Play a whole bot match; ``on_step(state, events)`` after every applied action.
    Returns (final state, number of actions, action log)."""
    s = GAME.setup(seats, None, seed.to_bytes(8, "big") * 4)
    if isinstance(bot_cls, (list, tuple)):
        bots = [bot_cls[i % len(bot_cls)](seed * 31 + i) for i in range(seats)]
    else:
        bots = [bot_cls(seed * 31 + i) for i in range(seats)]
    log = []
    steps = 0
    while True:
        prompts = GAME.prompts(s)
        if not prompts:
            break
        p = next(p for p in prompts if not p.submitted)
        action = bots[p.seat].decide(GAME.view(s, p.seat), prompt_dict(p))
        if action is None:
            action = dict(p.default_action)
        s, events = GAME.apply(s, p.seat, action)
        log.append((p.seat, action))
        steps += 1
        if on_step is not None:
            on_step(s, events)
        assert steps < max_steps, "match did not end"
    return s, steps, log


def visible_json(s: WarriorState, events: list[Event], viewer: int) -> str:
    parts = [json.dumps(GAME.view(s, viewer), sort_keys=True)]
    parts.extend(json.dumps(e.to_wire(), sort_keys=True) for e in events if e.visible_to(viewer))
    return "\n".join(parts)


VIEWERS_EXTRA = (SPECTATOR,)
BOT_CLASSES = (RandomBot, CaptainBot)
