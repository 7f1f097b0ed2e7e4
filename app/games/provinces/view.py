"""Provinces: what each viewer may see (rules 6.1–6.3). The only path from state to the wire.

A hidden card is a joker that has not won a duel (``card.value is None``). Its owner sees it; every
other seat and spectators see nothing of it — no placeholder, no count, no gap; the admin sees it
marked ``"hidden": true``. Events use the same filter (:func:`visible_cards`).
"""
from __future__ import annotations

from typing import Any, Iterable

from app.games.base import ADMIN

from .state import DECK_SIZE, RANKS, SUITS, Card, State


def visible_cards(cards: Iterable[Card], owner: int, viewer: int) -> list[dict[str, Any]]:
    """Wire dicts of ``cards`` (owned by seat ``owner``) as seen by ``viewer`` (a seat, SPECTATOR
    or ADMIN): hidden jokers are dropped unless the viewer is the owner; the admin sees them marked.
    The card dicts are shared between views and events: read-only."""
    if viewer == owner:
        return [c.public for c in cards]
    if viewer == ADMIN:
        return [c.public if c.value is not None else {**c.public, "hidden": True} for c in cards]
    return [c.public for c in cards if c.value is not None]


def hidden_tokens(state: State, viewer: int) -> set[str]:
    """Tokens of the cards ``viewer`` must not see now: every unrevealed joker in a garrison the
    viewer does not own (none for ADMIN). Cards in the shoe and discard pile have no token."""
    if viewer == ADMIN:
        return set()
    owners = state.owners
    return {
        c.token
        for p, garrison in enumerate(state.garrisons)
        if owners[p] != viewer
        for c in garrison
        if c.value is None
    }


def render(state: State, viewer: int) -> dict[str, Any]:
    """The view of ``state`` for ``viewer`` (seat 0..n-1, SPECTATOR or ADMIN); see
    ``docs/games/provinces.md`` for the shape."""
    owners = state.owners
    garrisons = state.garrisons
    ages = state.ages
    attacked = state.attacked
    received = state.received
    seats = state.seats
    province_count = [0] * seats
    card_count = [0] * seats
    provinces: list[dict[str, Any]] = []
    append = provinces.append
    admin = viewer == ADMIN
    for p, q, r, adjacent in state.board._static:
        owner = owners[p]
        garrison = garrisons[p]
        if owner == viewer:
            shown = [c.public for c in garrison]
        elif admin:
            shown = [c.public if c.value is not None else {**c.public, "hidden": True} for c in garrison]
        else:
            shown = [c.public for c in garrison if c.value is not None]
        size = len(shown)
        province_count[owner] += 1
        card_count[owner] += size
        frontline = False
        for other in adjacent:
            if owners[other] != owner:
                frontline = True
                break
        append({
            "id": p,
            "q": q,
            "r": r,
            "adjacent": adjacent[:],
            "owner": owner,
            "age": ages[p],
            "size": size,
            "garrison": shown,
            "frontline": frontline,
            "attacked": (attacked >> p) & 1 == 1,
            # Rule 6.2: a move of hidden jokers only must leave no trace for others, so whether a
            # province received cards this turn is told to its owner (and the admin) only.
            "received": (received >> p) & 1 == 1 if owner == viewer or admin else None,
        })
    eliminated = state.eliminated
    result = state.result
    view: dict[str, Any] = {
        "game": "provinces",
        "viewer": viewer,
        "phase": "over" if result is not None else "turn",
        "phase_id": state.phase_id,
        "turn": state.turn,
        "round": state.round,
        "current_seat": state.current,
        "seat_order": list(state.seat_order),
        "seats": [
            {
                "seat": s,
                "alive": s not in eliminated,
                "provinces": province_count[s],
                "cards": card_count[s],
            }
            for s in range(seats)
        ],
        "provinces": provinces,
        # Counted for the seat to move (and the admin) only: others could count hidden-joker moves.
        "actions_this_turn": state.actions if viewer == state.current or admin else None,
        "options": {
            "turn_seconds": state.options.turn_seconds,
            "max_rounds": state.options.max_rounds,
            "tie_rule": state.options.tie_rule,
        },
        "max_garrison": 7,
        "dealing_mode": state.dealing[viewer] if 0 <= viewer < seats else None,
        "outcome": None if result is None else result.to_wire(),
    }
    if viewer == ADMIN:
        view["dealing_modes"] = list(state.dealing)
        view["shoe"] = [_ident_name(i) for i in reversed(state.shoe)]
        view["discard"] = [_ident_name(i) for i in state.discard]
        view["next_token"] = state.next_token
    return view


def _ident_name(ident: int) -> str:
    k = ident % DECK_SIZE
    if k >= 52:
        return "joker"
    return f"{RANKS[k >> 2]} {SUITS[k & 3]}"


__all__ = ["visible_cards", "hidden_tokens", "render"]
