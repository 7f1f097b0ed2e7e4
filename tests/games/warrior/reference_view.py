"""The Warrior view as the engine built it before it made parts: plain dicts, straight from the state
(warrior.md 7). A reference for ``tests/games/warrior/test_view_parts.py``: ``encode_view`` of
:func:`views` must be, byte for byte, what ``app.games.warrior.view.view_parts`` gives."""
from __future__ import annotations

from typing import Any, Sequence

from app.games.base import ADMIN, SPECTATOR
from app.games.warrior import attack as attack_rules
from app.games.warrior import common, rules
from app.games.warrior import siege as siege_rules
from app.games.warrior.state import (
    KEEP,
    LOSE,
    OVER,
    PLACE_WIZARDS,
    REATTACK,
    SIEGE,
    TARGET,
    KeepChoice,
    WarriorState,
)
from app.games.warrior.view import hidden_tokens


def _nation_view(s: WarriorState, seat: int, race: int, cards: list[int], face_down: set[int]) -> dict[str, Any]:
    defs = s.card_set.cards
    faces = s.card_set.faces
    tokens = s.tokens
    infantry = archer = knight = 0
    shown = []
    for c in cards:
        up = c not in face_down
        if up:
            d = defs[c]
            infantry += d.infantry
            archer += d.archer
            knight += d.knight
        shown.append({"id": tokens[c], **faces[c], "face_up": up})
    wizard = s.wizard_of(seat, race)
    return {
        "race": s.card_set.races[race],
        "enemy": s.card_set.races[s.card_set.enemy[race]],
        "size": len(cards),
        "symbols": {"infantry": infantry, "archer": archer, "knight": knight},
        "cards": shown,
        "wizard": common.face(s, wizard) if wizard is not None else None,
    }


def _seat_view(s: WarriorState, seat: int, face_down: set[int]) -> dict[str, Any]:
    race_of = s.card_set.race_of
    by_race: dict[int, list[int]] = {}
    for c in s.creatures[seat]:
        r = race_of[c]
        if r in by_race:
            by_race[r].append(c)
        else:
            by_race[r] = [c]
    races = s.card_set.races
    return {
        "seat": seat,
        "nations": [_nation_view(s, seat, r, by_race[r], face_down) for r in sorted(by_race)],
        "wizards": [{"wizard": common.face(s, w), "nation": races[r]} for w, r in s.wizards[seat]],
        "engines": [common.face(s, e) for e in s.engines[seat]],
        "attack_cards": [
            {**common.face(s, c), "nation": races[r] if r is not None else None}
            for c, owner, r in s.queue if owner == seat
        ],
        "victory_pile": len(s.victory[seat]),
        "hand_size": len(s.hands[seat]),
        "submitted": s.choices[seat] is not None,
    }


def _attack_view(s: WarriorState) -> dict[str, Any] | None:
    atk = s.attack
    if atk is None:
        return None
    races = s.card_set.races
    defs = s.card_set.cards
    card = defs[atk.card]
    force = atk.force
    return {
        "seat": atk.seat,
        "card": common.face(s, atk.card),
        "kind": "mercenary" if card.mercenaries else "nation",
        "nation": races[atk.nation] if atk.nation is not None else None,
        "force": [common.face(s, c) for c in force],
        "face_down": [common.face(s, c) for c in atk.face_down],
        "force_symbols": {
            "infantry": card.infantry + sum(defs[c].infantry for c in force),
            "archer": card.archer + sum(defs[c].archer for c in force),
            "knight": card.knight + sum(defs[c].knight for c in force),
        },
        "target": {"seat": atk.target[0], "race": races[atk.target[1]]} if atk.target else None,
        "started": atk.started,
        "exchanges": atk.exchanges,
        "reattacks": atk.reattacks,
        "last_exchange": atk.last.to_wire() if atk.last is not None else None,
    }


def _keep_submission(s: WarriorState, choice: KeepChoice | None) -> dict[str, Any] | None:
    return rules.keep_choice_to_action(s, choice) if choice is not None else None


def _decision(s: WarriorState, seat: int) -> dict[str, Any] | None:
    """What ``seat`` needs to choose a legal action in the current phase (None if nothing is asked)."""
    if seat not in s.waiting:
        return None
    races = s.card_set.races
    tok = s.tokens
    if s.phase == KEEP:
        return {
            "kind": KEEP,
            "hand": [common.face(s, c) for c in s.hands[seat]],
            "keep": s.keep_counts[seat],
            "submission": _keep_submission(s, s.choices[seat]),
        }
    if s.phase == PLACE_WIZARDS:
        return {
            "kind": PLACE_WIZARDS,
            "wizards": [common.face(s, c) for c in s.hands[seat]],
            "nations": [races[r] for r in s.races_of(seat) if not s.protected(seat, r)],
            "submission": (
                {tok[w]: (races[r] if r is not None else None) for w, r in s.choices[seat]}
                if s.choices[seat] is not None else None
            ),
        }
    if s.phase == SIEGE:
        return {
            "kind": SIEGE,
            "engines": [tok[e] for e in s.engines[seat]],
            "targets": [tok[c] for c in siege_rules.siege_targets(s, seat)],
            "submission": (
                [{"engine": tok[engine], "target": tok[target]} for engine, target in s.choices[seat]]
                if s.choices[seat] is not None else None
            ),
        }
    if s.phase == TARGET:
        options, candidates, size = attack_rules.target_options(s)
        return {
            "kind": TARGET,
            "options": [
                {
                    "nation": races[r] if r is not None else None,
                    "targets": [{"seat": o, "race": races[t], "size": len(s.nation(o, t))} for o, t in targets],
                }
                for r, targets in options.items()
            ],
            "force_size": size,
            "force_candidates": [tok[c] for c in candidates],
        }
    if s.phase == LOSE:
        _, count, from_att = attack_rules.loss_entry(s, seat)
        return {
            "kind": LOSE,
            "count": count,
            "candidates": [tok[c] for c in attack_rules.lose_candidates(s, from_att)],
            "submission": [tok[c] for c in s.choices[seat]] if s.choices[seat] is not None else None,
        }
    if s.phase == REATTACK:
        return {"kind": REATTACK, "candidates": [tok[c] for c in s.attack.force]}  # type: ignore[union-attr]
    return {"kind": s.phase}


def _siege_record(s: WarriorState, record: tuple[Any, ...]) -> dict[str, Any]:
    seat, engine, target, target_token, target_seat, die, hit = record
    return {"seat": seat, "engine": engine, "target": {"id": target_token, **s.card_set.faces[target]},
            "target_seat": target_seat, "roll": die, "hit": hit}


def views(s: WarriorState, viewers: Sequence[int]) -> list[dict[str, Any]]:
    """Every viewer's view, each built on its own from the state."""
    out_views: list[dict[str, Any]] = []
    for viewer in viewers:
        face_down = set(s.attack.face_down if s.attack is not None else ())
        out: dict[str, Any] = {
            "game": "warrior",
            "phase": s.phase,
            "phase_id": s.phase_id,
            "round": s.round,
            "viewer": viewer,
            "races": list(s.card_set.race_table),
            "seats": [_seat_view(s, seat, face_down) for seat in range(s.seats)],
            "waiting": list(s.waiting),
            "pile_size": len(s.pile),
            "discards": [common.face(s, c) for c in s.discards],
            "attack": _attack_view(s),
            "attack_order": [{"seat": seat, "number": s.card_set.cards[c].number, "card": s.tokens[c]}
                             for c, seat, _ in s.queue],
            "last_siege": [_siege_record(s, r) for r in s.last_siege],
            "decision": _decision(s, viewer) if viewer >= 0 else None,
            "outcome": s.result.to_wire() if s.result is not None else None,
        }
        if s.phase == OVER:
            out["scores"], out["majorities"] = rules.score(s)
        if viewer == ADMIN:
            hidden = hidden_tokens(s, SPECTATOR)
            out["hands"] = [
                [{**common.face(s, c), "hidden": s.tokens[c] in hidden} for c in s.hands[seat]]
                for seat in range(s.seats)
            ]
            out["decisions"] = [_decision(s, seat) for seat in range(s.seats)]
            out["pile"] = [dict(s.card_set.faces[c], hidden=True) for c in reversed(s.pile)]
        out_views.append(out)
    return out_views
