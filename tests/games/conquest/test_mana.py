"""Mana is a whole number >= 0 (conquest.md 1.4), specials at any moment included: orders and
defences are charged when their phase ends, so what a submission will cost is reserved when it is
submitted, and a special may spend only the rest; a shield put on a table after the attack on it
was ordered is charged to the attacker only if it can pay it, else that attack is withdrawn
(5.3.1.1, seed §5.3.1.1.2: the shield's price is paid before acting)."""
from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.games.base import IllegalAction
from app.games.conquest import GAME, SPECIALS

from ..test_conformance import sample
from .support import assert_illegal, finish_phase, orders, position
from .test_battle import N1, N2, A, B


def special(name: str, **fields: Any) -> dict[str, Any]:
    return {"type": "special", "special": name, **fields}


def fresh(**kwargs: Any):
    kwargs.setdefault("options", {"loadouts": [list(SPECIALS), list(SPECIALS)]})
    kwargs.setdefault("owner", {A: 0, B: 1})
    return position(**kwargs)


# ---- the two seeded examples ------------------------------------------------------------

def test_1_4_an_attack_on_file_holds_its_mana_so_loyalty_is_refused_and_mana_stays_0_or_more():
    """3 mana, one attack ordered (1), then loyalty (3): refused, 2 are free. Before, it was paid
    and the seat ended at -1 with the undefended land passed to it anyway."""
    state = fresh(mana=[3, 10])
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [B]})
    assert GAME.view(state, 0)["you"]["reserved"] == 1
    assert_illegal(state, 0, special("loyalty"), "not_enough_mana")
    try:
        GAME.apply(state, 0, special("loyalty"))
    except IllegalAction as exc:
        assert "held for your submission" in exc.message
    # what is free can still be spent: hound costs 2
    state, _ = GAME.apply(state, 0, special("hound"))
    assert state.mana[0] == 1 and GAME.view(state, 0)["you"]["reserved"] == 1
    state, events = finish_phase(state, {1: {"type": "orders", "attack": []}})
    assert state.mana[0] == 0  # the attack paid: 3 - 2 - 1
    assert all(m >= 0 for e in events if "mana" in e.data for m in e.data["mana"])


def test_1_4_withdrawing_the_orders_frees_their_mana():
    state = fresh(mana=[3, 10])
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [B]})
    assert_illegal(state, 0, special("loyalty"), "not_enough_mana")
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": []})  # replaced: nothing held
    assert GAME.view(state, 0)["you"]["reserved"] == 0
    state, _ = GAME.apply(state, 0, special("loyalty"))
    assert state.mana[0] == 0
    # and orders that no longer fit are refused, as at any time
    assert_illegal(state, 0, {"type": "orders", "attack": [B]}, "not_enough_mana")


def test_5_3_1_1_a_shield_put_after_the_attack_that_the_attacker_cannot_pay_withdraws_the_attack():
    """Seat 0 (2 mana) orders an attack on B; then seat 1 shields B with 5. Before, seat 0 was
    charged 1 + 5 and went from 2 to -4. Now the attack is withdrawn and costs nothing."""
    state = fresh(mana=[2, 10])
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [B]})
    state, _ = GAME.apply(state, 1, special("shield", land=B, mana=5))
    assert state.mana == [2, 5]
    state, events = finish_phase(state, {1: {"type": "orders", "attack": []}})
    assert next(e for e in events if e.type == "activations").data["mana"] == [2, 5]
    assert B not in state.attacks and state.owner[B] == 1
    withdrawn = [e for e in events if e.type == "attacks_withdrawn"]
    assert [(e.data, e.audience) for e in withdrawn] == [
        ({"seat": 0, "lands": [B], "reason": "shield"}, frozenset({0}))]  # only the attacker is told
    activations = next(e for e in events if e.type == "activations")
    assert activations.data["attacks"] == [] and activations.audience is None


def test_5_3_1_1_a_shield_put_after_the_attack_is_charged_when_the_attacker_can_pay_it():
    state = fresh(mana=[10, 10])
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [B, N1]})
    state, _ = GAME.apply(state, 1, special("shield", land=B, mana=5))
    state, events = finish_phase(state, {1: {"type": "orders", "attack": []}})
    assert state.mana[0] == 10 - 1 - 5 - 1 and set(state.attacks) == {B, N1}
    assert not [e for e in events if e.type == "attacks_withdrawn"]


def test_5_3_1_1_an_attack_ordered_knowing_the_shield_is_never_the_one_withdrawn():
    """Seat 0 (8 mana) orders B, shielded with 5 (1 + 5), and N1 (1): 7 held. Seat 1, which holds N1
    too, then shields N1 with 3: only N1's new 3 is in question; B's known price is charged."""
    state = fresh(mana=[8, 20], owner={A: 0, B: 1, N1: 1})
    state, _ = GAME.apply(state, 1, special("shield", land=B, mana=5))
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [B, N1]})
    assert GAME.view(state, 0)["you"]["reserved"] == 7
    state, _ = GAME.apply(state, 1, special("shield", land=N1, mana=3))
    state, events = finish_phase(state, {1: {"type": "orders", "attack": []}})
    assert set(state.attacks) == {B} and state.mana[0] == 8 - 6
    assert next(e for e in events if e.type == "attacks_withdrawn").data["lands"] == [N1]


def test_1_4_a_defence_on_file_holds_its_mana_too():
    state = fresh(mana=[10, 4])
    state, _ = finish_phase(state, orders({0: [B], 1: [A]}))
    assert state.phase == "defence" and state.mana == [9, 3]
    state, _ = GAME.apply(state, 1, {"type": "defend", "lands": [B]})
    assert GAME.view(state, 1)["you"]["reserved"] == 1
    assert_illegal(state, 1, special("loyalty"), "not_enough_mana")  # 3 > 3 - 1
    state, _ = GAME.apply(state, 1, special("hound"))
    state, events = finish_phase(state, {0: {"type": "defend", "lands": []}})
    assert next(e for e in events if e.type == "defences").data["mana"] == [9, 0]


def test_1_4_scout_and_shield_count_what_is_held():
    state = fresh(mana=[3, 10])
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [N1, N2]})
    assert_illegal(state, 0, special("shield", land=A, mana=2), "not_enough_mana")
    state, _ = GAME.apply(state, 0, special("shield", land=A, mana=1))
    assert_illegal(state, 0, special("scout", land=N1), "not_enough_mana")
    assert state.mana[0] == 2


# ---- the property: fuzzed matches with specials at random moments ------------------------------

def _random_special(draw, state, seat: int) -> dict[str, Any]:
    loadout = state.loadout(seat) or list(SPECIALS)
    name = draw(st.sampled_from(loadout))
    action = special(name)
    if name in ("shield", "scout", "double_income") or (name == "joker" and draw(st.booleans())):
        action["land"] = draw(st.integers(0, state.board.size - 1))
    if name == "shield":
        action["mana"] = draw(st.integers(1, 10))
    if name == "joker" and "land" in action:
        battle = state.battles.get(action["land"])
        hand = battle.hands.get(seat, ()) if battle is not None else ()
        action["card"] = draw(st.sampled_from([t for _, t in hand])) if hand else "x"
    return action


def _check_mana(state, events) -> None:
    assert all(m >= 0 for m in state.mana), state.mana
    for event in events:
        mana = event.data.get("mana") if isinstance(event.data, dict) else None
        if isinstance(mana, list):
            assert all(m >= 0 for m in mana), (event.type, mana)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), seats=st.integers(2, 4), start=st.integers(0, 14), seed=st.binary(min_size=4, max_size=8))
def test_1_4_mana_is_never_below_0_after_any_action(data, seats, start, seed):
    """Random matches, every seat bringing every special, low starting mana; at every step a
    prompted seat's default, a sample of a seat's legal actions (specials on lands included) or a
    random special, from any living seat at any moment (including after it submitted). After every
    accepted action every seat's mana, and every mana list an event carries, is >= 0."""
    draw = data.draw
    state = GAME.setup(seats, {"starting_mana": start, "max_rounds": 6, "loadouts": [list(SPECIALS)] * seats},
                       seed)
    for _ in range(400):
        if GAME.outcome(state) is not None:
            break
        prompts = GAME.prompts(state)
        waiting = [p for p in prompts if not p.submitted]
        if not waiting:
            break
        roll = draw(st.integers(0, 9))
        seat = draw(st.sampled_from(range(seats)))
        if roll < 4:
            prompt = draw(st.sampled_from(waiting))
            seat, action = prompt.seat, dict(prompt.default_action)
        elif roll < 7:
            legal = GAME.legal_actions(state, seat)
            if not legal:
                continue
            kind = draw(st.sampled_from(legal))
            action = sample(__import__("random").Random(draw(st.integers(0, 2**16))), kind)
        else:
            action = _random_special(draw, state, seat)
        try:
            state, events = GAME.apply(state, seat, action)
        except IllegalAction:
            continue
        _check_mana(state, events)
        json.dumps([e.to_wire() for e in events])


def test_the_withdrawal_reads_as_words_in_the_web_client_and_the_cli():
    from app.client.wording import describe

    line = describe("conquest", {"type": "attacks_withdrawn", "seat": 0, "lands": [5, 7], "reason": "shield"},
                    ["Ann", "Bob"].__getitem__)
    assert line is not None and line.known and line.private
    assert line.text.startswith("Ann withdrew from L5") and "shield" in line.text and "_" not in line.text
