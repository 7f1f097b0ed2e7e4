"""Warrior siege engines (warrior.md 5): who may fire, the simultaneous siege window and its resolution.
"""
from __future__ import annotations

from typing import Any, Mapping

from app.games.base import Event, require
from app.games.warrior.cards import SIEGE_HIT
from app.games.warrior.common import (
    Events,
    _cards_from,
    _destroy,
    _is_mapping,
    _open,
    _other_seats,
    face,
    submitted_event,
)
from app.games.warrior.dice import roll
from app.games.warrior.state import SIEGE, SiegeRecord, SiegeShot, WarriorState, replaced


# ---------------------------------------------------------------------------------------------
# Siege engines (5)
# ---------------------------------------------------------------------------------------------
def siege_targets(s: WarriorState, seat: int) -> list[int]:
    """Cards seat's engines may shoot (5.1 house): other players' wizards, and creatures of their
    nations that have no wizard."""
    race_of = s.card_set.race_of
    out: list[int] = []
    for other in _other_seats(s, seat):
        wizards = s.wizards[other]
        if wizards:
            protected = {r for _, r in wizards}
            out.extend(w for w, _ in wizards)
            out.extend(c for c in s.creatures[other] if race_of[c] not in protected)
        else:
            out.extend(s.creatures[other])
    return out


def _open_siege(s: WarriorState, ev: Events, after: str) -> str | None:
    """5.2: a siege window for every engine holder with something to shoot, else go straight on."""
    holders = tuple(seat for seat in range(s.seats) if s.engines[seat] and siege_targets(s, seat))
    if not holders:
        return after
    s.after_siege = after
    _open(s, SIEGE, holders)
    return None


def _act_siege(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    raw: Any = action.get("shots")  # client JSON, checked by require() below
    require(isinstance(raw, list), "malformed_action", "'shots' must be a list of {engine, target}")
    require(len(raw) <= len(s.engines[seat]), "too_many_shots", "one shot per siege engine")
    shots: list[SiegeShot] = []
    allowed = siege_targets(s, seat)
    engines_used: set[int] = set()
    targets_used: set[int] = set()
    for shot in raw:
        require(_is_mapping(shot), "malformed_action", "each shot is {engine, target}")
        engine_token, target_token = shot.get("engine"), shot.get("target")
        require(isinstance(engine_token, str) and isinstance(target_token, str), "malformed_action",
                "engine and target are card ids")
        (engine,) = _cards_from(s, [engine_token], s.engines[seat], "not_your_engine")
        (target,) = _cards_from(s, [target_token], allowed, "illegal_siege_target")
        require(engine not in engines_used, "duplicate_card", "an engine fires once")
        require(target not in targets_used, "duplicate_card", "one shot per target")
        engines_used.add(engine)
        targets_used.add(target)
        shots.append((engine, target))
    ev.append(submitted_event(s, seat, SIEGE))
    s.choices = replaced(s.choices, seat, tuple(shots))
    if any(s.choices[w] is None for w in s.waiting):
        return None
    return _resolve_siege(s, ev)


def _owner(s: WarriorState, card: int) -> int | None:
    for seat in range(s.seats):
        if card in s.creatures[seat] or any(w == card for w, _ in s.wizards[seat]):
            return seat
    return None


def _resolve_siege(s: WarriorState, ev: Events) -> str | None:
    """Shots resolve in seat order; a shot whose target is no longer a legal target is not fired and its
    engine stays (house). Each fired engine rolls one die: 4+ destroys (5.1) and is discarded."""
    fired: list[SiegeRecord] = []
    for seat in s.waiting:
        for engine, target in s.choices[seat]:
            if target not in siege_targets(s, seat):
                ev.append(Event("siege_void",
                                {"seat": seat, "engine": s.tokens[engine], "target": s.tokens[target]}))
                continue
            (die,) = roll(s.draw_rng(), 1)
            hit = die >= SIEGE_HIT
            s.engines = replaced(s.engines, seat, tuple(e for e in s.engines[seat] if e != engine))
            s.discards += (engine,)
            owner = _owner(s, target)
            ev.append(Event("siege_shot", {"seat": seat, "engine": s.tokens[engine], "target": face(s, target),
                                           "target_seat": owner, "roll": die, "hit": hit}))
            fired.append((seat, s.tokens[engine], target, s.tokens[target], owner, die, hit))
            if hit and owner is not None:
                _destroy(s, owner, target, seat, "siege", ev)
    s.last_siege = tuple(fired)
    s.choices = (None,) * s.seats
    return s.after_siege
