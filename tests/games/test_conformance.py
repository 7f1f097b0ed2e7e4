"""One conformance suite for every game (the contract in ``app/games/base.py``).

The games come from one list: every game of the registry (``app.games.GAME_MODULES``) plus the toy
game of ``tests/games/toy_game.py``, which shows that a new game gets all of it by being listed.
Checked for each: metadata as data; determinism from the seed; replay equality (the same actions on a
fresh setup give the same views and events); every prompt's default action legal through the public
legality API (``check_action`` / ``can_act`` / ``legal_actions``) and every ``legal_actions``
example legal; views JSON-serialisable and filtered (no token of ``hidden_tokens`` in that viewer's
view or events); ``apply`` never mutates its input; illegal actions raise ``IllegalAction`` with a
snake_case code, the same as ``check_action``'s, and change nothing; outcomes well formed; random
play to the end from many seeds, in bounded time; the deadline defaults of a phase end it.
Game-specific rules stay in ``tests/games/<game>/``.
"""
from __future__ import annotations

import json
import pickle
import random
import re
from typing import Any

import pytest
from pydantic import BaseModel

from app.games import registry
from app.games.base import (
    ADMIN,
    SPECTATOR,
    Event,
    Game,
    GameInfo,
    IllegalAction,
    LegalAction,
    Outcome,
    Prompt,
)
from app.runtime.bots import bot_class

from . import toy_game

#: The games under test: the registry's, then the toy one (its module is not in ``GAME_MODULES``).
GAMES: list[Game[Any, Any]] = [*registry().values(), toy_game.GAME]
ids = [game.info.id for game in GAMES]
CODE = re.compile(r"^[a-z][a-z0-9_]*$")
#: a bound on one random match (a match that does not end within it fails the suite)
MAX_STEPS = 6000


def viewers(state_seats: int) -> list[int]:
    return [*range(state_seats), SPECTATOR, ADMIN]


def frozen(state: Any) -> bytes:
    """A byte image of a state (to see that nothing changed it)."""
    return pickle.dumps(state)


def views_of(game: Game[Any, Any], state: Any, seats: int) -> str:
    return json.dumps([game.view(state, v) for v in viewers(seats)], sort_keys=True)


def wire_events(events: list[Event]) -> str:
    return json.dumps([(e.to_wire(), sorted(e.audience) if e.audience is not None else None) for e in events],
                      sort_keys=True)


def sample(rng: random.Random, legal: LegalAction) -> dict[str, Any]:
    """A random action of the kind ``legal`` from its domains (the example where a domain is opaque)."""
    action = dict(legal.example)
    for name, domain in legal.domains.items():
        if isinstance(domain, list) and domain:
            action[name] = rng.choice(domain)
        elif isinstance(domain, dict) and "subset_of" in domain:
            pool = list(domain["subset_of"])
            low = domain.get("min", 1)
            high = min(domain.get("max", len(pool)), len(pool))
            if low <= high:
                action[name] = rng.sample(pool, rng.randint(low, high))
        elif isinstance(domain, dict) and "permutation_of" in domain:
            order = list(domain["permutation_of"])
            rng.shuffle(order)
            action[name] = order
    return action


def assert_no_leak(game: Game[Any, Any], state: Any, events: list[Event], seats: int) -> None:
    """No token ``viewer`` must not see is in its view or in an event it receives."""
    for viewer in viewers(seats):
        hidden = game.hidden_tokens(state, viewer)
        text = json.dumps(game.view(state, viewer))
        visible = json.dumps([e.to_wire() for e in events if e.visible_to(viewer)])
        for token in hidden:
            assert token not in text, (game.info.id, viewer, token)
            assert token not in visible, (game.info.id, viewer, token)


def check_prompts(game: Game[Any, Any], state: Any, seats: int) -> list[Prompt]:
    prompts = game.prompts(state)
    assert len({p.seat for p in prompts}) == len(prompts)
    for prompt in prompts:
        assert 0 <= prompt.seat < seats
        assert prompt.kind in game.info.phases, (prompt.kind, game.info.phases)
        assert prompt.deadline_seconds > 0
        assert len({p.phase_id for p in prompts}) == 1
        if not prompt.submitted:
            game.check_action(state, prompt.seat, prompt.default_action)  # the default is legal
            assert game.can_act(state, prompt.seat, prompt.default_action)
            assert game.legal_actions(state, prompt.seat), "a prompted seat has something legal to do"
    return prompts


def random_step(game: Game[Any, Any], state: Any, seats: int, rng: random.Random,
                verify: bool = True) -> tuple[int, dict[str, Any]] | None:
    """A random legal (seat, action): a prompted seat's default or a sample of one of its legal kinds;
    now and then a legal action of any seat (actions outside prompts, e.g. conquest specials).
    ``verify``: also check the prompts, their defaults and every legal example."""
    prompts = [p for p in (check_prompts(game, state, seats) if verify else game.prompts(state)) if not p.submitted]
    if not prompts:
        return None
    seat = rng.choice(prompts).seat if rng.random() < 0.9 else rng.randrange(seats)
    legal = game.legal_actions(state, seat)
    for kind in legal if verify else ():
        assert kind.type in game.info.action_types
        game.check_action(state, seat, kind.example)  # every example is legal
    prompt = next((p for p in prompts if p.seat == seat), None)
    if prompt is not None and (not legal or rng.random() < 0.4):
        return seat, dict(prompt.default_action)
    if not legal:
        seat = prompts[0].seat
        return seat, dict(prompts[0].default_action)
    kind = rng.choice(legal)
    action = sample(rng, kind)
    return seat, action if game.can_act(state, seat, action) else dict(kind.example)


def play(game: Game[Any, Any], seats: int, seed: bytes, *, checks: bool):
    """Random legal play to the end; returns (final state, [(seat, action)], [events wire per step])."""
    rng = random.Random(seed)
    state = game.setup(seats, None, seed)
    log: list = []
    trail: list = []
    for _ in range(MAX_STEPS):
        if game.outcome(state) is not None:
            return state, log, trail
        step = random_step(game, state, seats, rng, verify=checks)
        assert step is not None, "a running match must prompt someone"
        seat, action = step
        before = frozen(state) if checks else b""
        if checks:
            assert_defaults_end_the_phase(game, state)
        new, events = game.apply(state, seat, action)
        if checks:
            assert frozen(state) == before, "apply mutated its input"
            for event in events:
                assert event.audience is None or all(type(s) is int for s in event.audience)
            assert_no_leak(game, new, events, seats)
        log.append((seat, action))
        trail.append(wire_events(events))
        state = new
    raise AssertionError(f"{game.info.id}: no end within {MAX_STEPS} actions")


def assert_defaults_end_the_phase(game: Game[Any, Any], state: Any) -> None:
    """What the server does when every deadline passes: each unsubmitted default applied in turn
    moves the match to a new phase (or ends it), so deadlines alone always finish a match."""
    prompts = game.prompts(state)
    after = state
    for prompt in prompts:
        if not prompt.submitted:
            after, _ = game.apply(after, prompt.seat, dict(prompt.default_action))
    pending = game.prompts(after)
    assert game.outcome(after) is not None or not pending or pending[0].phase_id != prompts[0].phase_id


def assert_outcome(game: Game[Any, Any], state: Any, seats: int) -> None:
    outcome = game.outcome(state)
    assert isinstance(outcome, Outcome)
    assert set(outcome.ranks) == set(range(seats)) == set(outcome.scores)
    assert all(1 <= rank <= seats for rank in outcome.ranks.values())
    assert min(outcome.ranks.values()) == 1
    assert all(isinstance(score, (int, float)) for score in outcome.scores.values())
    assert isinstance(outcome.reason, str) and outcome.reason
    json.dumps(outcome.to_wire())
    assert game.prompts(state) == []
    for seat in range(seats):
        assert game.legal_actions(state, seat) == []
        for kind in game.info.action_types:
            with pytest.raises(IllegalAction):
                game.check_action(state, seat, {"type": kind})
            assert not game.can_act(state, seat, {"type": kind})


def seat_counts(game: Game[Any, Any]) -> list[int]:
    return list(range(game.info.min_seats, game.info.max_seats + 1))


# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_metadata_is_data_and_setup_checks_seats(game):
    info = game.info
    assert isinstance(info, GameInfo)
    assert (game.id, game.title, game.min_seats, game.max_seats, game.Options) == (
        info.id, info.title, info.min_seats, info.max_seats, info.options)
    assert 1 <= info.min_seats <= info.max_seats and info.phases and info.action_types
    assert issubclass(info.options, BaseModel)
    info.options()  # every option has a default
    json.dumps(info.options.model_json_schema())
    assert info.bots
    for kind, cls in info.bots.items():
        assert callable(cls(1).decide)
        if game.info.id in registry():
            assert bot_class(info.id, kind) is cls  # the catalogue reads the metadata
    for seats in (info.min_seats - 1, info.max_seats + 1):
        with pytest.raises(ValueError):
            game.setup(seats, None, b"s" * 32)


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_determinism_from_the_seed(game):
    seats = game.info.max_seats
    first = views_of(game, game.setup(seats, None, b"seed-a" * 5), seats)
    assert views_of(game, game.setup(seats, None, b"seed-a" * 5), seats) == first
    others = {views_of(game, game.setup(seats, None, b"seed-%d" % n), seats) for n in range(4)}
    assert len(others) > 1, "different seeds must give different matches"


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_replay_equality_same_actions_same_views_and_events(game):
    seats = game.info.min_seats
    final, log, trail = play(game, seats, b"replay", checks=False)
    state = game.setup(seats, None, b"replay")
    for (seat, action), expected in zip(log, trail, strict=True):
        state, events = game.apply(state, seat, action)
        assert wire_events(events) == expected
    assert views_of(game, state, seats) == views_of(game, final, seats)
    assert game.outcome(state) == game.outcome(final)


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_random_play_with_every_check(game):
    """Every step: prompts and their defaults legal, examples legal, input not mutated, views JSON and
    filtered, events filtered; at the end a well-formed outcome and nothing legal any more."""
    for seats in seat_counts(game)[:2]:  # the biggest tables cost time, not coverage
        final, log, _ = play(game, seats, b"checked-%d" % seats, checks=True)
        assert_outcome(game, final, seats)
        assert log


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_random_play_ends_from_many_seeds(game):
    counts = seat_counts(game)
    for n in range(12):
        seats = counts[n % len(counts)]
        final, _, _ = play(game, seats, b"many-%d" % n, checks=False)
        assert_outcome(game, final, seats)


JUNK: list[Any] = [None, 5, "x", [], {}, {"type": None}, {"type": 7}, {"type": "no_such_action"},
                   {"type": "x" * 10000}, {"type": ["show"]}]


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_illegal_actions_raise_illegal_action_with_a_code_and_change_nothing(game):
    rng = random.Random(7)
    seats = game.info.max_seats
    state = game.setup(seats, None, b"illegal")
    weird = [None, True, -1, 10 ** 30, 1.5, "", "0", [], {}, [None], ["x"], {"0": ["x"]}, "x" * 5000]
    for _step in range(60):
        if game.outcome(state) is not None:
            break
        before = frozen(state)
        actions = list(JUNK)
        for kind in sorted(game.info.action_types):
            actions.append({"type": kind})
            for legal in game.legal_actions(state, rng.randrange(seats)):
                for name in legal.example:
                    if name != "type":
                        actions.append({**legal.example, name: rng.choice(weird)})
        for action in actions:
            for seat in (rng.randrange(seats), -1, seats, None, "0"):
                try:
                    game.check_action(state, seat, action)
                except IllegalAction as exc:
                    code = exc.code
                    assert CODE.match(code), code
                    assert not game.can_act(state, seat, action)
                    with pytest.raises(IllegalAction) as applied:
                        game.apply(state, seat, action)
                    assert applied.value.code == code  # one definition of legality
                else:
                    assert game.can_act(state, seat, action)
                    game.apply(state, seat, action)  # legal: must not raise
        assert frozen(state) == before
        step_ = random_step(game, state, seats, rng)
        assert step_ is not None
        state, _ = game.apply(state, *step_)


def test_the_toy_game_is_listed_like_any_game(monkeypatch):
    """Listing a package in ``GAME_MODULES`` is all a game needs: the registry, the bot catalogue
    (and so ``GET /games``) and this suite pick it up."""
    from app import games

    monkeypatch.setitem(games.GAME_MODULES, "toy", "tests.games.toy_game")
    games.registry.cache_clear()
    try:
        assert games.registry()["toy"] is toy_game.GAME
        assert bot_class("toy", "random") is toy_game.ToyRandomBot
    finally:
        monkeypatch.undo()
        games.registry.cache_clear()
    assert "toy" not in games.registry()
