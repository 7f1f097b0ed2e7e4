"""The three-reel slot machine (conquest.md 5, seed §5.2), provably fair like a match.

A spin's outcome is a pure function of ``(seed, client_seed, strip, paytable)``:

- the server draws a 32-byte ``seed`` and publishes ``sha256(seed)`` *before* the spin (the
  player's next-spin commitment); the player may add a ``client_seed`` of their own;
- the reels come from the project's seeded RNG (:class:`app.games.base.Rng`) keyed with
  ``sha256("bannerfall-spin" + seed + "|" + client_seed)``: each reel is
  ``strip[rng.randbelow(len(strip))]``, left to right;
- the prize: the special shown by the most reels (ties: the leftmost) wins
  ``paytable[str(count)]`` matches of that special (0 or missing: nothing). Blanks never win.

Anyone with the revealed seed, the client seed, the strip and the paytable recomputes the reels
and the prize (:func:`verify_spin`; ``bannerfall verify-spin ID``).
"""
from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from app.games.base import Rng, seed_commitment

BLANK = "blank"
REELS = 3


def new_seed() -> tuple[str, str]:
    """A fresh spin seed as ``(seed hex, sha256(seed) hex)``."""
    seed = secrets.token_bytes(32)
    return seed.hex(), seed_commitment(seed)


def reels_for(seed_hex: str, client_seed: str, strip: Sequence[str]) -> list[str]:
    """The three symbols of a spin. ``seed_hex``: the 32-byte server seed in hex; ``client_seed``:
    any string (may be empty); ``strip``: the reel strip in force. Raises ValueError on a bad seed."""
    if not strip:
        raise ValueError("the reel strip is empty")
    key = hashlib.sha256(b"bannerfall-spin" + bytes.fromhex(seed_hex) + b"|" + client_seed.encode()).digest()
    rng = Rng(key)
    return [strip[rng.randbelow(len(strip))] for _ in range(REELS)]


def prize_for(reels: Sequence[str], paytable: Mapping[str, int]) -> dict[str, Any] | None:
    """The prize of a line of reels: ``{"special", "matches", "level"}`` or None (seed §5.2.2: a
    special or nothing; §5.1.2: it lasts 1-10 matches by its level, the level being how many reels
    show it)."""
    best, count = None, 0
    for symbol in reels:
        if symbol == BLANK:
            continue
        n = sum(1 for s in reels if s == symbol)
        if n > count:
            best, count = symbol, n
    if best is None:
        return None
    matches = int(paytable.get(str(count), 0))
    return {"special": best, "matches": matches, "level": count} if matches > 0 else None


def verify_spin(spin: Mapping[str, Any]) -> list[str]:
    """Re-check a recorded spin (a row of ``spins``). Returns the problems found (empty: it checks).

    Checks that ``sha256(seed) == seed_hash`` and that the reels and the prize recomputed from the
    seed, the client seed, the strip and the paytable equal the recorded ones."""
    problems = []
    try:
        if seed_commitment(bytes.fromhex(spin["seed"])) != spin["seed_hash"]:
            problems.append("sha256(seed) differs from the published seed_hash")
        reels = reels_for(spin["seed"], spin["client_seed"], spin["strip"])
    except ValueError as exc:
        return [f"bad seed or strip: {exc}"]
    if reels != list(spin["reels"]):
        problems.append(f"reels recomputed {reels} differ from recorded {list(spin['reels'])}")
    prize = prize_for(reels, spin["paytable"])
    if prize != spin["prize"]:
        problems.append(f"prize recomputed {prize} differs from recorded {spin['prize']}")
    return problems
