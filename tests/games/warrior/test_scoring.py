"""warrior.md section 6: scoring after round 3."""
from __future__ import annotations

from app.games.base import SPECTATOR
from app.games.warrior import GAME
from app.games.warrior.positions import position
from app.games.warrior.state import KEEP, OVER


def _final(**kw):
    s, events = position(round=3, **kw)
    assert s.phase == OVER
    return s, events


def test_6_1_two_points_per_card_in_a_victory_pile():
    s, _ = _final(seats=2, victory={0: 3, 1: 1})
    out = GAME.outcome(s)
    assert out.scores == {0: 6, 1: 2}
    assert out.ranks == {0: 1, 1: 2}


def test_6_2_race_majorities_with_their_points():
    s, events = _final(seats=3, nations={0: {"elves": "III", "undead": "I"}, 1: {"elves": "II", "goblins": "I"},
                                         2: {"barbarians": "I"}})
    out = GAME.outcome(s)
    assert out.scores == {0: 8 + 5, 1: 10, 2: 11}
    over = next(e for e in events if e.type == "match_over").data
    elves = next(m for m in over["majorities"] if m["race"] == "elves")
    assert elves == {"race": "elves", "creatures": 3, "seats": [0], "points": 8}


def test_6_2_tied_majorities_all_get_the_full_points_and_one_creature_is_needed():
    s, events = _final(seats=3, nations={0: {"trolls": "II"}, 1: {"trolls": "IA"}, 2: {"dwarves": "I"}})
    out = GAME.outcome(s)
    assert out.scores == {0: 7, 1: 7, 2: 6}
    over = next(e for e in events if e.type == "match_over").data
    assert next(m for m in over["majorities"] if m["race"] == "goblins")["seats"] == []


def test_6_3_most_points_wins_ties_to_the_larger_victory_pile_then_a_draw():
    # seat 0: undead 5 + 2 cards (4) = 9 ... seat 1: 4 cards (8) + ... build equal points, different piles
    s, _ = _final(seats=3, nations={0: {"elves": "I"}, 2: {"undead": "I"}}, victory={0: 0, 1: 4, 2: 2})
    out = GAME.outcome(s)
    # seat 0: 8; seat 1: 8 (4 cards); seat 2: 5 + 4 = 9
    assert out.scores == {0: 8, 1: 8, 2: 9}
    assert out.ranks == {2: 1, 1: 2, 0: 3}
    s, _ = _final(seats=2, nations={0: {"elves": "I"}, 1: {"trolls": "I"}}, victory={0: 1, 1: 1})
    out = GAME.outcome(s)
    assert out.scores == {0: 10, 1: 9}
    s, _ = _final(seats=2, nations={0: {"elves": "I"}, 1: {"elves": "I"}}, victory={0: 1, 1: 1})
    out = GAME.outcome(s)
    assert out.ranks == {0: 1, 1: 1}  # a draw
    assert GAME.prompts(s) == []
    v = GAME.view(s, SPECTATOR)
    assert v["outcome"]["ranks"] == {"0": 1, "1": 1} and v["scores"] == [10, 10]


def test_6_outcome_is_none_while_playing():
    s = GAME.setup(2, None, b"s" * 32)
    assert GAME.outcome(s) is None and s.phase in (KEEP, "place_wizards")
