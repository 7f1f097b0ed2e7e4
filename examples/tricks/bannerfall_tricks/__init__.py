"""Tricks (game id ``tricks``), a game for Bannerfall. Rules as built: ``tricks.md``.

``GAME`` is the stateless engine singleton the ``bannerfall.games`` entry point names.
"""
from bannerfall_tricks.game import TricksGame

GAME = TricksGame()

__all__ = ["GAME", "TricksGame"]
