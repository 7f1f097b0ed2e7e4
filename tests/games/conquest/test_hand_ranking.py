"""Hand ranking (conquest.md 3.6) through the adapter over the chosen library (phevaluator).

Each case of the issue is its own test. ``rank`` is lower-is-stronger."""
from __future__ import annotations

import random

import pytest

from app.games.conquest import poker


def rank(hand: str, board: str) -> int:
    """The rank of a 2-card hand on a 5-card board; refuses to build an impossible hand."""
    cards = poker.parse_cards(hand) + poker.parse_cards(board)
    assert len(cards) == 7 and len(set(cards)) == 7, f"not 7 distinct cards: {hand} / {board}"
    return poker.rank7(cards)


def test_3_6_wheel_is_five_high_straight():
    board = "3h 4s 5c 9d Kh"
    wheel = rank("Ac2d", board)
    assert poker.category(wheel) == "straight"
    assert wheel < rank("QcQd", board)  # beats a pair of queens
    assert rank("6c7c", board) < wheel  # loses to the seven-high straight


def test_3_6_steel_wheel_is_five_high_straight_flush():
    board = "2d 3d 4d 5d 9s"
    steel = rank("AdKc", board)
    assert poker.category(steel) == "straight_flush"
    assert steel < rank("6c7h", board)  # beats a straight
    assert rank("6d7h", board) < steel  # loses to the six-high straight flush


def test_3_6_no_wrap_around_straight():
    value = rank("7d8h", "Qc Kd Ah 2s 3c")
    assert poker.category(value) == "high_card"


def test_3_6_board_straight_played_and_tied():
    board = "4c 5d 6h 7s 8c"
    nine_high = rank("9d2c", board)
    ak, qj = rank("AhKd", board), rank("QsJh", board)
    assert nine_high < ak and nine_high < qj  # wins alone
    assert ak == qj  # without it, both play the board: a full tie


def test_3_6_two_pair_and_kicker_order():
    board = "9s 9d 5c 5h 4d"
    queens, king_kicker, queen_kicker = rank("QsQd", board), rank("Kc4s", board), rank("Qh2c", board)
    assert queens < king_kicker < queen_kicker


def test_3_6_suits_never_rank():
    board = "2c 7d 9h Js 3c"
    assert rank("AcKd", board) == rank("AhKs", board)


def test_3_6_agrees_with_pokerkit_on_random_hands():
    """A cross-check of the chosen library against pokerkit (another maintained evaluator)."""
    StandardHighHand = pytest.importorskip("pokerkit").StandardHighHand

    rng = random.Random(7)
    for _ in range(150):
        cards = rng.sample(range(52), 9)
        board = "".join(poker.card_name(c) for c in cards[:5])
        a = "".join(poker.card_name(c) for c in cards[5:7])
        b = "".join(poker.card_name(c) for c in cards[7:9])
        ours = (rank(a, board) > rank(b, board)) - (rank(a, board) < rank(b, board))  # 1: a weaker
        ha, hb = StandardHighHand.from_game(a, board), StandardHighHand.from_game(b, board)
        theirs = (ha < hb) - (ha > hb)
        assert ours == theirs, (a, b, board)


def test_card_names_round_trip():
    assert poker.parse_card("Ac") == 48 and poker.card_name(48) == "Ac"
    assert [poker.parse_card(poker.card_name(c)) for c in range(52)] == list(range(52))


@pytest.mark.parametrize("cards", [
    [51] * 7,                              # seven A-of-spades (the evaluator said: straight flush)
    [48, 48, 0, 1, 2, 3, 4],               # one card twice
    [0, 1, 2, 3, 4, 5, 52],                # not a card
    [-1, 1, 2, 3, 4, 5, 6],                # not a card
    [0, 1, 2, 3, 4, 5],                    # six cards
    [0, 1, 2, 3, 4, 5, 6, 7],              # eight cards
    [True, 2, 3, 4, 5, 6, 7],              # a bool is not a card
])
def test_item_8_rank7_rejects_duplicate_or_impossible_cards(cards):
    with pytest.raises(poker.InvalidHand):
        poker.rank7(cards)
    assert issubclass(poker.InvalidHand, ValueError)


def test_item_8_rank_cards_rejects_duplicates_too():
    with pytest.raises(poker.InvalidHand):
        poker.rank_cards([51, 51, 50, 49, 48])
    assert poker.category(poker.rank_cards([51, 47, 43, 39, 35])) == "straight_flush"


def test_item_8_the_test_helper_refuses_impossible_hands():
    with pytest.raises(AssertionError):
        rank("AhAh", "Ah Ah Ah Ah Ah")
    with pytest.raises(AssertionError):
        rank("AhKd", "Ah 2c 3d 4h 5s")
