"""``bannerfall`` with test engines registered: ``python -m tests.rules_versions.serve serve`` (or any
other command: ``verify``, ``replay``).

- ``TALLY_RULES`` names the module of the test game Tally's engine this "installation" has
  (``tally_v1``, ``tally_v2``, ``tally_v2_keeps_v1``, ``tally_unbumped``, in this package; default
  ``tally_v1``): a restart with another one is an upgrade of the engine.
- ``TEST_GAME_ENGINES``: ``id=module,...`` replaces a registered game's engine (e.g.
  ``provinces=tests.rules_versions.provinces_v2``).

Only the rules-version tests start servers this way; production registers games by their
``bannerfall.games`` entry points alone (``app.games.registry``)."""
from __future__ import annotations

import os

#: game id -> the module whose ``GAME`` this process plays it with (over the installed entry points)
_ENGINES: dict[str, str] = {}


def register(module: str, game_id: str = "tally") -> None:
    """Play ``game_id`` with the ``GAME`` of ``module`` (a name in this package, or a dotted path)
    in this process's game registry: an entry point of the ``bannerfall.games`` group that replaces
    any installed one of that name."""
    from importlib import metadata

    import app.games
    from app.games import versions

    if not _ENGINES:
        installed = app.games._entry_points

        def entry_points() -> list[metadata.EntryPoint]:
            kept = [ep for ep in installed() if ep.name not in _ENGINES]
            added = [metadata.EntryPoint(name, f"{value}:GAME", app.games.ENTRY_POINT_GROUP)
                     for name, value in _ENGINES.items()]
            return sorted(kept + added, key=lambda ep: (ep.name, ep.value))

        app.games._entry_points = entry_points  # type: ignore[assignment]
    _ENGINES[game_id] = module if "." in module else f"tests.rules_versions.{module}"
    app.games.registry.cache_clear()
    versions._earlier.cache_clear()
    versions._stand_in_class.cache_clear()


def unregister(game_id: str) -> None:
    """Take back what :func:`register` did for ``game_id`` (the installed entry point, if any, is back)."""
    import app.games
    from app.games import versions

    _ENGINES.pop(game_id, None)
    app.games.registry.cache_clear()
    versions._earlier.cache_clear()
    versions._stand_in_class.cache_clear()


if __name__ == "__main__":
    register(os.environ.get("TALLY_RULES", "tally_v1"))
    for entry in filter(None, os.environ.get("TEST_GAME_ENGINES", "").split(",")):
        game_id, _, module = entry.partition("=")
        register(module, game_id)
    from app.cli import main

    main()
