"""Tricks: the lobby options, the cards and the match state (rules as built: ``tricks.md``).

A :class:`State` is never changed once returned: ``rules.apply`` builds a new one with
``dataclasses.replace`` (the ``Rng`` is cloned before it draws, so an old state's generator is
untouched).
"""
from __future__ import annotations

from dataclasses import dataclass

from app.games.base import CardTokens, Outcome, Rng
from pydantic import BaseModel, ConfigDict, Field

SUITS = ("clubs", "diamonds", "hearts", "spades")
#: the ranks of the 24-card deck, lowest first
RANKS = ("9", "10", "J", "Q", "K", "A")
#: cards dealt to each of the two seats every hand
HAND_SIZE = 6


class Options(BaseModel):
    """Lobby options: every field has a default; unknown options are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hands: int = Field(3, ge=1, le=15, description="hands (6 tricks each) before the match ends")
    turn_seconds: int = Field(30, ge=5, le=600, description="the deadline of a turn, in seconds")


@dataclass(frozen=True, slots=True)
class Card:
    """A dealt card: ``token`` its opaque wire id (fresh every deal), ``suit`` and ``rank``."""

    token: str
    suit: str
    rank: str

    @property
    def strength(self) -> int:
        return RANKS.index(self.rank)

    @property
    def wire(self) -> dict[str, str]:
        return {"id": self.token, "suit": self.suit, "rank": self.rank}


@dataclass(frozen=True, slots=True)
class State:
    options: Options
    rng: Rng
    tokens: CardTokens
    dealt: int  # cards dealt so far (the next card's token number)
    hand: int  # the hand being played, from 1
    phase_id: int  # a new one at every turn
    current: int | None  # the seat to play; None once over
    leader: int  # who leads this trick
    trump: Card  # turned up at the deal: its suit is trumps for the hand
    hands: tuple[tuple[Card, ...], tuple[Card, ...]]
    table: tuple[tuple[int, Card], ...]  # this trick: the lead, then the answer
    tricks: tuple[int, int]  # tricks won in this hand
    score: tuple[int, int]  # tricks won in the match
    last_trick: tuple[tuple[int, Card], ...]
    seats: int = 2
    result: Outcome | None = None
