"""Provinces: a territory war on a hex map with garrisons of cards (``shared/rules/provinces.md``).

``GAME`` is the stateless engine singleton implementing ``app.games.base.Game``.
"""
from .rules import ProvincesGame
from .state import Options

GAME = ProvincesGame()

__all__ = ["GAME", "Options", "ProvincesGame"]
