"""Shared helpers for the Provinces tests (positions come from ``app.games.provinces.testing``)."""
from __future__ import annotations

import json

from app.games.base import SPECTATOR
from app.games.provinces import GAME
from app.games.provinces.state import TOKEN, VALUE
from app.games.provinces.testing import build_position, specs, wire_specs  # noqa: F401


#: A row of hex cells: province i is adjacent to i - 1 and i + 1 only.
def row(n: int) -> list[tuple[int, int]]:
    return [(q, 0) for q in range(n)]


#: Province 0 attacks province 1; 2, 3 and 4 touch 1 (not 0 — except 4, see below).
#: Adjacency: 0-1, 0-4, 1-2, 1-3, 1-4, 2-3, 3-? ; computed by the hex grid.
CLUSTER = [(0, 0), (1, 0), (2, -1), (2, 0), (1, -1)]


def tokens(state, province: int) -> list[str]:
    return [c[TOKEN] for c in state.garrisons[province]]


def attack(state, src: int, dst: int, cards: list[str] | None = None, seat: int | None = None):
    action = {"type": "attack", "from": src, "to": dst, "cards": cards if cards is not None else tokens(state, src)}
    return GAME.apply(state, state.current if seat is None else seat, action)


def move(state, src: int, dst: int, cards: list[str] | None = None):
    action = {"type": "move", "from": src, "to": dst, "cards": cards if cards is not None else tokens(state, src)}
    return GAME.apply(state, state.current, action)


def end_turn(state):
    return GAME.apply(state, state.current, {"type": "end_turn"})


def events_of(events, kind: str, viewer: int = SPECTATOR):
    return [e for e in events if e.type == kind and e.visible_to(viewer)]


def only(events, kind: str, viewer: int = SPECTATOR):
    found = events_of(events, kind, viewer)
    assert len(found) == 1, (kind, viewer, found)
    return found[0].data


def values(wire_cards) -> list:
    return [c["value"] for c in wire_cards]


def revealed_in_duels(events) -> set[str]:
    """Tokens of the cards drawn in duels (a joker is revealed to all in the duel where it is drawn)."""
    out = set()
    for event in events:
        if event.type == "battle":
            for duel in event.data["duels"]:
                out.add(duel["attacker"]["id"])
                out.add(duel["defender"]["id"])
    return out


def check_no_leak(before, after, events, seats: int) -> None:
    """Rules 6.1/6.2: no view of ``after`` and no visible event carries a token hidden from its
    viewer (hidden before or after the action, unless drawn in a duel), and garrison sizes shown
    to others count only visible cards."""
    revealed = revealed_in_duels(events)
    for viewer in list(range(seats)) + [SPECTATOR]:
        hidden_after = GAME.hidden_tokens(after, viewer)
        hidden = hidden_after | (GAME.hidden_tokens(before, viewer) - revealed)
        view = GAME.view(after, viewer)
        text = json.dumps(view)
        for token in hidden_after:
            assert token not in text, (viewer, token)
        for event in events:
            if not event.visible_to(viewer):
                continue
            data = json.dumps(event.to_wire())
            for token in hidden:
                assert token not in data, (viewer, event.type, token)
        for p, province in enumerate(view["provinces"]):
            true = after.garrisons[p]
            expected = len(true) if after.owners[p] == viewer else sum(1 for c in true if c[VALUE] is not None)
            assert province["size"] == expected == len(province["garrison"])
        shown = {s["seat"]: s["cards"] for s in view["seats"]}
        for seat in range(seats):
            cards = [c for p, g in enumerate(after.garrisons) if after.owners[p] == seat for c in g]
            expected = len(cards) if seat == viewer else sum(1 for c in cards if c[VALUE] is not None)
            assert shown[seat] == expected
