"""Rules versions: which engine plays a match, and what stands in when none here does.

Every game declares the version of its rules (``GameInfo.rules_version``, raised on any change of
what a log replays to: a rule, the dealing, a use of the RNG) and may keep earlier versions'
engines importable (``GameInfo.earlier_rules``: version -> module exposing that version's ``GAME``).
Every match stores the version it started under (``matches.rules_version``); it is replayed, run
and verified only by an engine of that version (:func:`engine`). Where this installation has none,
the runtime shows the match through :func:`unavailable` and decides what becomes of it
(``docs/decisions.md``, "Rules versions"; ``docs/operations.md``, "Deploying a rules change").

Nothing here imports FastAPI, SQL or Redis.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, ClassVar

from app.games import registry
from app.games.base import Game, GameBase, GameInfo, IllegalAction, LegalAction, Outcome, Prompt

__all__ = ["available_versions", "current_version", "engine", "match_rules_version", "unavailable"]


def current_version(game_id: str) -> int | None:
    """The rules version the installed engine of ``game_id`` plays (new matches start under it), or
    None for a game this installation does not have."""
    game = registry().get(game_id)
    return game.info.rules_version if game is not None else None


def match_rules_version(match: Mapping[str, Any]) -> int | None:
    """The rules version a match row (``{"game", "rules_version", ...}``) was started under. A row
    without one (a match made before versions were stored, or built by hand) is taken to be under
    the current version, as the migration that added the column decided for existing matches; None
    for an unknown game."""
    stored = match.get("rules_version")
    if isinstance(stored, int) and not isinstance(stored, bool):
        return stored
    return current_version(str(match.get("game")))


@cache
def _earlier(game_id: str, rules_version: int) -> Game[Any, Any] | None:
    current = registry().get(game_id)
    if current is None:
        return None
    module = current.info.earlier_rules.get(rules_version)
    if module is None:
        return None
    try:
        game = importlib.import_module(module).GAME
    except (ImportError, AttributeError):
        return None
    info = getattr(game, "info", None)
    if not isinstance(info, GameInfo) or info.id != game_id or info.rules_version != rules_version:
        return None  # a declaration that names another game or version plays nothing
    return game


def engine(game_id: str, rules_version: int | None) -> Game[Any, Any] | None:
    """The engine that plays ``game_id`` under ``rules_version``: the installed one when it is that
    version (or ``rules_version`` is None), else the earlier one its ``earlier_rules`` keeps, if that
    module imports and its ``GAME`` says it is that game and version. None when this installation has
    no such engine (an unknown game, a version dropped, or a newer one than installed)."""
    current = registry().get(game_id)
    if current is None:
        return None
    if rules_version is None or rules_version == current.info.rules_version:
        return current
    return _earlier(game_id, rules_version)


def available_versions(game_id: str) -> list[int]:
    """Every rules version of ``game_id`` this installation can play, ascending (``[]``: unknown game)."""
    current = registry().get(game_id)
    if current is None:
        return []
    versions = {current.info.rules_version}
    versions.update(v for v in current.info.earlier_rules if _earlier(game_id, v) is not None)
    return sorted(versions)


@cache
def _stand_in_class(game_id: str) -> type[_Unavailable]:
    game = registry()[game_id]
    return type(f"Unavailable_{game_id}", (_Unavailable,), {"info": game.info})


def unavailable(game_id: str, rules_version: int | None, message: str) -> Game[Any, Any]:
    """A stand-in engine for a match of ``game_id`` that no engine here can replay (its rules version
    is not installed, or its log does not replay): no prompts, every action refused with
    ``rules_unavailable``, and for every viewer the view
    ``{"unavailable": {"code": "rules_unavailable", "rules_version": int | None, "message": str}}``
    (``docs/protocol.md``, "A match the server cannot replay"). Its state is None. Raises KeyError for
    a game this installation does not have."""
    return _stand_in_class(game_id)(rules_version, message)


class _Unavailable(GameBase[None]):
    """The stand-in of :func:`unavailable` (one subclass per game, carrying its ``info``)."""

    info: ClassVar[GameInfo]

    def __init__(self, rules_version: int | None, message: str) -> None:
        self.rules_version = rules_version
        self.message = message
        self._view = {"unavailable": {"code": "rules_unavailable", "rules_version": rules_version,
                                      "message": message}}

    def setup(self, seats: int, options: Any, seed: bytes) -> None:
        raise ValueError(self.message)

    def prompts(self, state: None) -> list[Prompt]:
        return []

    def check_action(self, state: None, seat: int, action: Mapping[str, Any]) -> None:
        raise IllegalAction("rules_unavailable", self.message)

    def legal_actions(self, state: None, seat: int) -> list[LegalAction]:
        return []

    def apply(self, state: None, seat: int, action: Mapping[str, Any]) -> tuple[None, list[Any]]:
        raise IllegalAction("rules_unavailable", self.message)

    def view(self, state: None, viewer: int) -> dict[str, Any]:
        return {"unavailable": dict(self._view["unavailable"])}

    def views(self, state: None, viewers: Sequence[int]) -> list[dict[str, Any]]:
        return [self.view(state, v) for v in viewers]

    def hidden_tokens(self, state: None, viewer: int) -> set[str]:
        return set()

    def outcome(self, state: None) -> Outcome | None:
        return None
