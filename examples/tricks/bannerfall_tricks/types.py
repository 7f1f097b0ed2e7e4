"""Tricks on the wire, as types: one per action and per event type, and the view
(``GameInfo.actions`` / ``events`` / ``view``). Bannerfall makes the game's JSON Schemas from them
and its suites check every action, event and view of real matches against them."""
from __future__ import annotations

from typing import Literal

from app.games.contract import Outcome, Wire
from pydantic import Field

Suit = Literal["clubs", "diamonds", "hearts", "spades"]
Rank = Literal["9", "10", "J", "Q", "K", "A"]


class Card(Wire):
    id: str = Field(description="the card's opaque id (fresh every deal)")
    suit: Suit
    rank: Rank


class PlacedCard(Card):
    seat: int


# -- actions -----------------------------------------------------------------------------------
class Play(Wire):
    """Play a card of your hand (following suit when you can)."""

    type: Literal["play"]
    card: str


# -- events ------------------------------------------------------------------------------------
class Dealt(Wire):
    """To its seat only: the hand just dealt."""

    type: Literal["dealt"]
    seat: int
    cards: list[Card]


class HandStarted(Wire):
    type: Literal["hand_started"]
    hand: int
    trump: Card
    leader: int


class Played(Wire):
    type: Literal["played"]
    seat: int
    card: Card


class TrickWon(Wire):
    type: Literal["trick_won"]
    seat: int
    cards: list[PlacedCard]
    tricks: list[int] = Field(description="tricks won in this hand, per seat")


class HandOver(Wire):
    type: Literal["hand_over"]
    hand: int
    tricks: list[int]
    score: list[int] = Field(description="tricks won in the match, per seat")


class MatchOver(Outcome):
    type: Literal["match_over"]


# -- the view ----------------------------------------------------------------------------------
class View(Wire):
    game: Literal["tricks"]
    viewer: int
    phase: Literal["play", "over"]
    phase_id: int
    hand_number: int
    hands_to_play: int
    current_seat: int | None
    leader: int
    trump: Card
    hand: list[Card] | None = Field(description="your hand (seats only)")
    playable: list[str] = Field(description="the ids you may play now (your turn only)")
    hand_sizes: list[int]
    table: list[PlacedCard]
    last_trick: list[PlacedCard]
    tricks: list[int]
    score: list[int]
    outcome: Outcome | None
    hands: list[list[Card]] | None = Field(None, description="both hands (the admin's view only)")


ACTIONS = (Play,)
EVENTS = (Dealt, HandStarted, Played, TrickWon, HandOver, MatchOver)
