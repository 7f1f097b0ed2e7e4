"""A test game whose rules change between two versions ("tally"), and the tests of what a rules
change does to running, ended and newer matches (``docs/decisions.md``, "Rules versions")."""
