"""Bannerfall's suites for game authors, importable from the installed package.

- :mod:`app.testing.conformance`: every check of the game contract, for one game object
  (``CHECKS``, ``check_game``), in-process.
- :mod:`app.testing.oracle`: what a viewer may not see, from the views alone (the admin view's card
  ids missing from the viewer's), compared with the game's ``hidden_tokens``.
- :mod:`app.testing.contracts`: actions, events and views against the declared types and the
  published JSON Schemas; the wording and the doc's events table against the declared events.
- :mod:`app.testing.leak`: the socket leak suite: seeded bot matches over real sockets of a real
  server, every frame each socket received checked against what its viewer may not see.
- :mod:`app.testing.server`: start a throwaway ``bannerfall serve`` (for the leak suite and
  browser tests of a game's board).

The guide: ``docs/games/README.md``. The template a new game starts from (``bannerfall new-game``)
has a test module that runs all of them.
"""
