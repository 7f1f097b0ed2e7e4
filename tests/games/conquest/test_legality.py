"""Hold'em Conquest's public legality (``check_action``, ``can_act``, ``legal_actions``) with
specials in play (section 5): the conformance suite plays without loadouts."""
from __future__ import annotations

import pytest

from app.games.base import IllegalAction
from app.games.conquest import GAME, SPECIALS


def test_legal_actions_list_the_phase_action_and_the_specials_a_seat_can_activate():
    state = GAME.setup(2, {"loadouts": [["loyalty", "spy", "shield"], ["hound"]]}, b"legal" * 7)
    kinds = {seat: [(a.type, a.example.get("special")) for a in GAME.legal_actions(state, seat)] for seat in (0, 1)}
    # shield needs a land and an amount: its plain activation is not legal, so it is not listed
    assert kinds[0] == [("orders", None), ("special", "loyalty"), ("special", "spy")]
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
