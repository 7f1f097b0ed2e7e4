"""The suites do not trust the game: deliberately broken variants of real games fail them.

- A variant whose ``hidden_tokens`` forgets a hand (the view still hides it) passed the old leak
  checks with zero assertions (they took their oracle from ``hidden_tokens``). The oracle (the admin
  view's card ids missing from the viewer's view) catches it, in the conformance suite and in the
  socket leak suite (``tests/e2e/test_leak.py::test_the_socket_suite_catches_a_game_that_forgets_a_hand``).
- A variant that shows every hand (and so hides nothing: both sets agree, empty) fails the rule
  that a hidden-information game hides something in every random match.
- A variant that shows a card it lists as hidden leaks (its view shows what hidden_tokens lists).
- A variant whose view or events are not its declared types fails the type checks.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pytest

from app.games import registry
from app.games.base import ADMIN, GameInfo
from app.games.conquest.game import ConquestGame
from app.games.provinces.game import ProvincesGame
from app.games.warrior.game import WarriorGame
from app.testing import conformance

from . import toy_game


class ToyForgetsAHand(toy_game.ToyGame):
    """High card whose hidden_tokens forgets seat 0's card."""

    def hidden_tokens(self, state: Any, viewer: int) -> set[str]:
        return {t for s, (t, _) in enumerate(state.cards) if s not in (viewer, 0)} if viewer != ADMIN else set()


class ConquestForgetsThePools(ConquestGame):
    """Hold'em Conquest whose hidden_tokens forgets the other seats' pools (their dealt hands)."""

    def hidden_tokens(self, state: Any, viewer: int) -> set[str]:
        pooled = {dealt[1] for pool in state.pools.values() for dealt in pool}
        return super().hidden_tokens(state, viewer) - pooled


class WarriorForgetsSeatOne(WarriorGame):
    """Warrior whose hidden_tokens forgets seat 1's hand."""

    def hidden_tokens(self, state: Any, viewer: int) -> set[str]:
        return super().hidden_tokens(state, viewer) - {state.tokens[c] for c in state.hands[1]}


class ProvincesForgetsTheJokers(ProvincesGame):
    """Provinces that says nothing is hidden (its views still hide unrevealed jokers)."""

    def hidden_tokens(self, state: Any, viewer: int) -> set[str]:
        return set()


class ToyShowsEveryHand(toy_game.ToyGame):
    """High card whose view shows every card and whose hidden_tokens agrees: nothing hidden at all."""

    def view(self, state: Any, viewer: int) -> dict[str, Any]:
        return super().view(state, ADMIN) | {"viewer": viewer}

    def hidden_tokens(self, state: Any, viewer: int) -> set[str]:
        return set()


class ToyShowsAHiddenCard(toy_game.ToyGame):
    """High card whose view shows seat 0's card to everyone, though hidden_tokens lists it."""

    def view(self, state: Any, viewer: int) -> dict[str, Any]:
        view = super().view(state, viewer)
        if state.cards and viewer != 0:
            token, value = state.cards[0]
            view["cards"] = [{"seat": 0, "id": token, "value": value}, *view["cards"][1:]]
        return view


class ToyViewOffItsType(toy_game.ToyGame):
    """High card whose view carries a field its declared view type does not have."""

    def view(self, state: Any, viewer: int) -> dict[str, Any]:
        return super().view(state, viewer) | {"debug": True}


class ToyEventOffItsType(toy_game.ToyGame):
    """High card that emits an event type it does not declare."""

    info: ClassVar[GameInfo] = dataclasses.replace(
        toy_game.ToyGame.info, events=tuple(e for e in toy_game.ToyGame.info.events if e is not toy_game.Submitted))


@pytest.mark.parametrize("game,found", [
    (ToyForgetsAHand(), "missing from the viewer's view but not in hidden_tokens"),
    (ConquestForgetsThePools(), "missing from the viewer's view but not in hidden_tokens"),
    (WarriorForgetsSeatOne(), "missing from the viewer's view but not in hidden_tokens"),
    (ProvincesForgetsTheJokers(), "missing from the viewer's view but not in hidden_tokens"),
    (ToyShowsEveryHand(), "has hidden information, but no viewer had anything hidden"),
    (ToyShowsAHiddenCard(), "hidden_tokens lists 1 card ids the viewer.s view shows"),
    (ToyViewOffItsType(), "is not its declared type: debug"),
    (ToyEventOffItsType(), "event type 'submitted' is not declared"),
], ids=lambda v: type(v).__name__ if not isinstance(v, str) else "")
def test_the_conformance_suite_catches_a_broken_variant(game, found):
    with pytest.raises(AssertionError, match=found):
        conformance.check_random_play(game)


def test_the_example_game_that_forgets_a_hand_fails_the_conformance_suite():
    """The same variant the socket suite is shown (tests/e2e/test_leak.py): examples/tricks with seat 1's
    hand missing from hidden_tokens."""
    if "tricks" not in registry():
        pytest.fail("examples/tricks is not installed: pip install -e examples/tricks (.ci/run does)", pytrace=False)
    tricks = type(registry()["tricks"])

    class ForgetfulTricks(tricks):  # type: ignore[misc, valid-type]
        def hidden_tokens(self, state: Any, viewer: int) -> set[str]:
            return super().hidden_tokens(state, viewer) - {card.token for card in state.hands[1]}

    for check in (conformance.check_random_play, conformance.check_random_play_many_seeds):
        with pytest.raises(AssertionError, match="missing from the viewer's view but not in hidden_tokens"):
            check(ForgetfulTricks())
    conformance.check_random_play(registry()["tricks"])  # the game itself passes


def test_the_many_seeds_check_catches_a_forgotten_hand_too():
    with pytest.raises(AssertionError, match="not in hidden_tokens"):
        conformance.check_random_play_many_seeds(ToyForgetsAHand())
    with pytest.raises(AssertionError, match="nothing was hidden from anyone"):
        conformance.check_random_play_many_seeds(ToyShowsEveryHand())


@pytest.mark.parametrize("game", [toy_game.GAME, ConquestGame(), WarriorGame(), ProvincesGame()],
                         ids=lambda g: g.info.id)
def test_the_unbroken_games_pass_the_same_checks(game):
    conformance.check_random_play(game)
    conformance.check_random_play_many_seeds(game)
