"""Hold'em Conquest (game id ``conquest``): territory won at hold'em tables on a hex map.

Rules: ``shared/rules/conquest.md`` sections 1–4; wire shapes: ``docs/games/conquest.md``.
The package is split into ``state`` (data), ``board`` (hex map), ``poker`` (hand ranking adapter),
``rules`` (setup, prompts, apply), ``view`` (visibility) and ``bots``.
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping

from pydantic import BaseModel

from app.games.base import Event, Outcome, Prompt
from app.games.conquest import rules, view as _view
from app.games.conquest.state import Options, State


class ConquestGame:
    """The stateless ``Game`` object for Hold'em Conquest (see ``app.games.base.Game``)."""

    id: ClassVar[str] = "conquest"
    title: ClassVar[str] = "Hold'em Conquest"
    min_seats: ClassVar[int] = 2
    max_seats: ClassVar[int] = 4
    Options: ClassVar[type[BaseModel]] = Options

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> State:
        return rules.setup(seats, options, seed)

    def prompts(self, state: State) -> list[Prompt]:
        return rules.prompts(state)

    def apply(self, state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
        return rules.apply(state, seat, action)

    def view(self, state: State, viewer: int) -> dict[str, Any]:
        return _view.view(state, viewer)

    def outcome(self, state: State) -> Outcome | None:
        return rules.outcome(state)

    def hidden_tokens(self, state: State, viewer: int) -> set[str]:
        return _view.hidden_tokens(state, viewer)


GAME = ConquestGame()

__all__ = ["GAME", "ConquestGame", "Options", "State"]
