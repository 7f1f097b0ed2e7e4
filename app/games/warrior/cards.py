"""The Warrior card set as data (warrior.md 1.1-1.6).

The set is one JSON table (``cards.json`` beside this module): a list of races with their natural
enemy and majority points, then rows of cards with counts. :func:`load_card_set` reads and validates
it into an immutable :class:`CardSet`; cards are then plain ints (an index into ``CardSet.cards``).
Another set can be loaded from another file with the same shape.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CREATURE = "creature"
WIZARD = "wizard"
SIEGE_ENGINE = "siege_engine"
ATTACK = "attack"
KINDS = (CREATURE, WIZARD, SIEGE_ENGINE, ATTACK)
SYMBOLS = ("infantry", "archer", "knight")

#: Cards dealt to each player at setup (warrior.md 2.1).
INITIAL_HAND = 11
#: Cards dealt each round and cards kept, rounds 1..3 (warrior.md 3.1).
ROUND_DEAL = 7
ROUND_KEEP = (4, 4, 5)
ROUNDS = 3
#: Points per card in a victory pile (warrior.md 6.1).
VICTORY_CARD_POINTS = 2
#: Six-sided dice (1.6); a siege engine destroys its target on 4 or more (5.1).
DIE_FACES = 6
SIEGE_HIT = 4

DEFAULT_PATH = Path(__file__).with_name("cards.json")


class CardSetError(ValueError):
    """The card table is malformed or inconsistent (raised at load time, never during a match)."""


@dataclass(frozen=True, slots=True)
class CardDef:
    """One physical card. ``race`` is a race index (creatures) or -1; ``infantry/archer/knight`` are
    symbol counts; ``number`` the attack-card number (0 otherwise); ``mercenaries`` the force size of a
    mercenary attack card (0 for a nation attack card and for every other kind)."""

    index: int
    kind: str
    race: int
    infantry: int
    archer: int
    knight: int
    number: int
    mercenaries: int

    @property
    def symbol_total(self) -> int:
        return self.infantry + self.archer + self.knight


@dataclass(frozen=True, slots=True)
class CardSet:
    """The validated card set. ``races``: names in table order; ``enemy[r]``: the natural enemy of
    race ``r``; ``majority_points[r]``: warrior.md 6.2; ``cards``: every card, index = card id;
    ``faces[c]``: the public description of card ``c`` for the wire (without its token)."""

    races: tuple[str, ...]
    enemy: tuple[int, ...]
    majority_points: tuple[int, ...]
    cards: tuple[CardDef, ...]
    faces: tuple[dict[str, Any], ...]
    race_index: dict[str, int]
    #: ``race_of[c]``: card c's race index, -1 for cards that are not creatures (a fast lookup).
    race_of: tuple[int, ...]
    #: The race table for the wire: [{"race", "enemy", "majority_points"}] (shared, read-only).
    race_table: tuple[dict[str, Any], ...]

    def __len__(self) -> int:
        return len(self.cards)


def _symbols(row: dict[str, Any], where: str) -> tuple[int, int, int]:
    raw = row.get("symbols", {})
    if not isinstance(raw, dict) or any(k not in SYMBOLS for k in raw):
        raise CardSetError(f"{where}: symbols must be an object with keys {SYMBOLS}")
    counts = tuple(raw.get(k, 0) for k in SYMBOLS)
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in counts):
        raise CardSetError(f"{where}: symbol counts must be non-negative integers")
    return counts


def _face(card: CardDef, races: tuple[str, ...]) -> dict[str, Any]:
    face: dict[str, Any] = {"kind": card.kind}
    if card.kind == CREATURE:
        face["race"] = races[card.race]
    if card.kind in (CREATURE, ATTACK):
        face["symbols"] = {k: n for k, n in zip(SYMBOLS, (card.infantry, card.archer, card.knight), strict=True) if n}
    if card.kind == ATTACK:
        face["number"] = card.number
        face["attack"] = "mercenary" if card.mercenaries else "nation"
        if card.mercenaries:
            face["mercenaries"] = card.mercenaries
    return face


def parse_card_set(data: Any, *, max_seats: int = 4) -> CardSet:
    """Validate a card table (the shape of ``cards.json``) and build a :class:`CardSet`.

    Raises :class:`CardSetError` when: races are not symmetric enemy pairs, a row is malformed,
    attack numbers repeat, or there are too few non-attack cards to deal ``INITIAL_HAND`` to
    ``max_seats`` players (warrior.md 2.1 needs that many to replace every attack card).
    """
    if not isinstance(data, dict) or not isinstance(data.get("races"), list) or not isinstance(data.get("cards"), list):
        raise CardSetError("card set needs 'races' and 'cards' lists")
    races: list[str] = []
    enemies: list[str] = []
    points: list[int] = []
    for i, race in enumerate(data["races"]):
        if (not isinstance(race, dict) or not isinstance(race.get("name"), str)
                or not isinstance(race.get("enemy"), str)):
            raise CardSetError(f"race {i}: needs 'name' and 'enemy'")
        mp = race.get("majority_points")
        if not isinstance(mp, int) or isinstance(mp, bool) or mp < 0:
            raise CardSetError(f"race {i}: majority_points must be a non-negative integer")
        races.append(race["name"])
        enemies.append(race["enemy"])
        points.append(mp)
    if not races or len(set(races)) != len(races):
        raise CardSetError("race names must be unique and at least one")
    index = {name: i for i, name in enumerate(races)}
    enemy_idx: list[int] = []
    for name, enemy in zip(races, enemies, strict=True):
        if enemy not in index or enemies[index[enemy]] != name or enemy == name:
            raise CardSetError(f"race {name}: enemy {enemy} must be another race naming {name} back")
        enemy_idx.append(index[enemy])

    cards: list[CardDef] = []
    numbers: set[int] = set()
    for i, row in enumerate(data["cards"]):
        where = f"card row {i}"
        if not isinstance(row, dict) or row.get("kind") not in KINDS:
            raise CardSetError(f"{where}: kind must be one of {KINDS}")
        kind = row["kind"]
        count = row.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1 or count > 1000:
            raise CardSetError(f"{where}: count must be a positive integer")
        inf, arc, kni = _symbols(row, where)
        if kind == CREATURE:
            race_name = row.get("race")
            if race_name == "*":
                race_ids = list(range(len(races)))
            elif race_name in index:
                race_ids = [index[race_name]]
            else:
                raise CardSetError(f"{where}: unknown race {race_name!r}")
            for r in race_ids:
                for _ in range(count):
                    cards.append(CardDef(len(cards), kind, r, inf, arc, kni, 0, 0))
        elif kind == ATTACK:
            number = row.get("number")
            merc = row.get("mercenaries", 0)
            if not isinstance(number, int) or isinstance(number, bool) or number < 1 or number in numbers:
                raise CardSetError(f"{where}: attack numbers must be unique positive integers")
            if not isinstance(merc, int) or isinstance(merc, bool) or merc < 0:
                raise CardSetError(f"{where}: mercenaries must be a non-negative integer")
            if merc and (inf or arc or kni):
                raise CardSetError(f"{where}: mercenary attack cards carry no symbols (warrior.md 1.4)")
            if count != 1:
                raise CardSetError(f"{where}: every attack number exists once")
            numbers.add(number)
            cards.append(CardDef(len(cards), kind, -1, inf, arc, kni, number, merc))
        else:
            if inf or arc or kni:
                raise CardSetError(f"{where}: only creatures and attack cards carry symbols")
            for _ in range(count):
                cards.append(CardDef(len(cards), kind, -1, 0, 0, 0, 0, 0))
    non_attack = sum(1 for c in cards if c.kind != ATTACK)
    if non_attack < INITIAL_HAND * max_seats:
        raise CardSetError(f"need at least {INITIAL_HAND * max_seats} non-attack cards, have {non_attack}")
    race_tuple = tuple(races)
    return CardSet(
        races=race_tuple,
        enemy=tuple(enemy_idx),
        majority_points=tuple(points),
        cards=tuple(cards),
        faces=tuple(_face(c, race_tuple) for c in cards),
        race_index=index,
        race_of=tuple(c.race for c in cards),
        race_table=tuple(
            {"race": race_tuple[r], "enemy": race_tuple[enemy_idx[r]], "majority_points": points[r]}
            for r in range(len(race_tuple))
        ),
    )


def load_card_set(path: Path = DEFAULT_PATH) -> CardSet:
    """Read and validate a card table from ``path`` (JSON). Raises :class:`CardSetError`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CardSetError(f"cannot read card set {path}: {exc}") from exc
    return parse_card_set(data)
