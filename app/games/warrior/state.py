"""Warrior match state: a slots dataclass of ints, lists of ints and small immutable tuples.

Cards are ints (indexes into :class:`~app.games.warrior.cards.CardSet`); ``tokens[c]`` is the opaque
wire id card ``c`` currently carries (None while it lies in the pile). :meth:`WarriorState.clone` copies
every mutable container one level down, so ``apply`` clones once and then edits the clone freely.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.games.base import CardTokens, Outcome, Rng
from app.games.warrior.cards import CardSet
from app.games.warrior.dice import Exchange

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


@dataclass(frozen=True, slots=True)
class KeepChoice:
    """A keep-phase submission, resolved: kept cards in dealt order, ``attacks`` (card, race | None),
    ``wizards`` (card, race | None: None = discarded, no unprotected nation left)."""

    kept: tuple[int, ...]
    attacks: tuple[tuple[int, int | None], ...]
    wizards: tuple[tuple[int, int | None], ...]


@dataclass(frozen=True, slots=True)
class SiegeShot:
    engine: int
    target: int


@dataclass(slots=True)
class Attack:
    """The attack being run (warrior.md 4). ``nation``: the race index the card lies in front of, then the
    attacking nation once chosen (None for a mercenary attack); ``force``: face-up creatures of the
    attacking force; ``face_down``: cards turned face down by re-attacks (4.7); ``target``: (seat, race)
    or None before the target is chosen; ``last``: the latest exchange."""

    seat: int
    card: int
    nation: int | None
    force: list[int]
    face_down: list[int]
    target: tuple[int, int] | None = None
    exchanges: int = 0
    reattacks: int = 0
    started: bool = False
    last: Exchange | None = None

    def clone(self) -> "Attack":
        return Attack(
            self.seat, self.card, self.nation, list(self.force), list(self.face_down), self.target,
            self.exchanges, self.reattacks, self.started, self.last,
        )


@dataclass(slots=True)
class WarriorState:
    """Everything about one match. Per-seat lists are indexed by seat.

    - ``creatures[s]``: seat ``s``'s creatures in placement order (a nation = those of one race).
    - ``wizards[s]``: (wizard card, race) attached to nations; ``engines[s]``: siege engine cards.
    - ``victory[s]``: cards seat ``s`` destroyed (6.1).
    - ``hands[s]``: cards dealt in the current keep phase (private) or wizards awaiting placement.
    - ``waiting``: seats whose answer the current phase needs; ``choices[s]``: a submission on file.
    - ``queue``: (attack card, seat, race | None) kept this round and not yet run, ascending number (3.3);
      the race is the nation the card lies in front of.
    - ``losses``: ((seat, count, from_attacker), ...) pending in the LOSE phase.
    - ``after_siege``: the step the flow resumes at when the siege window closes.
    """

    seats: int
    timing: Timing
    card_set: CardSet
    rng: Rng
    token_source: CardTokens
    token_count: int
    tokens: list[str | None]
    pile: list[int]
    discards: list[int]
    creatures: list[list[int]]
    wizards: list[list[tuple[int, int]]]
    engines: list[list[int]]
    victory: list[list[int]]
    hands: list[list[int]]
    keep_counts: list[int]
    choices: list[Any]
    waiting: tuple[int, ...]
    phase: str
    phase_id: int
    round: int
    attack: Attack | None
    queue: list[tuple[int, int, int | None]]
    losses: tuple[tuple[int, int, bool], ...]
    after_siege: str
    last_siege: tuple[dict[str, Any], ...]
    result: Outcome | None

    def clone(self) -> "WarriorState":
        """An independent copy (containers copied; cards, tuples and frozen records shared)."""
        return WarriorState(
            seats=self.seats,
            timing=self.timing,
            card_set=self.card_set,
            rng=self.rng.clone(),
            token_source=self.token_source,
            token_count=self.token_count,
            tokens=list(self.tokens),
            pile=list(self.pile),
            discards=list(self.discards),
            creatures=[list(x) for x in self.creatures],
            wizards=[list(x) for x in self.wizards],
            engines=[list(x) for x in self.engines],
            victory=[list(x) for x in self.victory],
            hands=[list(x) for x in self.hands],
            keep_counts=list(self.keep_counts),
            choices=list(self.choices),
            waiting=self.waiting,
            phase=self.phase,
            phase_id=self.phase_id,
            round=self.round,
            attack=self.attack.clone() if self.attack is not None else None,
            queue=list(self.queue),
            losses=self.losses,
            after_siege=self.after_siege,
            last_siege=self.last_siege,
            result=self.result,
        )

    # -- small queries used by rules, view and bots ---------------------------------------------
    def issue_token(self, card: int) -> str:
        """Give ``card`` a fresh token (it was just dealt or drawn from the pile)."""
        token = self.token_source.token(self.token_count)
        self.token_count += 1
        self.tokens[card] = token
        return token

    def nation(self, seat: int, race: int) -> list[int]:
        """Seat's creatures of ``race`` in placement order."""
        cards = self.card_set.cards
        return [c for c in self.creatures[seat] if cards[c].race == race]

    def wizard_of(self, seat: int, race: int) -> int | None:
        for card, r in self.wizards[seat]:
            if r == race:
                return card
        return None

    def races_of(self, seat: int) -> list[int]:
        """Races of the seat's nations (non-empty), in race-table order."""
        cards = self.card_set.cards
        present = {cards[c].race for c in self.creatures[seat]}
        return sorted(present)

    def protected(self, seat: int, race: int) -> bool:
        return any(r == race for _, r in self.wizards[seat])
