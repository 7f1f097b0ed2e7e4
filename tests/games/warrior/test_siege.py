"""warrior.md section 5: siege engines and siege windows."""
from __future__ import annotations

from app.games.warrior import GAME
from app.games.warrior.positions import position, tokens_of
from app.games.warrior.state import CONTINUE, SIEGE, TARGET, Timing

from .helpers import act, defaults, illegal


def _types(events):
    return [e.type for e in events]


def _three_seat(**kw):
    return position(seats=3, nations={0: {"elves": "III"}, 1: {"trolls": "II", "elves": "I"}, 2: {"dwarves": "II"}},
                    attacks=[(0, 1, "elves")], **kw)


def test_5_1_a_player_not_in_the_battle_may_fire_and_a_hit_goes_to_their_victory_pile():
    s, _ = _three_seat(engines={2: 1}, dice=[4])
    assert s.phase == SIEGE and s.waiting == (2,)  # the window opens before the target is chosen
    engine = s.tokens[s.engines[2][0]]
    troll = tokens_of(s, 1, "trolls")[0]
    s, ev = act(s, 2, {"type": "siege", "shots": [{"engine": engine, "target": troll}]})
    shot = next(e for e in ev if e.type == "siege_shot")
    assert shot.audience is None and shot.data["roll"] == 4 and shot.data["hit"] is True
    assert [s.tokens[c] for c in s.victory[2]] == [troll]
    assert s.engines[2] == () and engine in [s.tokens[c] for c in s.discards]  # discarded after firing
    assert troll not in tokens_of(s, 1, "trolls")
    assert s.phase == TARGET


def test_5_1_below_four_misses_and_the_engine_is_discarded_anyway():
    s, _ = _three_seat(engines={2: 1}, dice=[3])
    engine = s.tokens[s.engines[2][0]]
    troll = tokens_of(s, 1, "trolls")[0]
    s, ev = act(s, 2, {"type": "siege", "shots": [{"engine": engine, "target": troll}]})
    assert next(e for e in ev if e.type == "siege_shot").data["hit"] is False
    assert troll in tokens_of(s, 1, "trolls") and s.victory[2] == () and s.engines[2] == ()


def test_5_1_destroying_a_wizard_opens_its_nation_to_attack():
    s, _ = position(seats=3, nations={0: {"elves": "III"}, 1: {"trolls": "II"}, 2: {"dwarves": "II"}},
                    wizards={1: ["trolls"]}, engines={2: 1}, attacks=[(0, 1, "elves")], dice=[6, 6, 6, 6, 1, 1])
    assert s.phase == SIEGE
    wizard = s.tokens[s.wizards[1][0][0]]
    engine = s.tokens[s.engines[2][0]]
    assert wizard in GAME.view(s, 2)["decision"]["targets"]
    assert tokens_of(s, 1, "trolls")[0] not in GAME.view(s, 2)["decision"]["targets"]  # protected creatures
    s, ev = act(s, 2, {"type": "siege", "shots": [{"engine": engine, "target": wizard}]})
    assert [e.data["cause"] for e in ev if e.type == "card_destroyed"][0] == "siege"
    chosen = next(e for e in ev if e.type == "target_chosen").data
    assert chosen["target"] == {"seat": 1, "race": "trolls"}


def test_5_1_siege_targets_and_engines_are_validated():
    s, _ = position(seats=3, nations={0: {"elves": "III"}, 1: {"trolls": "II", "undead": "I"}, 2: {"dwarves": "II"}},
                    wizards={1: ["undead"]}, engines={1: 1, 2: 1}, attacks=[(0, 1, "elves")], dice=[1])
    e1, e2 = s.tokens[s.engines[1][0]], s.tokens[s.engines[2][0]]
    own = tokens_of(s, 2, "dwarves")[0]
    protected = tokens_of(s, 1, "undead")[0]
    troll = tokens_of(s, 1, "trolls")[0]
    assert illegal(s, 2, {"type": "siege", "shots": [{"engine": e2, "target": own}]}) == "illegal_siege_target"
    assert illegal(s, 2, {"type": "siege", "shots": [{"engine": e2, "target": protected}]}) == "illegal_siege_target"
    assert illegal(s, 2, {"type": "siege", "shots": [{"engine": e1, "target": troll}]}) == "not_your_engine"
    assert illegal(s, 2, {"type": "siege", "shots": [{"engine": e2, "target": troll}] * 2}) == "too_many_shots"
    assert illegal(s, 2, {"type": "siege", "shots": "all"}) == "malformed_action"
    assert illegal(s, 0, {"type": "siege", "shots": []}) == "not_your_turn"


def test_5_2_windows_before_each_target_and_after_every_exchange_for_every_holder():
    s, _ = position(nations={0: {"elves": "III"}, 1: {"trolls": "III"}}, engines={0: 1, 1: 1},
                    attacks=[(0, 1, "elves")], dice=[1, 1, 1, 6, 6], timing=Timing(60.0, 20.0, 7.0))
    assert s.phase == SIEGE and s.waiting == (0, 1)
    prompts = GAME.prompts(s)
    assert all(p.kind == "siege" and p.simultaneous and p.deadline_seconds == 7 for p in prompts)
    assert all(p.default_action == {"type": "siege", "shots": []} for p in prompts)
    first = s.phase_id
    s, ev = act(s, 0, {"type": "siege", "shots": []})
    assert s.phase == SIEGE and s.phase_id == first  # open until every holder answered
    s, ev = act(s, 1, {"type": "siege", "shots": []})
    # target forced (one nation against one) -> exchange -> attacker loses 2 of 3 -> loss choice
    assert "exchange" in _types(ev)
    s, _ = defaults(s)
    assert s.phase == SIEGE and s.phase_id > first  # window after the exchange
    s, _ = defaults(s)
    assert s.phase == CONTINUE


def test_5_2_no_window_while_nobody_holds_an_engine():
    s, _ = _three_seat()
    assert s.phase == TARGET


def test_5_2_shot_at_a_card_already_destroyed_in_the_window_is_not_fired():
    s, _ = position(seats=3, nations={0: {"elves": "III"}, 1: {"trolls": "II", "elves": "I"}, 2: {"dwarves": "II"}},
                    engines={0: 1, 2: 1}, attacks=[(0, 1, "elves")], dice=[5])
    troll = tokens_of(s, 1, "trolls")[0]
    e0, e2 = s.tokens[s.engines[0][0]], s.tokens[s.engines[2][0]]
    s, _ = act(s, 2, {"type": "siege", "shots": [{"engine": e2, "target": troll}]})
    s, ev = act(s, 0, {"type": "siege", "shots": [{"engine": e0, "target": troll}]})
    assert [e.data["seat"] for e in ev if e.type == "siege_shot"] == [0]  # seat order: seat 0 fires first
    assert [e.data["seat"] for e in ev if e.type == "siege_void"] == [2]
    assert [s.tokens[c] for c in s.engines[2]] == [e2]  # the unfired engine stays
