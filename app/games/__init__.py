"""Pure rules engines. ``registry()`` maps game id -> Game instance.

Games come from one place: the ``bannerfall.games`` entry-point group of the installed
distributions. An entry point's name is the game id and its object the game (an instance
implementing :class:`app.games.base.Game`), e.g. in a game's ``pyproject.toml``::

    [project.entry-points."bannerfall.games"]
    tricks = "bannerfall_tricks:GAME"

Bannerfall's own three games are registered the same way, in its own ``pyproject.toml``. The
lobby, ``GET /games``, quick play, the bots, the web client, ``demo``, ``replay``, ``verify`` and
the suites (``app.testing``) all take the games from here. How to write one: ``docs/games/README.md``.
"""
from __future__ import annotations

import logging
import re
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from app.games.base import Game, GameInfo

__all__ = ["ENTRY_POINT_GROUP", "GAME_ID", "declared_file", "game_dir", "registry", "registry_problems"]

log = logging.getLogger("bannerfall.games")

#: the entry-point group games are registered in
ENTRY_POINT_GROUP = "bannerfall.games"
#: what a game id looks like (it is a URL segment and a key of ``events.json``)
GAME_ID = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_problems: list[str] = []


def _entry_points() -> list[metadata.EntryPoint]:
    """The group's entry points by name (so by game id: the order of ``GET /games``); an entry point
    seen twice (one distribution found on two paths) counts once."""
    unique = {(ep.name, ep.value): ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(unique.values(), key=lambda ep: (ep.name, ep.value))


def _check(name: str, game: Any) -> str | None:
    """Why ``game`` (the object of entry point ``name``) is not a game, or None."""
    info = getattr(game, "info", None)
    if not isinstance(info, GameInfo):
        return f"its object is not a game (no GameInfo as .info): {type(game).__name__}"
    if info.id != name:
        return f"its name differs from the game's id {info.id!r}"
    if not GAME_ID.match(info.id):
        return f"id {info.id!r} is not [a-z][a-z0-9_]{{0,31}}"
    for method in ("setup", "prompts", "apply", "check_action", "can_act", "legal_actions", "view", "views",
                   "hidden_tokens", "outcome"):
        if not callable(getattr(game, method, None)):
            return f"it has no {method}()"
    return None


@cache
def registry() -> dict[str, Game[Any, Any]]:
    """Every installed game, by id (sorted), from the ``bannerfall.games`` entry points. An entry
    point that cannot be imported, is not a game, is named otherwise than its game's id, or repeats
    an id already taken is left out and logged (:func:`registry_problems` says why): one broken
    game never stops the server or hides the others."""
    games: dict[str, Game[Any, Any]] = {}
    _problems.clear()
    for ep in _entry_points():
        where = f"entry point {ep.name} = {ep.value}"
        try:
            game = ep.load()
        except Exception as exc:  # noqa: BLE001 - any import error of a third-party game
            _problems.append(f"{where}: could not be loaded ({type(exc).__name__}: {exc})")
            continue
        why = _check(ep.name, game)
        if why is None and ep.name in games:
            why = f"game id {ep.name!r} is already taken by {type(games[ep.name]).__module__}"
        if why is not None:
            _problems.append(f"{where}: {why}")
            continue
        games[ep.name] = game
    for problem in _problems:
        log.error("game not registered: %s", problem)
    return games


def registry_problems() -> list[str]:
    """Why entry points of the group were left out of :func:`registry` (one line each)."""
    registry()
    return list(_problems)


def game_dir(game: Any) -> Path:
    """The folder of the package that defines ``game``'s class: where its declared files
    (``info.board``, ``info.wording``, ``info.doc``) are."""
    import sys

    module = sys.modules[type(game).__module__]
    return Path(module.__file__ or ".").resolve().parent


def declared_file(game: Any, relative: str | None) -> Path | None:
    """A file the game declares (``info.board``, ``info.wording``, ``info.doc``) as a path, or None
    when it declares none. Raises ValueError for a path that leaves the package."""
    if relative is None:
        return None
    root = game_dir(game)
    path = (root / relative).resolve()
    if root != path and root not in path.parents:
        raise ValueError(f"{relative!r} is outside the game's package {root}")
    return path
