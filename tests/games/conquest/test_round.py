"""Section 2: a round (conquest.md 2.1–2.6)."""
from __future__ import annotations

from app.games.base import SPECTATOR
from app.games.conquest import GAME
from app.games.conquest.state import ASSIGN, DEFENCE, FLOP, NEUTRAL, ORDERS, OVER, TURN

from .support import (
    adjacent_pair,
    assert_illegal,
    board_of,
    far_land,
    finish_phase,
    fork,
    orders,
    position,
    prompt_of,
)


def _duel(**kwargs):
    """2 seats: seat 0 holds land a, seat 1 holds the adjacent land b; all else neutral."""
    board = board_of(2)
    a = max(range(board.size), key=lambda land: len(board.neighbours[land]))
    b = board.neighbours[a][0]
    return position(owner={a: 0, b: 1}, **kwargs), a, b


def _neutral_targets(state, land):
    return [n for n in state.board.neighbours[land] if state.owner[n] == NEUTRAL]


# ---- 2.1 orders ------------------------------------------------------------------------------

def test_2_1_orders_is_a_simultaneous_phase_for_every_seat_with_a_target():
    state, a, b = _duel()
    prompts = GAME.prompts(state)
    assert state.phase == ORDERS
    assert [(p.seat, p.kind, p.simultaneous, p.deadline_seconds) for p in prompts] == [
        (0, "orders", True, 60.0), (1, "orders", True, 60.0)]
    assert len({p.phase_id for p in prompts}) == 1
    custom = position(owner={a: 0, b: 1}, options={"phase_seconds": 15})
    assert {p.deadline_seconds for p in GAME.prompts(custom)} == {15.0}


def test_2_1_activation_costs_one_mana_each():
    state, a, b = _duel()
    targets = _neutral_targets(state, a)[:2]
    assert len(targets) == 2
    state, events = finish_phase(state, orders({0: targets, 1: []}))
    activations = next(e for e in events if e.type == "activations")
    assert activations.data["mana"] == [8, 10]
    assert state.phase == ASSIGN and state.mana[0] == 8


def test_2_1_only_adjacent_lands_not_own():
    state, a, b = _duel()
    assert_illegal(state, 0, {"type": "orders", "attack": [a]}, "own_land")
    assert_illegal(state, 0, {"type": "orders", "attack": [far_land(state.board, a)]}, "not_adjacent")
    # adjacency counts from every land the seat controls at the round's start
    c = _neutral_targets(state, a)[0]
    d = next(n for n in state.board.neighbours[c] if n != a and state.board.distance[a][n] >= 2)
    two = position(owner={a: 0, c: 0, b: 1})
    GAME.apply(two, 0, {"type": "orders", "attack": [d]})  # legal: d touches c
    assert_illegal(state, 0, {"type": "orders", "attack": [d]}, "not_adjacent")


def test_2_1_cannot_spend_mana_one_does_not_have():
    state, a, b = _duel(mana=[1, 10])
    targets = _neutral_targets(state, a)[:2]
    assert_illegal(state, 0, {"type": "orders", "attack": targets}, "not_enough_mana")
    GAME.apply(state, 0, {"type": "orders", "attack": targets[:1]})


def test_2_1_no_submission_means_no_attacks():
    state, a, b = _duel()
    assert prompt_of(state, 0).default_action == {"type": "orders", "attack": []}
    state, events = finish_phase(state)  # both time out
    assert not any(e.type == "activations" and e.data["attacks"] for e in events)
    assert state.round == 2 and state.phase == ORDERS
    assert state.mana == [11, 11]  # nothing spent; income 1 each


def test_2_1_at_most_ten_battles_a_round():
    board = board_of(4, b"big")
    # seat 0 holds every land but one far corner of seat 1: plenty of targets... instead give seat 0
    # a ring of lands so that it borders more than ten others.
    counts = {}
    for land in range(board.size):
        counts[land] = len(board.neighbours[land])
    mine = set()
    targets = set()
    for land in sorted(range(board.size), key=lambda ld: -counts[ld]):
        if len(targets - mine) >= 11:
            break
        if land in targets:
            continue
        mine.add(land)
        targets.update(board.neighbours[land])
    targets -= mine
    owner = {land: 0 for land in mine}
    spare = next(land for land in range(board.size) if land not in mine and land not in targets)
    owner[spare] = 1
    state = position(seats=4, seed=b"big", owner=owner, mana=[40, 10, 10, 10])
    eleven = sorted(targets)[:11]
    assert len(eleven) == 11
    assert_illegal(state, 0, {"type": "orders", "attack": eleven}, "too_many_battles")
    GAME.apply(state, 0, {"type": "orders", "attack": eleven[:10]})


# ---- 2.2 defence -----------------------------------------------------------------------------

def test_2_2_activations_revealed_to_everyone():
    state, a, b = _duel()
    state, events = finish_phase(state, orders({0: [b], 1: []}))
    activations = next(e for e in events if e.type == "activations")
    assert activations.audience is None
    assert activations.data["attacks"] == [{"land": b, "attackers": [0]}]
    assert state.phase == DEFENCE
    assert GAME.view(state, SPECTATOR)["attacks"] == [{"land": b, "attackers": [0]}]


def test_2_2_defence_costs_one_and_leads_to_battle():
    state, a, b = _duel()
    state, _ = finish_phase(state, orders({0: [b], 1: []}))
    prompt = prompt_of(state, 1)
    assert (prompt.kind, prompt.default_action) == ("defence", {"type": "defend", "lands": []})
    assert prompt_of(state, 0) is None
    state, events = finish_phase(state, {1: {"type": "defend", "lands": [b]}})
    assert next(e for e in events if e.type == "defences").data == {"lands": [b], "mana": [9, 9]}
    assert b in state.battles and state.battles[b].seats == (0, 1)
    assert state.battles[b].defender == 1


def test_2_2_only_own_attacked_lands_can_be_defended():
    board = board_of(2)
    a, b = adjacent_pair(board)
    c = next(n for n in board.neighbours[b] if n != a)
    state = position(owner={a: 0, b: 1, c: 1})
    state, _ = finish_phase(state, orders({0: [b], 1: []}))
    assert_illegal(state, 1, {"type": "defend", "lands": [c]}, "not_attacked")
    assert_illegal(state, 1, {"type": "defend", "lands": [a]}, "not_your_land")
    # a seat without mana has nothing to decide: no defence prompt, the table passes
    poor = position(owner={a: 0, b: 1, c: 1}, mana=[10, 0])
    poor, _ = finish_phase(poor, orders({0: [b]}))
    assert poor.phase != DEFENCE and poor.owner[b] == 0


def test_2_2_no_submission_defends_none_and_single_attacker_takes_table():
    state, a, b = _duel(options={"tables_to_win": 10})
    c = next(n for n in state.board.neighbours[b] if n != a)
    state = position(owner={a: 0, b: 1, c: 1})
    state, _ = finish_phase(state, orders({0: [b], 1: []}))
    state, events = finish_phase(state)  # seat 1 lets the deadline pass
    passed = next(e for e in events if e.type == "table_passed")
    assert passed.data == {"land": b, "from": 1, "to": 0}
    assert state.owner[b] == 0
    assert b not in state.battles and not any(e.type == "battles_started" for e in events)
    assert state.mana[0] == 10 - 1 + 2  # activation only, then income for 2 tables


def test_2_2_several_attackers_fight_among_themselves():
    board = board_of(3)
    x, a, c = fork(board)
    # x held by seat 2, undefended: seats 0 and 1 fight each other for it
    state = position(seats=3, owner={a: 0, c: 1, x: 2,
                                     next(ld for ld in range(board.size) if ld not in (x, a, c) and
                                          ld not in board.neighbours[a] and ld not in board.neighbours[c]): 2})
    state, _ = finish_phase(state, orders({0: [x], 1: [x], 2: []}))
    state, events = finish_phase(state)  # seat 2 does not defend
    battle = state.battles[x]
    assert battle.seats == (0, 1) and battle.defender is None and battle.holder == 2
    assert not any(e.type == "table_passed" for e in events)
    # on a neutral land the neutral joins them
    state = position(seats=3, owner={a: 0, c: 1})  # seat 2 holds nothing here: no prompt
    state, _ = finish_phase(state, orders({0: [x], 1: [x]}))
    assert state.battles[x].seats == (0, 1, NEUTRAL)


def test_2_2_neutral_land_always_goes_to_battle():
    state, a, b = _duel()
    n = _neutral_targets(state, a)[0]
    state, events = finish_phase(state, orders({0: [n], 1: []}))
    assert state.battles[n].seats == (0, NEUTRAL)
    assert state.phase == TURN  # one table each: nothing to assign; the battle started


# ---- 2.3 deal and assign ---------------------------------------------------------------------

def _two_battles(**kwargs):
    state, a, b = _duel(**kwargs)
    targets = _neutral_targets(state, a)[:2]
    state, events = finish_phase(state, orders({0: targets, 1: []}))
    return state, events, sorted(targets)


def test_2_3_pool_of_two_cards_per_battle_table():
    state, events, targets = _two_battles()
    assert state.phase == ASSIGN
    assert len(state.pools[0]) == 4
    dealt = next(e for e in events if e.type == "pool_dealt")
    assert dealt.audience == frozenset({0}) and len(dealt.data["cards"]) == 4
    view = GAME.view(state, 0)["you"]
    assert [c["id"] for c in view["pool"]] == [d[1] for d in state.pools[0]]
    assert view["battle_lands"] == targets
    assert GAME.view(state, 1)["you"]["pool"] == []


def test_2_3_exactly_two_cards_per_table_none_left_in_pool():
    state, _, (l1, l2) = _two_battles()
    t = [d[1] for d in state.pools[0]]
    assert_illegal(state, 0, {"type": "assign", "hands": {str(l1): t[:2]}}, "missing_hand")
    assert_illegal(state, 0, {"type": "assign", "hands": {str(l1): t[:3], str(l2): t[3:]}}, "bad_hand")
    assert_illegal(state, 0, {"type": "assign", "hands": {str(l1): t[:2], str(l2): [t[2], "zzzzzzzzzzzz"]}},
                   "card_not_in_pool")
    assert_illegal(state, 0, {"type": "assign", "hands": {str(l1): t[:2], str(l2): [t[1], t[2]]}}, "card_reused")
    assert_illegal(state, 0, {"type": "assign", "hands": {str(l1): t[:2], "99": t[2:]}}, "unknown_land")
    state, _ = GAME.apply(state, 0, {"type": "assign", "hands": {str(l1): [t[3], t[0]], l2: [t[1], t[2]]}})
    assert [d[1] for d in state.battles[l1].hands[0]] == [t[3], t[0]]
    assert [d[1] for d in state.battles[l2].hands[0]] == [t[1], t[2]]


def test_2_3_no_submission_assigns_in_dealt_order():
    state, _, (l1, l2) = _two_battles()
    t = [d[1] for d in state.pools[0]]
    assert prompt_of(state, 0).default_action == {"type": "assign", "hands": {str(l1): t[:2], str(l2): t[2:]}}
    state, _ = finish_phase(state)
    assert [d[1] for d in state.battles[l1].hands[0]] == t[:2]
    assert [d[1] for d in state.battles[l2].hands[0]] == t[2:]


def test_2_3_pool_deck_leaves_out_the_flops_of_own_tables():
    state, a, b = _duel()
    n = _neutral_targets(state, a)[0]
    state = position(owner={a: 0, b: 1}, table_decks={n: "AcKdQh"}, pools={0: "AcKd7s2c"})
    state, _ = finish_phase(state, orders({0: [n], 1: []}))
    hand = [d[0] for d in state.battles[n].hands[0]]
    from app.games.conquest.poker import parse_cards
    assert hand == parse_cards("7s2c")  # Ac and Kd are on the flop: never in the pool
    for seed in range(30):  # and on random deals
        s = GAME.setup(2, None, b"pool-%d" % seed)
        target = [ld for ld in s.board.neighbours[s.board.starts[0]] if s.owner[ld] == NEUTRAL]
        s, _ = finish_phase(s, orders({0: target[:3], 1: []}))
        for land in target[:3]:
            battle = s.battles[land]
            flop = set(s.tables[land][FLOP]) if battle.stage == "assign" else {d[0] for d in battle.flop}
            pool = s.pools.get(0) or s.battles[land].hands[0]
            assert not flop & {d[0] for d in pool}


def test_2_3_a_single_table_needs_no_assignment():
    state, a, b = _duel()
    state, _ = finish_phase(state, orders({0: [b], 1: []}))
    state, _ = finish_phase(state, {1: {"type": "defend", "lands": [b]}})
    assert state.phase == TURN  # both pools of 2 went straight to the one table
    assert len(state.battles[b].hands[0]) == 2 and len(state.battles[b].hands[1]) == 2


# ---- 2.5 victory -----------------------------------------------------------------------------

def test_2_5_tables_to_win_ends_the_match():
    board = board_of(2)
    a, b = adjacent_pair(board)
    c = next(n for n in board.neighbours[b] if n != a)
    state = position(owner={a: 0, b: 1, c: 1}, options={"tables_to_win": 2})
    state, _ = finish_phase(state, orders({0: [b], 1: []}))
    state, events = finish_phase(state)  # undefended: b passes to seat 0
    assert state.phase == OVER and GAME.prompts(state) == []
    result = GAME.outcome(state)
    assert result.reason == "tables_to_win" and result.ranks == {0: 1, 1: 2}
    assert result.scores == {0: 2, 1: 1}
    # scores are counts of tables (decision 12): integers on the wire, in the event, the view and the outcome
    assert all(type(v) is int for v in result.scores.values())
    assert all(type(v) is int for v in events[-1].data["scores"].values())
    assert all(type(v) is int for v in GAME.view(state, 0)["outcome"]["scores"].values())
    assert events[-1].type == "match_over"


def _double_capture(mana):
    board = board_of(3)
    for x in range(board.size):
        for y in range(board.size):
            if y == x or y in board.neighbours[x]:
                continue
            for a in board.neighbours[x]:
                for c in board.neighbours[y]:
                    if len({x, y, a, c}) == 4 and a not in board.neighbours[y] and c not in board.neighbours[x]:
                        spare = next(ld for ld in range(board.size) if ld not in (x, y, a, c))
                        state = position(seats=3, owner={a: 0, c: 1, x: 2, y: 2, spare: 2}, mana=mana,
                                         options={"tables_to_win": 2})
                        state, _ = finish_phase(state, orders({0: [x], 1: [y], 2: []}))
                        state, _ = finish_phase(state)  # seat 2 defends nothing
                        return state
    raise AssertionError("no layout")


def test_2_5_several_reach_it_most_tables_then_mana_else_draw():
    richer = _double_capture([10, 12, 10])
    result = GAME.outcome(richer)
    assert result.reason == "tables_to_win"
    assert result.ranks == {1: 1, 0: 2, 2: 3}
    even = _double_capture([10, 10, 10])
    assert GAME.outcome(even).ranks == {0: 1, 1: 1, 2: 3}


def test_2_5_no_land_eliminated_last_standing_wins():
    state, a, b = _duel()
    state, _ = finish_phase(state, orders({0: [b], 1: []}))
    state, events = finish_phase(state)
    assert any(e.type == "eliminated" and e.data == {"seat": 1} for e in events)
    result = GAME.outcome(state)
    assert result.reason == "last_standing" and result.ranks == {0: 1, 1: 2}


def test_2_5_eliminated_seat_gets_no_prompts():
    board = board_of(3)
    x, a, c = fork(board)
    state = position(seats=3, owner={a: 0, x: 1, c: 2})
    state, _ = finish_phase(state, orders({0: [x], 1: [], 2: []}))
    state, _ = finish_phase(state)  # seat 1 does not defend its only land
    assert state.out_round[1] == 1 and GAME.outcome(state) is None
    assert {p.seat for p in GAME.prompts(state)} <= {0, 2}
    assert GAME.view(state, SPECTATOR)["seats"][1]["eliminated"] is True


def test_2_5_max_rounds_decides_on_tables_then_mana():
    state, a, b = _duel(options={"max_rounds": 1}, mana=[5, 7])
    state, _ = finish_phase(state)
    result = GAME.outcome(state)
    assert result.reason == "max_rounds" and result.ranks == {1: 1, 0: 2}
    state, a, b = _duel(options={"max_rounds": 1})
    state, _ = finish_phase(state)
    assert GAME.outcome(state).ranks == {0: 1, 1: 1}  # a draw


# ---- 2.6 income ------------------------------------------------------------------------------

def test_2_6_income_one_mana_per_table():
    board = board_of(2)
    a, b = adjacent_pair(board)
    c = next(n for n in board.neighbours[a] if n != b)
    state = position(owner={a: 0, c: 0, b: 1}, mana=[3, 3])
    state, events = finish_phase(state)
    income = next(e for e in events if e.type == "income")
    assert income.data == {"mana": [5, 4], "tables": [2, 1]}
    assert state.mana == [5, 4]
