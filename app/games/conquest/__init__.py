"""Hold'em Conquest (game id ``conquest``): territory won at hold'em tables on a hex map.

Rules: ``shared/rules/conquest.md`` sections 1–4; wire shapes: ``docs/games/conquest.md``.
The package is split into ``state`` (data), ``board`` (hex map), ``poker`` (hand ranking adapter),
``rules`` (setup, prompts, apply), ``view`` (visibility) and ``bots``.
"""
from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from app.games.conquest import rules, view as _view
from app.games.conquest.specials import DEFAULT_SPECIAL_COSTS, SPECIAL_DESCRIPTIONS, SPECIALS
from app.games.conquest.state import Options, State


class ConquestGame:
    """The stateless ``Game`` object for Hold'em Conquest (see ``app.games.base.Game``)."""

    id: ClassVar[str] = "conquest"
    title: ClassVar[str] = "Hold'em Conquest"
    min_seats: ClassVar[int] = 2
    max_seats: ClassVar[int] = 4
    Options: ClassVar[type[BaseModel]] = Options

    # The engine's functions themselves (no wrapper frame on the hot path); signatures as in
    # ``app.games.base.Game``.
    setup = staticmethod(rules.setup)  # (seats, options, seed) -> State
    prompts = staticmethod(rules.prompts)  # (state) -> list[Prompt]
    apply = staticmethod(rules.apply)  # (state, seat, action) -> (State, list[Event])
    view = staticmethod(_view.view)  # (state, viewer) -> dict
    outcome = staticmethod(rules.outcome)  # (state) -> Outcome | None
    hidden_tokens = staticmethod(_view.hidden_tokens)  # (state, viewer) -> set[str]


GAME = ConquestGame()

__all__ = [
    "DEFAULT_SPECIAL_COSTS", "GAME", "SPECIALS", "SPECIAL_DESCRIPTIONS", "ConquestGame", "Options",
    "State",
]
