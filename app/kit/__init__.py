"""The game author's kit: :func:`new_game` makes a complete, installable game package from the
template in ``app/kit/template/`` (``bannerfall new-game NAME``).

The package it makes is a distribution of its own: ``pyproject.toml`` (with the ``bannerfall.games``
entry point), the engine (``game.py``, ``state.py``, ``rules.py``, ``view.py``), bots, the wire types,
a web board with controls, the event wording, the game's doc, its JSON Schemas and a test module that
runs Bannerfall's suites (``app.testing``) over it. It is a working game (a small trick game with
hidden hands) that passes them all as made: change it into yours, keeping them green. The guide is
``docs/games/README.md``.
"""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

__all__ = ["TEMPLATE", "KitError", "new_game", "placeholders"]

#: the template: every file ends in ``.tmpl``; names and contents carry the placeholders below
TEMPLATE = Path(__file__).resolve().parent / "template"
_ID = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class KitError(ValueError):
    """What the author asked for cannot be made (a bad name, a folder that exists)."""


def placeholders(game_id: str, title: str | None = None) -> dict[str, str]:
    """The template's placeholders for a game id: ``__GAME_ID__``, ``__GAME_TITLE__``, ``__PACKAGE__``
    (``bannerfall_<id>``) and ``__CLASS__`` (``<Id>Game``)."""
    return {
        "__GAME_ID__": game_id,
        "__GAME_TITLE__": title or game_id.replace("_", " ").title(),
        "__PACKAGE__": f"bannerfall_{game_id}",
        "__CLASS__": "".join(part.title() for part in game_id.split("_")) + "Game",
    }


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def new_game(game_id: str, into: Path, title: str | None = None) -> list[Path]:
    """Write the package of a new game ``game_id`` in the folder ``into`` (made; it must not exist),
    then its JSON Schemas (made from its types). Returns the files written. Raises KitError for an
    id that is not ``[a-z][a-z0-9_]{0,31}``, for a title with a double quote or a line break, or when
    ``into`` exists."""
    if not _ID.match(game_id):
        raise KitError(f"a game id is a lowercase letter then letters, digits or _ (32 at most): {game_id!r}")
    if title is not None and (not title.strip() or any(c in title for c in '"\\\n\r')):
        raise KitError("a title is one line without quotes or backslashes")
    if into.exists():
        raise KitError(f"{into} exists: give a new folder")
    values = placeholders(game_id, title)
    written: list[Path] = []
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        relative = _fill(str(source.relative_to(TEMPLATE))[: -len(".tmpl")], values)
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_fill(source.read_text(encoding="utf-8"), values), encoding="utf-8")
        written.append(target)
    written += _write_schemas(into, values["__PACKAGE__"], game_id)
    return written


def _write_schemas(into: Path, package: str, game_id: str) -> list[Path]:
    """The new game's JSON Schemas in ``<package>/schemas/<id>/`` (its package imported from ``into``)."""
    from app.games.contract import write_game_schemas

    sys.path.insert(0, str(into))
    try:
        module = importlib.import_module(package)
        return write_game_schemas({game_id: module.GAME}, into / package / "schemas")
    finally:
        sys.path.remove(str(into))
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
