"""The exchange as a pure function of dice and forces (warrior.md 4.3-4.5; issue item 2)."""
from __future__ import annotations

import itertools
from collections import Counter

import pytest

from app.games.base import Rng
from app.games.warrior.dice import Force, archer_bonus, dice_counts, exchange, roll

A3 = Force(creatures=5, infantry=3, archers=0)
D2 = Force(creatures=5, infantry=2, archers=0)
A1 = Force(creatures=3, infantry=1, archers=0)
D1 = Force(creatures=3, infantry=1, archers=0)


def losses(a, d, att=A3, dfn=D2):
    x = exchange(a, d, att, dfn)
    return x.attacker_losses, x.defender_losses


def test_4_5_exchange_552_vs_43_defender_loses_two():
    assert losses((5, 5, 2), (4, 3)) == (0, 2)


def test_4_5_exchange_552_vs_54_each_side_loses_one():
    assert losses((5, 5, 2), (5, 4)) == (1, 1)


def test_4_5_exchange_552_vs_66_attacker_loses_two():
    assert losses((5, 5, 2), (6, 6)) == (2, 0)


def test_4_5_exchange_3_vs_3_one_die_each_costs_the_attacker():
    assert losses((3,), (3,), A1, D1) == (1, 0)


def test_4_5_exchange_order_of_rolls_does_not_matter():
    assert losses((2, 5, 5), (3, 4)) == (0, 2)


def test_4_5_enumerate_3_dice_against_2():
    tally = Counter()
    for a in itertools.product(range(1, 7), repeat=3):
        for d in itertools.product(range(1, 7), repeat=2):
            tally[losses(a, d)] += 1
    assert sum(tally.values()) == 7776
    assert tally[(0, 2)] == 2890
    assert tally[(1, 1)] == 2611
    assert tally[(2, 0)] == 2275


def test_4_5_enumerate_1_die_against_1():
    wins = sum(1 for a in range(1, 7) for d in range(1, 7) if losses((a,), (d,), A1, D1) == (0, 1))
    assert wins == 15


def test_4_3_dice_counts():
    assert dice_counts(Force(9, 7, 0), Force(9, 5, 0)) == (3, 2)
    assert dice_counts(Force(2, 2, 0), Force(1, 1, 0)) == (2, 1)
    assert dice_counts(Force(2, 0, 2), Force(3, 0, 3)) == (1, 1)  # no infantry: still one die each


def test_4_4_archer_bonus_goes_to_the_side_with_more_archers():
    assert archer_bonus(Force(3, 1, 2), Force(3, 1, 1)) == (1, 0)
    assert archer_bonus(Force(3, 1, 1), Force(3, 1, 2)) == (0, 1)
    assert archer_bonus(Force(3, 1, 2), Force(3, 1, 2)) == (0, 0)
    x = exchange((4,), (4,), Force(2, 1, 1), Force(2, 1, 0))
    assert x.attacker_dice == (5,) and (x.attacker_losses, x.defender_losses) == (0, 1)
    x = exchange((5, 1), (5,), Force(2, 2, 0), Force(2, 1, 1))
    assert x.defender_dice == (6,) and (x.attacker_losses, x.defender_losses) == (1, 0)


def test_4_5_exchange_losses_capped_at_creatures():
    x = exchange((1, 1), (6, 6), Force(1, 2, 0), Force(2, 2, 0))
    assert x.attacker_losses == 1


def test_4_5_exchange_rejects_wrong_dice():
    with pytest.raises(ValueError):
        exchange((1, 2), (3, 4), A3, D2)
    with pytest.raises(ValueError):
        exchange((7, 1, 1), (3, 4), A3, D2)


def _chi2(counts: Counter, cells, expected: float) -> float:
    return sum((counts[c] - expected) ** 2 / expected for c in cells)


def test_1_6_rng_dice_are_fair_chi_square():
    """Pearson chi-square on the match rng's dice, rolled the way exchanges and siege shots roll them
    (1, 2 or 3 dice per draw), fixed seeds so the test is deterministic. Critical values at 0.1%:
    20.515 (5 degrees of freedom), 59.703 (35), 13.816 (2)."""
    for seed in (b"fair-1", b"fair-2", b"fair-3"):
        rng = Rng(seed)
        for count in (1, 2, 3):
            faces = Counter()
            for _ in range(6000 // count):
                faces.update(roll(rng, count))
            assert _chi2(faces, range(1, 7), 1000) < 20.515, (seed, count, faces)
    # pairs within one draw are independent: all 36 outcomes of two dice equally likely
    rng = Rng(b"fair-pairs")
    pairs = Counter(roll(rng, 2) for _ in range(36 * 300))
    assert _chi2(pairs, [(a, b) for a in range(1, 7) for b in range(1, 7)], 300) < 59.703
    # and 3 v 2 exchanges from the real rng follow the exact distribution
    rng = Rng(b"fair-exchange")
    tally = Counter(losses(roll(rng, 3), roll(rng, 2)) for _ in range(7776))
    exact = {(0, 2): 2890, (1, 1): 2611, (2, 0): 2275}
    assert sum((tally[k] - v) ** 2 / v for k, v in exact.items()) < 13.816


def test_1_6_roll_reads_one_draw_as_base_6_digits():
    class FixedDraw(Rng):
        def randbelow(self, n):
            assert n == 216
            return 0 + 5 * 6 + 2 * 36  # digits 0, 5, 2 -> faces 1, 6, 3

    assert roll(FixedDraw(b"x"), 3) == (1, 6, 3)
