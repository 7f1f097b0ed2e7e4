"""One conformance suite for every game: ``app.testing.conformance`` (the contract in
``app/games/base.py``), over every game of the registry (the ``bannerfall.games`` entry points: the
three built-in games and any installed one, e.g. ``examples/tricks``) plus the toy game of
``tests/games/toy_game.py``, which keeps the suite honest about what it assumes.

Each check of ``conformance.CHECKS`` is one test per game (what each checks: its docstring). The
suite's own honesty: a game that forgets a hand in ``hidden_tokens``, that shows a hidden card, that
hides nothing though it says it has hidden information, or whose types do not match its traffic is
caught (``tests/games/test_leaky_variants.py``). Game-specific rules stay in ``tests/games/<game>/``.
"""
from __future__ import annotations

import json
import random
from typing import Any

import pytest

from app.games import registry
from app.games.base import SPECTATOR, Event, Game, LegalAction
from app.runtime.bots import bot_class
from app.testing import conformance
from app.testing import play as kit_play
from app.testing.conformance import seat_counts
from tests.games.game_entry_points import installed_game

from . import toy_game

#: actions of one random match at most (every game ends well within it)
MAX_STEPS = 6000
#: The games under test: the registry's, then the toy one (it is not installed).
GAMES: list[Game[Any, Any]] = [*registry().values(), toy_game.GAME]
ids = [game.info.id for game in GAMES]


def sample(rng: random.Random, legal: LegalAction) -> dict[str, Any]:
    """:func:`app.testing.play.sample` (kept here for the game tests that import it)."""
    return kit_play.sample(rng, legal)


def random_step(game: Game[Any, Any], state: Any, seats: int, rng: random.Random,
                verify: bool = True) -> tuple[int, dict[str, Any]] | None:
    """:func:`app.testing.play.random_step`; ``verify`` also checks the prompts, their defaults and
    every legal example on the way (as the conformance suite does)."""
    def check(st: Any, _prompts: Any, seat: int, legal: list[LegalAction]) -> None:
        conformance._check_prompts(game, st, seats, conformance._Watch())
        for kind in legal:
            assert kind.type in game.info.action_types
            game.check_action(st, seat, kind.example)

    return kit_play.random_step(game, state, seats, rng, check if verify else None)


@pytest.mark.parametrize("check", conformance.CHECKS,
                         ids=[c.__name__.removeprefix("check_") for c in conformance.CHECKS])
@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_conformance(game, check):
    check(game)


def test_the_bot_catalogue_reads_each_games_metadata():
    for game_id, game in registry().items():
        for kind, cls in game.info.bots.items():
            assert bot_class(game_id, kind) is cls


def test_an_installed_game_is_registered_like_the_built_in_ones(tmp_path):
    """A distribution with a ``bannerfall.games`` entry point is all a game needs: the registry and the
    bot catalogue (and so ``GET /games``, the lobby, this suite) pick it up."""
    assert "toy" not in registry()
    with installed_game(tmp_path, "toy", "tests.games.toy_game:GAME"):
        assert registry()["toy"] is toy_game.GAME
        assert bot_class("toy", "random") is toy_game.ToyRandomBot
        assert list(registry()) == sorted(registry())
    assert "toy" not in registry()


# -- actions others may not see (docs/protocol.md, "nothing you receive … counts the actions you could not see")

def others_document(game: Game[Any, Any], state: Any, viewer: int) -> str:
    """What ``viewer`` holds of ``state`` besides events, as exact JSON (key order kept): the match's
    status, the public prompts (as the wire shows them, without deadlines) and its view — the
    document of docs/protocol.md ("Deltas, audiences and versions")."""
    prompts = [[p.seat, p.kind, p.phase_id, p.simultaneous, p.submitted] for p in game.prompts(state)]
    return json.dumps([game.outcome(state) is None, prompts, game.view(state, viewer)])


def assert_unseen_actions_send_nothing(game: Game[Any, Any], before: Any, after: Any, events: list[Event],
                                       actor: int, seats: int, what: Any = None) -> int:
    """The rule of ``docs/protocol.md`` ("nothing you receive … counts the actions you could not see";
    provinces.md 6.4): for every viewer other than ``actor`` (the other seats, a spectator) whose
    document ``before`` → ``after`` did not change, no event of the action may reach it either — the
    runtime then sends it nothing and leaves its version alone. Returns how many viewers the action
    was unseen by."""
    unseen = 0
    for viewer in [*range(seats), SPECTATOR]:
        if viewer == actor:
            continue
        if others_document(game, before, viewer) != others_document(game, after, viewer):
            continue
        unseen += 1
        reached = [e.to_wire() for e in events if e.visible_to(viewer)]
        assert reached == [], (game.info.id, "viewer", viewer, "saw nothing change but got", reached, "for", what)
    return unseen


def _resubmission(game: Game[Any, Any], state: Any, rng: random.Random) -> tuple[int, dict[str, Any]] | None:
    """A random legal action of a seat that has already submitted in the current simultaneous phase
    (a replacement of its submission), or None when no seat has."""
    done = [p for p in game.prompts(state) if p.simultaneous and p.submitted]
    if not done:
        return None
    seat = rng.choice(done).seat
    kinds = [k for k in game.legal_actions(state, seat) if k.type not in game.info.unprompted_actions]
    if not kinds:
        return None
    action = sample(rng, rng.choice(kinds))
    return (seat, action) if game.can_act(state, seat, action) else None


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_an_action_others_cannot_see_sends_them_nothing(game):
    """protocol.md ("nothing you receive … counts the actions you could not see"), provinces.md 6.4:
    in random play with replaced submissions, every action that leaves another viewer's document
    unchanged brings that viewer no event (so the runtime sends it nothing and keeps its version)."""
    unseen = replaced = 0
    for n, seats in enumerate(seat_counts(game)[:2]):
        rng = random.Random(n)
        state = game.setup(seats, None, b"unseen-%d" % n)
        for _ in range(MAX_STEPS):
            if game.outcome(state) is not None:
                break
            step = _resubmission(game, state, rng) if rng.random() < 0.3 else None
            replaced += step is not None
            step = step or random_step(game, state, seats, rng, verify=False)
            assert step is not None
            seat, action = step
            new, events = game.apply(state, seat, action)
            unseen += assert_unseen_actions_send_nothing(game, state, new, events, seat, seats, action)
            state = new
        else:
            raise AssertionError(f"{game.info.id}: no end within {MAX_STEPS} actions")
    if game.info.simultaneous_moves:  # hidden submissions exist: the rule was exercised
        assert unseen, "random play made no action that others could not see"
        assert replaced, "no submission was replaced"


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_two_hidden_choices_give_others_the_same_bytes(game):
    """A submission in a simultaneous phase that does not end it is hidden until the phase ends
    (conquest.md 2, warrior.md 3.2): two different submissions give every other viewer the same
    bytes (document and events), and replacing the one by the other gives them nothing at all."""
    compared = different = 0
    for n, seats in enumerate(seat_counts(game)[:2]):
        rng = random.Random(100 + n)
        bot = game.info.bots["random"](100 + n)  # a second choice where the domains are not listed
        state = game.setup(seats, None, b"twins-%d" % n)
        for _ in range(MAX_STEPS):
            if game.outcome(state) is not None:
                break
            waiting = [p for p in game.prompts(state) if p.simultaneous and not p.submitted]
            if len(waiting) >= 2:  # the actor's submission leaves the phase open
                seat = rng.choice(waiting).seat
                kinds = [k for k in game.legal_actions(state, seat) if k.type not in game.info.unprompted_actions]
                prompt = next(p for p in waiting if p.seat == seat)
                first = dict(prompt.default_action)
                second = sample(rng, rng.choice(kinds))
                if second == first and rng.random() < 0.5:
                    second = bot.decide(game.view(state, seat), {
                        "seat": seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
                        "simultaneous": True, "submitted": False, "deadline_at": None}) or second
                if second.get("type") not in game.info.unprompted_actions and game.can_act(state, seat, second):
                    one, events_one = game.apply(state, seat, first)
                    two, events_two = game.apply(state, seat, second)
                    replaced, events_replaced = game.apply(one, seat, second)
                    for viewer in [*range(seats), SPECTATOR]:
                        if viewer == seat:
                            continue
                        assert others_document(game, one, viewer) == others_document(game, two, viewer), \
                            (game.info.id, viewer, first, second)
                        seen_one = [e.to_wire() for e in events_one if e.visible_to(viewer)]
                        seen_two = [e.to_wire() for e in events_two if e.visible_to(viewer)]
                        assert json.dumps(seen_one) == json.dumps(seen_two), (viewer, first, second)
                        assert others_document(game, replaced, viewer) == others_document(game, one, viewer)
                        assert [e.to_wire() for e in events_replaced if e.visible_to(viewer)] == [], \
                            (game.info.id, viewer, "a replacement reached another viewer")
                    compared += 1
                    different += first != second
            step = random_step(game, state, seats, rng, verify=False)
            assert step is not None
            state, _ = game.apply(state, *step)
    if not game.info.simultaneous_moves:  # one seat acts at a time: no hidden submission to compare
        assert compared == 0
        return
    assert compared and different, (compared, different)
