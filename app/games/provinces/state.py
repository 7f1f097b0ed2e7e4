"""Provinces: the match state, cards and lobby options (rules: ``shared/rules/provinces.md``).

Everything here is immutable by convention: a :class:`State` is never changed once another
function has seen it. ``apply`` makes a shallow :meth:`State.clone` (every field is an int, a str,
a tuple or a shared immutable object) and replaces the fields it changes with new tuples.
"""
from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.games.base import CardTokens, Outcome, Rng

from .board import Board

#: Rule 1.4 / 4.2: at most 7 cards in a garrison.
MAX_GARRISON = 7
#: Rule 1.1: a standard deck is 52 cards and 2 jokers.
DECK_SIZE = 54
#: House decision: a turn accepts at most this many actions besides ``end_turn`` (bounds the log).
MAX_ACTIONS_PER_TURN = 256

DEALING_MODES = ("evenly", "randomly", "most_unevenly")
RANKS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
SUITS = ("clubs", "diamonds", "hearts", "spades")
JOKER = "joker"
#: Face values by rank (rule 1.2).
FACE_VALUE = {rank: index + 2 for index, rank in enumerate(RANKS)}


class Options(BaseModel):
    """Lobby options of a Provinces match.

    - ``turn_seconds``: the turn deadline in seconds (rule 2.2).
    - ``max_rounds``: full rounds before the match is decided on provinces held (rule 2.4).
    - ``tie_rule``: what a duel of equal values does (rule 3.3).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn_seconds: int = Field(60, ge=5, le=3600)
    max_rounds: int = Field(60, ge=1, le=1000)
    tie_rule: Literal["both_destroyed", "defender_wins"] = "both_destroyed"


#: One card on the board, an exact tuple of atoms ``(token, ident, rank, suit, value)`` (index with
#: :data:`TOKEN`, :data:`IDENT`, :data:`RANK`, :data:`SUIT`, :data:`VALUE`). Immutable: a change of
#: value makes a new card (:func:`with_value`). A tuple of atoms, so CPython's cyclic collector stops
#: tracking it (and the garrisons holding it) once it has seen it: a live match's cards cost the
#: collector nothing (``docs/benchmarks/capacity.md``).
#:
#: - ``token``: the opaque wire id, issued fresh each time the card is dealt (rule 6.3).
#: - ``ident``: the physical card, ``deck * 54 + k`` (k < 52: rank ``k // 4``, suit ``k % 4``;
#:   k = 52, 53: jokers). It never changes (rule 1.1).
#: - ``rank`` / ``suit``: what the card shows; ``"joker"`` / None for a joker that has not won,
#:   the beaten card's rank and suit for a joker that has (rule 3.4).
#: - ``value``: the current value; None for a joker that has not won (it is then *hidden*, rule 6.1).
Card = tuple[str, int, str, "str | None", "int | None"]
TOKEN: Final = 0
IDENT: Final = 1
RANK: Final = 2
SUIT: Final = 3
VALUE: Final = 4


def card(token: str, ident: int, rank: str, suit: str | None, value: int | None) -> Card:
    """The card ``(token, ident, rank, suit, value)``."""
    return (token, ident, rank, suit, value)


def with_value(c: Card, value: int) -> Card:
    """``c`` with another value (a duel's winner, rule 3.5)."""
    return (c[0], c[1], c[2], c[3], value)


def is_hidden(c: Card) -> bool:
    """True for a joker that has not won a duel yet (hidden from other players, rule 6.1)."""
    return c[4] is None


def card_wire(c: Card) -> dict[str, Any]:
    """The card's wire dict ``{"id", "rank", "suit", "value"}`` (a fresh dict of atoms)."""
    return {"id": c[0], "rank": c[2], "suit": c[3], "value": c[4]}


def new_card(token: str, ident: int) -> Card:
    """The card ``ident`` as it comes out of the shoe, at face value (rule 1.1)."""
    k = ident % DECK_SIZE
    if k >= 52:
        return (token, ident, JOKER, None, None)
    rank = RANKS[k >> 2]
    return (token, ident, rank, SUITS[k & 3], FACE_VALUE[rank])


def is_joker_ident(ident: int) -> bool:
    return ident % DECK_SIZE >= 52


_new_state = object.__new__


class State:
    """A Provinces match. Fields (all immutable values):

    - ``seats``: number of players; ``seat_order``: the shuffled turn order (rule 2.1).
    - ``board``: the static hex map (:class:`Board`), shared by every state of the match.
    - ``owners`` / ``garrisons`` / ``ages``: per province id: owning seat, tuple of cards top first,
      the turn in which the owner took it (rule 1.5).
    - ``dealing``: per seat, its dealing mode (rule 5).
    - ``shoe``: card idents, the top is the *last* element; ``discard``: card idents (rule 1.1).
    - ``rng`` / ``tokens`` / ``next_token``: the match's randomness and card-token counter.
    - ``turn``: the global turn number (1 = first turn); ``round``: current round (1-based).
    - ``current``: the seat whose turn it is (None once over); ``phase_id``: +1 at every new turn.
    - ``attacked`` / ``received``: bitmasks of provinces that attacked / received cards this turn.
    - ``actions``: actions applied in this turn (besides ``end_turn``).
    - ``eliminated``: seats in the order they lost their last province.
    - ``result``: the :class:`Outcome` once the match is over.
    """

    __slots__ = (
        "seats", "seat_order", "board", "options", "owners", "garrisons", "ages", "dealing",
        "shoe", "discard", "rng", "tokens", "next_token", "turn", "round", "current", "phase_id",
        "attacked", "received", "actions", "eliminated", "result",
    )

    def __init__(
        self,
        *,
        seats: int,
        seat_order: tuple[int, ...],
        board: Board,
        options: Options,
        owners: tuple[int, ...],
        garrisons: tuple[tuple[Card, ...], ...],
        ages: tuple[int, ...],
        dealing: tuple[str, ...],
        shoe: tuple[int, ...],
        discard: tuple[int, ...],
        rng: Rng,
        tokens: CardTokens,
        next_token: int,
        turn: int = 1,
        round: int = 1,
        current: int | None = None,
        phase_id: int = 1,
        attacked: int = 0,
        received: int = 0,
        actions: int = 0,
        eliminated: tuple[int, ...] = (),
        result: Outcome | None = None,
    ) -> None:
        self.seats = seats
        self.seat_order = seat_order
        self.board = board
        self.options = options
        self.owners = owners
        self.garrisons = garrisons
        self.ages = ages
        self.dealing = dealing
        self.shoe = shoe
        self.discard = discard
        self.rng = rng
        self.tokens = tokens
        self.next_token = next_token
        self.turn = turn
        self.round = round
        self.current = seat_order[0] if current is None and result is None else current
        self.phase_id = phase_id
        self.attacked = attacked
        self.received = received
        self.actions = actions
        self.eliminated = eliminated
        self.result = result

    def clone(self) -> "State":
        """A shallow copy (O(fields)); the caller replaces the fields it changes. The ``rng`` is
        shared until a caller that draws from it replaces it with ``rng.clone()``."""
        new = _new_state(State)
        new.seats = self.seats
        new.seat_order = self.seat_order
        new.board = self.board
        new.options = self.options
        new.owners = self.owners
        new.garrisons = self.garrisons
        new.ages = self.ages
        new.dealing = self.dealing
        new.shoe = self.shoe
        new.discard = self.discard
        new.rng = self.rng
        new.tokens = self.tokens
        new.next_token = self.next_token
        new.turn = self.turn
        new.round = self.round
        new.current = self.current
        new.phase_id = self.phase_id
        new.attacked = self.attacked
        new.received = self.received
        new.actions = self.actions
        new.eliminated = self.eliminated
        new.result = self.result
        return new

    def fingerprint(self) -> tuple:
        """Everything in the state as plain values (tests compare states with it)."""
        return (
            self.seats, self.seat_order, self.board.coords, self.options.model_dump_json(),
            self.owners,
            self.garrisons,
            self.ages, self.dealing, self.shoe, self.discard,
            (self.rng._key, self.rng._counter, self.rng._pool, self.rng._bits),
            self.next_token, self.turn, self.round, self.current, self.phase_id, self.attacked,
            self.received, self.actions, self.eliminated,
            None if self.result is None else self.result.to_wire(),
        )

    def provinces_of(self, seat: int) -> list[int]:
        return [p for p, owner in enumerate(self.owners) if owner == seat]

    def alive(self, seat: int) -> bool:
        return seat in self.owners
