"""The meta-game around Hold'em Conquest (conquest.md 5): the slot machine, loadouts, settling
specials' lifetimes. Storage is in :mod:`app.db.wallet`; the engine's specials are in
:mod:`app.games.conquest.specials`."""
