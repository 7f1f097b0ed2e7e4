"""The Tricks ``Game`` object (``app.games.base.Game``): a thin, stateless class over ``rules`` and
``view``, and the game's ``GameInfo``: everything the game brings is declared here."""
from __future__ import annotations

from typing import Any, ClassVar, Mapping

from app.games.base import Event, GameBase, GameInfo, LegalAction, Outcome, Prompt
from pydantic import BaseModel

from bannerfall_tricks import rules, types, view
from bannerfall_tricks.bots import GreedyBot, RandomBot
from bannerfall_tricks.state import Options, State


class TricksGame(GameBase[State]):
    info: ClassVar[GameInfo] = GameInfo(
        id="tricks",
        title="Tricks",
        min_seats=2,
        max_seats=2,
        options=Options,
        phases=("play",),
        action_types=frozenset(("play",)),
        bots={"random": RandomBot, "greedy": GreedyBot},
        # every card dealt is played once: hands (<= 15) x 6 cards x 2 seats
        max_actions=15 * 6 * 2,
        hidden_information=True,  # the hands
        simultaneous_moves=False,
        chance=frozenset(("cards",)),
        actions=types.ACTIONS,
        events=types.EVENTS,
        view=types.View,
        board="web/board.js",
        wording="events.json",
        compiled=(),
        test_options={"hands": 1},
        doc="tricks.md",
    )

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> State:
        return rules.setup(seats, options, bytes(seed))

    def prompts(self, state: State) -> list[Prompt]:
        return rules.prompts(state)

    def check_action(self, state: State, seat: int, action: Mapping[str, Any]) -> None:
        rules.check_action(state, seat, action)

    def legal_actions(self, state: State, seat: int) -> list[LegalAction]:
        return rules.legal_actions(state, seat)

    def apply(self, state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
        return rules.apply(state, seat, action)

    def view(self, state: State, viewer: int) -> dict[str, Any]:
        return view.view(state, viewer)

    def hidden_tokens(self, state: State, viewer: int) -> set[str]:
        return view.hidden_tokens(state, viewer)

    def outcome(self, state: State) -> Outcome | None:
        return state.result
