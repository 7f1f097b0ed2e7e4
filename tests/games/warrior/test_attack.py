"""warrior.md section 4: an attack (targets, exchanges, losses, stopping, knights, defaults)."""
from __future__ import annotations

import json

from app.games.base import SPECTATOR
from app.games.warrior import GAME
from app.games.warrior.cards import DEFAULT_PATH, parse_card_set
from app.games.warrior.positions import position, tokens_of
from app.games.warrior.state import CONTINUE, KEEP, LOSE, REATTACK, TARGET, Timing

from .helpers import act, defaults, illegal


def _types(events):
    return [e.type for e in events]


def _exchanges(events):
    return [e.data for e in events if e.type == "exchange"]


def _target(seat, race):
    return {"seat": seat, "race": race}


def test_4_1_nation_attack_targets_same_race_or_natural_enemy_of_other_players():
    s, _ = position(seats=3,
                    nations={0: {"elves": "II", "trolls": "I"}, 1: {"trolls": "I", "elves": "I", "dwarves": "I"},
                             2: {"elves": "A", "goblins": "I"}},
                    attacks=[(0, 1, "elves")])
    assert s.phase == TARGET
    d = GAME.view(s, 0)["decision"]
    assert [o["nation"] for o in d["options"]] == ["elves"]
    targets = {(t["seat"], t["race"]) for t in d["options"][0]["targets"]}
    assert targets == {(1, "elves"), (1, "trolls"), (2, "elves")}
    assert illegal(s, 0, {"type": "target", "target": _target(1, "dwarves")}) == "illegal_target"
    assert illegal(s, 0, {"type": "target", "target": _target(0, "trolls")}) == "illegal_target"
    assert illegal(s, 0, {"type": "target", "nation": "trolls", "target": _target(1, "elves")}) == "illegal_nation"
    assert illegal(s, 1, {"type": "target", "target": _target(1, "elves")}) == "not_your_turn"
    assert illegal(s, 0, {"type": "target", "target": {"seat": 1, "race": "orcs"}}) == "unknown_race"
    s, ev = act(s, 0, {"type": "target", "target": _target(2, "elves")})
    chosen = next(e for e in ev if e.type == "target_chosen").data
    assert chosen["nation"] == "elves" and chosen["force"] == tokens_of(s, 0, "elves")  # the whole nation


def test_4_1_card_nation_gone_or_protected_player_picks_another_nation():
    s, _ = position(nations={0: {"elves": "II", "dwarves": "II", "barbarians": "I"},
                             1: {"goblins": "I", "undead": "I"}},
                    wizards={0: ["elves"]}, attacks=[(0, 1, "elves")], dice=[6, 6, 6, 1])
    assert s.phase == TARGET
    options = {o["nation"]: [t["race"] for t in o["targets"]] for o in GAME.view(s, 0)["decision"]["options"]}
    assert options == {"dwarves": ["goblins"], "barbarians": ["undead"]}
    assert illegal(s, 0, {"type": "target", "target": _target(1, "goblins")}) == "nation_required"
    assert illegal(s, 0, {"type": "target", "nation": "elves", "target": _target(1, "goblins")}) == "illegal_nation"
    s, ev = act(s, 0, {"type": "target", "nation": "dwarves", "target": _target(1, "goblins")})
    assert "exchange" in _types(ev)
    # gone: the card lies before trolls, which have no creature left
    s, events = position(nations={0: {"dwarves": "II"}, 1: {"goblins": "I"}}, attacks=[(0, 1, "trolls")],
                         dice=[6, 6, 6, 1])
    assert next(e for e in events if e.type == "target_chosen").data["nation"] == "dwarves"


def test_4_1_usable_card_nation_without_target_is_not_swapped():
    s, events = position(nations={0: {"elves": "II", "dwarves": "II"}, 1: {"goblins": "I"}}, attacks=[(0, 1, "elves")])
    assert "attack_unused" in _types(events)


def test_4_1_mercenaries_from_any_nation_including_protected_against_any_unprotected_nation():
    s, _ = position(nations={0: {"elves": "II", "dwarves": "II"}, 1: {"trolls": "II", "goblins": "I", "undead": "I"}},
                    wizards={0: ["elves"], 1: ["goblins"]}, attacks=[(0, 13, None)], dice=[1, 1, 1, 6, 6])
    assert s.phase == TARGET
    d = GAME.view(s, 0)["decision"]
    assert d["force_size"] == 3 and len(d["force_candidates"]) == 4
    assert [o["nation"] for o in d["options"]] == [None]
    assert {t["race"] for t in d["options"][0]["targets"]} == {"trolls", "undead"}  # goblins protected
    elves = tokens_of(s, 0, "elves")
    dwarves = tokens_of(s, 0, "dwarves")
    trolls = tokens_of(s, 1, "trolls")
    assert illegal(s, 0, {"type": "target", "target": _target(1, "goblins"), "force": elves + dwarves[:1]}) == \
        "illegal_target"
    assert illegal(s, 0, {"type": "target", "target": _target(1, "trolls"), "force": elves}) == "wrong_count"
    assert illegal(s, 0, {"type": "target", "target": _target(1, "trolls"), "force": elves + trolls[:1]}) == \
        "not_your_creature"
    assert illegal(s, 0, {"type": "target", "target": _target(1, "trolls")}) == "force_required"
    s, ev = act(s, 0, {"type": "target", "target": _target(1, "trolls"), "force": elves + dwarves[:1]})
    assert next(e for e in ev if e.type == "target_chosen").data["force"] == elves + dwarves[:1]
    # 1,1,1 against 6,6: the attacker loses two of three; losing both elves empties the protected nation
    assert s.phase == LOSE and s.waiting == (0,)
    s, ev = act(s, 0, {"type": "lose", "cards": elves})
    assert "wizard_discarded" in _types(ev)
    assert s.wizards[0] == ()


def test_4_1_mercenary_force_is_smaller_when_fewer_creatures_exist():
    s, events = position(nations={0: {"elves": "IA"}, 1: {"trolls": "III"}}, attacks=[(0, 16, None)],
                         dice=[6, 1, 1])
    chosen = next(e for e in events if e.type == "target_chosen").data  # forced: no prompt needed
    assert len(chosen["force"]) == 2 and chosen["nation"] is None


def test_4_2_a_nation_with_a_wizard_neither_attacks_nor_is_attacked():
    s, events = position(nations={0: {"elves": "II"}, 1: {"trolls": "II"}}, wizards={0: ["elves"]},
                         attacks=[(0, 1, "elves")])
    assert "attack_unused" in _types(events)
    s, events = position(nations={0: {"elves": "II"}, 1: {"trolls": "II", "elves": "I"}}, wizards={1: ["trolls"]},
                         attacks=[(0, 1, "elves")], dice=[6, 6, 6, 1])
    chosen = next(e for e in events if e.type == "target_chosen").data  # the only target left
    assert chosen["target"] == _target(1, "elves")


def test_4_3_dice_one_per_infantry_attacker_up_to_3_defender_1_or_2():
    s, events = position(nations={0: {"elves": "IIII"}, 1: {"trolls": "AAK"}}, attacks=[(0, 1, "elves")],
                         dice=[1, 1, 1, 6])
    (x,) = _exchanges(events)
    assert len(x["attacker_rolls"]) == 3 and len(x["defender_rolls"]) == 1  # defender with no infantry rolls 1
    s, events = position(nations={0: {"elves": "II"}, 1: {"trolls": "IIII"}}, attacks=[(0, 9, "elves")],
                         dice=[1, 1, 6, 6])
    (x,) = _exchanges(events)
    assert len(x["attacker_rolls"]) == 2 and len(x["defender_rolls"]) == 2


def test_4_3_attacker_with_no_infantry_rolls_one_die():
    s, events = position(nations={0: {"elves": "AK"}, 1: {"trolls": "III"}}, attacks=[(0, 13, None)], dice=[6, 1, 1])
    (x,) = _exchanges(events)
    assert len(x["attacker_rolls"]) == 1 and len(x["defender_rolls"]) == 2


def test_1_4_nation_card_symbol_counts_with_the_attacking_force():
    # card 1 (infantry): two infantry + the card = 3 dice
    _, events = position(nations={0: {"elves": "II"}, 1: {"trolls": "III"}}, attacks=[(0, 1, "elves")],
                         dice=[1, 1, 1, 6, 6])
    assert len(_exchanges(events)[0]["attacker_rolls"]) == 3
    # card 5 (archer): the card's archer beats the defender's single archer
    _, events = position(nations={0: {"elves": "IA"}, 1: {"trolls": "IA"}}, attacks=[(0, 5, "elves")],
                         dice=[3, 3])
    x = _exchanges(events)[0]
    assert x["attacker_bonus"] == 1 and x["attacker_dice"] == [4] and x["defender_losses"] == 1


def test_4_4_archer_bonus_counts_only_cards_in_this_fight():
    # the attacker's dwarf archers stay home: 1 archer against 1, no bonus; 3 against 3 is a defender win
    _, events = position(nations={0: {"elves": "IA", "dwarves": "AAA"}, 1: {"trolls": "IA", "goblins": "AAA"}},
                         attacks=[(0, 1, "elves")], dice=[3, 1, 3])
    x = _exchanges(events)[0]
    assert (x["attacker_bonus"], x["defender_bonus"]) == (0, 0)
    assert (x["attacker_losses"], x["defender_losses"]) == (1, 0)
    # the defender has more archers: +1 on its highest die
    _, events = position(nations={0: {"elves": "II"}, 1: {"trolls": "IA"}}, attacks=[(0, 9, "elves")], dice=[4, 2, 3])
    x = _exchanges(events)[0]
    assert (x["attacker_bonus"], x["defender_bonus"]) == (0, 1) and x["defender_dice"] == [4]
    assert x["attacker_losses"] == 1


def test_4_5_ties_go_to_defender():
    s, events = position(nations={0: {"elves": "I"}, 1: {"trolls": "I"}}, attacks=[(0, 9, "elves")], dice=[4, 4])
    x = _exchanges(events)[0]
    assert (x["attacker_losses"], x["defender_losses"]) == (1, 0)
    lost = next(e for e in events if e.type == "card_destroyed").data
    assert lost["seat"] == 0 and lost["by"] == 1
    assert len(s.victory[1]) == 1 and s.creatures[0] == ()  # to the defender's victory pile


def test_4_5_highest_against_highest_and_the_loser_chooses():
    s, events = position(nations={0: {"elves": "II"}, 1: {"trolls": "IIK"}}, attacks=[(0, 9, "elves")],
                         dice=[6, 6, 1, 1])
    assert s.phase == LOSE and s.waiting == (1,)
    (p,) = GAME.prompts(s)
    trolls = tokens_of(s, 1, "trolls")
    assert p.kind == "lose" and p.default_action == {"type": "lose", "cards": [trolls[2], trolls[1]]}
    assert GAME.view(s, 1)["decision"]["count"] == 2
    assert illegal(s, 1, {"type": "lose", "cards": trolls[:1]}) == "wrong_count"
    assert illegal(s, 1, {"type": "lose", "cards": [trolls[0], tokens_of(s, 0, "elves")[0]]}) == "not_losable"
    assert illegal(s, 0, {"type": "lose", "cards": trolls[:2]}) == "not_your_turn"
    s, ev = act(s, 1, {"type": "lose", "cards": [trolls[0], trolls[2]]})
    assert tokens_of(s, 1, "trolls") == [trolls[1]]
    assert sorted(s.tokens[c] for c in s.victory[0]) == sorted([trolls[0], trolls[2]])


def test_4_5_each_side_loses_one_in_a_simultaneous_loss_phase():
    s, events = position(nations={0: {"elves": "III"}, 1: {"trolls": "III"}}, attacks=[(0, 9, "elves")],
                         dice=[5, 5, 2, 5, 4])
    x = _exchanges(events)[0]
    assert (x["attacker_losses"], x["defender_losses"]) == (1, 1)
    prompts = GAME.prompts(s)
    assert [p.seat for p in prompts] == [0, 1] and all(p.simultaneous for p in prompts)
    assert prompts[0].phase_id == prompts[1].phase_id
    elves, trolls = tokens_of(s, 0, "elves"), tokens_of(s, 1, "trolls")
    s, _ = act(s, 0, {"type": "lose", "cards": [elves[0]]})
    assert s.phase == LOSE and len(s.creatures[0]) == 3  # nothing lost until both answered
    s, _ = act(s, 0, {"type": "lose", "cards": [elves[1]]})  # replaceable
    s, _ = act(s, 1, {"type": "lose", "cards": [trolls[2]]})
    assert tokens_of(s, 0, "elves") == [elves[0], elves[2]] and tokens_of(s, 1, "trolls") == trolls[:2]
    assert [s.tokens[c] for c in s.victory[1]] == [elves[1]] and [s.tokens[c] for c in s.victory[0]] == [trolls[2]]
    assert s.phase == CONTINUE


def test_4_6_attacker_may_stop_after_an_exchange():
    s, _ = position(nations={0: {"elves": "III"}, 1: {"trolls": "III"}}, attacks=[(0, 1, "elves")],
                    dice=[6, 6, 6, 1, 1])
    s, _ = defaults(s)  # the defender loses two of three
    assert s.phase == CONTINUE and s.waiting == (0,)
    (p,) = GAME.prompts(s)
    assert p.default_action == {"type": "go_on"} and not p.simultaneous
    s, ev = act(s, 0, {"type": "stop"})
    assert "attack_stopped" in _types(ev) and "attack_ended" in _types(ev)
    assert s.attack is None and len(s.nation(1, s.card_set.race_index["trolls"])) == 1


def test_4_6_attack_ends_by_itself_when_a_side_has_no_creature():
    s, events = position(nations={0: {"elves": "III"}, 1: {"trolls": "I"}}, attacks=[(0, 1, "elves")],
                         dice=[6, 6, 6, 1])
    assert "attack_ended" in _types(events) and s.phase == KEEP  # no go-on prompt; next round dealt


def test_4_6_dice_and_archer_bonus_recomputed_every_exchange():
    s, events = position(nations={0: {"elves": "III"}, 1: {"trolls": "II"}}, attacks=[(0, 9, "elves")],
                         dice=[1, 1, 1, 6, 6, 6, 1, 1, 6, 1])
    assert len(_exchanges(events)[0]["attacker_rolls"]) == 3
    s, ev = defaults(s)  # attacker loses two (default: the most recently placed)
    s, ev = act(s, 0, {"type": "go_on"})
    x = _exchanges(ev)[0]
    assert len(x["attacker_rolls"]) == 1 and len(x["defender_rolls"]) == 2
    s, ev = defaults(s)  # defender loses one
    s, ev = act(s, 0, {"type": "go_on"})
    x = _exchanges(ev)[0]
    assert len(x["attacker_rolls"]) == 1 and len(x["defender_rolls"]) == 1
    assert "attack_ended" in _types(ev)


def test_4_7_knight_reattack_turns_a_card_face_down_and_picks_a_fresh_target():
    s, _ = position(nations={0: {"elves": "IIK"}, 1: {"elves": "IA", "trolls": "I"}}, attacks=[(0, 1, "elves")],
                    dice=[6, 6, 6, 1, 6, 6, 1])
    s, _ = act(s, 0, {"type": "target", "target": _target(1, "elves")})
    s, _ = defaults(s)  # defender loses one of two
    s, ev = act(s, 0, {"type": "stop"})
    assert s.phase == REATTACK
    (p,) = GAME.prompts(s)
    assert p.default_action == {"type": "end_attack"} and p.deadline_seconds == 20
    elves = tokens_of(s, 0, "elves")
    assert illegal(s, 0, {"type": "reattack", "face_down": tokens_of(s, 1, "trolls")[0]}) == "not_in_force"
    s, ev = act(s, 0, {"type": "reattack", "face_down": elves[0]})
    assert s.phase == TARGET  # two nations to choose from again
    v = GAME.view(s, SPECTATOR)
    assert [c["id"] for c in v["attack"]["face_down"]] == [elves[0]]
    nation = next(n for n in v["seats"][0]["nations"] if n["race"] == "elves")
    assert [c["face_up"] for c in nation["cards"]] == [False, True, True]
    assert nation["symbols"] == {"infantry": 1, "archer": 0, "knight": 1}  # face-down counts for nothing
    s, ev = act(s, 0, {"type": "target", "target": _target(1, "trolls")})
    x = _exchanges(ev)[0]
    assert len(x["attacker_rolls"]) == 2  # one face-up infantry + the card's infantry
    assert s.phase == REATTACK  # knight still up, one elf left to attack
    s, ev = act(s, 0, {"type": "end_attack"})
    ended = next(e for e in ev if e.type == "attack_ended").data
    assert ended["face_up_again"] == [elves[0]] and ended["reattacks"] == 1
    assert s.attack is None
    assert any(s.card_set.cards[c].number == 1 for c in s.discards)  # the attack card is discarded


def test_4_7_no_reattack_without_a_face_up_knight():
    s, events = position(nations={0: {"elves": "III"}, 1: {"trolls": "I", "elves": "I"}}, attacks=[(0, 1, "elves")],
                         dice=[6, 6, 6, 1])
    assert s.phase == TARGET
    s, ev = act(s, 0, {"type": "target", "target": _target(1, "trolls")})
    assert "attack_ended" in _types(ev) and s.phase != REATTACK


def test_4_7_the_knight_symbol_of_a_nation_card_allows_reattacks():
    s, _ = position(nations={0: {"elves": "III"}, 1: {"trolls": "I", "elves": "I"}}, attacks=[(0, 9, "elves")],
                    dice=[6, 6, 6, 1])
    s, ev = act(s, 0, {"type": "target", "target": _target(1, "trolls")})
    assert s.phase == REATTACK


def test_4_8_decision_defaults_and_deadlines():
    data = json.loads(DEFAULT_PATH.read_text())
    data["cards"].append({"kind": "creature", "race": "elves", "symbols": {"infantry": 1, "knight": 1}, "count": 1})
    cs = parse_card_set(data)
    s, _ = position(card_set=cs, nations={0: {"trolls": "III"}, 1: {"elves": "ID"}}, attacks=[(0, 9, "trolls")],
                    dice=[6, 1, 1, 5, 5], timing=Timing(60.0, 33.0, 10.0))
    assert s.phase == LOSE and s.waiting == (0, 1)
    p0, p1 = GAME.prompts(s)
    assert p0.deadline_seconds == p1.deadline_seconds == 33
    trolls, elves = tokens_of(s, 0, "trolls"), tokens_of(s, 1, "elves")
    assert p0.default_action == {"type": "lose", "cards": [trolls[2]]}  # most recently placed
    assert p1.default_action == {"type": "lose", "cards": [elves[0]]}  # fewest symbols before most recent
    s, _ = defaults(s)
    (p,) = GAME.prompts(s)
    assert p.kind == "continue" and p.default_action == {"type": "go_on"} and p.deadline_seconds == 33
