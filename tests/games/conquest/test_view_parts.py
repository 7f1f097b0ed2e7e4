"""Conquest's own ``view_parts`` (``app.games.conquest.view.view_parts``, the runtime's path) is the
parts ``GameBase`` would derive from its views: ``encode_view(view(state, viewer))``, byte for byte,
for every viewer (each seat, SPECTATOR, ADMIN) after every action of seeded matches played by the
game's bots (replacing submissions, using specials) and by random legal steps, with and without
loadouts. The memos the parts are kept in (per position, per match on the board, per battle) must
never give a piece of another position: the parts are also asked for viewers in another order and
alone, for a pickled copy, and for an earlier state of the same match after later ones were seen.
"""
from __future__ import annotations

import pickle
import random
from typing import Any

import pytest

from app.games.base import ADMIN, SPECTATOR
from app.games.conquest import GAME
from app.games.conquest.bots import RandomBot, SensibleBot
from app.games.conquest.specials import SPECIALS
from app.parts import encode_view
from tests.games.test_conformance import random_step


def derived(state: Any, viewers: list[int]) -> list[Any]:
    return [encode_view(view) for view in GAME.views(state, viewers)]


def check(state: Any, viewers: list[int], earlier: list[Any], rng: random.Random) -> None:
    native = GAME.view_parts(state, viewers)
    expected = derived(state, viewers)
    assert native == expected
    assert GAME.view_parts(state, viewers) == expected, "asked again"
    assert GAME.view_parts(state, viewers[::-1]) == expected[::-1]
    viewer = rng.choice(viewers)
    assert GAME.view_parts(state, [viewer]) == derived(state, [viewer])
    assert GAME.view_parts(pickle.loads(pickle.dumps(state)), viewers) == expected, "a pickled copy"
    if earlier:
        old = rng.choice(earlier)
        assert GAME.view_parts(old, viewers) == derived(old, viewers), "an earlier state"


def options_for(i: int, seats: int, rng: random.Random) -> dict[str, Any]:
    options: dict[str, Any] = {"max_rounds": 4 + i % 3}
    if i % 2:
        options["loadouts"] = [rng.sample(SPECIALS, 4 + (s + i) % 4) for s in range(seats)]
    return options


@pytest.mark.parametrize("i", range(12))
def test_bot_matches(i: int) -> None:
    seats = 2 + i % 3
    seed = b"parts-bots-%d" % i
    rng = random.Random(seed)
    state = GAME.setup(seats, options_for(i, seats, rng), seed)
    bots: dict[int, Any] = {s: RandomBot(i * 10 + s, special_chance=0.3) if (s + i) % 2 else SensibleBot(i * 10 + s, 20)
                            for s in range(seats)}
    viewers = [*range(seats), SPECTATOR, ADMIN]
    earlier: list[Any] = []
    steps = 0
    check(state, viewers, earlier, rng)
    while GAME.outcome(state) is None and steps < 400:
        action = None
        seat = -1
        for prompt in GAME.prompts(state):
            if prompt.submitted and rng.random() < 0.7:
                continue
            wire = {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id, "submitted": False}
            action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire)
            seat = prompt.seat
            if action is not None:
                break
        if action is None or not GAME.can_act(state, seat, action):
            prompt = next(p for p in GAME.prompts(state) if not p.submitted)
            seat, action = prompt.seat, dict(prompt.default_action)
        earlier.append(state)
        state, _ = GAME.apply(state, seat, action)
        steps += 1
        check(state, viewers, earlier, rng)
    assert steps >= 10


@pytest.mark.parametrize("i", range(12))
def test_random_matches(i: int) -> None:
    seats = 2 + i % 3
    seed = b"parts-random-%d" % i
    rng = random.Random(seed)
    state = GAME.setup(seats, options_for(i, seats, rng), seed)
    viewers = [*range(seats), SPECTATOR, ADMIN]
    earlier: list[Any] = []
    steps = 0
    check(state, viewers, earlier, rng)
    while GAME.outcome(state) is None and steps < 300:
        step = random_step(GAME, state, seats, rng, verify=False)
        if step is None:
            break
        earlier.append(state)
        state, _ = GAME.apply(state, *step)
        steps += 1
        check(state, viewers, earlier, rng)
    assert steps >= 10
