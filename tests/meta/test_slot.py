"""The slot machine as a pure function (conquest.md 5, seed §5.2): reels from the seeded RNG,
the paytable, and verification of a recorded spin."""
from __future__ import annotations

import hashlib

import pytest

from app.config import Settings
from app.games.conquest.specials import SPECIALS
from app.meta.slot import BLANK, new_seed, prize_for, reels_for, verify_spin

STRIP = list(Settings().spin_strip)
PAYTABLE = {"2": 3, "3": 10}


def test_reels_are_a_function_of_seed_client_seed_and_strip():
    seed, seed_hash = new_seed()
    assert hashlib.sha256(bytes.fromhex(seed)).hexdigest() == seed_hash
    a = reels_for(seed, "mine", STRIP)
    assert a == reels_for(seed, "mine", STRIP)
    assert len(a) == 3 and all(s in STRIP for s in a)
    # another client seed or another server seed gives (over a few tries) other reels
    assert any(reels_for(seed, f"other{i}", STRIP) != a for i in range(5))
    assert any(reels_for(new_seed()[0], "mine", STRIP) != a for _ in range(5))


def test_reels_golden_value():
    """Pinned: the reel algorithm (Rng keyed by sha256('bannerfall-spin' + seed + '|' + client))
    must not change, or every recorded spin stops verifying."""
    assert reels_for("00" * 32, "golden", STRIP) == ["loyalty", "scout", "insurance"]
    assert reels_for("01" * 32, "golden", STRIP) == ["shield", "shield", "loyalty"]
    assert prize_for(reels_for("01" * 32, "golden", STRIP), PAYTABLE) == {"special": "shield", "matches": 3, "level": 2}


@pytest.mark.parametrize("reels,prize", [
    (["joker", "joker", "joker"], {"special": "joker", "matches": 10, "level": 3}),
    (["scout", "blank", "scout"], {"special": "scout", "matches": 3, "level": 2}),
    (["blank", "spy", "spy"], {"special": "spy", "matches": 3, "level": 2}),
    (["hound", "spy", "shield"], None),          # one of each: level 1, not in the paytable
    ([BLANK, BLANK, BLANK], None),
])
def test_prize_by_level_5_1_2(reels, prize):
    assert prize_for(reels, PAYTABLE) == prize


def test_level_one_pays_when_configured_and_ties_take_the_leftmost():
    assert prize_for(["hound", "spy", "blank"], {"1": 1}) == {"special": "hound", "matches": 1, "level": 1}


def test_default_strip_holds_every_special_and_wins_sometimes():
    assert set(SPECIALS) <= set(STRIP)
    seed = "ab" * 32
    wins = sum(prize_for(reels_for(seed, str(i), STRIP), PAYTABLE) is not None for i in range(2000))
    assert 100 < wins < 400  # about 10% of spins win a special with the defaults


def test_verify_spin_detects_tampering():
    seed, seed_hash = new_seed()
    reels = reels_for(seed, "c", STRIP)
    spin = {"seed": seed, "seed_hash": seed_hash, "client_seed": "c", "strip": STRIP, "paytable": PAYTABLE,
            "reels": reels, "prize": prize_for(reels, PAYTABLE)}
    assert verify_spin(spin) == []
    assert verify_spin({**spin, "seed_hash": "0" * 64}) != []
    other = ["joker", "joker", "joker"] if reels != ["joker"] * 3 else ["spy", "spy", "spy"]
    assert any("reels" in p for p in verify_spin({**spin, "reels": other}))
    assert any("prize" in p for p in verify_spin({**spin, "prize": {"special": "joker", "matches": 10, "level": 3}}))
    assert verify_spin({**spin, "seed": "zz"}) != []
