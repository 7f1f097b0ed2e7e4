"""The exchange: a pure function of the dice and the forces (warrior.md 4.3-4.5).

Nothing here rolls: :func:`roll` draws from the match ``Rng`` (server only); :func:`exchange` turns
given rolls and forces into losses, so every figure of the rules can be checked on fixed rolls.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from app.games.base import Rng
from app.games.warrior.cards import DIE_FACES

ATTACKER_MAX_DICE = 3
DEFENDER_MAX_DICE = 2


class Force(NamedTuple):
    """One side of an exchange: ``creatures`` face-up creatures that can be lost, and the infantry and
    archer symbols counting for this fight (the attack card's symbol included for the attacker)."""

    creatures: int
    infantry: int
    archers: int


class Exchange(NamedTuple):
    """The result of one exchange. Dice are sorted highest first, archer bonus already added to the
    highest die of the side that has it; losses are creatures each side loses (capped at its creatures)."""

    attacker_rolls: tuple[int, ...]
    defender_rolls: tuple[int, ...]
    attacker_dice: tuple[int, ...]
    defender_dice: tuple[int, ...]
    attacker_bonus: int
    defender_bonus: int
    attacker_losses: int
    defender_losses: int

    def to_wire(self) -> dict[str, object]:
        return {
            "attacker_rolls": list(self.attacker_rolls),
            "defender_rolls": list(self.defender_rolls),
            "attacker_dice": list(self.attacker_dice),
            "defender_dice": list(self.defender_dice),
            "attacker_bonus": self.attacker_bonus,
            "defender_bonus": self.defender_bonus,
            "attacker_losses": self.attacker_losses,
            "defender_losses": self.defender_losses,
        }


def dice_counts(attacker: Force, defender: Force) -> tuple[int, int]:
    """Dice each side rolls (warrior.md 4.3): attacker one per infantry symbol, at most 3, and 1 with no
    infantry [house]; defender one per infantry symbol, at most 2, at least 1."""
    return (
        min(ATTACKER_MAX_DICE, max(1, attacker.infantry)),
        min(DEFENDER_MAX_DICE, max(1, defender.infantry)),
    )


def archer_bonus(attacker: Force, defender: Force) -> tuple[int, int]:
    """(attacker bonus, defender bonus): +1 to the highest die of the side with more archer symbols,
    none on equal counts (warrior.md 4.4)."""
    if attacker.archers > defender.archers:
        return 1, 0
    if defender.archers > attacker.archers:
        return 0, 1
    return 0, 0


def exchange(
    attacker_rolls: Sequence[int], defender_rolls: Sequence[int], attacker: Force, defender: Force
) -> Exchange:
    """Resolve one exchange (warrior.md 4.4-4.5) from the raw rolls and the two forces.

    ``attacker_rolls``/``defender_rolls``: die faces 1..6, as many as :func:`dice_counts` gives (order
    does not matter). Dice are compared highest with highest, as far as the smaller side has dice; an
    attacker die strictly higher costs the defender a creature, otherwise the attacker loses one.
    Raises ``ValueError`` on a wrong number of dice or a face outside 1..6 (a server bug, not client input).
    """
    n_att, n_def = dice_counts(attacker, defender)
    if len(attacker_rolls) != n_att or len(defender_rolls) != n_def:
        raise ValueError(f"expected {n_att} attacker and {n_def} defender dice")
    if any(not 1 <= d <= DIE_FACES for d in (*attacker_rolls, *defender_rolls)):
        raise ValueError("die faces are 1..6")
    bonus_att, bonus_def = archer_bonus(attacker, defender)
    att = sorted(attacker_rolls, reverse=True)
    dfn = sorted(defender_rolls, reverse=True)
    att[0] += bonus_att
    dfn[0] += bonus_def
    att_losses = def_losses = 0
    for a, d in zip(att, dfn, strict=False):  # the highest dice pair off; the longer side's rest count nothing
        if a > d:
            def_losses += 1
        else:
            att_losses += 1
    return Exchange(
        attacker_rolls=tuple(attacker_rolls),
        defender_rolls=tuple(defender_rolls),
        attacker_dice=tuple(att),
        defender_dice=tuple(dfn),
        attacker_bonus=bonus_att,
        defender_bonus=bonus_def,
        attacker_losses=min(att_losses, attacker.creatures),
        defender_losses=min(def_losses, defender.creatures),
    )


def roll(rng: Rng, count: int) -> tuple[int, ...]:
    """``count`` six-sided dice from the match rng (advances ``rng``).

    The dice are one uniform draw ``rng.randbelow(6 ** count)`` read as ``count`` base-6 digits (least
    significant first), each die exactly uniform and independent, with one rng call instead of one per
    die. An rng object that has a ``dice(count)`` method supplies the faces itself (test support:
    :class:`app.games.warrior.positions.ScriptedRng`).
    """
    scripted = getattr(rng, "dice", None)
    if scripted is not None:
        return scripted(count)
    value = rng.randbelow(DIE_FACES ** count)
    faces = []
    for _ in range(count):
        value, face = divmod(value, DIE_FACES)
        faces.append(face + 1)
    return tuple(faces)
