"""warrior.md section 3: rounds, keep phases, attack order, end-of-round discards."""
from __future__ import annotations

from app.games.base import SPECTATOR
from app.games.warrior import GAME, rules
from app.games.warrior.cards import ATTACK
from app.games.warrior.positions import position, tokens_of
from app.games.warrior.state import KEEP, OVER, TARGET, replaced

from .helpers import act, defaults, illegal


def _run_defaults(s, until=lambda s: False, limit=5000):
    events = []
    for _ in range(limit):
        if s.phase == OVER or until(s):
            return s, events
        s, ev = defaults(s)
        events.extend(ev)
    raise AssertionError("did not reach the condition")


def test_3_1_three_rounds_of_seven_cards_keeping_4_4_5():
    s = GAME.setup(3, None, b"rounds" * 6)
    seen = []
    while s.phase != OVER:
        if s.phase == KEEP and (not seen or seen[-1][0] != s.round):
            seen.append((s.round, [len(h) for h in s.hands], list(s.keep_counts)))
        s, _ = defaults(s)
    assert seen == [(1, [7, 7, 7], [4, 4, 4]), (2, [7, 7, 7], [4, 4, 4]), (3, [7, 7, 7], [5, 5, 5])]
    assert GAME.outcome(s) is not None


def test_3_1_round_three_shuffles_every_earlier_discard_into_the_pile():
    s = GAME.setup(2, None, b"round-three" * 3)
    s, _ = _run_defaults(s, until=lambda s: s.round == 2)
    s, events = _run_defaults(s, until=lambda s: s.round == 3)
    assert s.phase == KEEP
    assert "discards_shuffled" in [e.type for e in events]
    # every card is in the pile, a hand, in play or in a victory pile: nothing stayed in the discards
    assert s.discards == ()
    total = len(s.pile) + sum(len(h) for h in s.hands) + sum(len(c) for c in s.creatures) \
        + sum(len(v) for v in s.victory) + sum(len(w) for w in s.wizards) + sum(len(e) for e in s.engines)
    assert total == 90


def test_3_1_short_pile_takes_the_discards_then_deals_what_remains_round_robin():
    s, _ = position(seats=3, nations={0: {"elves": "I"}, 1: {"trolls": "I"}, 2: {"dwarves": "I"}})
    s = s.clone()
    # leave 3 cards in the pile and 2 in the discards; the rest leaves play (victory piles)
    s.victory = replaced(s.victory, 0, s.victory[0] + s.pile[5:])
    s.discards = s.pile[3:5]
    s.pile = s.pile[:3]
    s.round = 2
    events = []
    rules._run(s, events, "start_round")
    assert [len(h) for h in s.hands] == [2, 2, 1]  # round robin: seats 0 and 1 got the 4th and 5th card
    assert s.keep_counts == (2, 2, 1)  # nobody keeps more than they were dealt
    assert "discards_shuffled" in [e.type for e in events]
    first = s.hands[0][0]
    assert s.tokens[first] is not None
    (p0, p1, p2) = GAME.prompts(s)
    assert len(p0.default_action["cards"]) == 2 and len(p2.default_action["cards"]) == 1


def test_3_2_keep_phase_is_simultaneous_with_phase_seconds_deadline():
    s = GAME.setup(2, GAME.Options(phase_seconds=90), b"keep-phase" * 4)
    s, _ = _run_defaults(s, until=lambda s: s.phase == KEEP)
    prompts = GAME.prompts(s)
    assert [p.seat for p in prompts] == [0, 1]
    assert all(p.simultaneous and p.kind == "keep" and p.deadline_seconds == 90 for p in prompts)
    assert prompts[0].phase_id == prompts[1].phase_id == s.phase_id


def test_3_2_choices_replaceable_and_revealed_together():
    s, _ = position(nations={0: {"elves": "II"}, 1: {"trolls": "II"}},
                    hands={0: ["elves:I", "elves:A", "trolls:I", "dwarves:K", "siege_engine", "wizard", "attack:2"],
                           1: ["trolls:I", "trolls:A", "trolls:K", "elves:I", "goblins:I", "undead:I", "attack:14"]})
    h0 = [s.tokens[c] for c in s.hands[0]]
    h1 = [s.tokens[c] for c in s.hands[1]]
    s, ev = act(s, 0, {"type": "keep", "cards": h0[:4]})
    assert [e.type for e in ev] == ["submitted"] and ev[0].audience is None and "cards" not in ev[0].data
    s, ev = act(s, 0, {"type": "keep", "cards": [h0[0], h0[4], h0[5], h0[6]],
                       "attacks": {h0[6]: "elves"}, "wizards": {h0[5]: "elves"}})
    assert s.phase == KEEP and GAME.prompts(s)[0].submitted and not GAME.prompts(s)[1].submitted
    assert len(s.creatures[0]) == 2  # not laid out yet
    s, ev = act(s, 1, {"type": "keep", "cards": h1[:3] + [h1[6]]})
    kept = [e for e in ev if e.type == "kept"]
    assert [e.data["seat"] for e in kept] == [0, 1] and all(e.audience is None for e in kept)
    assert len(kept[0].data["discarded"]) == 3
    # laid out: creature joins its nation, engine beside, wizard on elves, attack card before elves
    assert tokens_of(s, 0, "elves")[-1] == h0[0]
    assert [s.tokens[e] for e in s.engines[0]] == [h0[4]]
    assert s.wizards[0] and s.card_set.races[s.wizards[0][0][1]] == "elves"
    assert s.card_set.races[s.card_set.enemy[0]]  # sanity
    discarded = [s.tokens[c] for c in s.discards]
    assert set(h0[1:4]) <= set(discarded) and set(h1[3:6]) <= set(discarded)


def test_3_2_default_keeps_first_cards_and_lays_attack_before_largest_nation():
    s, _ = position(nations={0: {"elves": "II", "dwarves": "IIIA"}, 1: {"trolls": "II"}},
                    hands={0: ["attack:3", "wizard", "elves:I", "elves:I", "siege_engine", "goblins:I", "undead:I"],
                           1: ["trolls:I", "trolls:A", "trolls:K", "goblins:I", "goblins:A", "goblins:K", "undead:A"]})
    p0 = GAME.prompts(s)[0]
    h0 = [s.tokens[c] for c in s.hands[0]]
    assert p0.default_action == {"type": "keep", "cards": h0[:4], "attacks": {h0[0]: "dwarves"},
                                 "wizards": {h0[1]: "dwarves"}}


def test_3_2_keep_validation():
    s, _ = position(nations={0: {"elves": "II"}, 1: {"trolls": "II"}}, wizards={0: ["elves"]},
                    hands={0: ["attack:3", "wizard", "elves:I", "trolls:I", "siege_engine", "attack:13", "undead:I"],
                           1: ["trolls:I", "trolls:A", "trolls:K", "goblins:I", "goblins:A", "goblins:K", "undead:A"]})
    h = [s.tokens[c] for c in s.hands[0]]
    assert illegal(s, 0, {"type": "keep", "cards": h[:3]}) == "wrong_count"
    assert illegal(s, 0, {"type": "keep", "cards": h[:3] + [h[0]]}) == "duplicate_card"
    assert illegal(s, 0, {"type": "keep", "cards": h[:3] + ["zzzz"]}) == "unknown_card"
    assert illegal(s, 0, {"type": "keep", "cards": h[:4], "wizards": {h[1]: "elves"}}) == "nation_protected"
    assert illegal(s, 0, {"type": "keep", "cards": h[:4], "attacks": {h[0]: "goblins"}}) == "not_your_nation"
    assert illegal(s, 0, {"type": "keep", "cards": h[:4], "attacks": {h[0]: None}}) == "nation_required"
    assert illegal(s, 1, {"type": "keep", "cards": h[:4]}) == "unknown_card"
    # a wizard may go on the nation formed by a creature kept in the same phase
    s2, _ = act(s, 0, {"type": "keep", "cards": h[:4], "wizards": {h[1]: "trolls"}, "attacks": {h[0]: "trolls"}})
    assert s2.choices[0].wizards[0][1] == s.card_set.race_index["trolls"]


def test_3_3_attacks_run_in_ascending_number_across_players():
    s, events = position(seats=3,
                         nations={0: {"elves": "IIII"}, 1: {"trolls": "IIII"}, 2: {"elves": "AAK"}},
                         attacks=[(1, 11, "trolls"), (0, 2, "elves"), (2, 7, "elves"), (0, 16, None)])
    order = []
    order += [e.data["card"]["number"] for e in events if e.type == "attack_started"]
    while s.phase != OVER and s.round == 1:
        s, ev = defaults(s)
        order += [e.data["card"]["number"] for e in ev if e.type == "attack_started"]
    assert order == [2, 7, 11, 16]


def test_3_3_every_kept_attack_card_must_be_used():
    s, _ = position(nations={0: {"elves": "II"}, 1: {"trolls": "II", "elves": "I"}}, attacks=[(0, 1, "elves")])
    assert s.phase == TARGET
    assert illegal(s, 0, {"type": "stop"}) == "wrong_phase"  # no way to decline before the first exchange
    assert illegal(s, 0, {"type": "pass"}) == "unknown_action"
    (p,) = GAME.prompts(s)
    assert p.default_action["type"] == "target"
    s, ev = act(s, 0, dict(p.default_action))
    assert "exchange" in [e.type for e in ev]


def test_3_3_attack_card_with_no_legal_target_is_discarded_unused():
    s, events = position(nations={0: {"elves": "II"}, 1: {"dwarves": "II"}}, attacks=[(0, 1, "elves")])
    assert [e.type for e in events][:3] == ["attack_started", "attack_unused", "attack_ended"]
    card = next(c for c in s.discards if s.card_set.cards[c].kind == ATTACK)
    assert s.card_set.cards[card].number == 1


def test_3_4_wizards_and_siege_engines_discarded_at_end_of_rounds_1_and_2_only():
    s, _ = position(nations={0: {"elves": "II"}, 1: {"dwarves": "II"}}, wizards={0: ["elves"]}, engines={1: 1},
                    attacks=[(0, 1, "elves")])
    s, events = _run_defaults(s, until=lambda s: s.phase == KEEP)
    assert s.round == 2 and s.wizards == ((), ()) and s.engines == ((), ())
    assert "round_ended" in [e.type for e in events]
    # round 3: what is in play at the end stays (scored position)
    s, _ = position(nations={0: {"elves": "II"}, 1: {"dwarves": "II"}}, wizards={0: ["elves"]}, engines={1: 1},
                    round=3)
    s, _ = _run_defaults(s)
    assert s.phase == OVER and s.wizards[0] and s.engines[1]
    v = GAME.view(s, SPECTATOR)
    assert v["outcome"] is not None
