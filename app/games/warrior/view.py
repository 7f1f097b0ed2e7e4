"""What each viewer may see (warrior.md 7): the only path from a Warrior state to the wire.

Public: nations (race, size, face-up symbols, card faces), wizards and siege engines in play, attack
cards once the keep phase has ended, face-up discards, victory pile counts, dice and every loss.
Private to a seat: the cards dealt to it in a keep phase and its choice, until the phase ends.
Hidden from all: the pile's order (pile cards carry no token at all).

Views are made as encoded parts (:func:`view_parts`, ``app/parts.py``): the view object's members in
order, every list member item by item. Each piece is encoded when what it is made of changed and
kept in the state's memo (``WarriorState.view_memo``, shared by the states of a match) with the
inputs it was made from: a seat's entry while its creatures, wizards, engines, the attack queue, the
tokens and the face-down cards are equal and so are its counts; a card's face while its token (and
side) stays; a seat's decision while every piece of state it reads is equal. Inputs are immutable
tuples compared with ``==`` (an unchanged piece is the same object, which ``==`` sees at once), so a
typical action encodes again only what it changed. The memo holds bytes and tuples of
atoms, which the cyclic collector does not walk. :func:`view` / :func:`views` decode the parts: one
source for both.
"""
from __future__ import annotations

from typing import Any, Sequence

import orjson

from app.games.base import ADMIN, SPECTATOR
from app.games.warrior import attack as attack_rules
from app.games.warrior import rules
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
from app.parts import ViewParts, view_json
from app.parts import dumps as parts_dumps

_dumps = parts_dumps  # parts are kept: each in a bytes of its own size
_Fragment = orjson.Fragment
_NULL = b"null"
_GAME = b'"warrior"'
#: encodings of the small ints a view repeats (seats, counts, phase ids)
_INTS = tuple(_dumps(i) for i in range(1024))
_SPECTATOR = _dumps(SPECTATOR)
_ADMIN = _dumps(ADMIN)
#: encodings of the phase names
_PHASES: dict[str, bytes] = {}


def hidden_tokens(s: WarriorState, viewer: int) -> set[str]:
    """Tokens ``viewer`` must not see now: the cards in other seats' hands — dealt cards in a keep
    phase, setup wizards while they are placed (7). Admins see everything."""
    if viewer == ADMIN:
        return set()
    return {s.tokens[c] for seat in range(s.seats) if seat != viewer for c in s.hands[seat]}  # type: ignore[misc]


def view(s: WarriorState, viewer: int) -> dict[str, Any]:
    """The state as ``viewer`` (a seat, SPECTATOR or ADMIN) may see it; plain JSON-able dict (the shape is
    in ``docs/games/warrior.md``, "View"). ``views(s, [viewer])[0]``."""
    return views(s, (viewer,))[0]


def views(s: WarriorState, viewers: Sequence[int]) -> list[dict[str, Any]]:
    """``[view(s, v) for v in viewers]`` (warrior.md 7): :func:`view_parts` decoded, a new dict for each."""
    return [orjson.loads(view_json(parts)) for parts in view_parts(s, viewers)]


# -- small encodings -------------------------------------------------------------------------------

def _int(value: int) -> bytes:
    if 0 <= value < 1024:
        return _INTS[value]
    if value == SPECTATOR:
        return _SPECTATOR
    if value == ADMIN:
        return _ADMIN
    return _dumps(value)


def _phase(name: str) -> bytes:
    encoded = _PHASES.get(name)
    if encoded is None:
        encoded = _PHASES[name] = _dumps(name)
    return encoded


def _face(s: WarriorState, faces: dict[int, tuple[str | None, bytes]], card: int) -> bytes:
    """``common.face(s, card)`` encoded (kept in ``faces`` while the card's token stays)."""
    token = s.tokens[card]
    kept = faces.get(card)
    if kept is not None and kept[0] == token:
        return kept[1]
    encoded = _dumps({"id": token, **s.card_set.faces[card]})
    faces[card] = (token, encoded)
    return encoded


def _shown(s: WarriorState, shown: dict[int, tuple[str | None, bool, bytes]], card: int, up: bool) -> bytes:
    """A nation's card as it lies (its face and ``face_up``), kept while its token and side stay."""
    token = s.tokens[card]
    kept = shown.get(card)
    if kept is not None and kept[0] == token and kept[1] is up:
        return kept[2]
    encoded = _dumps({"id": token, **s.card_set.faces[card], "face_up": up})
    shown[card] = (token, up, encoded)
    return encoded


def _table(memo: dict[Any, Any], name: str) -> dict[Any, Any]:
    table = memo.get(name)
    if table is None:
        table = memo[name] = {}
    return table


# -- public pieces ---------------------------------------------------------------------------------

def _seat_part(s: WarriorState, seat: int, face_down: tuple[int, ...], faces: dict[int, Any],
               shown_cards: dict[int, Any]) -> bytes:
    """Seat ``seat``'s public entry (``SeatInfo``): its nations in race-table order, wizards, engines,
    attack cards queued, pile and hand counts, whether it has submitted."""
    cs = s.card_set
    race_of = cs.race_of
    defs = cs.cards
    races = cs.races
    by_race: dict[int, list[int]] = {}
    for c in s.creatures[seat]:
        r = race_of[c]
        if r in by_race:
            by_race[r].append(c)
        else:
            by_race[r] = [c]
    nations = []
    for r in sorted(by_race):
        cards = by_race[r]
        infantry = archer = knight = 0
        shown = []
        for c in cards:
            up = c not in face_down
            if up:
                d = defs[c]
                infantry += d.infantry
                archer += d.archer
                knight += d.knight
            shown.append(_Fragment(_shown(s, shown_cards, c, up)))
        wizard = s.wizard_of(seat, r)
        nations.append({
            "race": races[r],
            "enemy": races[cs.enemy[r]],
            "size": len(cards),
            "symbols": {"infantry": infantry, "archer": archer, "knight": knight},
            "cards": shown,
            "wizard": _Fragment(_face(s, faces, wizard)) if wizard is not None else None,
        })
    tokens = s.tokens
    return _dumps({
        "seat": seat,
        "nations": nations,
        "wizards": [{"wizard": _Fragment(_face(s, faces, w)), "nation": races[r]} for w, r in s.wizards[seat]],
        "engines": [_Fragment(_face(s, faces, e)) for e in s.engines[seat]],
        "attack_cards": [
            {"id": tokens[c], **cs.faces[c], "nation": races[r] if r is not None else None}
            for c, owner, r in s.queue if owner == seat
        ],
        "victory_pile": len(s.victory[seat]),
        "hand_size": len(s.hands[seat]),
        "submitted": s.choices[seat] is not None,
    })


def _seats(s: WarriorState, memo: dict[Any, Any], faces: dict[int, Any]) -> tuple[bytes, ...]:
    """Every seat's entry; an entry is encoded again only when a tuple it is made of or one of its
    counts changed."""
    shown_cards = _table(memo, "shown")
    face_down = s.attack.face_down if s.attack is not None else ()
    tokens, queue = s.tokens, s.queue
    out = []
    for seat in range(s.seats):
        inputs = (s.creatures[seat], s.wizards[seat], s.engines[seat], queue, tokens, face_down)
        counts = (len(s.victory[seat]), len(s.hands[seat]), s.choices[seat] is not None)
        key = ("seat", seat)
        kept = memo.get(key)
        if kept is not None and kept[0] == inputs and kept[1] == counts:
            out.append(kept[2])
            continue
        entry = _seat_part(s, seat, face_down, faces, shown_cards)
        if kept is not None and kept[2] == entry:
            entry = kept[2]
        memo[key] = (inputs, counts, entry)
        out.append(entry)
    entries = tuple(out)
    last = memo.get("seats")
    if last is not None and last == entries:
        return last
    memo["seats"] = entries
    return entries


def _attack_part(s: WarriorState, memo: dict[Any, Any], faces: dict[int, Any]) -> bytes:
    """The attack being run (``AttackView``), ``null`` between attacks."""
    atk = s.attack
    if atk is None:
        return _NULL
    # the latest exchange as a plain tuple: an exact tuple of atoms is not walked by the collector
    inputs = (atk.seat, atk.card, atk.nation, atk.force, atk.face_down, atk.target, atk.started, atk.exchanges,
              atk.reattacks, tuple(atk.last) if atk.last is not None else None, s.tokens)
    kept = memo.get("attack")
    if kept is not None and kept[0] == inputs:
        return kept[1]
    races = s.card_set.races
    defs = s.card_set.cards
    card = defs[atk.card]
    force = atk.force
    encoded = _dumps({
        "seat": atk.seat,
        "card": _Fragment(_face(s, faces, atk.card)),
        "kind": "mercenary" if card.mercenaries else "nation",
        "nation": races[atk.nation] if atk.nation is not None else None,
        "force": [_Fragment(_face(s, faces, c)) for c in force],
        "face_down": [_Fragment(_face(s, faces, c)) for c in atk.face_down],
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
    })
    memo["attack"] = (inputs, encoded)
    return encoded


def _lists(s: WarriorState, memo: dict[Any, Any], faces: dict[int, Any]) -> tuple[
        tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...]]:
    """The public list members other than ``seats``: races, waiting, discards, attack order, last siege
    (each kept while the tuples it is made of are the same)."""
    cs = s.card_set
    races = memo.get("races")  # the match's card set never changes
    if races is None:
        races = memo["races"] = tuple(_dumps(r) for r in cs.race_table)
    tokens = s.tokens
    waiting = memo.get("waiting")
    if waiting is None or waiting[0] is not s.waiting:
        waiting = memo["waiting"] = (s.waiting, tuple(_int(seat) for seat in s.waiting))
    discards = memo.get("discards")
    if discards is None or discards[0] is not s.discards or discards[1] is not tokens:
        discards = memo["discards"] = (s.discards, tokens, tuple(_face(s, faces, c) for c in s.discards))
    order = memo.get("attack_order")
    if order is None or order[0] is not s.queue or order[1] is not tokens:
        defs = cs.cards
        order = memo["attack_order"] = (s.queue, tokens, tuple(
            _dumps({"seat": seat, "number": defs[c].number, "card": tokens[c]}) for c, seat, _ in s.queue))
    siege = memo.get("last_siege")
    if siege is None or siege[0] is not s.last_siege:
        card_faces = cs.faces
        siege = memo["last_siege"] = (s.last_siege, tuple(
            _dumps({"seat": seat, "engine": engine, "target": {"id": target_token, **card_faces[target]},
                    "target_seat": target_seat, "roll": die, "hit": hit})
            for seat, engine, target, target_token, target_seat, die, hit in s.last_siege))
    return races, waiting[1], discards[2], order[2], siege[1]


def _over(s: WarriorState, memo: dict[Any, Any]) -> tuple[bytes, tuple[bytes, ...] | None, tuple[bytes, ...] | None]:
    """``outcome`` (kept per result), and once the match is over its ``scores`` and ``majorities`` (6;
    kept while the victory piles and the creatures are the same tuples)."""
    result = s.result
    if result is None:
        outcome = _NULL
    else:
        kept = memo.get("outcome")
        if kept is None or kept[0] is not result:
            kept = memo["outcome"] = (result, _dumps(result.to_wire()))
        outcome = kept[1]
    if s.phase != OVER:
        return outcome, None, None
    scored = memo.get("scored")
    if scored is None or scored[0] is not s.victory or scored[1] is not s.creatures:
        points, held = rules.score(s)
        scored = memo["scored"] = (s.victory, s.creatures, tuple(_dumps(p) for p in points),
                                   tuple(_dumps(m) for m in held))
    return outcome, scored[2], scored[3]


# -- decisions (a seat's own) ----------------------------------------------------------------------

def _decision(s: WarriorState, seat: int, faces: dict[int, Any]) -> dict[str, Any] | None:
    """What ``seat`` needs to choose a legal action in the current phase (None if nothing is asked)."""
    if seat not in s.waiting:
        return None
    races = s.card_set.races
    tok = s.tokens
    choice = s.choices[seat]
    if s.phase == KEEP:
        return {
            "kind": KEEP,
            "hand": [_Fragment(_face(s, faces, c)) for c in s.hands[seat]],
            "keep": s.keep_counts[seat],
            "submission": rules.keep_choice_to_action(s, choice) if choice is not None else None,
        }
    if s.phase == PLACE_WIZARDS:
        return {
            "kind": PLACE_WIZARDS,
            "wizards": [_Fragment(_face(s, faces, c)) for c in s.hands[seat]],
            "nations": [races[r] for r in s.races_of(seat) if not s.protected(seat, r)],
            "submission": (
                {tok[w]: (races[r] if r is not None else None) for w, r in choice} if choice is not None else None
            ),
        }
    if s.phase == SIEGE:
        return {
            "kind": SIEGE,
            "engines": [tok[e] for e in s.engines[seat]],
            "targets": [tok[c] for c in siege_rules.siege_targets(s, seat)],
            "submission": (
                [{"engine": tok[engine], "target": tok[target]} for engine, target in choice]
                if choice is not None else None
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
            "submission": [tok[c] for c in choice] if choice is not None else None,
        }
    if s.phase == REATTACK:
        return {"kind": REATTACK, "candidates": [tok[c] for c in s.attack.force]}  # type: ignore[union-attr]
    return {"kind": s.phase}


def _decision_part(s: WarriorState, seat: int, memo: dict[Any, Any], faces: dict[int, Any]) -> bytes:
    """:func:`_decision` encoded, kept while every piece of state a decision reads is equal:
    the phase, who is waiting, the seat's hand, keep count and choice, the tokens, every seat's
    creatures, wizards and engines, the pending losses and the attack's fields."""
    if seat not in s.waiting:
        return _NULL
    atk = s.attack
    choice = s.choices[seat]
    if type(choice) is KeepChoice:
        choice = tuple(choice)  # kept as an exact tuple, which the collector does not walk
    inputs = (s.phase, s.waiting, s.hands[seat], s.keep_counts, choice, s.tokens, s.creatures, s.wizards,
              s.engines, s.losses,
              *((atk.seat, atk.card, atk.nation, atk.force, atk.face_down, atk.target, atk.started)
                if atk is not None else (None,) * 7))
    key = ("decision", seat)
    kept = memo.get(key)
    if kept is not None and kept[0] == inputs:
        return kept[1]
    encoded = _dumps(_decision(s, seat, faces))
    memo[key] = (inputs, encoded)
    return encoded


# -- the view --------------------------------------------------------------------------------------

def view_parts(s: WarriorState, viewers: Sequence[int]) -> list[ViewParts]:
    """Every viewer's view as parts (``app.parts.ViewParts``), warrior.md 7: the members of ``View``
    (``app/games/warrior/types.py``) in order, the admin's ``hands``, ``decisions`` and ``pile`` after
    them. Raises nothing for an unknown viewer (it sees what a spectator sees)."""
    memo = s.view_memo
    faces = _table(memo, "faces")
    seats = _seats(s, memo, faces)
    races, waiting, discards, order, siege = _lists(s, memo, faces)
    attack = _attack_part(s, memo, faces)
    outcome, scores, majorities = _over(s, memo)
    phase = _phase(s.phase)
    phase_id = _int(s.phase_id)
    round_ = _int(s.round)
    pile_size = _int(len(s.pile))
    out: list[ViewParts] = []
    for viewer in viewers:
        parts: list[tuple[str, Any]] = [
            ("game", _GAME),
            ("phase", phase),
            ("phase_id", phase_id),
            ("round", round_),
            ("viewer", _int(viewer)),
            ("races", races),
            ("seats", seats),
            ("waiting", waiting),
            ("pile_size", pile_size),
            ("discards", discards),
            ("attack", attack),
            ("attack_order", order),
            ("last_siege", siege),
            ("decision", _decision_part(s, viewer, memo, faces) if viewer >= 0 else _NULL),
            ("outcome", outcome),
        ]
        if scores is not None and majorities is not None:
            parts.append(("scores", scores))
            parts.append(("majorities", majorities))
        if viewer == ADMIN:
            parts += _admin_parts(s, memo, faces)
        out.append(tuple(parts))
    return out


def _admin_parts(s: WarriorState, memo: dict[Any, Any], faces: dict[int, Any]) -> list[tuple[str, Any]]:
    """The admin's ``hands`` (every card marked ``hidden`` when a spectator may not see it),
    ``decisions`` (every seat's) and ``pile`` (its faces, top first, all hidden)."""
    hidden = hidden_tokens(s, SPECTATOR)
    tokens = s.tokens
    card_faces = s.card_set.faces
    hands = tuple(
        _dumps([{"id": tokens[c], **card_faces[c], "hidden": tokens[c] in hidden} for c in s.hands[seat]])
        for seat in range(s.seats)
    )
    decisions = tuple(_decision_part(s, seat, memo, faces) for seat in range(s.seats))
    pile = tuple(_dumps(dict(card_faces[c], hidden=True)) for c in reversed(s.pile))
    return [("hands", hands), ("decisions", decisions), ("pile", pile)]


__all__ = ["hidden_tokens", "view", "view_parts", "views"]
