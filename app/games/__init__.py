"""Pure rules engines. ``registry()`` maps game id -> Game instance."""
from __future__ import annotations

import importlib
from functools import cache

from app.games.base import Game

GAME_MODULES = {
    "provinces": "app.games.provinces",
    "conquest": "app.games.conquest",
    "warrior": "app.games.warrior",
}


@cache
def registry() -> dict[str, Game]:
    """Every game whose package is present, by id (each package exposes ``GAME``)."""
    games: dict[str, Game] = {}
    for game_id, module in GAME_MODULES.items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue
            raise
        game = getattr(mod, "GAME", None)
        if game is not None:
            games[game_id] = game
    return games
