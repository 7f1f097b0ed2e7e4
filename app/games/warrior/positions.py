"""Test support: build exact Warrior positions and script the dice.

Used by ``tests/games/warrior`` (and handy in a shell); the server never calls it.

>>> s, events = position(nations={0: {"elves": "IIA"}, 1: {"trolls": "IK"}}, attacks=[(0, 5, "elves")],
...                      dice=[6, 5, 1])

builds a 2-seat match in round 1 whose only attack is seat 0's card 5 (an archer nation attack) in
front of its elves, runs the flow up to the first decision (here the attacker's target prompt is
skipped because the target is forced, so the exchange is rolled with the scripted dice) and returns
the state and the events emitted on the way.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from app.games.base import Rng
from app.games.warrior import common, rules
from app.games.warrior.cards import (
    ATTACK,
    CREATURE,
    ROUND_KEEP,
    SIEGE_ENGINE,
    WIZARD,
    CardSet,
    load_card_set,
)
from app.games.warrior.state import (
    KEEP,
    PLACE_WIZARDS,
    MatchTokens,
    Timing,
    WarriorState,
    replaced,
)

LETTERS = {"I": "infantry", "A": "archer", "K": "knight"}
DEFAULT_TIMING = Timing(60.0, 20.0, 10.0)  # deadlines of a built position (seconds); Timing is frozen
#: "D": a creature with two or more symbols (only in card sets that have one).


class ScriptedRng(Rng):
    """An Rng whose die rolls come from a script (``dice``, used by ``dice.roll``); shuffles and other
    draws use the real counter-mode generator. Running out of scripted dice raises ``LookupError``."""

    __slots__ = ("_dice", "_at")

    def __init__(self, seed: bytes, dice: Sequence[int], at: int = 0, **kw: Any) -> None:
        super().__init__(seed, **kw)
        self._dice = tuple(dice)
        self._at = at

    def clone(self) -> "ScriptedRng":
        base = Rng.clone(self)
        return ScriptedRng(
            self._key, self._dice, self._at, _counter=base._counter, _pool=base._pool, _bits=base._bits  # noqa: SLF001
        )

    def dice(self, count: int) -> tuple[int, ...]:
        """The next ``count`` scripted die faces (used by :func:`app.games.warrior.dice.roll`)."""
        if self._at + count > len(self._dice):
            raise LookupError("scripted dice exhausted")
        faces = self._dice[self._at:self._at + count]
        self._at += count
        if any(not 1 <= f <= 6 for f in faces):
            raise ValueError(f"scripted die faces {faces} outside 1..6")
        return tuple(faces)

    @property
    def used(self) -> int:
        return self._at


def _symbol_match(card, letter: str) -> bool:
    if letter == "D":
        return card.symbol_total >= 2
    sym = LETTERS[letter]
    return getattr(card, sym) > 0 and card.symbol_total == 1


def position(
    *,
    seats: int = 2,
    nations: Mapping[int, Mapping[str, str]] | None = None,
    wizards: Mapping[int, Iterable[str]] | None = None,
    engines: Mapping[int, int] | None = None,
    attacks: Sequence[tuple[int, int, str | None]] = (),
    hands: Mapping[int, Sequence[str]] | None = None,
    place_wizards: Mapping[int, int] | None = None,
    victory: Mapping[int, int] | None = None,
    round: int = 1,
    dice: Sequence[int] | None = None,
    seed: bytes = b"warrior-position",
    timing: Timing = DEFAULT_TIMING,
    card_set: CardSet | None = None,
) -> tuple[WarriorState, list]:
    """Build a position and run the flow to its first decision point. Returns (state, events).

    - ``nations``: {seat: {race: "IIAK"}}: creatures in placement order, one letter per creature
      (I infantry, A archer, K knight; D a creature with two or more symbols, custom sets only).
    - ``wizards``: {seat: [race, ...]} wizards in play; ``engines``: {seat: count} siege engines.
    - ``attacks``: [(seat, attack number, race | None)]: attack cards kept this round, run in number
      order from the start (the first attack's siege window or target prompt is opened).
    - ``hands``: {seat: ["elves:I", "wizard", "siege_engine", "attack:3", ...]}: open the keep phase
      of ``round`` with these dealt hands instead (``attacks`` must then be empty).
    - ``place_wizards``: {seat: count}: open the setup wizard-placement phase with that many wizards.
    - ``victory``: {seat: count}: cards already in victory piles (taken from the leftover cards).
    - ``dice``: scripted die faces for every roll (exchanges and siege shots), in order.
    Every other card lies in the pile (shuffled by the seeded rng). Raises ValueError on an impossible
    request (more cards of a kind than the set holds).
    """
    cs = card_set or load_card_set()
    free = list(range(len(cs.cards)))

    def take(pred) -> int:
        for i, c in enumerate(free):
            if pred(cs.cards[c]):
                return free.pop(i)
        raise ValueError("the card set has no such card left")

    def take_spec(spec: str) -> int:
        if spec == WIZARD:
            return take(lambda c: c.kind == WIZARD)
        if spec == SIEGE_ENGINE:
            return take(lambda c: c.kind == SIEGE_ENGINE)
        if spec.startswith("attack:"):
            number = int(spec.split(":")[1])
            return take(lambda c: c.kind == ATTACK and c.number == number)
        race_name, letter = spec.split(":")
        race = cs.race_index[race_name]
        return take(lambda c: c.kind == CREATURE and c.race == race and _symbol_match(c, letter))

    rng: Rng = ScriptedRng(seed, dice) if dice is not None else Rng(seed)
    s = WarriorState.empty(seats, timing, cs, rng, MatchTokens(seed))
    s.phase = KEEP
    s.round = round
    placed: list[int] = []

    def put(spec: str) -> int:
        card = take_spec(spec)
        placed.append(card)
        return card

    for seat, by_race in (nations or {}).items():
        s.creatures = replaced(s.creatures, seat, tuple(put(f"{race_name}:{letter}")
                                                        for race_name, letters in by_race.items()
                                                        for letter in letters))
    for seat, races in (wizards or {}).items():
        s.wizards = replaced(s.wizards, seat, tuple((put(WIZARD), cs.race_index[race_name]) for race_name in races))
    for seat, count in (engines or {}).items():
        s.engines = replaced(s.engines, seat, tuple(put(SIEGE_ENGINE) for _ in range(count)))
    queue = [(put(f"attack:{number}"), seat, cs.race_index[race_name] if race_name is not None else None)
             for seat, number, race_name in attacks]
    for seat, specs in (hands or {}).items():
        s.hands = replaced(s.hands, seat, tuple(put(spec) for spec in specs))
    for seat, count in (place_wizards or {}).items():
        s.hands = replaced(s.hands, seat, tuple(put(WIZARD) for _ in range(count)))
    for seat, count in (victory or {}).items():
        s.victory = replaced(s.victory, seat, tuple(free.pop() for _ in range(count)))
        placed.extend(s.victory[seat])
    s.issue_tokens(placed)
    Rng(seed + b"/pile").shuffle(free)
    s.pile = tuple(free)
    events: list = []
    if place_wizards:
        common._open(s, PLACE_WIZARDS, tuple(sorted(place_wizards)))
    elif hands:
        if attacks:
            raise ValueError("a keep-phase position has no attacks queued yet")
        s.keep_counts = tuple(min(ROUND_KEEP[round - 1], len(h)) for h in s.hands)
        common._open(s, KEEP, tuple(seat for seat in range(seats) if s.hands[seat]))
    else:
        queue.sort(key=lambda q: cs.cards[q[0]].number)
        s.queue = tuple(queue)
        rules._run(s, events, "next_attack")
    return s, events


def tokens_of(s: WarriorState, seat: int, race: str) -> list[str]:
    """Tokens of seat's nation of ``race``, in placement order."""
    return [s.tokens[c] for c in s.nation(seat, s.card_set.race_index[race])]  # type: ignore[misc]


def token_of_kind(s: WarriorState, cards: Iterable[int], kind: str) -> list[str]:
    return [s.tokens[c] for c in cards if s.card_set.cards[c].kind == kind]  # type: ignore[misc]
