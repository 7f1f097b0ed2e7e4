"""Provinces: a territory war on a hex map with garrisons of cards (``shared/rules/provinces.md``).

``GAME`` is the stateless engine singleton (:class:`app.games.provinces.game.ProvincesGame`).
"""
from .game import ProvincesGame
from .state import Options

GAME = ProvincesGame()

__all__ = ["GAME", "Options", "ProvincesGame"]
