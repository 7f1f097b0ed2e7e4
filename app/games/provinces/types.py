"""Provinces on the wire, as types: one model per action and per event type, and the view
(``GameInfo.actions`` / ``events`` / ``view``; prose and rules in ``docs/games/provinces.md``).

Declarations only: the engine builds plain dicts (``rules``, ``view``); these types describe them,
and Bannerfall's JSON Schemas for the game are made from them (``app.games.contract``).
"""
from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app.games.contract import Outcome, Wire

CardId = str
Rank = Literal["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "joker"]
Suit = Literal["clubs", "diamonds", "hearts", "spades"]
Mode = Literal["evenly", "randomly", "most_unevenly"]


class _Action(Wire):
    """Actions: extra fields are ignored by the engine (docs/games/provinces.md, "Actions")."""

    model_config = ConfigDict(frozen=True, extra="allow")


# -- actions (docs/games/provinces.md, "Actions") ------------------------------------------------
class Attack(_Action):
    """Attack an adjacent province of another seat with cards of one garrison (rules 3.1-3.7)."""

    type: Literal["attack"]
    from_: int = Field(alias="from", description="own province")
    to: int = Field(description="an adjacent province of another seat")
    cards: list[CardId] = Field(min_length=1, max_length=7, description="distinct tokens of the from garrison")


class Move(_Action):
    """Move cards between adjacent own provinces (rules 4.2, 4.3)."""

    type: Literal["move"]
    from_: int = Field(alias="from")
    to: int
    cards: list[CardId] = Field(min_length=1, max_length=7)


class Sort(_Action):
    """Reorder a frontline garrison (rule 4.1): every token once, top first."""

    type: Literal["sort"]
    province: int
    order: list[CardId]


class SetDealing(_Action):
    """Choose how reinforcements are dealt (rule 5)."""

    type: Literal["set_dealing"]
    mode: Mode


class EndTurn(_Action):
    """End the turn (rules 2.2, 2.3); always legal while it is the seat's turn."""

    type: Literal["end_turn"]


# -- parts --------------------------------------------------------------------------------------
class Card(Wire):
    """A card: ``value`` null for a joker that has not won; ``hidden`` (admin view only) marks a
    joker other seats do not see."""

    id: CardId
    rank: Rank
    suit: Suit | None
    value: int | None
    hidden: bool | None = None


class Duel(Wire):
    attacker: Card
    defender: Card
    winner: Literal["attacker", "defender", "none"]
    card: Card | None = Field(description="the winner after the duel, or null")
    attacker_stack: list[Card]
    defender_stack: list[Card]


class Retreat(Wire):
    to: int | None
    cards: list[Card]
    destroyed: list[Card]


class Dealt(Wire):
    province: int
    card: Card


# -- events (docs/games/provinces.md, "Events") ------------------------------------------------
class Battle(Wire):
    type: Literal["battle"]
    seat: int = Field(description="the attacker")
    defender: int
    from_: int = Field(alias="from")
    to: int
    attacking: list[Card]
    defending: list[Card]
    duels: list[Duel]
    routed: list[Literal["attacker", "defender"]]
    result: Literal["conquered", "repelled"]
    occupying: list[Card]
    returned: list[Card]
    retreat: Retreat | None


class Moved(Wire):
    type: Literal["moved"]
    seat: int
    from_: int = Field(alias="from")
    to: int
    cards: list[Card]


class Sorted(Wire):
    type: Literal["sorted"]
    seat: int
    province: int
    order: list[CardId]


class DealingModeSet(Wire):
    type: Literal["dealing_mode_set"]
    seat: int
    mode: Mode


class TurnEnded(Wire):
    type: Literal["turn_ended"]
    seat: int
    turn: int


class Reinforced(Wire):
    type: Literal["reinforced"]
    seat: int
    cards: list[Dealt]
    discarded: int


class TurnStarted(Wire):
    type: Literal["turn_started"]
    seat: int
    turn: int
    round: int
    phase_id: int


class Eliminated(Wire):
    type: Literal["eliminated"]
    seat: int


class MatchOver(Outcome):
    type: Literal["match_over"]


# -- the view (docs/games/provinces.md, "View") ---------------------------------------------------
class SeatInfo(Wire):
    seat: int
    alive: bool
    provinces: int
    cards: int = Field(description="cards shown to the viewer")


class Province(Wire):
    id: int
    q: int
    r: int
    adjacent: list[int]
    owner: int
    age: int
    size: int
    garrison: list[Card] = Field(description="top first; jokers hidden from the viewer are absent")
    frontline: bool
    attacked: bool
    received: bool | None = Field(description="null for other seats' provinces")


class ViewOptions(Wire):
    turn_seconds: int
    max_rounds: int
    tie_rule: Literal["both_destroyed", "defender_wins"]


class View(Wire):
    """``GAME.view(state, viewer)``; the admin's view also has ``dealing_modes``, ``shoe``,
    ``discard`` and ``next_token``."""

    game: Literal["provinces"]
    viewer: int
    phase: Literal["turn", "over"]
    phase_id: int
    turn: int
    round: int
    current_seat: int | None
    seat_order: list[int]
    seats: list[SeatInfo]
    provinces: list[Province]
    actions_this_turn: int | None
    options: ViewOptions
    max_garrison: int
    dealing_mode: Mode | None
    outcome: Outcome | None
    dealing_modes: list[Mode] | None = None
    shoe: list[str] | None = None
    discard: list[str] | None = None
    next_token: int | None = None


ACTIONS = (Attack, Move, Sort, SetDealing, EndTurn)
EVENTS = (Battle, Moved, Sorted, DealingModeSet, TurnEnded, Reinforced, TurnStarted, Eliminated, MatchOver)
