"""Hold'em Conquest's public legality (``check_action``, ``can_act``, ``legal_actions``) with
specials in play (section 5): the conformance suite plays without loadouts."""
from __future__ import annotations

import pytest

from app.games.base import IllegalAction
from app.games.conquest import GAME, SPECIALS


def test_legal_actions_list_the_phase_action_and_the_specials_a_seat_can_activate():
    state = GAME.setup(2, {"loadouts": [["loyalty", "spy", "shield"], ["hound"]]}, b"legal" * 7)
    kinds = {seat: [(a.type, a.example.get("special")) for a in GAME.legal_actions(state, seat)] for seat in (0, 1)}
    # shield is listed with the lands it may go on and the amounts the seat can pay
    assert kinds[0] == [("orders", None), ("special", "loyalty"), ("special", "spy"), ("special", "shield")]
    assert kinds[1] == [("orders", None), ("special", "hound")]
    orders = GAME.legal_actions(state, 0)[0]
    assert orders.domains["attack"]["subset_of"] == list(state.targets[0])
    for seat in (0, 1):
        for legal in GAME.legal_actions(state, seat):
            GAME.check_action(state, seat, legal.example)
            assert GAME.can_act(state, seat, legal.example)
    after, _ = GAME.apply(state, 0, {"type": "special", "special": "loyalty"})
    assert ("special", "loyalty") not in [(a.type, a.example.get("special")) for a in GAME.legal_actions(after, 0)]


def test_check_action_raises_what_apply_raises_and_changes_nothing():
    state = GAME.setup(2, {"loadouts": [list(SPECIALS)[:4], []]}, b"check" * 7)
    for seat, action, code in [
        (0, {"type": "special", "special": "joker"}, "not_in_loadout"),
        (1, {"type": "special", "special": "nope"}, "unknown_special"),
        (0, {"type": "decide", "folds": []}, "fold_before_paid"),
        (0, {"type": "orders", "attack": [0, 0]}, "duplicate_land"),
        (5, {"type": "orders", "attack": []}, "no_prompt"),
    ]:
        with pytest.raises(IllegalAction) as checked:
            GAME.check_action(state, seat, action)
        with pytest.raises(IllegalAction) as applied:
            GAME.apply(state, seat, action)
        assert checked.value.code == applied.value.code == code
        assert not GAME.can_act(state, seat, action)
    assert state.submissions == {} and state.active == {}


def _entry(state, seat, special):
    return next((a for a in GAME.legal_actions(state, seat)
                 if a.type == "special" and a.example.get("special") == special), None)


def test_legal_actions_list_the_uses_on_a_land_when_they_are_usable_now():
    """shield, scout and double_income need a land (shield an amount too): legal_actions lists them
    with exactly the lands (and amounts) legal now, so bots and clients that rely on it offer them."""
    from app.games.conquest.view import flop_visible

    state = GAME.setup(2, {"loadouts": [["shield", "scout", "double_income"], []], "starting_mana": 4},
                       b"lands" * 7)
    own = state.lands_of(0)
    shield, scout, double = (_entry(state, 0, s) for s in ("shield", "scout", "double_income"))
    assert shield is not None and scout is not None and double is not None
    assert shield.domains["land"] == own and shield.domains["mana"] == [1, 2, 3, 4]
    assert double.domains["land"] == own
    assert scout.domains["land"] == [land for land in range(state.board.size) if not flop_visible(state, land, 0)]
    for entry in (shield, scout, double):
        for land in entry.domains["land"]:
            for mana in entry.domains.get("mana", [None]):
                action = {**entry.example, "land": land} | ({"mana": mana} if mana else {})
                GAME.check_action(state, 0, action)
    # each use spends mana: with 1 mana left the shield offers 1 only, with 0 none of them is listed
    after, _ = GAME.apply(state, 0, {"type": "special", "special": "shield", "land": own[0], "mana": 3})
    assert _entry(after, 0, "shield") is None  # its only land is shielded now
    assert _entry(after, 0, "scout").domains["land"] and _entry(after, 0, "double_income") is None  # 2 > 1
    broke, _ = GAME.apply(after, 0, {"type": "special", "special": "scout", "land": scout.domains["land"][0]})
    assert broke.mana[0] == 0 and _entry(broke, 0, "scout") is None


def test_legal_actions_count_mana_held_for_the_orders_on_file():
    state = GAME.setup(2, {"loadouts": [["shield", "loyalty"], []], "starting_mana": 4}, b"held" * 8)
    target = state.targets[0][0]
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [target]})  # 1 held
    assert _entry(state, 0, "loyalty") is not None  # 3 <= 4 - 1
    assert _entry(state, 0, "shield").domains["mana"] == [1, 2, 3]
    state, _ = GAME.apply(state, 0, {"type": "special", "special": "loyalty"})
    assert _entry(state, 0, "shield") is None  # 0 free


def test_legal_actions_offer_setting_the_joker_on_a_live_hand():
    from .support import finish_phase

    state = GAME.setup(2, {"loadouts": [["joker"], []], "starting_mana": 20}, b"joker" * 7)
    assert _entry(state, 0, "joker").example == {"type": "special", "special": "joker"}  # activation only
    state, _ = finish_phase(state, {0: {"type": "orders", "attack": [state.targets[0][0]]}})
    while state.phase not in ("turn", "over"):
        state, _ = finish_phase(state)
    assert state.phase == "turn"
    entry = _entry(state, 0, "joker")
    land = entry.example["land"]
    assert entry.domains["land"] == [land] and entry.example["card"] in entry.domains["card"]["by_land"][str(land)]
    GAME.check_action(state, 0, entry.example)
    for card in entry.domains["card"]["by_land"][str(land)]:
        GAME.check_action(state, 0, {**entry.example, "card": card})
