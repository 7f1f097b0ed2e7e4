"""Section 3: the battle loop (conquest.md 3.1–3.8), on exact positions.

Positions come from ``stacked_position`` (see support.py): ``table_decks`` stacks a table's deck
(flop, then the neutral's hand, turn, river), ``pools`` stacks a seat's pool.
"""
from __future__ import annotations

from app.games.base import SPECTATOR
from app.games.conquest import GAME
from app.games.conquest.poker import card_name
from app.games.conquest.state import (
    FOLD_RIVER,
    FOLD_TURN,
    LIVE,
    NEUTRAL,
    OUT_RIVER,
    OUT_TURN,
    RIVER,
    TURN,
)

from .support import (
    assert_illegal,
    board_of,
    decide,
    finish_phase,
    fork,
    orders,
    position,
    prompt_of,
)

BOARD = board_of(2)
A = max(range(BOARD.size), key=lambda land: len(BOARD.neighbours[land]))  # seat 0's land
B = BOARD.neighbours[A][0]  # seat 1's land, adjacent
COMMON = next(x for x in BOARD.neighbours[A] if x in BOARD.neighbours[B])  # neutral, touches both
N1, N2 = [x for x in BOARD.neighbours[A] if x not in (B, COMMON)][:2]  # more neutral land by A


def names(dealt) -> list[str]:
    return [card_name(d[0]) for d in dealt]


def duel(deck: str, hand0: str, hand1: str, mana=(10, 10), **kwargs):
    """Seat 0 attacks seat 1's land B; seat 1 defends. Returns the state at the turn decision."""
    state = position(owner={A: 0, B: 1}, mana=list(mana), table_decks={B: deck},
                     pools={0: hand0, 1: hand1}, **kwargs)
    state, _ = finish_phase(state, orders({0: [B], 1: []}))
    state, events = finish_phase(state, {1: {"type": "defend", "lands": [B]}})
    return state, events


def neutral_fight(deck: str, hand0: str, mana=(10, 10), land=N1):
    state = position(owner={A: 0, B: 1}, mana=list(mana), table_decks={land: deck}, pools={0: hand0})
    return finish_phase(state, orders({0: [land], 1: []}))


# ---- 3.1 ---------------------------------------------------------------------------------------

def test_3_1_flop_revealed_to_everyone_when_battle_starts():
    state = position(owner={A: 0, B: 1}, table_decks={B: "Ah Kh Qh 2c 3c"})
    state, _ = finish_phase(state, orders({0: [B], 1: []}))
    for viewer in (0, 1, SPECTATOR):  # before: face down for all
        assert GAME.view(state, viewer)["lands"][B]["flop"] == [{"hidden": True}] * 3
    state, events = finish_phase(state, {1: {"type": "defend", "lands": [B]}})
    started = next(e for e in events if e.type == "battles_started")
    assert started.audience is None
    assert [c["card"] for c in started.data["battles"][0]["flop"]] == ["Ah", "Kh", "Qh"]
    for viewer in (0, 1, SPECTATOR):
        view = GAME.view(state, viewer)
        assert [c["card"] for c in view["lands"][B]["flop"]] == ["Ah", "Kh", "Qh"]
        assert [c["card"] for c in view["battles"][0]["flop"]] == ["Ah", "Kh", "Qh"]


# ---- 3.2 turn ----------------------------------------------------------------------------------

def test_3_2_turn_costs_one_and_opens_the_turn_card():
    state, events = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    assert state.phase == TURN
    assert state.mana == [8, 8]  # activation / defence 1, turn 1
    battle = state.battles[B]
    assert battle.paid == {0: 1, 1: 1}
    assert card_name(battle.turn[0]) == "Js" and battle.river is None
    opened = next(e for e in events if e.type == "stage_opened")
    assert opened.audience is None and opened.data["stage"] == "turn"
    card = opened.data["tables"][0]["card"]
    assert opened.data["tables"] == [{"land": B, "paid": [0, 1], "technical_folds": [], "card": card}]
    assert opened.data["tables"][0]["card"]["card"] == "Js"
    assert [(p.seat, p.kind) for p in GAME.prompts(state)] == [(0, "decision"), (1, "decision")]


def test_3_2_technical_fold_no_refund():
    # both seats attack the neutral COMMON; seat 1 spends its last mana on the activation
    state = position(owner={A: 0, B: 1}, mana=[10, 1])
    state, _ = finish_phase(state, orders({0: [COMMON], 1: [COMMON]}))
    battle = state.battles[COMMON]
    assert battle.status[1] == OUT_TURN and battle.paid[1] == 0 and battle.refunded[1] == 0
    assert state.mana[1] == 0
    assert battle.status[0] == LIVE and battle.status[NEUTRAL] == LIVE
    assert state.phase == TURN and prompt_of(state, 1) is None


def test_3_2_fold_at_the_turn_returns_one():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    state, events = finish_phase(state, decide({0: [], 1: [B]}))
    battle = state.battles[B]
    assert battle.status[1] == FOLD_TURN and battle.refunded[1] == 1
    folded = next(e for e in events if e.type == "folds")
    assert folded.data["stage"] == "turn" and folded.data["folds"] == [{"land": B, "seat": 1, "refund": 1}]
    won = next(e for e in events if e.type == "battle_won")
    assert won.data["mana"][1] == 9  # 10 - defence 1 - turn 1 + refund 1


# ---- 3.3 river ---------------------------------------------------------------------------------

def test_3_3_river_costs_two_and_opens_the_river_card():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    state, events = finish_phase(state)  # both stay
    assert state.phase == RIVER
    battle = state.battles[B]
    assert battle.paid == {0: 3, 1: 3} and state.mana == [6, 6]
    assert card_name(battle.river[0]) == "4s"


def test_3_3_technical_fold_at_river_loses_turn_mana():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd", mana=(10, 3))
    assert state.mana[1] == 1
    state, events = finish_phase(state)  # both stay; seat 1 cannot pay the river
    battle = state.battles[B]
    assert battle.status[1] == OUT_RIVER and battle.paid[1] == 1 and battle.refunded[1] == 0
    assert battle.winner == 0 and battle.result == "last_standing" and battle.river is None
    won = next(e for e in events if e.type == "battle_won")
    assert won.data["mana"] == [6, 1]


def test_3_3_fold_at_the_river_returns_one():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    state, _ = finish_phase(state)
    state, events = finish_phase(state, decide({0: [B], 1: []}))
    battle = state.battles[B]
    assert battle.status[0] == FOLD_RIVER and battle.refunded[0] == 1
    won = next(e for e in events if e.type == "battle_won")
    assert won.data["winner"] == 1 and won.data["mana"] == [7, 6]  # 10 - 1 - 1 - 2 + 1


# ---- 3.4 decisions -----------------------------------------------------------------------------

def test_3_4_decision_deadline_and_default_stay():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd", options={"decision_seconds": 7})
    for prompt in GAME.prompts(state):
        assert prompt.deadline_seconds == 7.0 and prompt.simultaneous
        assert prompt.default_action == {"type": "decide", "folds": []}
    state, _ = finish_phase(state)  # defaults: stay everywhere
    assert state.battles[B].status == {0: LIVE, 1: LIVE} and state.phase == RIVER
    assert GAME.prompts(position())[0].deadline_seconds == 60.0


def test_3_4_fold_only_once_the_stage_is_paid():
    state = position(owner={A: 0, B: 1})
    assert_illegal(state, 0, {"type": "decide", "folds": []}, "fold_before_paid")
    state, _ = finish_phase(state, orders({0: [B], 1: []}))
    assert_illegal(state, 1, {"type": "decide", "folds": [B]}, "fold_before_paid")
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    assert_illegal(state, 0, {"type": "decide", "folds": [N1]}, "not_in_battle")


def test_3_4_one_decision_prompt_per_seat_covers_all_its_tables_in_lock_step():
    state = position(owner={A: 0, B: 1}, table_decks={N1: "2c 3c 4c 5c 6c 7c 8c", N2: "2d 3d 4d 5d 6d 7d 8d"})
    state, _ = finish_phase(state, orders({0: [N1, N2], 1: []}))
    state, _ = finish_phase(state)  # assign by default
    assert state.phase == TURN
    assert [(p.seat, p.kind) for p in GAME.prompts(state)] == [(0, "decision")]
    assert GAME.view(state, 0)["you"]["decision_lands"] == sorted([N1, N2])
    assert all(state.battles[land].turn is not None for land in (N1, N2))  # both turns open together
    state, _ = finish_phase(state, decide({0: [N2]}))
    assert state.battles[N2].status[0] == FOLD_TURN and state.battles[N2].winner == NEUTRAL
    assert state.battles[N1].river is not None and state.phase == RIVER


def test_3_payments_in_land_order_refunds_before_next_payments():
    low, high = sorted([N1, N2])
    # 3 mana: 2 activations, then only the lower land's turn can be paid
    state = position(owner={A: 0, B: 1}, mana=[3, 10])
    state, _ = finish_phase(state, orders({0: [low, high], 1: []}))
    state, _ = finish_phase(state)  # assign
    assert state.battles[low].status[0] == LIVE and state.battles[high].status[0] == OUT_TURN
    # 5 mana: both turns paid (1 left); folding the lower returns 1 before the river is paid
    state = position(owner={A: 0, B: 1}, mana=[5, 10])
    state, _ = finish_phase(state, orders({0: [low, high], 1: []}))
    state, _ = finish_phase(state)  # assign; both turns paid
    assert state.mana[0] == 1
    state, _ = finish_phase(state, decide({0: [low]}))
    assert state.battles[high].status[0] == LIVE and state.battles[high].paid[0] == 3
    assert state.mana[0] == 0


# ---- 3.5 ---------------------------------------------------------------------------------------

def test_3_5_last_one_left_takes_the_table_at_once():
    state, _ = duel("2c 7d 9h  Js 4s", "2h3h", "KcKd")
    state, events = finish_phase(state, decide({0: [], 1: [B]}))
    battle = state.battles[B]
    assert battle.winner == 0 and battle.result == "last_standing" and battle.river is None
    assert state.owner[B] == 0
    assert not any(e.type == "showdown" for e in events)


def test_3_5_none_left_table_stays_with_its_holder():
    board = board_of(3)
    x, a, c = fork(board)
    spare = next(ld for ld in range(board.size) if ld not in (x, a, c))
    state = position(seats=3, owner={a: 0, c: 1, x: 2, spare: 2})
    state, _ = finish_phase(state, orders({0: [x], 1: [x], 2: []}))
    state, _ = finish_phase(state)  # seat 2 does not defend: 0 and 1 fight
    state, events = finish_phase(state, decide({0: [x], 1: [x]}))
    battle = state.battles[x]
    assert battle.result == "none_left" and battle.winner == 2 and state.owner[x] == 2


# ---- 3.6 final ---------------------------------------------------------------------------------

def test_3_6_best_hand_wins_at_the_final():
    state, _ = duel("3h 4s 5c  9d Kh", "Ac2d", "QcQd")
    state, _ = finish_phase(state)
    state, events = finish_phase(state)
    battle = state.battles[B]
    assert battle.result == "final" and battle.winner == 0 and state.owner[B] == 0
    show = next(e for e in events if e.type == "showdown")
    assert show.audience is None
    assert {h["seat"]: (sorted(c["card"] for c in h["cards"]), h["category"]) for h in show.data["hands"]} == {
        0: (["2d", "Ac"], "straight"), 1: (["Qc", "Qd"], "one_pair")}


def test_3_6_steel_wheel_loses_to_six_high_straight_flush():
    state, _ = duel("2d 3d 4d  5d 9s", "AdKc", "6d7h")
    state, _ = finish_phase(state)
    state, _ = finish_phase(state)
    assert state.battles[B].winner == 1 and state.owner[B] == 1


def test_3_6_full_tie_returns_every_finalists_stake_table_stays():
    state, _ = duel("4c 5d 6h  7s 8c", "AhKd", "QsJh")
    state, _ = finish_phase(state)
    state, events = finish_phase(state)
    battle = state.battles[B]
    assert battle.result == "tie" and battle.winner == 1 and state.owner[B] == 1
    assert battle.refunded == {0: 3, 1: 3}
    won = next(e for e in events if e.type == "battle_won")
    assert won.data["mana"] == [9, 9]  # only the activation / defence fee is gone (1.5)


def test_1_5_stake_is_turn_and_river_only():
    state, _ = duel("4c 5d 6h  7s 8c", "AhKd", "QsJh", mana=(4, 4))
    state, _ = finish_phase(state)
    state, events = finish_phase(state)
    assert state.battles[B].paid == {0: 3, 1: 3}
    assert next(e for e in events if e.type == "battle_won").data["mana"] == [3, 3]


def test_3_6_neutral_wins_table_stays_neutral():
    state, _ = neutral_fight("2c 7d 9h  AsAh  3s 4d", "KcQd")
    assert state.phase == TURN
    state, _ = finish_phase(state)
    state, events = finish_phase(state)
    battle = state.battles[N1]
    assert battle.result == "final" and battle.winner == NEUTRAL and state.owner[N1] == NEUTRAL
    show = next(e for e in events if e.type == "showdown")
    assert {h["seat"] for h in show.data["hands"]} == {0, "neutral"}


# ---- 3.7 / 3.8 / the neutral --------------------------------------------------------------------

def test_3_7_mana_paid_into_a_lost_battle_is_spent():
    state, _ = duel("3h 4s 5c  9d Kh", "Ac2d", "QcQd")
    state, _ = finish_phase(state)
    state, events = finish_phase(state)
    won = next(e for e in events if e.type == "battle_won")
    assert won.data["mana"] == [6, 6] and won.data["refunded"] == {"0": 0, "1": 0}


def test_3_8_turn_and_river_leave_out_every_hand():
    state, _ = duel("2c 3d 4h  Ac Ks Qd 9d 8h", "AcKs", "QdJc")
    battle = state.battles[B]
    assert card_name(battle.turn[0]) == "9d"  # Ac, Ks (seat 0) and Qd (seat 1) skipped
    state, _ = finish_phase(state)
    assert card_name(state.battles[B].river[0]) == "8h"


def test_3_neutral_hand_from_table_deck_pays_nothing_never_folds():
    state, _ = neutral_fight("2c 3d 4h  Qs Qh Tc  9d 8h", "QsJd")
    battle = state.battles[N1]
    assert names(battle.hands[NEUTRAL]) == ["Qh", "Tc"]  # Qs is in seat 0's hand: skipped
    assert NEUTRAL not in battle.paid
    assert card_name(battle.turn[0]) == "9d"
    assert [p.seat for p in GAME.prompts(state)] == [0]
    state, _ = finish_phase(state)
    assert battle.status[NEUTRAL] == LIVE and card_name(state.battles[N1].river[0]) == "8h"
    assert state.mana[0] == 10 - 1 - 1 - 2


# ---- 2.4 ---------------------------------------------------------------------------------------

def test_2_4_every_table_that_goes_to_battle_is_fought_in_lock_step():
    state = position(owner={A: 0, B: 1}, mana=[20, 20])
    state, _ = finish_phase(state, orders({0: [B, N1], 1: [A]}))
    state, _ = finish_phase(state, {0: {"type": "defend", "lands": [A]}, 1: {"type": "defend", "lands": [B]}})
    state, _ = finish_phase(state)  # seat 0 assigns its pool over A, B and N1 by default
    assert sorted(state.battles) == sorted([A, B, N1])
    assert state.battles[A].seats == (0, 1) and state.battles[A].defender == 0
    assert state.battles[B].defender == 1 and state.battles[N1].seats == (0, NEUTRAL)
    assert all(b.stage == "turn" and b.turn is not None for b in state.battles.values())
    assert GAME.view(state, 0)["you"]["decision_lands"] == sorted([A, B, N1])
    state, _ = finish_phase(state)  # everyone stays: every table moves to the river together
    assert all(b.stage == "river" and b.river is not None for b in state.battles.values())
    state, _ = finish_phase(state)
    assert all(b.stage == "done" and b.result in ("final", "tie") for b in state.battles.values())
