"""Section 5: the specials in a match (conquest.md section 5 table, seed §5.3), one test per special
naming its clause, the cap of 7 battles (2.1) and the activation action itself (5.1.3)."""
from __future__ import annotations

import json

from app.games.base import SPECTATOR
from app.games.conquest import GAME, SPECIALS
from app.games.conquest.poker import card_name
from app.games.conquest.state import ASSIGN, NEUTRAL, ORDERS, RIVER, TURN

from .support import (
    assert_illegal,
    decide,
    events_json,
    finish_phase,
    orders,
    position,
    prompt_of,
)
from .test_battle import BOARD, N1, N2, A, B, duel

ALL = list(SPECIALS)
BOTH = {"loadouts": [ALL, ALL]}


def special(name: str, **fields) -> dict:
    return {"type": "special", "special": name, **fields}


def use(state, seat: int, name: str, **fields):
    return GAME.apply(state, seat, special(name, **fields))


def flop_faces(view, land):
    return [c.get("card") for c in view["lands"][land]["flop"]]


def hand_of(view, land, seat):
    battle = next(b for b in view["battles"] if b["land"] == land)
    return next(p["hand"] for p in battle["participants"] if p["seat"] == seat)


def fresh(**kwargs):
    kwargs.setdefault("options", BOTH)
    kwargs.setdefault("owner", {A: 0, B: 1})
    return position(**kwargs)


# ---- 5.1.3 activation ---------------------------------------------------------------------------

def test_5_1_3_activation_costs_mana_once_lasts_to_the_end_and_is_not_a_submission():
    state = fresh()
    prompts = [(p.seat, p.submitted) for p in GAME.prompts(state)]
    state, events = use(state, 0, "loyalty")
    assert state.mana == [7, 10] and state.has(0, "loyalty")
    assert [(p.seat, p.submitted) for p in GAME.prompts(state)] == prompts  # the phase did not move
    used = next(e for e in events if e.type == "special_used")
    assert used.audience is None and used.data["special"] == "loyalty" and used.data["cost"] == 3
    assert GAME.view(state, SPECTATOR)["seats"][0]["specials"] == ["loyalty"]
    assert_illegal(state, 0, special("loyalty"), "already_active")
    state, _ = finish_phase(state)  # rounds pass: still active
    state, _ = finish_phase(state)
    assert state.has(0, "loyalty")


def test_5_1_3_bad_activations_are_refused_and_change_nothing():
    state = fresh(options={"loadouts": [["scout", "joker"], []]}, mana=[3, 10])
    assert_illegal(state, 0, special("hound"), "not_in_loadout")
    assert_illegal(state, 1, special("scout", land=N1), "not_in_loadout")
    assert_illegal(state, 0, special("nope"), "unknown_special")
    assert_illegal(state, 0, {"type": "special"}, "malformed_action")
    assert_illegal(state, 0, special("scout", land="3"), "malformed_action")
    assert_illegal(state, 0, special("scout", land=999), "unknown_land")
    assert_illegal(state, 0, special("joker"), "not_enough_mana")  # 6 > 3
    assert_illegal(state, 7, special("joker"), "no_prompt")


def test_5_costs_come_from_special_costs():
    state = fresh(options={"loadouts": [ALL, []], "special_costs": {"loyalty": 1, "scout": 2}})
    state, _ = use(state, 0, "loyalty")
    state, _ = use(state, 0, "scout", land=N1)
    assert state.mana[0] == 10 - 1 - 2


# ---- 5.3.1 the board ----------------------------------------------------------------------------

def test_5_3_1_1_shield_puts_n_mana_that_others_pay_more_to_attack_or_scout():
    state = fresh(table_decks={B: "2c 7d 9h"})
    state, events = use(state, 1, "shield", land=B, mana=3)
    assert state.mana == [10, 7]
    assert next(e for e in events if e.type == "special_used").data["shield"] == 3
    for viewer in (0, 1, SPECTATOR):
        assert GAME.view(state, viewer)["lands"][B]["shield"] == 3  # public
    assert_illegal(state, 1, special("shield", land=B, mana=2), "already_shielded")
    assert_illegal(state, 1, special("shield", land=A, mana=2), "not_your_land")
    assert_illegal(state, 1, special("shield", land=N1, mana=0), "bad_shield")
    assert_illegal(state, 1, special("shield", land=N1, mana=11), "bad_shield")
    # corruption does not see through a shield; a scout pays 1 + 3
    state, _ = use(state, 0, "corruption")
    assert flop_faces(GAME.view(state, 0), B) == [None] * 3
    assert GAME.view(state, 0)["you"]["scout_costs"][str(B)] == 4
    scouted, _ = use(state, 0, "scout", land=B)
    assert scouted.mana[0] == 10 - 5 - 4 and flop_faces(GAME.view(scouted, 0), B) == ["2c", "7d", "9h"]
    # attacking it costs 1 + 3
    poor = fresh(mana=[3, 10])
    poor, _ = use(poor, 1, "shield", land=B, mana=3)
    assert_illegal(poor, 0, {"type": "orders", "attack": [B]}, "not_enough_mana")
    state, _ = finish_phase(state, orders({0: [B], 1: []}))
    assert state.mana[0] == 10 - 5 - 4


def test_5_3_1_2_scout_shows_one_flop_to_its_owner_for_one_mana():
    state = fresh(table_decks={N1: "2c 7d 9h", N2: "3c 8d Th"})
    state, events = use(state, 0, "scout", land=N1)
    assert state.mana[0] == 9
    assert flop_faces(GAME.view(state, 0), N1) == ["2c", "7d", "9h"]
    assert GAME.view(state, 0)["lands"][N1]["flop"][0] == {"card": "2c", "seen": "scout"}  # no id yet
    assert flop_faces(GAME.view(state, 0), N2) == [None] * 3  # one table only
    for viewer in (1, SPECTATOR):
        assert flop_faces(GAME.view(state, viewer), N1) == [None] * 3
        assert "2c" not in events_json(events, viewer) or viewer == 0
    assert '"7d"' in events_json(events, 0) and '"7d"' not in events_json(events, 1)
    assert_illegal(state, 0, special("scout", land=N1), "already_seen")
    # a battle on the table gives it a fresh flop: the scout saw the old one only
    state, _ = finish_phase(state, orders({0: [N1], 1: []}))
    while state.phase != ORDERS:
        state, _ = finish_phase(state)
    assert N1 not in state.scouted.get(0, ())
    assert flop_faces(GAME.view(state, 0), N1) == [None] * 3


def test_5_3_1_3_loyalty_shows_the_flops_of_own_tables_only():
    state = fresh(table_decks={A: "2c 7d 9h", B: "3c 8d Th"})
    state, _ = use(state, 0, "loyalty")
    view = GAME.view(state, 0)
    assert flop_faces(view, A) == ["2c", "7d", "9h"] and view["lands"][A]["flop"][0]["seen"] == "loyalty"
    assert flop_faces(view, B) == [None] * 3 and flop_faces(view, N1) == [None] * 3
    assert flop_faces(GAME.view(state, 1), A) == [None] * 3
    assert "turn" not in json.dumps(view["lands"][A])  # turn and river stay closed


def test_5_3_1_4_spy_shows_the_flops_of_neutral_lands():
    state = fresh(table_decks={A: "2c 7d 9h", N1: "3c 8d Th"})
    state, _ = use(state, 0, "spy")
    view = GAME.view(state, 0)
    assert state.mana[0] == 7
    assert flop_faces(view, N1) == ["3c", "8d", "Th"]
    assert all(land["flop"][0].get("seen") == "spy" for land in view["lands"] if land["owner"] is None)
    assert flop_faces(view, A) == [None] * 3 and flop_faces(view, B) == [None] * 3
    assert flop_faces(GAME.view(state, 1), N1) == [None] * 3


def test_5_3_1_5_corruption_shows_the_flops_of_other_players_lands():
    state = fresh(table_decks={B: "3c 8d Th"})
    state, _ = use(state, 0, "corruption")
    view = GAME.view(state, 0)
    assert state.mana[0] == 5
    assert flop_faces(view, B) == ["3c", "8d", "Th"] and view["lands"][B]["flop"][0]["seen"] == "corruption"
    assert flop_faces(view, A) == [None] * 3 and flop_faces(view, N1) == [None] * 3
    assert flop_faces(GAME.view(state, SPECTATOR), B) == [None] * 3


def test_5_3_1_6_big_brother_sees_every_table_for_free():
    state = fresh(table_decks={A: "2c 7d 9h", B: "3c 8d Th", N1: "4c 9d Jh"})
    state, _ = use(state, 0, "big_brother")
    view = GAME.view(state, 0)
    assert state.mana[0] == 2
    assert [flop_faces(view, land) for land in (A, B, N1)] == [
        ["2c", "7d", "9h"], ["3c", "8d", "Th"], ["4c", "9d", "Jh"]]
    assert all(c["seen"] == "big_brother" for land in view["lands"] for c in land["flop"])
    assert all(flop_faces(GAME.view(state, 1), land) == [None] * 3 for land in (A, B, N1))


# ---- 5.3.2 the pool and the deal ----------------------------------------------------------------

def test_5_3_2_1_read_hand_shows_the_attackers_hands_to_the_attacked_seat():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd", options=BOTH)
    attacker = {d[1] for d in state.battles[B].hands[0]}
    assert attacker <= GAME.hidden_tokens(state, 1)
    state, _ = use(state, 1, "read_hand")
    assert [c["card"] for c in hand_of(GAME.view(state, 1), B, 0)] == ["Ac", "Ad"]
    assert all(c["seen"] == "read_hand" for c in hand_of(GAME.view(state, 1), B, 0))
    assert not attacker & GAME.hidden_tokens(state, 1)
    assert attacker <= GAME.hidden_tokens(state, SPECTATOR)
    assert hand_of(GAME.view(state, SPECTATOR), B, 0) == [{"hidden": True}] * 2
    # the attacker with read_hand sees nothing of the defender's hand (they attack, not defend)
    state, _ = use(state, 0, "read_hand")
    assert hand_of(GAME.view(state, 0), B, 1) == [{"hidden": True}] * 2


def test_5_3_2_2_hound_shows_the_neutrals_hand_to_its_owner():
    state = fresh(table_decks={N1: "2c 7d 9h  Qs Qd  Js 4s"}, pools={0: "AcAd"})
    state, _ = use(state, 0, "hound")
    assert state.mana[0] == 8
    state, events = finish_phase(state, orders({0: [N1], 1: []}))
    neutral = state.battles[N1].hands[NEUTRAL]
    tokens = {d[1] for d in neutral}
    assert all(tokens)
    shown = hand_of(GAME.view(state, 0), N1, "neutral")
    assert [c["card"] for c in shown] == ["Qs", "Qd"] and shown[0]["seen"] == "hound"
    for viewer in (1, SPECTATOR):
        assert tokens <= GAME.hidden_tokens(state, viewer)
        text = json.dumps(GAME.view(state, viewer)) + events_json(events, viewer)
        assert not any(t in text for t in tokens)
    # activated during a battle: the neutral's hand gets ids then
    later = fresh(table_decks={N1: "2c 7d 9h  Qs Qd  Js 4s"}, pools={0: "AcAd"})
    later, _ = finish_phase(later, orders({0: [N1], 1: []}))
    assert hand_of(GAME.view(later, 0), N1, "neutral") == [{"hidden": True}] * 2
    later, _ = use(later, 0, "hound")
    assert [c["card"] for c in hand_of(GAME.view(later, 0), N1, "neutral")] == ["Qs", "Qd"]


def test_5_3_2_3_joker_becomes_the_best_card_at_the_final_seen_by_others_only_then():
    state, _ = duel("Ah Kh Qc  Js 4d", "2c 3d", "KcKd", options=BOTH)
    joker = state.battles[B].hands[0][0][1]  # the 2c
    state, events = use(state, 0, "joker", land=B, card=joker)
    assert state.mana[0] == 8 - 6
    assert any(e.type == "special_seen" and e.audience == frozenset({0}) for e in events)
    assert joker not in events_json(events, 1)
    assert '"land"' not in events_json(events, 1)  # the public learns the joker was bought, not where
    mine = hand_of(GAME.view(state, 0), B, 0)
    assert mine[0] == {"id": joker, "card": "2c", "joker": True}
    for viewer in (1, SPECTATOR):
        assert "joker" not in json.dumps(GAME.view(state, viewer)["battles"])
    assert_illegal(state, 0, special("joker", land=B, card=state.battles[B].hands[0][1][1]), "joker_used")
    state, _ = finish_phase(state)
    state, events = finish_phase(state)  # the final
    battle = state.battles[B]
    assert battle.winner == 0 and card_name(battle.joker_cards[0])[0] == "T"  # a ten: A K Q J T
    shown = next(e for e in events if e.type == "showdown").data["hands"]
    ten = card_name(battle.joker_cards[0])
    assert shown[0]["category"] == "straight" and shown[0]["cards"][0]["joker"] == ten
    assert hand_of(GAME.view(state, 1), B, 0)[0]["joker"] == ten  # seen by others at the final


def test_5_3_2_4_double_hand_deals_4_and_keeps_the_chosen_2_else_the_best_2():
    def setup():
        state = fresh(pools={0: "2c 3d Ac Ad", 1: "KcKd"}, table_decks={B: "2h 7d 9h  Js 4s"})
        state, _ = use(state, 0, "double_hand")
        state, _ = finish_phase(state, orders({0: [B], 1: []}))
        return finish_phase(state, {1: {"type": "defend", "lands": [B]}})
    state, _ = setup()
    assert len(state.battles[B].hands[0]) == 4 and state.phase == TURN  # one table: no choice
    hand = state.battles[B].hands[0]
    state, _ = finish_phase(state)
    assert state.phase == RIVER
    best, _ = finish_phase(state)  # no choice: the best 2 (the aces)
    assert best.battles[B].winner == 0 and [card_name(d[0]) for d in best.battles[B].kept[0]] == ["Ac", "Ad"]
    keep = {"type": "decide", "folds": [], "keep": {str(B): [hand[0][1], hand[1][1]]}}  # 2c 3d
    chosen, events = finish_phase(state, {0: keep})
    assert chosen.battles[B].winner == 1
    shown = next(e for e in events if e.type == "showdown").data["hands"][0]["cards"]
    assert [c.get("counted", False) for c in shown] == [True, True, False, False]
    assert_illegal(state, 0, {"type": "decide", "folds": [], "keep": {str(B): [hand[0][1]]}}, "bad_hand")
    assert_illegal(state, 0, {"type": "decide", "folds": [], "keep": {str(B): [hand[0][1], "zzzz"]}},
                   "card_not_in_hand")


def test_5_3_2_5_double_set_deals_4_per_attacked_table_and_the_extra_cards_burn():
    state = fresh(pools={0: "2c 3d Ac Ad"}, table_decks={B: "2h 7d 9h  Js 4s"})
    state, _ = use(state, 0, "double_set")
    state, _ = use(state, 1, "double_set")
    state, _ = finish_phase(state, orders({0: [B], 1: []}))
    state, _ = finish_phase(state, {1: {"type": "defend", "lands": [B]}})
    assert state.phase == ASSIGN
    assert len(state.pools[0]) == 4 and 1 not in state.pools  # the defender: 2, nothing to choose
    assert prompt_of(state, 0) is not None and prompt_of(state, 1) is None
    pool = state.pools[0]
    assert_illegal(state, 0, {"type": "assign", "hands": {str(B): [d[1] for d in pool]}}, "bad_hand")
    state, events = GAME.apply(state, 0, {"type": "assign", "hands": {str(B): [pool[2][1], pool[3][1]]}})
    burned = next(e for e in events if e.type == "hands_set").data["burned"]
    assert burned == [pool[0][1], pool[1][1]]
    assert [card_name(d[0]) for d in state.battles[B].hands[0]] == ["Ac", "Ad"]
    assert not state.pools


def test_2_1_cap_of_7_battles_with_double_set_or_double_hand():
    near = sorted(range(BOARD.size), key=lambda land: BOARD.distance[A][land])
    owned: list[int] = []  # scattered lands (no two adjacent): a wide frontier
    for land in near[:-1]:
        if not any(other in BOARD.neighbours[land] for other in owned):
            owned.append(land)
    for special_id in ("double_set", "double_hand"):
        state = position(options={"loadouts": [ALL, ALL]}, owner={**{land: 0 for land in owned}, near[-1]: 1},
                         mana=[40, 10])
        targets = GAME.view(state, 0)["you"]["attackable"]
        assert len(targets) >= 8, targets
        GAME.apply(state, 0, {"type": "orders", "attack": targets[:8]})  # 8 is fine without
        with_it, _ = use(state, 0, special_id)
        assert GAME.view(with_it, 0)["you"]["max_battles"] == 7
        assert_illegal(with_it, 0, {"type": "orders", "attack": targets[:8]}, "too_many_battles")
        GAME.apply(with_it, 0, {"type": "orders", "attack": targets[:7]})
        # activating it once 8 battles are on file this round is refused
        eight, _ = GAME.apply(state, 0, {"type": "orders", "attack": targets[:8]})
        assert_illegal(eight, 0, special(special_id), "too_many_battles")


# ---- 5.3.3 mana -----------------------------------------------------------------------------------

def _end_round(state):
    start = state.round
    events = []
    while state.round == start:
        state, ev = finish_phase(state)
        events += ev
    return state, events


def test_5_3_3_1_double_income_one_chosen_land_yields_2():
    state = fresh()
    assert_illegal(state, 0, special("double_income", land=B), "not_your_land")
    state, events = use(state, 0, "double_income", land=A)
    assert next(e for e in events if e.type == "special_used").data["land"] == A
    assert state.mana == [8, 10]
    state, events = _end_round(state)
    assert next(e for e in events if e.type == "income").data["mana"] == [10, 11]
    assert_illegal(state, 0, special("double_income", land=A), "already_active")


def test_5_3_3_2_full_double_income_all_lands_yield_2():
    state = fresh(owner={A: 0, N1: 0, B: 1}, mana=[12, 10])
    state, _ = use(state, 0, "full_double_income")
    assert state.mana[0] == 2
    state, events = _end_round(state)
    assert next(e for e in events if e.type == "income").data["mana"] == [6, 11]


def test_5_3_3_3_insurance_returns_the_stake_of_a_loss_at_the_final():
    plain, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd", options=BOTH)
    insured, _ = use(plain, 1, "insurance")
    for state, back in ((plain, 0), (insured, 3)):
        before = state.mana[1]
        state, _ = finish_phase(state)
        state, _ = finish_phase(state)
        assert state.battles[B].winner == 0 and state.battles[B].result == "final"
        assert state.battles[B].refunded[1] == back
        assert state.mana[1] == before - 2 + back  # the river paid, then the stake back
    # a fold is not covered
    state, _ = finish_phase(insured, decide({1: [B]}))
    assert state.battles[B].refunded[1] == 1


def test_5_3_3_4_free_fold_returns_the_whole_stake_of_a_fold():
    plain, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd", options=BOTH)
    free, _ = use(plain, 1, "free_fold")
    for state, back in ((plain, 1), (free, 3)):
        state, _ = finish_phase(state)  # both stay at the turn
        state, _ = finish_phase(state, decide({1: [B]}))  # fold at the river: stake 1 + 2
        assert state.battles[B].refunded[1] == back
    # a technical fold returns nothing
    poor, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd", mana=(10, 6), options=BOTH)
    poor, _ = use(poor, 1, "free_fold")
    assert poor.mana[1] == 0
    poor, _ = finish_phase(poor)
    assert poor.battles[B].status[1] == "out_river" and poor.battles[B].refunded[1] == 0


# ---- bots (issue 12 item 4) ---------------------------------------------------------------------

def test_5_choose_loadout_brings_owned_useful_specials_only():
    from app.games.conquest.bots import choose_loadout

    assert choose_loadout([]) == []
    assert choose_loadout(["double_set", "nope", "scout", "scout", "free_fold"]) == ["free_fold", "scout", "double_set"]
    assert choose_loadout(ALL, max_specials=3) == ["free_fold", "insurance", "double_income"]
    assert len(choose_loadout(ALL)) == 4 and set(choose_loadout(ALL, seed=5)) <= set(ALL)
    assert choose_loadout(ALL, seed=5) == choose_loadout(ALL, seed=5)


def test_5_sensible_bot_activates_affordable_specials_and_plays_its_joker_and_double_hand():
    from app.games.conquest.bots import SensibleBot, choose_loadout

    from .support import play

    seen: dict[int, list[str]] = {0: [], 1: []}
    kept = []

    def record(state, seat, action, events):
        if action.get("type") == "special":
            seen[seat].append(action["special"])
        if action.get("keep"):
            kept.append(seat)
        for mana in state.mana:
            assert mana >= 0

    loadout = choose_loadout(["joker", "double_hand", "free_fold", "scout", "big_brother"], max_specials=4)
    assert loadout == ["free_fold", "scout", "joker", "double_hand"]
    final = play(2, b"bot-specials", [SensibleBot(1, samples=10), SensibleBot(2, samples=10)], on_step=record,
                 options={"loadouts": [loadout, []], "starting_mana": 40, "max_rounds": 8})
    assert GAME.outcome(final) is not None
    assert seen[1] == []  # nothing brought, nothing used
    assert {"free_fold", "scout", "joker", "double_hand"} <= set(seen[0]), seen[0]
    assert 0 in kept  # the best 2 of 4 chosen at the river


def test_5_3_1_1_bots_attack_shielded_tables_only_when_they_can_pay_the_shield():
    from app.games.conquest.bots import RandomBot, SensibleBot

    from .support import wire_prompt

    state = fresh(mana=[6, 20])
    state, _ = use(state, 1, "shield", land=B, mana=10)
    for bot in [SensibleBot(1, samples=5)] + [RandomBot(seed, special_chance=0) for seed in range(30)]:
        action = bot.decide(GAME.view(state, 0), wire_prompt(prompt_of(state, 0)))
        assert action["type"] == "orders"
        GAME.apply(state, 0, action)  # never not_enough_mana
        assert B not in action["attack"]


# ---- the contract with specials: bad input, purity, determinism ----------------------------------

def _junk_special(rng, state) -> dict:
    from .test_contract import _JUNK

    action = {"type": rng.choice(["special", "special", "special", "decide"])}
    if action["type"] == "decide":
        action["folds"] = []
        tokens = [d[1] for b in state.battles.values() for hand in b.hands.values() for d in hand] or ["zz"]
        action["keep"] = rng.choice(_JUNK + [{str(land): rng.sample(tokens, min(len(tokens), rng.randrange(0, 4)))
                                              for land in rng.sample(range(state.board.size), 2)}])
        return action
    action["special"] = rng.choice(ALL + [None, 3, "", "scout ", ["scout"]])
    for field in ("land", "mana", "card"):
        if rng.random() < 0.7:
            value = rng.choice(_JUNK + list(range(-2, state.board.size + 2)))
            if field == "card" and rng.random() < 0.5:
                tokens = [d[1] for b in state.battles.values() for hand in b.hands.values() for d in hand] or ["zz"]
                value = rng.choice(tokens)
            action[field] = value
    return action


def test_5_fuzz_special_actions_only_illegal_action_and_state_unchanged():
    import random

    from app.games.base import IllegalAction
    from app.games.conquest.bots import RandomBot

    from .support import snapshot, wire_prompt

    rng = random.Random(12)
    bots = [RandomBot(5, special_chance=0.3), RandomBot(6, special_chance=0.3), RandomBot(7)]
    state = GAME.setup(3, {"loadouts": [ALL, ALL[:7], []], "starting_mana": 30, "max_rounds": 6}, b"fuzz-specials")
    tried = accepted = 0
    while GAME.outcome(state) is None:
        before = snapshot(state)
        for _ in range(8):
            try:
                GAME.apply(state, rng.choice([-1, 0, 1, 2, 3, None]), _junk_special(rng, state))
                accepted += 1
            except IllegalAction as exc:
                assert exc.code and exc.code.replace("_", "").isalpha()
            tried += 1
        assert snapshot(state) == before  # neither a refused nor an accepted try changed it
        prompt = next(p for p in GAME.prompts(state) if not p.submitted)
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire_prompt(prompt))
        state, _ = GAME.apply(state, prompt.seat, action)
    assert tried > 300 and accepted > 0
    assert_illegal(state, 0, special("loyalty"), "match_over")


def test_5_same_seed_same_actions_same_match_with_specials_and_views_never_mutate():
    from app.games.base import ADMIN
    from app.games.conquest.bots import RandomBot, SensibleBot

    from .support import snapshot, wire_prompt

    options = {"loadouts": [ALL, ALL, ALL], "starting_mana": 40, "max_rounds": 6}
    bots = [RandomBot(1, special_chance=0.4), SensibleBot(2, samples=10), RandomBot(3, special_chance=0.4)]
    state = GAME.setup(3, options, b"determinism-specials")
    log = []
    while GAME.outcome(state) is None:
        prompt = next(p for p in GAME.prompts(state) if not p.submitted)
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire_prompt(prompt))
        before = snapshot(state)
        new, _ = GAME.apply(state, prompt.seat, action)
        for viewer in (0, 1, 2, SPECTATOR, ADMIN):
            GAME.view(state, viewer)
        assert snapshot(state) == before  # apply and view never change their input
        log.append((prompt.seat, action))
        state = new
    assert any(action["type"] == "special" for _, action in log)
    runs = []
    for _ in range(2):
        replay = GAME.setup(3, options, b"determinism-specials")
        trail = []
        for seat, action in log:
            replay, events = GAME.apply(replay, seat, action)
            trail.append(json.dumps([(e.to_wire(), sorted(e.audience or ())) for e in events], sort_keys=True))
        runs.append((snapshot(replay), trail, json.dumps(GAME.view(replay, ADMIN))))
    assert runs[0] == runs[1] and runs[0][0] == snapshot(state)
