"""The Warrior view as parts (``app.games.warrior.view.view_parts``) is, byte for byte, the encoding of
the view built from the state as plain dicts (``reference_view.views``, ``app.parts.encode_view``):
for every viewer (each seat, SPECTATOR, ADMIN) after every action of seeded random and bot matches,
whatever was viewed before (states of other branches share the memo: the runtime's ``check_action``,
the bots' look-aheads), with a memo that is empty (a pickled copy), and ``view``/``views`` decode the
same JSON."""
from __future__ import annotations

import json
import pickle
import random

import pytest

from app.games.base import ADMIN, SPECTATOR
from app.games.warrior import GAME
from app.games.warrior.bots import CaptainBot, RandomBot
from app.parts import encode_view
from tests.games.test_conformance import random_step

from . import reference_view
from .helpers import prompt_dict


def _check(state, viewers) -> int:
    expected = [encode_view(v) for v in reference_view.views(state, viewers)]
    assert GAME.view_parts(state, viewers) == expected
    assert GAME.view_parts(state, viewers[::-1]) == expected[::-1]
    assert [GAME.view_parts(state, (v,))[0] for v in viewers] == expected
    assert [json.dumps(v) for v in GAME.views(state, viewers)] == \
        [json.dumps(v) for v in reference_view.views(state, viewers)]
    return len(viewers)


def _branch(state, rng: random.Random):
    """Another state of the same match (shares its memo): a default answer of a waiting seat."""
    prompts = [p for p in GAME.prompts(state) if not p.submitted]
    if not prompts:
        return None
    p = rng.choice(prompts)
    return GAME.apply(state, p.seat, dict(p.default_action))[0]


@pytest.mark.parametrize("player", ["random", "bots"])
def test_native_parts_are_the_reference_views_encoded_after_every_action(player):
    checked = 0
    for i in range(9):
        seats = 2 + i % 3
        seed = b"parts-%s-%d" % (player.encode(), i)
        rng = random.Random(seed)
        state = GAME.setup(seats, None, seed)
        viewers = (*range(seats), SPECTATOR, ADMIN)
        bots = [(RandomBot if (i + s) % 2 else CaptainBot)(i * 7 + s) for s in range(seats)]
        for step in range(2000):
            checked += _check(state, viewers)
            if step % 7 == 0:
                fresh = pickle.loads(pickle.dumps(state))
                assert not fresh.view_memo
                assert GAME.view_parts(fresh, viewers) == GAME.view_parts(state, viewers)
            if step % 3 == 0:
                other = _branch(state, rng)
                if other is not None:
                    checked += _check(other, viewers)
            if GAME.outcome(state) is not None:
                break
            if player == "random":
                chosen = random_step(GAME, state, seats, rng, verify=False)
                assert chosen is not None
                state, _ = GAME.apply(state, *chosen)
            else:
                p = rng.choice([p for p in GAME.prompts(state) if not p.submitted])
                action = bots[p.seat].decide(GAME.view(state, p.seat), prompt_dict(p))
                state, _ = GAME.apply(state, p.seat, action if action is not None else dict(p.default_action))
        assert GAME.outcome(state) is not None
    assert checked > 3000


def test_an_unknown_viewer_sees_what_a_spectator_sees_but_its_own_number():
    state = GAME.setup(3, None, b"parts-unknown" * 3)
    (unknown,) = GAME.view_parts(state, (7,))
    (spectator,) = GAME.view_parts(state, (SPECTATOR,))
    assert unknown == encode_view(reference_view.views(state, (7,))[0])
    assert [p for p in unknown if p[0] != "viewer"] == [p for p in spectator if p[0] != "viewer"]
