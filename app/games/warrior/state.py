"""Warrior match state: a slots dataclass of ints, strings and tuples.

Cards are ints (indexes into :class:`~app.games.warrior.cards.CardSet`); ``tokens[c]`` is the opaque
wire id card ``c`` currently carries (None while it lies in the pile). Every per-seat field is a tuple
indexed by seat whose items are tuples of atoms (ints, strings, None): nothing in a state but the state
itself, its rng and an attack in progress is an object CPython's cyclic collector keeps walking (a
tuple of atoms is untracked the first time the collector sees it; ``docs/decisions.md``, "Warrior:
state the collector does not walk, views as parts"). :meth:`WarriorState.clone` is therefore a
shallow copy (and a clone of the attack); ``apply`` clones once and then replaces, never changes,
the tuples of the clone (:func:`replaced`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Final, NamedTuple, TypeVar

from app.games.base import CardTokens, Outcome, Rng
from app.games.warrior.cards import CardSet
from app.games.warrior.dice import Exchange


class MatchTokens(CardTokens):
    """The match's :class:`~app.games.base.CardTokens` (kept as a name for this package; the base
    class is now a single keyed BLAKE2b call per token, so no per-match key schedule is needed)."""

    __slots__ = ()


#: Two base-32 characters for every 10-bit value, least significant 5 bits first (as CardTokens writes).
_PAIRS = tuple(CardTokens._ALPHABET[v & 31] + CardTokens._ALPHABET[v >> 5] for v in range(1024))


# Phases (``state.phase``); every one but OVER is a decision point with prompts.
PLACE_WIZARDS = "place_wizards"  # setup, simultaneous (2.3)
KEEP = "keep"  # round start, simultaneous (3.2)
SIEGE = "siege"  # siege window, simultaneous among engine holders (5.2)
TARGET = "target"  # attacker picks nation / mercenary force / target (4.1, 4.7)
LOSE = "lose"  # losing side(s) pick the cards they lose, simultaneous (4.5)
CONTINUE = "continue"  # attacker: go on or stop (4.6)
REATTACK = "reattack"  # attacker: knights' re-attack or end the attack (4.7)
OVER = "over"

SIMULTANEOUS = frozenset({PLACE_WIZARDS, KEEP, SIEGE, LOSE})


@dataclass(frozen=True, slots=True)
class Timing:
    """Deadlines in seconds (lobby options ``phase_seconds``, ``decision_seconds``, ``siege_seconds``)."""

    phase: float
    decision: float
    siege: float


class KeepChoice(NamedTuple):
    """A keep-phase submission, resolved: kept cards in dealt order, ``attacks`` (card, race | None),
    ``wizards`` (card, race | None: None = discarded, no unprotected nation left). Tuples of atoms in
    a named tuple (one object the collector tracks; ``tuple(choice)`` is one it does not)."""

    kept: tuple[int, ...]
    attacks: tuple[tuple[int, int | None], ...]
    wizards: tuple[tuple[int, int | None], ...]


#: A siege shot on file: ``(engine card, target card)``.
SiegeShot = tuple[int, int]

#: One fired shot of the latest siege window, an exact tuple of atoms (index with the constants
#: below): ``(seat, engine token, target card, target token, target seat | None, roll, hit)``; the
#: tokens are the ones the cards carried when the shot was fired (the view shows them, 5.2).
SiegeRecord = tuple[int, "str | None", int, "str | None", "int | None", int, bool]
SHOT_SEAT: Final = 0
SHOT_ENGINE: Final = 1
SHOT_TARGET: Final = 2
SHOT_TARGET_TOKEN: Final = 3
SHOT_TARGET_SEAT: Final = 4
SHOT_ROLL: Final = 5
SHOT_HIT: Final = 6

T = TypeVar("T")


def replaced(items: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    """``items`` with item ``index`` replaced by ``value`` (a per-seat field after a change of one seat)."""
    return items[:index] + (value,) + items[index + 1:]


@dataclass(slots=True)
class Attack:
    """The attack being run (warrior.md 4). ``nation``: the race index the card lies in front of, then the
    attacking nation once chosen (None for a mercenary attack); ``force``: face-up creatures of the
    attacking force; ``face_down``: cards turned face down by re-attacks (4.7); ``target``: (seat, race)
    or None before the target is chosen; ``last``: the latest exchange."""

    seat: int
    card: int
    nation: int | None
    force: tuple[int, ...]
    face_down: tuple[int, ...]
    target: tuple[int, int] | None = None
    exchanges: int = 0
    reattacks: int = 0
    started: bool = False
    last: Exchange | None = None

    def clone(self) -> "Attack":
        return Attack(
            self.seat, self.card, self.nation, self.force, self.face_down, self.target,
            self.exchanges, self.reattacks, self.started, self.last,
        )


@dataclass(slots=True)
class WarriorState:
    """Everything about one match. Per-seat fields are tuples indexed by seat holding tuples (a clone
    shares them; changing a seat's cards replaces the seat's tuple and the outer one: :func:`replaced`).

    - ``tokens[c]``: card c's current wire id, None while it lies in the pile.
    - ``pile``: face-down cards, top at the end; ``discards``: face-up discards.
    - ``creatures[s]``: seat ``s``'s creatures in placement order (a nation = those of one race).
    - ``wizards[s]``: (wizard card, race) attached to nations; ``engines[s]``: siege engine cards.
    - ``victory[s]``: cards seat ``s`` destroyed (6.1).
    - ``hands[s]``: cards dealt in the current keep phase (private) or wizards awaiting placement.
    - ``waiting``: seats whose answer the current phase needs; ``choices[s]``: a submission on file.
    - ``queue``: (attack card, seat, race | None) kept this round and not yet run, ascending number (3.3);
      the race is the nation the card lies in front of.
    - ``losses``: ((seat, count, from_attacker), ...) pending in the LOSE phase.
    - ``after_siege``: the step the flow resumes at when the siege window closes.
    - ``last_siege``: the shots fired in the latest siege window (:data:`SiegeRecord`).
    """

    seats: int
    timing: Timing
    card_set: CardSet
    rng: Rng
    token_source: CardTokens
    token_count: int
    tokens: tuple[str | None, ...]
    pile: tuple[int, ...]
    discards: tuple[int, ...]
    creatures: tuple[tuple[int, ...], ...]
    wizards: tuple[tuple[tuple[int, int], ...], ...]
    engines: tuple[tuple[int, ...], ...]
    victory: tuple[tuple[int, ...], ...]
    hands: tuple[tuple[int, ...], ...]
    keep_counts: tuple[int, ...]
    choices: tuple[Any, ...]
    waiting: tuple[int, ...]
    phase: str
    phase_id: int
    round: int
    attack: Attack | None
    queue: tuple[tuple[int, int, int | None], ...]
    losses: tuple[tuple[int, int, bool], ...]
    after_siege: str
    last_siege: tuple[SiegeRecord, ...]
    result: Outcome | None
    #: False while ``rng`` is shared with the state this one was cloned from (see :meth:`draw_rng`).
    rng_owned: bool = True
    #: The attacker's options while the TARGET phase is open (nothing changes during it); never mutated.
    target_cache: Any = None
    #: Not part of the match: the encoded view parts last built for it (``view.view_parts``), shared
    #: by every state cloned from the same setup so that an unchanged piece is not encoded again (bytes
    #: and tuples of atoms, which the collector does not walk). Not compared, not pickled (a copy
    #: starts with an empty memo).
    view_memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def empty(cls, seats: int, timing: Timing, card_set: CardSet, rng: Rng, token_source: CardTokens) -> "WarriorState":
        """A state with no card anywhere (all ``tokens`` None, empty pile); the caller deals."""
        return cls(
            seats=seats, timing=timing, card_set=card_set, rng=rng, token_source=token_source, token_count=0,
            tokens=(None,) * len(card_set.cards), pile=(), discards=(), creatures=((),) * seats,
            wizards=((),) * seats, engines=((),) * seats, victory=((),) * seats, hands=((),) * seats,
            keep_counts=(0,) * seats, choices=(None,) * seats, waiting=(), phase="", phase_id=0, round=1,
            attack=None, queue=(), losses=(), after_siege="", last_siege=(), result=None,
        )

    def clone(self) -> "WarriorState":
        """An independent copy: the attack is cloned; every other field is immutable and shared. The rng
        is shared too until the copy draws from it: :meth:`draw_rng` clones it first (copy on write), so
        the original never advances."""
        return WarriorState(
            self.seats, self.timing, self.card_set, self.rng, self.token_source, self.token_count,
            self.tokens, self.pile, self.discards, self.creatures, self.wizards, self.engines,
            self.victory, self.hands, self.keep_counts, self.choices, self.waiting, self.phase,
            self.phase_id, self.round, self.attack.clone() if self.attack is not None else None, self.queue,
            self.losses, self.after_siege, self.last_siege, self.result, False, self.target_cache,
            self.view_memo,
        )

    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "view_memo"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.view_memo = {}

    def draw_rng(self) -> Rng:
        """The match rng, ready to draw from: every shuffle and roll goes through here."""
        if not self.rng_owned:
            self.rng = self.rng.clone()
            self.rng_owned = True
        return self.rng

    # -- tokens -----------------------------------------------------------------------------------
    def issue_token(self, card: int) -> str:
        """Give ``card`` a fresh token (it was just dealt or drawn from the pile)."""
        self.issue_tokens((card,))
        return self.tokens[card]  # type: ignore[return-value]

    def issue_tokens(self, cards) -> None:
        """Fresh tokens for ``cards``, in order (one counter step each)."""
        tokens = list(self.tokens)
        source = self.token_source
        n = self.token_count
        for card in cards:
            tokens[card] = source.token(n)
            n += 1
        self.token_count = n
        self.tokens = tuple(tokens)

    def clear_tokens(self, cards) -> None:
        """Cards gone back into the pile lose their token."""
        tokens = list(self.tokens)
        for card in cards:
            tokens[card] = None
        self.tokens = tuple(tokens)

    # -- small queries used by rules, view and bots ---------------------------------------------
    def nation(self, seat: int, race: int) -> list[int]:
        """Seat's creatures of ``race`` in placement order."""
        race_of = self.card_set.race_of
        return [c for c in self.creatures[seat] if race_of[c] == race]

    def wizard_of(self, seat: int, race: int) -> int | None:
        for card, r in self.wizards[seat]:
            if r == race:
                return card
        return None

    def races_of(self, seat: int) -> list[int]:
        """Races of the seat's nations (non-empty), in race-table order."""
        race_of = self.card_set.race_of
        return sorted({race_of[c] for c in self.creatures[seat]})

    def protected(self, seat: int, race: int) -> bool:
        for _, r in self.wizards[seat]:
            if r == race:
                return True
        return False
