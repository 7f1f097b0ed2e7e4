"""Hold'em Conquest (game id ``conquest``): territory won at hold'em tables on a hex map.

Rules: ``shared/rules/conquest.md`` sections 1–4; wire shapes: ``docs/games/conquest.md``.
The package is split into ``state`` (data), ``board`` (hex map), ``poker`` (hand ranking adapter),
``setup``, ``costs``, ``queries``, ``round`` (phase resolution), ``rules`` (prompts, apply, legality,
specials), ``view`` (visibility), ``bots`` and ``game`` (the ``Game`` object, ``GAME`` here).
"""
from __future__ import annotations

from app.games.conquest.game import ConquestGame
from app.games.conquest.specials import (
    DEFAULT_SPECIAL_COSTS,
    SPECIAL_DESCRIPTIONS,
    SPECIALS,
)
from app.games.conquest.state import Options, State

GAME = ConquestGame()

__all__ = [
    "DEFAULT_SPECIAL_COSTS", "GAME", "SPECIALS", "SPECIAL_DESCRIPTIONS", "ConquestGame", "Options",
    "State",
]
