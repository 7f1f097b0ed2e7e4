"""Hold'em Conquest specifics of the game contract: its bad inputs, simultaneous submissions,
prompts and defaults, options, and seeded bot matches that always end. The generic contract checks
(determinism, replay, purity, filtered views, outcomes) are in ``tests/games/test_conformance.py``."""
from __future__ import annotations

import json
import random
from typing import Any

import pytest
from pydantic import ValidationError

from app.games.base import ADMIN, SPECTATOR, IllegalAction
from app.games.conquest import GAME
from app.games.conquest.bots import RandomBot, SensibleBot
from app.games.conquest.state import ASSIGN, DEFENCE, ORDERS, TURN

from .support import (
    assert_illegal,
    board_of,
    finish_phase,
    fork,
    orders,
    play,
    position,
    snapshot,
)
from .test_battle import COMMON, N1, N2, A, B, duel

_JUNK: list = [None, True, False, -1, 0, 1, 7, 99, 10 ** 30, 1.5, "", "0", "x" * 13, [], [None], [True], [-1],
         [0, 0], list(range(100)), {}, {"0": []}, {"a": 1}, [[1]], "aaaaaaaaaaaa"]


def _junk_action(rng: random.Random, state) -> object:
    kind = rng.choice(["orders", "defend", "assign", "decide", "nope", None, 3, ""])
    if rng.random() < 0.05:
        return rng.choice([None, [], "orders", 5, {"type": ["orders"]}])
    action = {"type": kind}
    for field in ("attack", "lands", "folds", "hands"):
        if rng.random() < 0.6:
            value: Any = rng.choice(_JUNK)
            if rng.random() < 0.3:
                value = [rng.randrange(-3, state.board.size + 3) for _ in range(rng.randrange(0, 5))]
            if field == "hands" and rng.random() < 0.5:
                pool = [d[1] for pool in state.pools.values() for d in pool] or ["zzzzzzzzzzzz"]
                value = {rng.choice(["0", "1", "5", "-1", "x", 3]):
                         rng.sample(pool, min(len(pool), rng.randrange(0, 4)))
                         for _ in range(rng.randrange(0, 4))}
            action[field] = value
    return action


def test_fuzz_only_illegal_action_and_state_unchanged():
    rng = random.Random(2024)
    bots = [RandomBot(5), RandomBot(6), RandomBot(7)]
    state = GAME.setup(3, None, b"fuzz")
    tried = accepted = 0
    while GAME.outcome(state) is None:
        before = snapshot(state)  # a change by any of the tries would still show after them
        for _ in range(10):
            action = _junk_action(rng, state)
            seat = rng.choice([-2, -1, 0, 1, 2, 3, 9, None, "0"])
            try:
                GAME.apply(state, seat, action)
                accepted += 1
            except IllegalAction as exc:
                assert exc.code and exc.code.replace("_", "").isalpha()
            tried += 1
        assert snapshot(state) == before
        prompt = next(p for p in GAME.prompts(state) if not p.submitted)
        wire = {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
                "submitted": False, "simultaneous": True}
        state, _ = GAME.apply(state, prompt.seat, bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire))
    assert tried > 500
    # after the end, everything is refused
    assert_illegal(state, 0, {"type": "orders", "attack": []}, "match_over")


def test_simultaneous_submissions_are_all_kept_and_replaceable():
    board = board_of(3)
    x, a, c = fork(board)
    spare = next(ld for ld in range(board.size) if ld not in (x, a, c)
                 and ld not in board.neighbours[a] and ld not in board.neighbours[c])
    state = position(seats=3, owner={a: 0, c: 1, spare: 2})
    other = next(n for n in board.neighbours[a] if n != x and state.owner[n] == -1)
    phase_id = state.phase_id
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [other]})
    state, _ = GAME.apply(state, 1, {"type": "orders", "attack": [x]})
    assert state.phase == ORDERS and state.phase_id == phase_id
    assert set(state.submissions) == {0, 1}
    assert [p.submitted for p in GAME.prompts(state)] == [True, True, False]
    state, _ = GAME.apply(state, 0, {"type": "orders", "attack": [x]})  # replaces the first
    assert GAME.view(state, 0)["you"]["submission"] == {"type": "orders", "attack": [x]}
    assert GAME.view(state, 1)["you"]["submission"] == {"type": "orders", "attack": [x]}
    state, events = finish_phase(state, {2: {"type": "orders", "attack": []}})
    activations = next(e for e in events if e.type == "activations")
    assert activations.data["attacks"] == [{"land": x, "attackers": [0, 1]}]
    assert activations.data["mana"] == [9, 9, 10]  # paid once, for the final submission


def test_bad_input_each_has_a_code_and_leaves_state_unchanged():
    state = position(owner={A: 0, B: 1}, mana=[2, 10])
    far = next(ld for ld in range(state.board.size) if state.board.distance[A][ld] >= 2 and ld != B)
    assert_illegal(state, 0, {"type": "orders", "attack": [far]}, "not_adjacent")
    assert_illegal(state, 0, {"type": "orders", "attack": [A]}, "own_land")
    assert_illegal(state, 0, {"type": "orders", "attack": [N1, N2, COMMON]}, "not_enough_mana")
    assert_illegal(state, 0, {"type": "decide", "folds": []}, "fold_before_paid")
    assert_illegal(state, 0, {"type": "orders", "attack": [N1, N1]}, "duplicate_land")
    assert_illegal(state, 0, {"type": "orders", "attack": [-1]}, "unknown_land")
    assert_illegal(state, 0, {"type": "orders", "attack": ["1"]}, "malformed_action")
    assert_illegal(state, 0, {"type": "orders"}, "malformed_action")
    assert_illegal(state, 0, {"type": "orders", "attack": list(range(200))}, "malformed_action")
    assert_illegal(state, 0, {"type": "defend", "lands": []}, "wrong_phase")
    assert_illegal(state, 0, {"type": "cheat"}, "unknown_action")
    assert_illegal(state, 0, ["orders"], "malformed_action")
    assert_illegal(state, 5, {"type": "orders", "attack": []}, "no_prompt")
    # acting for a seat that has no prompt (defence belongs to seat 1 only)
    state, _ = finish_phase(state, orders({0: [B], 1: []}))
    assert state.phase == DEFENCE
    assert_illegal(state, 0, {"type": "defend", "lands": []}, "no_prompt")
    # assign: a card not in one's pool, or one left unassigned
    two = position(owner={A: 0, B: 1})
    two, _ = finish_phase(two, orders({0: [N1, N2], 1: []}))
    assert two.phase == ASSIGN
    pool = [d[1] for d in two.pools[0]]
    low, high = sorted([N1, N2])
    assert_illegal(two, 0, {"type": "assign", "hands": {str(low): pool[:2], str(high): [pool[2], "abcdefghijkl"]}},
                   "card_not_in_pool")
    assert_illegal(two, 0, {"type": "assign", "hands": {str(low): pool[:2]}}, "missing_hand")
    assert_illegal(two, 1, {"type": "assign", "hands": {}}, "no_prompt")


def test_prompts_share_phase_id_and_defaults_end_the_phase():
    for n in range(8):
        rng = random.Random(n)
        state = GAME.setup(2 + n % 3, None, b"defaults-%d" % n)
        bots = [RandomBot(n * 7 + k) for k in range(state.seats)]
        seen = set()
        while GAME.outcome(state) is None:
            prompts = GAME.prompts(state)
            assert prompts and len({p.phase_id for p in prompts}) == 1
            assert prompts[0].phase_id not in seen or state.phase_id == prompts[0].phase_id
            seen.add(prompts[0].phase_id)
            if rng.random() < 0.3:  # the deadline passes: defaults for everyone who has not submitted
                phase_id = state.phase_id
                for p in prompts:
                    if not p.submitted:
                        state, _ = GAME.apply(state, p.seat, dict(p.default_action))
                assert state.phase_id != phase_id
                continue
            p = next(p for p in prompts if not p.submitted)
            wire = {"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "submitted": False, "simultaneous": True}
            state, _ = GAME.apply(state, p.seat, bots[p.seat].decide(GAME.view(state, p.seat), wire))
        assert GAME.prompts(state) == []


@pytest.mark.parametrize("n", range(24))
def test_random_bot_matches_end_with_an_outcome(n):
    seats = 2 + n % 3
    final = play(seats, b"bots-%d" % n, [RandomBot(n * 10 + k) for k in range(seats)])
    result = GAME.outcome(final)
    assert result is not None and set(result.ranks) == set(range(seats))
    assert min(result.ranks.values()) == 1


@pytest.mark.parametrize("n", range(6))
def test_sensible_bot_matches_end_with_an_outcome(n):
    seats = 2 + n % 3
    bots = [SensibleBot(n * 10 + k, samples=30) for k in range(seats)]
    final = play(seats, b"sensible-%d" % n, bots)
    assert GAME.outcome(final) is not None


def test_sensible_bot_beats_random_bots_more_often_than_not():
    wins = 0
    for n in range(10):
        bots = [SensibleBot(n, samples=30), RandomBot(100 + n)]
        if n % 2:
            bots.reverse()
        final = play(2, b"duel-%d" % n, bots)
        sensible_seat = 0 if n % 2 == 0 else 1
        wins += GAME.outcome(final).ranks[sensible_seat] == 1
    assert wins >= 6


def test_sensible_bot_folds_a_hopeless_hand_and_keeps_a_strong_one():
    state, _ = duel("2c 7d 9h  Js 4s", "3d8s", "AcAd")
    bot0, bot1 = SensibleBot(1, samples=200), SensibleBot(2, samples=200)
    wire = {"kind": "decision", "phase_id": state.phase_id, "submitted": False, "simultaneous": True}
    weak = bot0.decide(GAME.view(state, 0), {**wire, "seat": 0})
    strong = bot1.decide(GAME.view(state, 1), {**wire, "seat": 1})
    assert weak == {"type": "decide", "folds": [B]}
    assert strong == {"type": "decide", "folds": []}


def test_bots_return_none_once_submitted():
    state = GAME.setup(2, None, b"none")
    wire = {"seat": 0, "kind": "orders", "phase_id": state.phase_id, "submitted": True, "simultaneous": True}
    assert RandomBot(1).decide(GAME.view(state, 0), wire) is None
    assert SensibleBot(1).decide(GAME.view(state, 0), wire) is None


def test_options_have_defaults_and_bounds():
    opts = GAME.Options()
    assert (opts.starting_mana, opts.tables_to_win, opts.max_rounds, opts.phase_seconds,
            opts.decision_seconds) == (10, 10, 60, 60, 20)
    for bad in ({"phase_seconds": 1}, {"decision_seconds": 0}, {"max_rounds": 0}, {"starting_mana": -1},
                {"tables_to_win": 99}, {"unknown": 1}):
        with pytest.raises(ValidationError):
            GAME.Options(**bad)
    assert set(GAME.Options.model_json_schema()["properties"]) == {
        "starting_mana", "tables_to_win", "max_rounds", "phase_seconds", "decision_seconds",
        "loadouts", "special_costs"}  # the last two are filled by the server (section 5)


def test_views_are_json_and_carry_phase():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    for viewer in (0, 1, SPECTATOR, ADMIN):
        view = json.loads(json.dumps(GAME.view(state, viewer)))
        assert view["phase"] == TURN and view["phase_id"] == state.phase_id
    admin = GAME.view(state, ADMIN)
    hands = {p["seat"]: p["hand"] for p in admin["battles"][0]["participants"]}
    assert all(card["hidden"] is True and card["card"] for card in hands[0] + hands[1])
