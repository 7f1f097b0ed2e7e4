"""What each viewer may see (warrior.md 7): the only path from a Warrior state to the wire.

Public: nations (race, size, face-up symbols, card faces), wizards and siege engines in play, attack
cards once the keep phase has ended, face-up discards, victory pile counts, dice and every loss.
Private to a seat: the cards dealt to it in a keep phase and its choice, until the phase ends.
Hidden from all: the pile's order (pile cards carry no token at all).
"""
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


def hidden_tokens(s: WarriorState, viewer: int) -> set[str]:
    """Tokens ``viewer`` must not see now: other seats' keep-phase hands (7). Admins see everything."""
    if viewer == ADMIN or s.phase != KEEP:
        return set()
    return {s.tokens[c] for seat in range(s.seats) if seat != viewer for c in s.hands[seat]}  # type: ignore[misc]


def _nation_view(s: WarriorState, seat: int, race: int, cards: list[int], face_down: set[int],
                 shown_cards: dict[int, Any]) -> dict[str, Any]:
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
        token = tokens[c]
        last = shown_cards.get(c)
        if last is None or last[0] != token or last[1] is not up:
            last = shown_cards[c] = (token, up, {"id": token, **faces[c], "face_up": up})
        shown.append(last[2])
    wizard = s.wizard_of(seat, race)
    return {
        "race": s.card_set.races[race],
        "enemy": s.card_set.races[s.card_set.enemy[race]],
        "size": len(cards),
        "symbols": {"infantry": infantry, "archer": archer, "knight": knight},
        "cards": shown,
        "wizard": common.face(s, wizard) if wizard is not None else None,
    }


def _seat_view(s: WarriorState, seat: int, face_down: set[int], shown_cards: dict[int, Any]) -> dict[str, Any]:
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
        "nations": [_nation_view(s, seat, r, by_race[r], face_down, shown_cards) for r in sorted(by_race)],
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
                [{"engine": tok[x.engine], "target": tok[x.target]} for x in s.choices[seat]]
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


def view(s: WarriorState, viewer: int) -> dict[str, Any]:
    """The state as ``viewer`` (a seat, SPECTATOR or ADMIN) may see it; plain JSON-able dict.
    ``views(s, [viewer])[0]``."""
    return views(s, (viewer,))[0]


def _kept(memo: dict[Any, Any], key: Any, value: Any) -> Any:
    """``value``, or the equal piece built for ``key`` last time (so an unchanged piece keeps its
    object from version to version and the runtime's diff skips it by identity)."""
    last = memo.get(key)
    if last is not None and type(last) is type(value) and last == value:
        return last
    memo[key] = value
    return value


def views(s: WarriorState, viewers: Sequence[int]) -> list[dict[str, Any]]:
    """``[view(s, v) for v in viewers]`` (warrior.md 7), the public part built once: everything but
    ``decision`` (a seat's own) and the admin's ``hands``, ``decisions`` and ``pile`` is the same for
    every viewer and is shared by their views, and a public piece equal to the one built for the
    previous views of this match is that same object (``s.view_memo``): a seat's entry is not even
    rebuilt while the tuples it is made of (creatures, wizards, engines, queue, tokens, face-down
    cards) are the same objects and its counts the same; card faces are kept per card while its
    token and side stay. Read-only: callers encode views, never change them."""
    memo = s.view_memo
    shown_cards = memo.get("cards")
    if shown_cards is None:
        shown_cards = memo["cards"] = {}
    face_down_cards = s.attack.face_down if s.attack is not None else ()
    face_down = set(face_down_cards)
    seat_views = []
    for seat in range(s.seats):
        # everything a seat's entry is built from: immutable tuples (compared by identity) and counts
        inputs = (s.creatures[seat], s.wizards[seat], s.engines[seat], s.queue, s.tokens, face_down_cards,
                  len(s.victory[seat]), len(s.hands[seat]), s.choices[seat] is not None)
        last = memo.get(("seat", seat))
        if last is not None and all(a is b for a, b in zip(last[0][:6], inputs[:6], strict=True)) \
                and last[0][6:] == inputs[6:]:
            seat_views.append(last[1])
            continue
        entry = _seat_view(s, seat, face_down, shown_cards)
        if last is not None and last[1] == entry:
            entry = last[1]
        memo[("seat", seat)] = (inputs, entry)
        seat_views.append(entry)
    last_seats = memo.get("seats")
    if (last_seats is not None and len(last_seats) == len(seat_views)
            and all(a is b for a, b in zip(last_seats, seat_views, strict=True))):
        seat_views = last_seats
    else:
        memo["seats"] = seat_views
    races = _kept(memo, "races", list(s.card_set.race_table))
    waiting = list(s.waiting)
    discards = _kept(memo, "discards", [common.face(s, c) for c in s.discards])
    attack = _attack_view(s)
    if attack is not None:
        attack = _kept(memo, "attack", attack)
    attack_order = _kept(memo, "attack_order", [
        {"seat": seat, "number": s.card_set.cards[c].number, "card": s.tokens[c]} for c, seat, _ in s.queue])
    last_siege = _kept(memo, "last_siege", list(s.last_siege))
    outcome = s.result.to_wire() if s.result is not None else None
    scored = rules.score(s) if s.phase == OVER else None
    decisions: dict[int, dict[str, Any] | None] = {}

    def decision(seat: int) -> dict[str, Any] | None:
        if seat not in decisions:
            decisions[seat] = _decision(s, seat)
        return decisions[seat]

    out_views: list[dict[str, Any]] = []
    for viewer in viewers:
        out: dict[str, Any] = {
            "game": "warrior",
            "phase": s.phase,
            "phase_id": s.phase_id,
            "round": s.round,
            "viewer": viewer,
            "races": races,
            "seats": seat_views,
            "waiting": waiting,
            "pile_size": len(s.pile),
            "discards": discards,
            "attack": attack,
            "attack_order": attack_order,
            "last_siege": last_siege,
            "decision": decision(viewer) if viewer >= 0 else None,
            "outcome": outcome,
        }
        if scored is not None:
            out["scores"], out["majorities"] = scored
        if viewer == ADMIN:
            hidden = hidden_tokens(s, SPECTATOR)
            out["hands"] = [
                [{**common.face(s, c), "hidden": s.tokens[c] in hidden} for c in s.hands[seat]]
                for seat in range(s.seats)
            ]
            out["decisions"] = [decision(seat) for seat in range(s.seats)]
            out["pile"] = [dict(s.card_set.faces[c], hidden=True) for c in reversed(s.pile)]
        out_views.append(out)
    return out_views
