"""Engine-level properties of Provinces: options, garbage input, bot matches, leaks (rules 6.1–6.3).
The generic contract checks (determinism, replay, purity, defaults legal) are in
``tests/games/test_conformance.py``."""
from __future__ import annotations

import json
import random

import pytest
from pydantic import ValidationError

from app.games.base import ADMIN, SPECTATOR, IllegalAction
from app.games.provinces import GAME, Options
from app.games.provinces.bots import GreedyBot, RandomBot, simulate
from app.games.provinces.state import IDENT, TOKEN

from .helpers import CLUSTER, build_position, check_no_leak, tokens


def wire_prompt(prompt) -> dict:
    return {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
            "submitted": prompt.submitted, "simultaneous": prompt.simultaneous}


def play(seats: int, seed: bytes, bot_kinds, options=None, on_step=None, max_steps=20000):
    """Play a bot match to its end; returns (final state, [(seat, action)], step count)."""
    state = GAME.setup(seats, options, seed)
    bots = [bot_kinds[i % len(bot_kinds)](i * 7919 + len(seed)) for i in range(seats)]
    log: list = []
    for _ in range(max_steps):
        if GAME.outcome(state) is not None:
            return state, log
        [prompt] = GAME.prompts(state)
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire_prompt(prompt))
        if action is None:
            action = dict(prompt.default_action)
        before = state
        state, events = GAME.apply(state, prompt.seat, action)  # bots only send legal actions
        log.append((prompt.seat, action))
        if on_step is not None:
            on_step(before, state, events)
    raise AssertionError("the match did not end")


def test_contract_attributes_and_options():
    assert (GAME.id, GAME.min_seats, GAME.max_seats) == ("provinces", 2, 6)
    assert Options().model_dump() == {"turn_seconds": 60, "max_rounds": 60, "tie_rule": "both_destroyed"}
    for bad in ({"turn_seconds": 1}, {"max_rounds": 0}, {"tie_rule": "attacker_wins"}, {"colour": 1}):
        with pytest.raises(ValidationError):
            Options(**bad)
    for seats in (1, 7):
        with pytest.raises(ValueError):
            GAME.setup(seats, None, b"x")
    assert GAME.setup(2, {"max_rounds": 3}, b"x").options.max_rounds == 3


def garbage_actions(rng: random.Random, state) -> list:
    """Malformed, hostile and near-legal actions for the seat to move."""
    n = state.board.size
    own = [p for p in range(n) if state.owners[p] == state.current] or [0]
    p = rng.choice(own)
    t = tokens(state, p)
    weird = [None, True, False, -1, 2**70, 1.5, "0", [], {}, [0], "x" * 10000, n, -n]
    choices = [
        None, 5, "end_turn", [], ["type"], {"type": None}, {"type": 7}, {"type": "ATTACK"}, {},
        {"type": "attack"}, {"type": "move"}, {"type": "sort"}, {"type": "set_dealing"},
        {"type": "attack", "from": p, "to": rng.choice(weird), "cards": t},
        {"type": "attack", "from": rng.choice(weird), "to": 0, "cards": t},
        {"type": "attack", "from": p, "to": rng.randrange(n), "cards": rng.choice(weird)},
        {"type": "attack", "from": p, "to": rng.randrange(n), "cards": t * 3},
        {"type": "attack", "from": p, "to": rng.randrange(n), "cards": ["a"] * 100000},
        {"type": "attack", "from": p, "to": rng.randrange(n), "cards": [[1], {"a": 1}]},
        {"type": "move", "from": p, "to": rng.randrange(n), "cards": t[:1] + t[:1]},
        {"type": "move", "from": p, "to": rng.choice(weird), "cards": rng.choice(weird)},
        {"type": "sort", "province": p, "order": list(reversed(t)) + ["x"]},
        {"type": "sort", "province": rng.choice(weird), "order": t},
        {"type": "sort", "province": p, "order": rng.choice(weird)},
        {"type": "sort", "province": p, "order": [1] * len(t)},
        {"type": "set_dealing", "mode": rng.choice(weird)},
        {"type": "set_dealing", "mode": "EVENLY"},
    ]
    return choices


def test_fuzz_garbage_actions_only_raise_illegal_action_and_leave_state_unchanged():
    rng = random.Random(1234)
    states = []
    play(4, b"fuzz", [RandomBot, GreedyBot], on_step=lambda before, after, events: states.append(before))
    for state in states[::3]:
        fingerprint = state.fingerprint()
        for action in garbage_actions(rng, state):
            for seat in (state.current, (state.current + 1) % state.seats, -1, 99, None, "0"):
                try:
                    new, events = GAME.apply(state, seat, action)
                except IllegalAction as err:
                    assert err.code and err.code.replace("_", "").isalpha() and err.code.islower()
                else:
                    # A few near-legal actions are legal: that must still leave the input untouched.
                    assert isinstance(events, list)
                assert state.fingerprint() == fingerprint


def test_fuzz_random_well_formed_actions():
    """Random attack/move/sort actions over real tokens and ids: legal or IllegalAction, never else."""
    rng = random.Random(99)
    state = GAME.setup(3, None, b"fuzz-2")
    applied = 0
    for _ in range(4000):
        if GAME.outcome(state) is not None:
            break
        n = state.board.size
        src = rng.randrange(n)
        t = tokens(state, src)
        kind = rng.choice(["attack", "move", "sort", "end_turn", "set_dealing"])
        if kind in ("attack", "move"):
            cards = rng.sample(t, rng.randint(0, len(t))) if t else []
            action = {"type": kind, "from": src, "to": rng.randrange(n), "cards": cards}
        elif kind == "sort":
            order = t[:]
            rng.shuffle(order)
            action = {"type": "sort", "province": src, "order": order}
        elif kind == "set_dealing":
            action = {"type": "set_dealing", "mode": rng.choice(["evenly", "randomly", "most_unevenly", "x"])}
        else:
            action = {"type": "end_turn"} if rng.random() < 0.3 else {"type": "sort", "province": -1, "order": []}
        fingerprint = state.fingerprint()
        try:
            new, events = GAME.apply(state, state.current, action)
        except IllegalAction:
            assert state.fingerprint() == fingerprint
            continue
        assert state.fingerprint() == fingerprint
        check_invariants(new)
        state = new
        applied += 1
    assert applied > 300


def check_invariants(state) -> None:
    decks = (state.seats + 1) // 2
    idents = list(state.shoe) + list(state.discard) + [c[IDENT] for g in state.garrisons for c in g]
    assert sorted(idents) == list(range(decks * 54))  # no card lost or duplicated
    assert all(len(g) <= 7 for g in state.garrisons)
    board_tokens = [c[TOKEN] for g in state.garrisons for c in g]
    assert len(set(board_tokens)) == len(board_tokens)


@pytest.mark.parametrize("seed", range(12))
def test_bot_matches_terminate_with_an_outcome(seed):
    seats = 2 + seed % 5
    kinds = [[RandomBot], [GreedyBot], [RandomBot, GreedyBot]][seed % 3]
    options = Options(max_rounds=20 + seed, tie_rule="defender_wins" if seed % 2 else "both_destroyed")
    final, log = play(seats, b"bots-%d" % seed, kinds, options=options)
    outcome = GAME.outcome(final)
    assert outcome is not None and sorted(outcome.ranks) == list(range(seats))
    assert min(outcome.ranks.values()) == 1
    assert GAME.prompts(final) == []
    assert GAME.view(final, 0)["outcome"] == outcome.to_wire()
    check_invariants(final)


@pytest.mark.parametrize("seed", range(6))
def test_leak_no_hidden_token_in_any_view_or_event(seed):
    seats = 2 + seed % 5
    steps = []

    def on_step(before, after, events):
        check_no_leak(before, after, events, seats)
        steps.append(1)

    play(seats, b"leak-%d" % seed, [RandomBot, GreedyBot], options=Options(max_rounds=10), on_step=on_step)
    assert steps


def test_leak_jokers_everywhere():
    """A position full of jokers, played out by random bots, never leaks one."""
    garrisons = [["joker", "A", "joker"], ["2", "joker"], ["joker", "K", "3"], ["joker"], ["5", "joker", "joker"]]
    for n in range(10):
        state = build_position(cells=CLUSTER, owners=[0, 1, 1, 0, 1], garrisons=garrisons,
                               shoe=["joker", "4", "joker", "9"] * 6, seed=b"jokers-%d" % n,
                               options=Options(max_rounds=8))
        bots = [RandomBot(n), RandomBot(n + 100)]
        while GAME.outcome(state) is None:
            [prompt] = GAME.prompts(state)
            action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire_prompt(prompt))
            new, events = GAME.apply(state, prompt.seat, action or {"type": "end_turn"})
            check_no_leak(state, new, events, 2)
            state = new


def test_views_are_plain_json_and_admin_marks_hidden():
    state = build_position(cells=CLUSTER, owners=[0, 1, 1, 0, 1],
                           garrisons=[["joker", "A"], ["2"], [], ["3"], ["joker"]])
    for viewer in (0, 1, SPECTATOR, ADMIN):
        view = GAME.view(state, viewer)
        assert json.loads(json.dumps(view)) == view
        assert view["phase"] == "turn" and view["phase_id"] == 1 and view["current_seat"] == 0
        assert view["seat_order"] == [0, 1] and len(view["provinces"]) == 5
        assert {"q", "r", "adjacent", "owner", "garrison", "size"} <= set(view["provinces"][0])
    admin = GAME.view(state, ADMIN)
    hidden = [c["id"] for p in admin["provinces"] for c in p["garrison"] if c.get("hidden")]
    assert set(hidden) == GAME.hidden_tokens(state, SPECTATOR)
    assert GAME.view(state, 0)["dealing_mode"] == "evenly"


def test_bot_simulation_matches_the_golden_example():
    assert simulate([11, 9, 2], [7, 6, 5, 6, 7], "both_destroyed") == (True, 2)
    assert simulate([2], [3], "both_destroyed") == (False, 0)
    assert simulate([None], [14, 14], "both_destroyed") == (True, 1)


def test_bots_wait_when_not_their_turn_and_always_end_turn():
    state = GAME.setup(2, None, b"wait")
    [prompt] = GAME.prompts(state)
    other = 1 - prompt.seat
    for bot in (RandomBot(1), GreedyBot(1)):
        assert bot.decide(GAME.view(state, other), {**wire_prompt(prompt), "seat": other}) is None
    bot = GreedyBot(3)
    for _ in range(100):
        action = bot.decide(GAME.view(state, prompt.seat), wire_prompt(prompt))
        if action == {"type": "end_turn"}:
            break
        state, _ = GAME.apply(state, prompt.seat, action)
    else:
        raise AssertionError("GreedyBot never ended its turn")


def test_action_limit_per_turn_keeps_end_turn_legal():
    from app.games.provinces.state import MAX_ACTIONS_PER_TURN

    state = build_position(cells=[(0, 0), (1, 0)], owners=[0, 1], garrisons=[["2", "3"], ["4"]])
    for _ in range(MAX_ACTIONS_PER_TURN):
        state, _ = GAME.apply(state, 0, {"type": "set_dealing", "mode": "evenly"})
    with pytest.raises(IllegalAction) as err:
        GAME.apply(state, 0, {"type": "set_dealing", "mode": "evenly"})
    assert err.value.code == "action_limit"
    state, _ = GAME.apply(state, 0, {"type": "end_turn"})
    assert state.current == 1 and state.actions == 0


