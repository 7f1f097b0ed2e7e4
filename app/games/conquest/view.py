"""What each viewer may see of a Hold'em Conquest match (conquest.md section 4).

:func:`view` is the only path from state to the wire; :func:`hidden_tokens` lists the card ids a
viewer must not see right now. Both rest on the same three questions — :func:`flop_visible`,
:func:`hand_visible` and the pools' owner — so they cannot disagree.

Cards on the wire: ``{"id": token, "card": "Ac"}`` when visible; ``{"hidden": true}`` (no id) when
not; in the admin view every card is shown and those hidden from spectators carry ``"hidden": true``.
"""
from __future__ import annotations

from typing import Any

from app.games.base import ADMIN, SPECTATOR
from app.games.conquest import poker
from app.games.conquest.rules import (
    attackable,
    attacks_of,
    decision_lands,
    defendable,
    seat_battle_lands,
)
from app.games.conquest.state import (
    ASSIGN,
    DEFENCE,
    MAX_BATTLES,
    NEUTRAL,
    ORDERS,
    RIVER,
    STAGE_ASSIGN,
    STAGE_DONE,
    TURN,
    Battle,
    Dealt,
    State,
)

_FACE_DOWN = {"hidden": True}


def flop_visible(state: State, land: int, viewer: int) -> bool:
    """Is the *current* flop of ``land``'s table open to ``viewer``? Only while a battle is being
    fought on it (3.1, 4.1, 4.3). Section 5's reveals (scout, loyalty, …) will extend this."""
    battle = state.battles.get(land)
    return battle is not None and battle.stage != STAGE_ASSIGN and battle.stage != STAGE_DONE


def hand_visible(battle: Battle, participant: int, viewer: int) -> bool:
    """A hand is seen by its owner, and by all once it reaches the final (4.1, 4.2); the neutral's
    hand and folded hands by nobody else."""
    return (participant == viewer and participant != NEUTRAL) or participant in battle.finalists


def hidden_tokens(state: State, viewer: int) -> set[str]:
    """Card ids ``viewer`` (a seat, SPECTATOR or ADMIN) must not see now: other seats' pools, and
    hands neither theirs nor shown at a final (4.2). Unopened flops (4.3) have no ids at all: a flop
    card gets its id when its battle starts. Empty for ADMIN."""
    if viewer == ADMIN:
        return set()
    hidden: set[str] = set()
    for seat, pool in state.pools.items():
        if seat != viewer:
            hidden.update(dealt[1] for dealt in pool)
    for battle in state.battles.values():
        for participant, hand in battle.hands.items():
            if not hand_visible(battle, participant, viewer):
                hidden.update(dealt[1] for dealt in hand if dealt[1])
    return hidden


def _card(dealt: Dealt, visible: bool, admin: bool) -> dict[str, Any]:
    if visible:
        return {"id": dealt[1], "card": poker.card_name(dealt[0])}
    if admin:
        shown = {"card": poker.card_name(dealt[0]), "hidden": True}
        if dealt[1]:
            shown["id"] = dealt[1]
        return shown
    return dict(_FACE_DOWN)


def _face_down_flop(flop: tuple[int, ...], admin: bool) -> list[dict[str, Any]]:
    """An unopened flop: nothing but its place for players and spectators, its faces for the admin."""
    if admin:
        return [{"card": poker.card_name(card), "hidden": True} for card in flop]
    return [{"hidden": True}, {"hidden": True}, {"hidden": True}]


def _who(seat: int) -> int | str:
    return "neutral" if seat == NEUTRAL else seat


def _battle_view(state: State, battle: Battle, viewer: int, admin: bool) -> dict[str, Any]:
    started = battle.stage != STAGE_ASSIGN
    participants = []
    for seat in battle.seats:
        hand = battle.hands.get(seat)
        if hand is None:
            shown = None
        elif admin:
            seen = hand_visible(battle, seat, SPECTATOR)
            shown = [_card(d, seen, True) for d in hand]
        elif hand_visible(battle, seat, viewer):
            shown = [_card(d, True, False) for d in hand]
        else:
            shown = [dict(_FACE_DOWN), dict(_FACE_DOWN)]
        entry = {
            "seat": _who(seat),
            "role": "neutral" if seat == NEUTRAL else ("defender" if seat == battle.defender else "attacker"),
            "status": battle.status[seat],
            "hand": shown,
        }
        if seat != NEUTRAL:
            entry["paid"] = battle.paid[seat]
            entry["refunded"] = battle.refunded[seat]
        if seat in battle.finalists:
            entry["category"] = poker.category(battle.ranks[seat])
        participants.append(entry)
    return {
        "land": battle.land,
        "holder": _who(battle.holder),
        "stage": battle.stage,
        "flop": [_card(d, True, admin) for d in battle.flop] if started else None,
        "turn": None if battle.turn is None else _card(battle.turn, True, admin),
        "river": None if battle.river is None else _card(battle.river, True, admin),
        "participants": participants,
        "winner": None if battle.stage != STAGE_DONE else _who(battle.winner),
        "result": battle.result,
    }


def _submission_wire(state: State, seat: int) -> dict[str, Any] | None:
    sub = state.submissions.get(seat)
    if sub is None:
        return None
    phase = state.phase
    if phase == ORDERS:
        return {"type": "orders", "attack": list(sub)}
    if phase == DEFENCE:
        return {"type": "defend", "lands": list(sub)}
    if phase == ASSIGN:
        return {"type": "assign", "hands": {str(land): [hand[0][1], hand[1][1]] for land, hand in sub}}
    return {"type": "decide", "folds": list(sub)}


def view(state: State, viewer: int) -> dict[str, Any]:
    """The match as ``viewer`` may see it (shape in docs/games/conquest.md, "View")."""
    admin = viewer == ADMIN
    board = state.board
    counts = [0] * state.seats
    for owner in state.owner:
        if owner != NEUTRAL:
            counts[owner] += 1
    lands = []
    battles = state.battles
    for land, (q, r) in enumerate(board.coords):
        owner = state.owner[land]
        if land in battles and flop_visible(state, land, viewer):
            flop = [_card(d, True, admin) for d in battles[land].flop]
        else:
            flop = _face_down_flop(state.tables[land].flop, admin)
        lands.append({
            "id": land, "q": q, "r": r,
            "owner": None if owner == NEUTRAL else owner,
            "neighbours": list(board.neighbours[land]),
            "flop": flop,
        })
    seats = [{
        "seat": seat,
        "mana": state.mana[seat],
        "tables": counts[seat],
        "eliminated": state.out_round[seat] != 0,
        "start_land": board.starts[seat],
        "must_act": seat in state.required,
        "submitted": seat in state.submissions,
    } for seat in range(state.seats)]
    out: dict[str, Any] = {
        "game": "conquest",
        "viewer": viewer,
        "round": state.round,
        "max_rounds": state.options.max_rounds,
        "tables_to_win": state.options.tables_to_win,
        "phase": state.phase,
        "phase_id": state.phase_id,
        "seats": seats,
        "lands": lands,
        "attacks": [{"land": land, "attackers": list(s)} for land, s in state.attacks.items()],
        "defences": list(state.defences),
        "passed": [{"land": land, "from": frm, "to": to} for land, frm, to in state.passed],
        "battles": [_battle_view(state, state.battles[land], viewer, admin) for land in sorted(state.battles)],
        "outcome": None,
    }
    if state.result is not None:
        ranks, scores, reason = state.result
        out["outcome"] = {"ranks": {str(s): v for s, v in ranks.items()},
                          "scores": {str(s): v for s, v in scores.items()}, "reason": reason}
    if 0 <= viewer < state.seats:
        out["you"] = _you(state, viewer)
    elif admin:
        out["pools"] = {str(seat): [_card(d, False, True) for d in pool] for seat, pool in state.pools.items()}
        out["submissions"] = {str(seat): _submission_wire(state, seat) for seat in state.submissions}
    return out


def _you(state: State, seat: int) -> dict[str, Any]:
    """The viewer's own private part and what they may choose now."""
    phase = state.phase
    you: dict[str, Any] = {
        "seat": seat,
        "mana": state.mana[seat],
        "max_battles": MAX_BATTLES,
        "submission": _submission_wire(state, seat),
        "pool": [_card(d, True, False) for d in state.pools.get(seat, ())],
        "attackable": [],
        "defendable": [],
        # this round's battles exist from the assign phase on (before, ``battles`` are last round's)
        "battle_lands": seat_battle_lands(state, seat) if phase in (ASSIGN, TURN, RIVER) else [],
        "decision_lands": [],
    }
    if seat in state.required:
        if phase == ORDERS:
            you["attackable"] = attackable(state, seat)
        elif phase == DEFENCE:
            you["defendable"] = defendable(state, seat)
            you["attacks_made"] = attacks_of(state, seat)
        elif phase in (TURN, RIVER):
            you["decision_lands"] = decision_lands(state, seat)
    return you
