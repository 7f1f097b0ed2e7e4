"""Recorded playthroughs, one file per game (``tests/playthroughs/<game>.json``), after OpenSpiel's
``integration_tests/playthroughs``: seeded matches with their actions and, at every step, each
viewer's full document and events. ``python -m tests.playthroughs.record`` writes them;
``tests/playthroughs/test_playthroughs.py`` replays the recorded actions and diffs. A change of the
rules, the dealing or the RNG use fails it until the game's ``GameInfo.rules_version`` is raised and
the playthroughs are recorded again (``docs/games/README.md``, "Changing the rules")."""
