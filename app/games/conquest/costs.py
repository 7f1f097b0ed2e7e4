"""Hold'em Conquest: the phase table, limits, and the costs, refunds and income of a seat (conquest.md 2.1-2.6),
with the hooks section 5 (specials) extends: shields, free_fold, insurance, double incomes, the cap of 7 battles.
"""
from __future__ import annotations

from app.games.conquest.specials import SPECIALS
from app.games.conquest.state import (
    ASSIGN,
    DEFENCE,
    MAX_BATTLES,
    ORDERS,
    RIVER,
    STAGE_TURN,
    TURN,
    Battle,
    State,
)

#: The action type expected in each phase, and the prompt kind shown for it.
ACTION_OF_PHASE = {ORDERS: "orders", DEFENCE: "defend", ASSIGN: "assign", TURN: "decide", RIVER: "decide"}
KIND_OF_PHASE = {ORDERS: "orders", DEFENCE: "defence", ASSIGN: "assign", TURN: "decision", RIVER: "decision"}
ACTION_TYPES = frozenset(ACTION_OF_PHASE.values())

#: Mana prices of conquest.md 2.1 (activation), 2.2 (defence), 3.2 (turn), 3.3 (river), before specials.
ACTIVATION_COST = 1
DEFENCE_COST = 1
TURN_COST = 1
RIVER_COST = 2

#: Largest list or object accepted in an action (more is ``malformed_action``).
MAX_ITEMS = 64

#: The house cap on battles a round with ``double_set`` or ``double_hand`` active (conquest.md 2.1).
MAX_BATTLES_DOUBLE = 7

#: Specials that show flops / hands (view.py reads these; conquest.md 5.3.1, 5.3.2.1-2).
FLOP_SPECIALS = frozenset(("loyalty", "spy", "corruption", "big_brother"))
HAND_SPECIALS = frozenset(("read_hand", "hound"))
_SPECIAL_SET = frozenset(SPECIALS)


# --------------------------------------------------------------------------------------------
# Costs, refunds and income: the hooks section 5 (specials) will extend.
# --------------------------------------------------------------------------------------------

def activation_cost(state: State, seat: int, land: int) -> int:
    """Mana to activate ``land`` for an attack (conquest.md 2.1): 1, plus N on a table another seat
    shielded with N (5.3.1.1)."""
    if state.shields:
        return ACTIVATION_COST + shield_on(state, land, seat)
    return ACTIVATION_COST


def shield_on(state: State, land: int, seat: int) -> int:
    """Mana ``seat`` must pay on top of an action on ``land``'s table because another seat shielded
    it (conquest.md 5.3.1.1): N while the shielding seat holds the land, else 0."""
    shield = state.shields.get(land)
    if shield is None or shield[0] == seat or state.owner[land] != shield[0]:
        return 0
    return shield[1]


def reserved_mana(state: State, seat: int) -> int:
    """Mana held back for ``seat``'s submission on file, charged when the phase ends (conquest.md
    1.4, 2.1, 2.2): its orders at the prices they had when submitted (``State.order_prices``), or 1
    per defended land; 0 in other phases or without a submission."""
    submission = state.submissions.get(seat)
    if not submission:
        return 0
    if state.phase == ORDERS:
        prices = state.order_prices.get(seat)
        if prices is None:  # not expected: ``apply`` records the prices with the orders
            return sum(activation_cost(state, seat, land) for land in submission)
        return sum(prices)
    if state.phase == DEFENCE:
        return sum(defence_cost(state, seat, land) for land in submission)
    return 0


def available_mana(state: State, seat: int) -> int:
    """Mana ``seat`` may spend at once on a special (section 5): its mana less
    :func:`reserved_mana`, so that paying the submission at the phase's end never leaves it below 0
    (conquest.md 1.4)."""
    return state.mana[seat] - reserved_mana(state, seat)


def max_battles(state: State, seat: int) -> int:
    """Battles ``seat`` may take part in this round (conquest.md 2.1): 10, or 7 with ``double_set``
    or ``double_hand`` active (their larger pools must fit in one deck)."""
    active = state.active.get(seat) if state.active else None
    if active and ("double_set" in active or "double_hand" in active):
        return MAX_BATTLES_DOUBLE
    return MAX_BATTLES


def defence_cost(state: State, seat: int, land: int) -> int:
    """Mana to defend ``land`` (conquest.md 2.2): 1."""
    return DEFENCE_COST


def stage_cost(state: State, battle: Battle, seat: int, stage: str) -> int:
    """Mana a participant pays to see ``stage`` (``"turn"``: 1, conquest.md 3.2; ``"river"``: 2, 3.3)."""
    return TURN_COST if stage == STAGE_TURN else RIVER_COST


def fold_refund(state: State, battle: Battle, seat: int, stage: str) -> int:
    """Mana returned on a (non-technical) fold at ``stage``: 1 at the turn (3.2), 1 — the turn's —
    at the river (3.3); with ``free_fold`` the whole stake paid in this battle (5.3.3.4). A
    technical fold returns nothing."""
    if state.active and state.has(seat, "free_fold"):
        return battle.paid[seat] - battle.refunded[seat]
    return 1


def tie_refund(state: State, battle: Battle, seat: int) -> int:
    """Mana returned to a finalist when the best hands tie fully: their whole stake (1.5, 3.6)."""
    return battle.paid[seat]


def land_income(state: State, seat: int, land: int) -> int:
    """Mana a controlled land yields at the end of the round (conquest.md 2.6): 1; 2 with
    ``full_double_income`` (5.3.3.2) or on the land chosen for ``double_income`` (5.3.3.1); the two
    do not add up."""
    if state.active:
        active = state.active.get(seat)
        if active and ("full_double_income" in active
                       or ("double_income" in active and state.double_land.get(seat) == land)):
            return 2
    return 1


def insurance_refund(state: State, battle: Battle, seat: int) -> int:
    """Mana returned to a finalist who loses at the final (no fold): with ``insurance`` their stake
    in this battle (5.3.3.3), else 0."""
    if state.active and state.has(seat, "insurance"):
        return battle.paid[seat] - battle.refunded[seat]
    return 0


def hand_size(state: State, seat: int) -> int:
    """Cards in each of ``seat``'s hands this round: 2, or 4 with ``double_hand`` (5.3.2.4)."""
    return state.hand_sizes.get(seat, 2) if state.hand_sizes else 2
