"""One test (or a few) per clause of ``shared/rules/provinces.md``, named after the clause."""
from __future__ import annotations

import json

import pytest

from app.games.base import ADMIN, SPECTATOR, IllegalAction
from app.games.provinces import GAME, Options
from app.games.provinces.board import HEX_DIRECTIONS
from app.games.provinces.state import DECK_SIZE, IDENT, RANK, TOKEN, VALUE, card_wire, new_card

from .helpers import (
    CLUSTER,
    attack,
    build_position,
    end_turn,
    events_of,
    move,
    only,
    row,
    specs,
    tokens,
    values,
    wire_specs,
)


def board_cards(state) -> list:
    return [c for g in state.garrisons for c in g]


# ---------------------------------------------------------------------------------------------
# 1. Components


@pytest.mark.parametrize("seats", [2, 3, 4, 5, 6])
def test_1_1_shoe_has_ceil_half_decks(seats):
    state = GAME.setup(seats, None, b"shoe-%d" % seats)
    decks = (seats + 1) // 2
    idents = list(state.shoe) + [c[IDENT] for c in board_cards(state)] + list(state.discard)
    assert sorted(idents) == list(range(decks * DECK_SIZE))


def test_1_1_discard_reshuffled_into_empty_shoe():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["2"], ["3"]], shoe=[], discard=["K", "Q"])
    after, _ = end_turn(state)
    assert specs(after.garrisons[0])[0] == "2" and specs(after.garrisons[0])[1] in ("K", "Q")
    assert len(after.shoe) == 1 and after.discard == ()


def test_1_1_destroyed_cards_go_back_at_face_value_joker_as_joker():
    # A joker that won (now showing 7 at value 4) is destroyed: it goes to the discard as a joker,
    # and when dealt again it is a joker at no value with a fresh token.
    state = build_position(cells=row(3), owners=[0, 1, 2], garrisons=[["A"], ["joker=7:4"], ["2"]], shoe=[])
    old_token = state.garrisons[1][0][TOKEN]
    after, _ = attack(state, 0, 1)
    assert len(after.discard) == 1 and after.discard[0] % DECK_SIZE >= 52
    redealt, _ = end_turn(after)  # seat 0 now holds two provinces; the discard is dealt back
    dealt = [c for c in board_cards(redealt) if c[RANK] == "joker"]
    assert len(dealt) == 1 and dealt[0][VALUE] is None and dealt[0][TOKEN] != old_token


def test_1_2_values_jack_11_queen_12_king_13_ace_14():
    assert [new_card("t", i)[VALUE] for i in (9 * 4, 10 * 4, 11 * 4, 12 * 4)] == [11, 12, 13, 14]
    assert [new_card("t", i)[VALUE] for i in range(0, 36, 4)] == list(range(2, 11))
    assert new_card("t", 52)[VALUE] is None and new_card("t", 53)[RANK] == "joker"
    # The seed's example: a Jack that wins becomes a 10.
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["J", "2"], ["7", "2"]])
    after, _ = attack(state, 0, 1)
    assert specs(after.garrisons[1])[-1] == "J:10"


@pytest.mark.parametrize("seats", [2, 3, 4, 5, 6])
def test_1_3_map_connected_hex_six_per_player_two_cards_no_joker(seats):
    state = GAME.setup(seats, None, b"map-%d" % seats)
    board = state.board
    assert board.size == 6 * seats and board.connected()
    index = {cell: p for p, cell in enumerate(board.coords)}
    for p, (q, r) in enumerate(board.coords):
        expected = sorted(index[(q + dq, r + dr)] for dq, dr in HEX_DIRECTIONS if (q + dq, r + dr) in index)
        assert list(board.adjacent[p]) == expected
    for seat in range(seats):
        assert len(state.provinces_of(seat)) == 6
    for garrison in state.garrisons:
        assert len(garrison) == 2 and all(c[VALUE] is not None for c in garrison)


def test_1_3_map_deterministic_from_seed():
    a = GAME.setup(4, None, b"same")
    b = GAME.setup(4, None, b"same")
    c = GAME.setup(4, None, b"other")
    assert a.fingerprint() == b.fingerprint()
    assert (a.board.coords, a.owners) != (c.board.coords, c.owners)


def test_1_3_starting_jokers_are_shuffled_back():
    # Over many seeds at least one shoe had a joker on top at some point; none ever reaches a start.
    for n in range(30):
        state = GAME.setup(6, None, b"jokers-%d" % n)
        assert not any(c[VALUE] is None for c in board_cards(state))
        jokers = sum(1 for i in state.shoe if i % DECK_SIZE >= 52)
        assert jokers == 6  # three decks, every joker still in the shoe


def test_1_4_garrison_at_most_seven():
    state = build_position(cells=row(2), owners=[0, 0, ], garrisons=[["2", "3"], ["4"] * 6], seats=1)
    with pytest.raises(IllegalAction) as err:
        move(state, 0, 1)
    assert err.value.code == "garrison_full"
    ok, _ = move(state, 0, 1, tokens(state, 0)[:1])
    assert len(ok.garrisons[1]) == 7


def test_1_4_province_may_be_empty_after_whole_garrison_attacked():
    state = build_position(cells=row(3), owners=[0, 0, 1], garrisons=[[], ["2"], ["K", "K"]])
    after, _ = attack(state, 1, 2)
    assert after.owners[1] == 0 and after.garrisons[1] == ()


def test_1_5_age_is_turn_of_taking_oldest_first():
    state = build_position(
        cells=row(4), owners=[0, 0, 1, 1], garrisons=[["2"], ["A"], ["2"], ["3"]], turn=7, ages=[3, 0, 0, 0],
        dealing=["most_unevenly", "evenly"], shoe=["5"] * 10,
    )
    after, _ = attack(state, 1, 2)
    assert after.ages[2] == 7 and after.owners[2] == 0
    # most_unevenly fills the oldest first: province 1 (age 0), then 0 (age 3), then 2 (age 7).
    dealt, _ = end_turn(after)
    assert specs(dealt.garrisons[1]) == ["5", "5", "5"]  # it was empty after the attack
    assert specs(dealt.garrisons[0]) == ["2"]
    assert specs(dealt.garrisons[2]) == ["A:13"]


# ---------------------------------------------------------------------------------------------
# 2. Turns


def test_2_1_turns_follow_the_shuffled_seat_order():
    state = GAME.setup(4, None, b"order")
    order = state.seat_order
    assert sorted(order) == [0, 1, 2, 3]
    seen = []
    for _ in range(8):
        seen.append(state.current)
        others = [s for s in range(4) if s != state.current]
        with pytest.raises(IllegalAction) as err:
            GAME.apply(state, others[0], {"type": "end_turn"})
        assert err.value.code == "not_your_turn"
        state, _ = end_turn(state)
    assert seen == list(order) * 2
    assert state.round == 3


def test_2_1_actions_in_any_order_and_repeatedly():
    state = build_position(cells=CLUSTER, owners=[0, 1, 1, 1, 0],
                           garrisons=[["A", "K"], ["2"], ["2"], ["2"], ["3", "4"]])
    state, _ = GAME.apply(state, 0, {"type": "set_dealing", "mode": "randomly"})
    state, _ = GAME.apply(state, 0, {"type": "sort", "province": 0, "order": tokens(state, 0)[::-1]})
    state, _ = GAME.apply(state, 0, {"type": "sort", "province": 0, "order": tokens(state, 0)[::-1]})
    state, _ = attack(state, 0, 1, tokens(state, 0)[:1])
    state, _ = GAME.apply(state, 0, {"type": "set_dealing", "mode": "evenly"})
    state, _ = attack(state, 4, 2)
    assert state.owners == (0, 0, 0, 1, 0) and state.current == 0


def test_2_2_turn_prompt_deadline_and_default_end_turn():
    state = GAME.setup(3, Options(turn_seconds=42), b"deadline")
    [prompt] = GAME.prompts(state)
    assert (prompt.seat, prompt.kind, prompt.deadline_seconds) == (state.current, "turn", 42.0)
    assert dict(prompt.default_action) == {"type": "end_turn"} and not prompt.simultaneous
    after, events = GAME.apply(state, prompt.seat, dict(prompt.default_action))
    assert after.current != state.current
    [next_prompt] = GAME.prompts(after)
    assert next_prompt.phase_id == prompt.phase_id + 1
    assert [e.type for e in events if e.audience is None][-1] == "turn_started"
    # Within a turn the phase does not change.
    mid, _ = GAME.apply(after, after.current, {"type": "set_dealing", "mode": "randomly"})
    assert GAME.prompts(mid)[0].phase_id == next_prompt.phase_id


def test_2_3_reinforcement_one_card_per_province_at_end_of_turn():
    state = build_position(cells=row(4), owners=[0, 0, 0, 1], garrisons=[["2"], [], ["3"], ["4"]],
                           shoe=["5", "6", "7", "8"])
    after, events = end_turn(state)
    assert sum(len(g) for g in after.garrisons[:3]) == 2 + 3
    assert after.garrisons[3] == state.garrisons[3]
    data = only(events, "reinforced")
    assert data["seat"] == 0 and len(data["cards"]) == 3 and data["discarded"] == 0


def test_2_3_empty_shoe_and_discard_deal_what_is_left():
    state = build_position(cells=row(4), owners=[0, 0, 0, 1], garrisons=[["2"], [], ["3"], ["4"]], shoe=["9"])
    after, events = end_turn(state)
    assert sum(len(g) for g in after.garrisons[:3]) == 3
    assert after.shoe == () and after.discard == ()
    assert len(only(events, "reinforced")["cards"]) == 1


def test_2_4_eliminated_and_last_player_wins():
    state = build_position(cells=row(3), owners=[0, 1, 2], garrisons=[["A", "A"], ["2"], ["2"]], seat_order=[0, 1, 2])
    after, events = attack(state, 0, 1)
    assert after.eliminated == (1,) and only(events, "eliminated") == {"seat": 1}
    assert GAME.outcome(after) is None
    after, _ = end_turn(after)
    assert after.current == 2  # the eliminated seat is skipped
    after, _ = end_turn(after)
    assert after.current == 0
    after, events = attack(after, 1, 2)
    outcome = GAME.outcome(after)
    assert outcome.ranks == {0: 1, 2: 2, 1: 3} and outcome.reason == "last_standing"
    assert GAME.prompts(after) == [] and only(events, "match_over")["reason"] == "last_standing"
    with pytest.raises(IllegalAction) as err:
        GAME.apply(after, 0, {"type": "end_turn"})
    assert err.value.code == "match_over"


def test_2_4_max_rounds_most_provinces_then_cards_then_draw():
    opts = Options(max_rounds=1)
    # Seat 1 holds more provinces: it wins.
    state = build_position(cells=row(3), owners=[0, 1, 1], garrisons=[["A"] * 7, ["2"], ["2"]], options=opts,
                           shoe=["3"] * 20)
    state, _ = end_turn(state)
    state, events = end_turn(state)
    outcome = GAME.outcome(state)
    assert outcome.reason == "max_rounds" and outcome.ranks == {1: 1, 0: 2}
    assert only(events, "match_over")["ranks"] == {"1": 1, "0": 2}
    # Equal provinces: most cards on the board (hidden jokers count).
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["2", "joker"], ["K"]], options=opts, shoe=[])
    state, _ = end_turn(state)
    state, _ = end_turn(state)
    assert GAME.outcome(state).ranks == {0: 1, 1: 2}
    # Equal provinces and cards: a draw.
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["2"], ["K"]], options=opts, shoe=[])
    state, _ = end_turn(state)
    state, _ = end_turn(state)
    assert GAME.outcome(state).ranks == {0: 1, 1: 1}


# ---------------------------------------------------------------------------------------------
# 3. Battle


def test_3_1_attack_only_adjacent_other_player():
    state = build_position(cells=row(4), owners=[0, 0, 1, 1], garrisons=[["A"], ["A"], ["2"], ["2"]])
    for src, dst, code in [(0, 2, "not_adjacent"), (0, 1, "own_province"), (2, 3, "not_your_province"),
                           (1, 9, "unknown_province")]:
        with pytest.raises(IllegalAction) as err:
            attack(state, src, dst, ["x"] if src == 2 else None)
        assert err.value.code == code


def test_3_1_chosen_cards_keep_relative_order_and_one_attack_per_province():
    state = build_position(cells=row(3), owners=[0, 1, 1],
                           garrisons=[["2", "K", "3", "A"], ["A", "5", "5", "5"], ["2"]])
    t = tokens(state, 0)
    after, events = attack(state, 0, 1, [t[3], t[1]])  # named out of order
    battle = only(events, "battle")
    assert wire_specs(battle["attacking"]) == ["K", "A"]
    assert battle["result"] == "repelled" and wire_specs(battle["returned"]) == ["A"]
    assert specs(after.garrisons[0]) == ["A", "2", "3"]
    with pytest.raises(IllegalAction) as err:
        attack(after, 0, 1, [t[0]])
    assert err.value.code == "already_attacked"
    with pytest.raises(IllegalAction) as err:
        attack(state, 0, 1, [])
    assert err.value.code == "no_cards"


def test_3_2_duel_smaller_destroyed_winner_loses_point_to_bottom():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["9", "2", "2"], ["6", "A", "A", "A"]])
    after, events = attack(state, 0, 1)
    first = only(events, "battle")["duels"][0]
    assert first["winner"] == "attacker" and first["card"]["value"] == 8
    assert values(first["attacker_stack"]) == [2, 2, 8] and values(first["defender_stack"]) == [14, 14, 14]
    assert after.discard[0] == state.garrisons[1][0][IDENT]


def test_3_3_tie_both_destroyed_by_default():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["7", "A", "A"], ["7", "2", "2"]])
    _, events = attack(state, 0, 1)
    duel = only(events, "battle")["duels"][0]
    assert duel["winner"] == "none" and duel["card"] is None
    assert values(duel["attacker_stack"]) == [14, 14] and values(duel["defender_stack"]) == [2, 2]


def test_3_3_tie_defender_wins_variant_and_joker_pair_always_both_destroyed():
    opts = Options(tie_rule="defender_wins")
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["7", "A", "A"], ["7", "2", "2"]], options=opts)
    _, events = attack(state, 0, 1)
    duel = only(events, "battle")["duels"][0]
    assert duel["winner"] == "defender" and duel["card"]["value"] == 6
    assert values(duel["defender_stack"]) == [2, 2, 6]
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["joker", "A", "A"], ["joker", "2", "2"]],
                           options=opts)
    _, events = attack(state, 0, 1)
    duel = only(events, "battle")["duels"][0]
    assert duel["winner"] == "none" and duel["attacker"]["rank"] == duel["defender"]["rank"] == "joker"


def test_3_4_joker_beats_any_card_turns_into_it_without_losing_a_point():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["joker", "2", "2"], ["K:9", "A", "A", "A"]])
    joker = state.garrisons[0][0][TOKEN]
    after, events = attack(state, 0, 1)
    duel = only(events, "battle")["duels"][0]
    assert duel["attacker"] == {"id": joker, "rank": "joker", "suit": None, "value": None}
    assert duel["winner"] == "attacker"
    assert duel["card"]["id"] == joker and duel["card"]["rank"] == "K" and duel["card"]["value"] == 9
    assert duel["attacker_stack"][-1]["id"] == joker
    # From its win on the card is public, even where it ends up.
    for viewer in (1, SPECTATOR):
        assert joker in json.dumps(GAME.view(after, viewer))
        assert joker not in GAME.hidden_tokens(after, viewer)
    # A defending joker beats the attacker's card too.
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["A"], ["joker", "2"]])
    _, events = attack(state, 0, 1)
    duel = only(events, "battle")["duels"][0]
    assert duel["winner"] == "defender" and duel["card"]["rank"] == "A" and duel["card"]["value"] == 14


def test_3_5_rout_when_half_lost():
    # Attacker of 4 loses 2 in a row: routed (2 × 2 ≥ 4) though the defender is intact.
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["2", "2", "A", "A"], ["K", "K", "K", "K", "K"]])
    after, events = attack(state, 0, 1)
    battle = only(events, "battle")
    assert len(battle["duels"]) == 2 and battle["routed"] == ["attacker"] and battle["result"] == "repelled"
    assert after.owners[1] == 1
    # Odd sizes: a defender of 3 is routed after losing 2 (2 × 2 ≥ 3), not after 1.
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["A"] * 7, ["2", "2", "2"]])
    _, events = attack(state, 0, 1)
    battle = only(events, "battle")
    assert len(battle["duels"]) == 2 and battle["routed"] == ["defender"] and battle["result"] == "conquered"


def test_3_5_both_routed_in_same_duel_attack_fails():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["7", "A"], ["7", "A"]])
    after, events = attack(state, 0, 1)
    battle = only(events, "battle")
    assert battle["routed"] == ["attacker", "defender"] and battle["result"] == "repelled"
    assert after.owners[1] == 1
    assert specs(after.garrisons[0]) == ["A"] and specs(after.garrisons[1]) == ["A"]


def test_3_6_conquest_survivors_move_in_defender_retreats_to_most_room():
    # Province 1 falls; its survivors retreat to 3 (room 7) rather than 2 (room 4).
    state = build_position(
        cells=CLUSTER, owners=[0, 1, 1, 1, 0],
        garrisons=[["A", "A", "A"], ["2", "K", "K", "K"], ["3", "3", "3"], [], ["2"]],
    )
    after, events = attack(state, 0, 1)
    assert after.owners[1] == 0
    assert specs(after.garrisons[1]) == ["A", "A:13", "A:13"]
    assert specs(after.garrisons[3]) == ["K", "K"] and specs(after.garrisons[2]) == ["3", "3", "3"]
    retreat = only(events, "battle")["retreat"]
    assert retreat["to"] == 3 and wire_specs(retreat["cards"]) == ["K", "K"] and retreat["destroyed"] == []


def test_3_6_retreat_ties_lowest_id_overflow_destroyed_no_neighbour_all_destroyed():
    state = build_position(
        cells=CLUSTER, owners=[0, 1, 1, 1, 0],
        garrisons=[["A"] * 7, ["2", "2", "Q", "J", "10", "9", "8"], ["3"] * 5, ["4"] * 5, []],
    )
    after, events = attack(state, 0, 1)
    retreat = only(events, "battle")["retreat"]
    assert retreat["to"] == 2  # rooms 2 and 2: lowest id
    assert wire_specs(retreat["cards"]) == ["10", "9"] and wire_specs(retreat["destroyed"]) == ["8"]
    assert specs(after.garrisons[2]) == ["3"] * 5 + ["10", "9"]
    assert len(after.discard) == 4 + 1
    # No adjacent province of the defender: its survivors are destroyed.
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["A"] * 4, ["2", "2", "K"]])
    after, events = attack(state, 0, 1)
    retreat = only(events, "battle")["retreat"]
    assert retreat["to"] is None and wire_specs(retreat["destroyed"]) == ["K"]
    assert after.eliminated == (1,)


def test_3_7_attacker_routed_returns_on_top_of_those_that_stayed():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["5", "2", "A", "3"], ["K", "K", "K"]])
    t = tokens(state, 0)
    after, events = attack(state, 0, 1, [t[0], t[2]])  # 5 and A attack; 2 and 3 stay
    battle = only(events, "battle")
    assert battle["result"] == "repelled" and wire_specs(battle["returned"]) == ["A"]
    assert specs(after.garrisons[0]) == ["A", "2", "3"]
    assert specs(after.garrisons[1]) == ["K", "K", "K:12"]


def test_3_7_empty_province_taken_without_duel_and_empty_stays_owner():
    state = build_position(cells=row(3), owners=[0, 1, 1], garrisons=[["2"], [], ["A"]])
    after, events = attack(state, 0, 1)
    battle = only(events, "battle")
    assert battle["duels"] == [] and battle["result"] == "conquered" and battle["retreat"] is None
    assert battle["routed"] == []
    assert after.owners == (0, 0, 1) and after.garrisons[0] == () and specs(after.garrisons[1]) == ["2"]


def test_3_8_golden_example():
    state = build_position(
        cells=CLUSTER, owners=[0, 1, 1, 1, 0],
        garrisons=[["J", "9", "2"], ["7", "6", "5", "6", "7"], ["3", "3", "3"], [], []],
    )
    after, events = attack(state, 0, 1)
    battle = only(events, "battle")
    assert values(battle["attacking"]) == [11, 9, 2] and values(battle["defending"]) == [7, 6, 5, 6, 7]
    trace = [(values(d["attacker_stack"]), values(d["defender_stack"])) for d in battle["duels"]]
    assert trace == [
        ([9, 2, 10], [6, 5, 6, 7]),
        ([2, 10, 8], [5, 6, 7]),
        ([10, 8], [6, 7, 4]),
        ([8, 9], [7, 4]),
    ]
    assert [d["winner"] for d in battle["duels"]] == ["attacker", "attacker", "defender", "attacker"]
    assert battle["routed"] == ["defender"] and battle["result"] == "conquered"
    assert after.owners[1] == 0 and specs(after.garrisons[1]) == ["9:8", "J:9"]
    assert battle["retreat"]["to"] == 3 and values(battle["retreat"]["cards"]) == [7, 4]
    assert specs(after.garrisons[3]) == ["7", "5:4"]
    assert after.garrisons[0] == ()


# ---------------------------------------------------------------------------------------------
# 4. Moves and sorting


def test_4_1_sort_only_frontline_any_number_of_times():
    state = build_position(cells=row(3), owners=[0, 0, 1], garrisons=[["2", "3"], ["4", "5", "6"], ["7"]])
    with pytest.raises(IllegalAction) as err:
        GAME.apply(state, 0, {"type": "sort", "province": 0, "order": tokens(state, 0)[::-1]})
    assert err.value.code == "not_frontline"
    t = tokens(state, 1)
    for order in ([t[2], t[0], t[1]], [t[1], t[2], t[0]], t):
        state, _ = GAME.apply(state, 0, {"type": "sort", "province": 1, "order": order})
        assert tokens(state, 1) == order
    for bad in ([t[0], t[1]], [t[0], t[0], t[1]], [t[0], t[1], "nope"], t + [t[0]]):
        with pytest.raises(IllegalAction) as err:
            GAME.apply(state, 0, {"type": "sort", "province": 1, "order": bad})
        assert err.value.code == "bad_order"
    with pytest.raises(IllegalAction) as err:
        GAME.apply(state, 0, {"type": "sort", "province": 2, "order": tokens(state, 2)})
    assert err.value.code == "not_your_province"


def test_4_2_move_to_adjacent_own_province_at_bottom_in_order():
    state = build_position(cells=row(4), owners=[0, 0, 0, 1], garrisons=[["2", "3", "4", "5"], ["9"], [], ["7"]])
    t = tokens(state, 0)
    after, events = move(state, 0, 1, [t[3], t[1]])
    assert specs(after.garrisons[1]) == ["9", "3", "5"] and specs(after.garrisons[0]) == ["2", "4"]
    assert wire_specs(only(events, "moved")["cards"]) == ["3", "5"]
    for dst, code in [(2, "not_adjacent"), (0, "not_adjacent")]:
        with pytest.raises(IllegalAction) as err:
            move(state, 0, dst, t[:1])
        assert err.value.code == code
    with pytest.raises(IllegalAction) as err:
        move(state, 2, 3, [])
    assert err.value.code == "not_your_province"


def test_4_3_province_that_received_cards_cannot_attack_or_move_out():
    state = build_position(cells=row(4), owners=[0, 0, 1, 1], garrisons=[["A"], ["A"], [], ["2"]])
    moved, _ = move(state, 0, 1)
    for action in (lambda s: attack(s, 1, 2), lambda s: move(s, 1, 0)):
        with pytest.raises(IllegalAction) as err:
            action(moved)
        assert err.value.code == "received_this_turn"
    # Conquest counts too.
    conquered, _ = attack(state, 1, 2)
    with pytest.raises(IllegalAction) as err:
        attack(conquered, 2, 3)
    assert err.value.code == "received_this_turn"
    # A new turn clears it.
    state2, _ = end_turn(moved)
    state2, _ = end_turn(state2)
    attack(state2, 1, 2)


# ---------------------------------------------------------------------------------------------
# 5. Dealing modes


def dealt(mode: str, garrisons, ages=None, shoe=None):
    n = len(garrisons)
    state = build_position(
        cells=row(n + 1), owners=[0] * n + [1], garrisons=list(garrisons) + [["2"]],
        dealing=[mode, "evenly"], ages=ages, shoe=shoe if shoe is not None else ["A"] * 20,
    )
    return state, *end_turn(state)


def test_5_1_evenly_one_each_in_age_order_skipping_full():
    # 4 provinces -> 4 cards; province 1 is full; ages make 3 the oldest.
    state, after, _ = dealt("evenly", [["2"], ["3"] * 7, [], ["4"]], ages=[2, 0, 1, 0])
    # order 1(full), 3, 2, 0 -> cards to 3, 2, 0, then round two: 3
    assert [len(g) for g in after.garrisons[:4]] == [2, 7, 1, 3]


def test_5_2_randomly_each_card_to_a_random_non_full_province():
    counts = [0, 0, 0]
    for n in range(40):
        state = build_position(
            cells=row(4), owners=[0, 0, 0, 1], garrisons=[["2"], ["3"] * 7, [], ["4"]],
            dealing=["randomly", "evenly"], shoe=["A"] * 10, seed=b"rand-%d" % n,
        )
        after, _ = end_turn(state)
        assert len(after.garrisons[1]) == 7
        assert len(after.garrisons[0]) - 1 + len(after.garrisons[2]) == 3
        counts[0] += len(after.garrisons[0]) - 1
        counts[2] += len(after.garrisons[2])
    assert counts[0] > 20 and counts[2] > 20


def test_5_3_most_unevenly_fills_oldest_to_seven_then_next():
    state, after, _ = dealt("most_unevenly", [["2"] * 5, [], ["3"], ["4"] * 6], ages=[1, 2, 0, 0])
    # age order: 2, 3, 0, 1 -> 2 gets 4 (to... it has 1 -> room 6): all 4 cards to province 2.
    assert [len(g) for g in after.garrisons[:4]] == [5, 0, 5, 6]
    state, after, _ = dealt("most_unevenly", [["2"] * 5, [], ["3"] * 6, ["4"] * 6], ages=[1, 2, 0, 0])
    assert [len(g) for g in after.garrisons[:4]] == [7, 0, 7, 7]


def test_5_4_new_cards_at_bottom_and_no_room_discarded():
    state, after, events = dealt("evenly", [["2"] * 7, ["3"] * 6], shoe=["K", "Q"])
    assert specs(after.garrisons[1]) == ["3"] * 6 + ["K"]
    assert only(events, "reinforced")["discarded"] == 1 and len(after.discard) == 1


def test_5_mode_changes_only_on_own_turn_and_is_private():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["2"], ["3"]])
    with pytest.raises(IllegalAction) as err:
        GAME.apply(state, 1, {"type": "set_dealing", "mode": "randomly"})
    assert err.value.code == "not_your_turn"
    with pytest.raises(IllegalAction) as err:
        GAME.apply(state, 0, {"type": "set_dealing", "mode": "sideways"})
    assert err.value.code == "unknown_mode"
    after, events = GAME.apply(state, 0, {"type": "set_dealing", "mode": "randomly"})
    assert [e.audience for e in events] == [frozenset({0})]
    assert GAME.view(after, 0)["dealing_mode"] == "randomly"
    assert "randomly" not in json.dumps(GAME.view(after, 1))
    assert "randomly" not in json.dumps(GAME.view(after, SPECTATOR))
    assert GAME.view(after, ADMIN)["dealing_modes"] == ["randomly", "evenly"]


# ---------------------------------------------------------------------------------------------
# 6. What each player sees


def test_6_1_jokers_hidden_from_others_seen_by_owner():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["2", "joker", "3"], ["joker"]])
    joker0 = state.garrisons[0][1][TOKEN]
    joker1 = state.garrisons[1][0][TOKEN]
    own = GAME.view(state, 0)["provinces"]
    assert wire_specs(own[0]["garrison"]) == ["2", "joker", "3"] and own[0]["size"] == 3
    assert own[1]["garrison"] == [] and own[1]["size"] == 0
    other = GAME.view(state, 1)["provinces"]
    assert wire_specs(other[0]["garrison"]) == ["2", "3"] and other[0]["size"] == 2
    assert GAME.view(state, 1)["seats"][0]["cards"] == 2
    spectator = json.dumps(GAME.view(state, SPECTATOR))
    assert joker0 not in spectator and joker1 not in spectator
    admin = GAME.view(state, ADMIN)["provinces"]
    assert admin[0]["garrison"][1] == {"id": joker0, "rank": "joker", "suit": None, "value": None, "hidden": True}
    assert GAME.hidden_tokens(state, 1) == {joker0} and GAME.hidden_tokens(state, SPECTATOR) == {joker0, joker1}
    assert GAME.hidden_tokens(state, ADMIN) == set()


def test_6_2_events_never_show_unrevealed_jokers_to_others():
    # Move, sort, return after a failed attack, retreat and destruction for lack of room.
    state = build_position(
        cells=CLUSTER, owners=[0, 1, 1, 1, 0],
        garrisons=[["A", "joker", "joker", "A", "joker", "A"], ["2", "2", "joker", "K"], ["3"] * 7, ["3"] * 7, ["2"]],
    )
    jokers = {c[TOKEN] for g in state.garrisons for c in g if c[VALUE] is None}
    t = tokens(state, 0)
    after, events = GAME.apply(state, 0, {"type": "sort", "province": 0, "order": [t[3], t[0], t[2], t[1], t[4], t[5]]})
    public = only(events, "sorted", 1)
    assert public["order"] == [t[3], t[0], t[5]] and not jokers & set(public["order"])
    assert len(only(events, "sorted", 0)["order"]) == 6
    # A move of a lone joker sends nothing to the others.
    t = tokens(state, 0)
    moved, events = move(state, 0, 4, [t[2]])
    assert events_of(events, "moved", 1) == [] and events_of(events, "moved", SPECTATOR) == []
    assert len(only(events, "moved", 0)["cards"]) == 1
    # Attack with A, A, joker, A: the defender is routed after 2 duels; the attacker's joker moves
    # in undrawn; the defender's joker and K find no room to retreat and are destroyed undrawn.
    t = tokens(state, 0)
    defender_joker = state.garrisons[1][2][TOKEN]
    after, events = attack(state, 0, 1, [t[0], t[3], t[5], t[4]])
    assert after.garrisons[1][0][TOKEN] == t[4] and len(after.garrisons[1]) == 4
    assert after.discard[-2] % DECK_SIZE >= 52
    for viewer in (1, SPECTATOR):
        text = json.dumps([e.to_wire() for e in events if e.visible_to(viewer)])
        assert t[4] not in text
    battle_public = only(events, "battle", SPECTATOR)
    assert len(battle_public["attacking"]) == 3
    battle_defender = only(events, "battle", 1)
    battle_attacker = only(events, "battle", 0)
    assert len(battle_attacker["attacking"]) == 4 and len(battle_defender["attacking"]) == 3
    assert defender_joker not in json.dumps(battle_public["retreat"])
    assert wire_specs(battle_defender["retreat"]["destroyed"]) == ["joker", "K"]
    assert wire_specs(battle_public["retreat"]["destroyed"]) == ["K"]
    assert defender_joker in json.dumps(battle_defender) and defender_joker not in json.dumps(battle_public)
    assert defender_joker not in json.dumps(battle_attacker)


def test_6_2_moving_or_sorting_hidden_jokers_leaves_no_trace_for_others():
    state = build_position(
        cells=CLUSTER, owners=[0, 1, 1, 1, 0],
        garrisons=[["A", "joker"], ["2"], ["3"], ["4"], ["joker", "joker", "5"]],
    )
    t = tokens(state, 0)
    moved, events = move(state, 0, 4, [t[1]])
    t4 = tokens(moved, 4)  # joker, joker, 5, the moved joker
    resorted, events2 = GAME.apply(moved, 0, {"type": "sort", "province": 4, "order": [t4[3], t4[1], t4[2], t4[0]]})
    for viewer in (1, SPECTATOR):
        before = GAME.view(state, viewer)
        assert GAME.view(moved, viewer) == before and GAME.view(resorted, viewer) == before
        assert not [e for e in events if e.visible_to(viewer)]
        assert not [e for e in events2 if e.visible_to(viewer)]  # 6.4: the visible order did not change
    own_events = [e.data for e in events2 if e.visible_to(0)]
    assert own_events == [{"seat": 0, "province": 4, "order": [t4[3], t4[1], t4[2], t4[0]]}]
    own = GAME.view(moved, 0)
    assert own["provinces"][4]["received"] is True and own["actions_this_turn"] == 1
    assert GAME.view(moved, 1)["provinces"][4]["received"] is None


def test_6_2_reinforcement_to_others_lists_only_non_jokers():
    state = build_position(cells=row(3), owners=[0, 0, 1], garrisons=[["2"] * 7, ["2"] * 6, ["3"]], shoe=["joker", "5"])
    after, events = end_turn(state)
    own = only(events, "reinforced", 0)
    other = only(events, "reinforced", 1)
    spectator = only(events, "reinforced", SPECTATOR)
    assert wire_specs([c["card"] for c in own["cards"]]) == ["joker"] and own["discarded"] == 1
    assert other == spectator == {"seat": 0, "cards": [], "discarded": 1}
    # The joker dealt into province 1 is invisible to the others; the discarded 5 counts.
    state = build_position(cells=row(3), owners=[0, 0, 1], garrisons=[["2"] * 7, ["2"] * 6, ["3"]], shoe=["5", "joker"])
    after, events = end_turn(state)
    assert only(events, "reinforced", 1) == {
        "seat": 0, "cards": [{"province": 1, "card": card_wire(after.garrisons[1][-1])}], "discarded": 0,
    }


def test_6_2_views_hide_shoe_discard_and_other_modes():
    state = GAME.setup(2, None, b"hide")
    for viewer in (0, 1, SPECTATOR):
        view = GAME.view(state, viewer)
        assert "shoe" not in view and "discard" not in view and "dealing_modes" not in view
    assert GAME.view(state, SPECTATOR)["dealing_mode"] is None
    assert len(GAME.view(state, ADMIN)["shoe"]) == len(state.shoe)


def test_6_3_tokens_opaque_same_shape_and_fresh_on_every_deal():
    state = build_position(cells=row(2), owners=[0, 1], garrisons=[["A"], ["2"]], shoe=["joker", "5", "7"])
    after, _ = end_turn(state)
    after, _ = end_turn(after)
    all_tokens = [c[TOKEN] for g in after.garrisons for c in g]
    assert len(set(all_tokens)) == len(all_tokens)
    assert {len(t) for t in all_tokens} == {12}
    assert all(set(t) <= set("abcdefghijklmnopqrstuvwxyz234567") for t in all_tokens)
    setup = GAME.setup(6, None, b"tokens")
    many = [c[TOKEN] for g in setup.garrisons for c in g]
    assert len(set(many)) == len(many) == 72


def test_6_4_a_sort_that_keeps_the_visible_order_is_private_whatever_jokers_it_moved():
    """provinces.md 6.4 (the issue's case): seat 1 sorts ``[5, joker, 6]`` to ``[joker, 5, 6]``; the
    others see ``[5, 6]`` before and after, so they get nothing, and two different such sorts (or
    none) look the same to them; a sort that changes the visible order shows them only that order."""
    state = build_position(cells=row(3), owners=[0, 1, 1], garrisons=[["2"], ["5", "joker", "6"], ["3"]], current=1)
    five, joker, six = tokens(state, 1)
    for order in ([joker, five, six], [five, six, joker], [five, joker, six]):
        after, events = GAME.apply(state, 1, {"type": "sort", "province": 1, "order": order})
        for viewer in (0, SPECTATOR):
            assert [e for e in events if e.visible_to(viewer)] == [], (order, viewer)
            assert GAME.view(after, viewer) == GAME.view(state, viewer)
        assert [e.data for e in events if e.visible_to(1)] == [{"seat": 1, "province": 1, "order": order}]
    after, events = GAME.apply(state, 1, {"type": "sort", "province": 1, "order": [six, joker, five]})
    for viewer in (0, SPECTATOR):
        assert [e.data for e in events if e.visible_to(viewer)] == [{"seat": 1, "province": 1, "order": [six, five]}]
    # without a joker too: a sort to the same order tells the others nothing
    plain = build_position(cells=row(2), owners=[0, 1], garrisons=[["2"], ["5", "6"]], current=1)
    _, events = GAME.apply(plain, 1, {"type": "sort", "province": 1, "order": tokens(plain, 1)})
    assert [e.audience for e in events] == [frozenset({1})]
