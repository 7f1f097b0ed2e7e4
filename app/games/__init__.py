"""Pure rules engines. ``registry()`` maps game id -> Game instance.

To add a game, list its package in :data:`GAME_MODULES` (the package exposes ``GAME``, an object
implementing :class:`app.games.base.Game`); the lobby, ``GET /games``, the bot catalogue and the
conformance suite (``tests/games/test_conformance.py``) all take the games from here. See
``docs/games/README.md``.
"""
from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from app.games.base import Game

#: game id -> the package exposing ``GAME`` (the one list of games)
GAME_MODULES = {
    "provinces": "app.games.provinces",
    "conquest": "app.games.conquest",
    "warrior": "app.games.warrior",
}


@cache
def registry() -> dict[str, Game[Any, Any]]:
    """Every game whose package is present, by id (each package exposes ``GAME``)."""
    games: dict[str, Game[Any, Any]] = {}
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
