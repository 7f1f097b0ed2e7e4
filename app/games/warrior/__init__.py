"""Warrior: nations of six races fight with dice over three rounds (``shared/rules/warrior.md``).

``GAME`` is the stateless engine (:class:`app.games.warrior.game.WarriorGame`; its card set is read
on first use); the package splits into ``cards`` (the card set, data), ``state``, ``dice`` (the
exchange), ``rules`` (setup, rounds, prompts, apply, legality), ``common``, ``attack``, ``siege``
(the flow by topic), ``view`` (visibility), ``bots`` and ``game``.
"""
from __future__ import annotations

from app.games.warrior.game import WarriorGame, WarriorOptions

GAME = WarriorGame()

__all__ = ["GAME", "WarriorGame", "WarriorOptions"]
