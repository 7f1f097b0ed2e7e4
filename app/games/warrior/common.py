"""Warrior rules: small helpers shared by every part of the flow (card faces, seat order, nation sizes,
argument parsing, opening a phase, drawing and reshuffling; warrior.md 2-4).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, Sequence

from app.games.base import Event, IllegalAction
from app.games.warrior.cards import WIZARD
from app.games.warrior.state import WarriorState, replaced

#: Longest list accepted in any action (far above any legal list; guards against huge inputs).
MAX_LIST = 32

Events = list[Event]


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------
def face(s: WarriorState, card: int) -> dict[str, Any]:
    """The public face of ``card`` with its current token, for events and views."""
    return {"id": s.tokens[card], **s.card_set.faces[card]}


def _other_seats(s: WarriorState, seat: int) -> tuple[int, ...]:
    """Other seats, clockwise from ``seat``."""
    return _clockwise(s.seats, seat)


@lru_cache(maxsize=64)
def _clockwise(seats: int, seat: int) -> tuple[int, ...]:
    return tuple((seat + i) % seats for i in range(1, seats))


def _nation_sizes(s: WarriorState, seat: int, extra: tuple[int, ...] = ()) -> dict[int, int]:
    """Race -> creature count of the seat's nations, with ``extra`` creature cards added."""
    race_of = s.card_set.race_of
    sizes: dict[int, int] = {}
    for c in s.creatures[seat]:
        r = race_of[c]
        sizes[r] = sizes.get(r, 0) + 1
    for c in extra:
        r = race_of[c]
        sizes[r] = sizes.get(r, 0) + 1
    return sizes


def _largest(sizes: Mapping[int, int], allowed) -> int | None:
    """The largest nation among ``allowed`` races (ties: race-table order), or None."""
    best = None
    for r in sorted(allowed):
        if best is None or sizes[r] > sizes[best]:
            best = r
    return best


def _race_arg(s: WarriorState, value: Any) -> int:
    if not (isinstance(value, str) and value in s.card_set.race_index):
        raise IllegalAction("unknown_race", f"unknown race {value!r}")
    return s.card_set.race_index[value]


def _token_list(value: Any, field: str) -> list[str]:
    if not isinstance(value, list):
        raise IllegalAction("malformed_action", f"'{field}' must be a list of card ids")
    if len(value) > MAX_LIST:
        raise IllegalAction("malformed_action", f"'{field}' is too long")
    if not all(isinstance(t, str) for t in value):
        raise IllegalAction("malformed_action", f"'{field}' must hold card ids (strings)")
    if len(set(value)) != len(value):
        raise IllegalAction("duplicate_card", f"'{field}' names a card twice")
    return value


def _cards_from(s: WarriorState, tokens: list[str], allowed: Sequence[int], code: str = "unknown_card") -> list[int]:
    """Map tokens to cards among ``allowed``; IllegalAction ``code`` for any other token."""
    by_token = {s.tokens[c]: c for c in allowed}
    out = []
    for t in tokens:
        if t not in by_token:
            raise IllegalAction(code, f"card {t!r} cannot be used here")
        out.append(by_token[t])
    return out


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # the dict fast path skips the ABC check


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not _is_mapping(value):
        raise IllegalAction("malformed_action", f"'{field}' must be an object of card id -> nation")
    if len(value) > MAX_LIST:
        raise IllegalAction("malformed_action", f"'{field}' is too long")
    if not all(isinstance(k, str) for k in value):
        raise IllegalAction("malformed_action", f"'{field}' keys must be card ids")
    return dict(value)


def _open(s: WarriorState, phase: str, waiting: tuple[int, ...]) -> None:
    """Start a new decision point."""
    s.phase = phase
    s.phase_id += 1
    s.waiting = waiting
    s.choices = (None,) * s.seats
    s.target_cache = None


def submitted_event(s: WarriorState, seat: int, phase: str) -> Event:
    """The ``submitted`` event of ``seat``'s answer in a simultaneous phase (built before the answer
    is stored): public for its first submission of the phase, the seat's own for a replacement, which
    changes nothing the others may see (section 7; protocol.md: nothing counts the actions you could
    not see)."""
    return Event("submitted", {"seat": seat, "phase": phase},
                 None if s.choices[seat] is None else frozenset((seat,)))


def _draw(s: WarriorState, ev: Events) -> int | None:
    """Top card of the pile, refilled from the face-up discards when empty (3.1 house); None if both empty.
    The caller gives it a fresh token."""
    if not s.pile:
        if not s.discards:
            return None
        _reshuffle_discards(s, ev)
    card = s.pile[-1]
    s.pile = s.pile[:-1]
    return card


def _reshuffle_discards(s: WarriorState, ev: Events) -> None:
    tokens = list(s.tokens)
    for c in s.discards:
        tokens[c] = None
    s.tokens = tuple(tokens)
    pile = [*s.pile, *s.discards]
    ev.append(Event("discards_shuffled", {"cards": len(s.discards), "pile": len(pile)}))
    s.discards = ()
    s.draw_rng().shuffle(pile)
    s.pile = tuple(pile)


def _destroy(s: WarriorState, seat: int, card: int, by: int, cause: str, ev: Events) -> None:
    """Card of ``seat`` destroyed by ``by``: to by's victory pile (4.5, 5.1). A nation left with no
    creature loses its wizard (discarded face up, house)."""
    cards = s.card_set.cards
    data = {"seat": seat, "card": face(s, card), "by": by, "cause": cause}
    if cards[card].kind == WIZARD:
        data["nation"] = next((s.card_set.races[r] for w, r in s.wizards[seat] if w == card), None)
        s.wizards = replaced(s.wizards, seat, tuple((w, r) for w, r in s.wizards[seat] if w != card))
    else:
        s.creatures = replaced(s.creatures, seat, tuple(c for c in s.creatures[seat] if c != card))
        atk = s.attack
        if atk is not None:
            if card in atk.force:
                atk.force = tuple(c for c in atk.force if c != card)
            if card in atk.face_down:
                atk.face_down = tuple(c for c in atk.face_down if c != card)
        race = cards[card].race
        race_of = s.card_set.race_of
        if race not in {race_of[c] for c in s.creatures[seat]}:
            wizard = s.wizard_of(seat, race)
            if wizard is not None:
                s.wizards = replaced(s.wizards, seat, tuple((w, r) for w, r in s.wizards[seat] if w != wizard))
                s.discards += (wizard,)
                ev.append(Event("wizard_discarded",
                                {"seat": seat, "wizard": s.tokens[wizard], "reason": "nation_gone"}))
    s.victory = replaced(s.victory, by, s.victory[by] + (card,))
    ev.append(Event("card_destroyed", data))
