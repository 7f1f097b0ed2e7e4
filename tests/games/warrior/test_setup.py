"""warrior.md section 2: setup."""
from __future__ import annotations

from app.games.base import SPECTATOR, Rng
from app.games.warrior import GAME
from app.games.warrior.cards import ATTACK, CREATURE, SIEGE_ENGINE
from app.games.warrior.positions import position, tokens_of
from app.games.warrior.state import KEEP, PLACE_WIZARDS

from .helpers import act, defaults, illegal

SEEDS = [bytes([i]) * 32 for i in range(1, 25)]


def _seat_cards(s, seat):
    return len(s.creatures[seat]) + len(s.engines[seat]) + len(s.wizards[seat]) + len(s.hands[seat])


def test_2_1_eleven_cards_each_and_no_attack_card_in_a_first_hand():
    for i, seed in enumerate(SEEDS):
        seats = 2 + i % 3
        s = GAME.setup(seats, None, seed)
        if s.phase == KEEP:  # the keep phase already dealt round 1: look at the nations only
            held = sum(len(s.creatures[x]) + len(s.engines[x]) + len(s.wizards[x]) for x in range(seats))
            discarded_setup_wizards = sum(1 for c in s.discards)
            assert held + discarded_setup_wizards == 11 * seats
        else:
            assert sum(_seat_cards(s, x) for x in range(seats)) + len(s.discards) == 11 * seats
        cards = s.card_set.cards
        for x in range(seats):
            assert all(cards[c].kind != ATTACK for c in s.creatures[x] + s.engines[x])


def test_2_1_set_aside_attack_cards_go_back_into_the_pile_and_replacements_get_fresh_tokens():
    replaced_somewhere = False
    for seed in SEEDS:
        s = GAME.setup(2, None, seed)
        if s.phase != PLACE_WIZARDS:
            continue
        cards = s.card_set.cards
        assert sum(1 for c in s.pile if cards[c].kind == ATTACK) == 18
        assert len(s.pile) == 90 - 22
        assert all(s.tokens[c] is None for c in s.pile)  # pile cards carry no token
        in_play = [c for x in range(2) for c in s.creatures[x] + s.engines[x] + s.hands[x]]
        assert len({s.tokens[c] for c in in_play}) == len(in_play)
        if s.token_count > 22:
            replaced_somewhere = True
    assert replaced_somewhere


def test_2_1_players_are_served_in_seat_order():
    """Oracle: redo the deal of 2.1 with the same rng and compare the resulting first hands."""
    seed = SEEDS[3]
    s = GAME.setup(3, None, seed)
    rng = Rng(seed)
    pile = list(range(90))
    rng.shuffle(pile)
    cards = s.card_set.cards
    hands = [[] for _ in range(3)]
    for _ in range(11):
        for x in range(3):
            hands[x].append(pile.pop())
    for x in range(3):
        while any(cards[c].kind == ATTACK for c in hands[x]):
            out = [c for c in hands[x] if cards[c].kind == ATTACK]
            hands[x] = [c for c in hands[x] if c not in out] + [pile.pop() for _ in out]
    for x in range(3):
        assert tuple(c for c in hands[x] if cards[c].kind == CREATURE) == s.creatures[x]
        assert tuple(c for c in hands[x] if cards[c].kind == SIEGE_ENGINE) == s.engines[x]


def test_2_2_nations_are_public_with_counts_and_symbols():
    s, _ = position(nations={0: {"elves": "IAK", "dwarves": "I"}, 1: {"trolls": "II"}},
                    hands={0: ["elves:I"], 1: ["trolls:A"]})
    v = GAME.view(s, SPECTATOR)
    n0 = {n["race"]: n for n in v["seats"][0]["nations"]}
    assert n0["elves"]["size"] == 3 and n0["elves"]["symbols"] == {"infantry": 1, "archer": 1, "knight": 1}
    assert n0["elves"]["enemy"] == "trolls"
    assert n0["dwarves"]["size"] == 1
    assert [c["id"] for c in n0["elves"]["cards"]] == tokens_of(s, 0, "elves")
    assert v["seats"][1]["nations"][0]["race"] == "trolls"


def test_2_3_wizard_placement_is_a_simultaneous_phase():
    s, _ = position(nations={0: {"elves": "III", "dwarves": "I"}, 1: {"trolls": "II", "undead": "I"}},
                    place_wizards={0: 1, 1: 1})
    prompts = GAME.prompts(s)
    assert [p.seat for p in prompts] == [0, 1] and all(p.simultaneous for p in prompts)
    assert all(p.kind == "place_wizards" and p.deadline_seconds == 60 for p in prompts)
    assert len({p.phase_id for p in prompts}) == 1
    w0 = s.tokens[s.hands[0][0]]
    w1 = s.tokens[s.hands[1][0]]
    s, _ = act(s, 0, {"type": "place_wizards", "wizards": {w0: "elves"}})
    assert s.phase == PLACE_WIZARDS and s.wizards[0] == ()  # nothing placed until all have chosen
    s, _ = act(s, 0, {"type": "place_wizards", "wizards": {w0: "dwarves"}})  # replaceable
    s, events = act(s, 1, {"type": "place_wizards", "wizards": {w1: "undead"}})
    assert s.phase == KEEP and s.round == 1
    races = s.card_set.races
    assert [races[r] for _, r in s.wizards[0]] == ["dwarves"]
    assert [races[r] for _, r in s.wizards[1]] == ["undead"]
    assert [e.type for e in events].count("wizards_placed") == 2


def test_2_3_at_most_one_wizard_per_nation():
    s, _ = position(nations={0: {"elves": "III", "dwarves": "I"}, 1: {"trolls": "II"}}, place_wizards={0: 2},
                    wizards={0: []})
    w = [s.tokens[c] for c in s.hands[0]]
    assert illegal(s, 0, {"type": "place_wizards", "wizards": {w[0]: "elves", w[1]: "elves"}}) == "nation_protected"
    assert illegal(s, 0, {"type": "place_wizards", "wizards": {w[0]: "trolls"}}) == "not_your_nation"
    assert illegal(s, 0, {"type": "place_wizards", "wizards": {w[0]: "orcs"}}) == "unknown_race"
    assert illegal(s, 0, {"type": "place_wizards", "wizards": {"nope": "elves"}}) == "unknown_card"


def test_2_3_default_is_the_largest_unprotected_nation_and_a_spare_wizard_is_discarded():
    s, _ = position(nations={0: {"elves": "II", "dwarves": "III"}, 1: {"trolls": "II"}}, place_wizards={0: 3})
    (p,) = GAME.prompts(s)
    w = [s.tokens[c] for c in s.hands[0]]
    assert p.default_action == {"type": "place_wizards", "wizards": {w[0]: "dwarves", w[1]: "elves", w[2]: None}}
    # discarding while an unprotected nation is left is refused
    assert illegal(s, 0, {"type": "place_wizards", "wizards": {w[0]: None, w[1]: "elves", w[2]: None}}) == \
        "wizard_must_be_placed"
    wizard_cards = list(s.hands[0])
    s, events = defaults(s)
    races = s.card_set.races
    assert sorted(races[r] for _, r in s.wizards[0]) == ["dwarves", "elves"]
    assert wizard_cards[2] in s.discards


def test_2_3_siege_engines_lie_face_up_beside():
    s, _ = position(nations={0: {"elves": "II"}, 1: {"trolls": "II"}}, engines={0: 2},
                    hands={0: ["elves:I"], 1: ["trolls:I"]})
    v = GAME.view(s, 1)
    assert [e["kind"] for e in v["seats"][0]["engines"]] == ["siege_engine", "siege_engine"]
