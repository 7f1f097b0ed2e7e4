"""Hold'em Conquest on the wire, as types: one model per action and per event type, and the view
(``GameInfo.actions`` / ``events`` / ``view``; prose and rules in ``docs/games/conquest.md``).

Declarations only: the engine builds plain dicts (``rules``, ``round``, ``view``); these types
describe them, and Bannerfall's JSON Schemas for the game are made from them (``app.games.contract``).
"""
from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app.games.contract import Outcome, Wire

CardId = str
#: a land id as a JSON object key (a string of digits)
LandKey = str
Who = int | Literal["neutral"]
Phase = Literal["orders", "defence", "assign", "turn", "river", "over"]
Special = Literal[
    "shield", "scout", "loyalty", "spy", "corruption", "big_brother", "read_hand", "hound", "joker",
    "double_hand", "double_set", "double_income", "full_double_income", "insurance", "free_fold",
]
Status = Literal["live", "folded_turn", "folded_river", "out_turn", "out_river"]
Seen = Literal["scout", "loyalty", "spy", "corruption", "big_brother", "read_hand", "hound"]


class _Action(Wire):
    """Actions: the engine reads only the fields below (others are ignored)."""

    model_config = ConfigDict(frozen=True, extra="allow")


# -- actions (docs/games/conquest.md, "Actions") ------------------------------------------------
class Orders(_Action):
    """Activate tables to attack (2.1): distinct land ids, at most 10; ``[]`` attacks nothing."""

    type: Literal["orders"]
    attack: list[int] = Field(max_length=64)


class Defend(_Action):
    """Defend attacked lands of the seat (2.2)."""

    type: Literal["defend"]
    lands: list[int] = Field(max_length=64)


class Assign(_Action):
    """Put the pool into hands (2.3): land id (as a string) -> ``hand_size`` card ids."""

    type: Literal["assign"]
    hands: dict[LandKey, list[CardId]]


class Decide(_Action):
    """Stay or fold (3.2-3.4): ``folds`` the lands folded now; ``keep`` (double_hand, river only)."""

    type: Literal["decide"]
    folds: list[int] = Field(max_length=64)
    keep: dict[LandKey, list[CardId]] | None = None


class UseSpecial(_Action):
    """Activate or use a special (section 5); ``land``, ``mana``, ``card`` as the special needs."""

    type: Literal["special"]
    special: Special
    land: int | None = None
    mana: int | None = None
    card: CardId | None = None


# -- parts --------------------------------------------------------------------------------------
class Card(Wire):
    """A card: ``{"id", "card": "Ah"}`` when visible, ``{"hidden": true}`` (no id) when not; the admin
    view shows every face, marking those hidden from spectators. ``seen``: shown by that special;
    ``joker``: the owner's joker card (true), or at the final the card it became; ``counted``: one of
    the 2 cards of a 4-card hand that counted."""

    id: CardId | None = None
    card: str | None = Field(None, description="rank (2-9 T J Q K A) and suit (c d h s)")
    hidden: bool | None = None
    seen: Seen | None = None
    joker: bool | str | None = None
    counted: bool | None = None


class Face(Wire):
    """A dealt card with its id."""

    id: CardId
    card: str


class Attack(Wire):
    land: int
    attackers: list[int]


class Passed(Wire):
    land: int
    from_: int = Field(alias="from")
    to: int


class Hand(Wire):
    land: int
    cards: list[Card]


# -- events (docs/games/conquest.md, "Events") -------------------------------------------------
class Submitted(Wire):
    type: Literal["submitted"]
    seat: int
    phase_id: int
    kind: str


class RoundStarted(Wire):
    type: Literal["round_started"]
    round: int


class Activations(Wire):
    type: Literal["activations"]
    attacks: list[Attack]
    mana: list[int]


class AttacksWithdrawn(Wire):
    type: Literal["attacks_withdrawn"]
    seat: int
    lands: list[int]
    reason: Literal["shield"]


class Defences(Wire):
    type: Literal["defences"]
    lands: list[int]
    mana: list[int]


class TablePassed(Wire):
    type: Literal["table_passed"]
    land: int
    from_: int = Field(alias="from")
    to: int


class PoolDealt(Wire):
    type: Literal["pool_dealt"]
    seat: int
    lands: list[int]
    cards: list[Face]


class HandsSet(Wire):
    type: Literal["hands_set"]
    seat: int
    hands: list[Hand]
    burned: list[CardId] | None = None


class StartedBattle(Wire):
    land: int
    holder: Who
    attackers: list[int]
    defender: int | None
    flop: list[Face]


class BattlesStarted(Wire):
    type: Literal["battles_started"]
    battles: list[StartedBattle]


class OpenedTable(Wire):
    land: int
    paid: list[int]
    technical_folds: list[int]
    card: Face | None


class StageOpened(Wire):
    type: Literal["stage_opened"]
    stage: Literal["turn", "river"]
    tables: list[OpenedTable]
    mana: list[int]


class Fold(Wire):
    land: int
    seat: int
    refund: int


class Folds(Wire):
    type: Literal["folds"]
    stage: Literal["turn", "river"]
    folds: list[Fold]
    mana: list[int]


class ShownHand(Wire):
    seat: Who
    cards: list[Card]
    category: str


class Showdown(Wire):
    type: Literal["showdown"]
    land: int
    hands: list[ShownHand]


class BattleWon(Wire):
    type: Literal["battle_won"]
    land: int
    winner: Who
    result: str
    refunded: dict[str, int]
    mana: list[int]


class Eliminated(Wire):
    type: Literal["eliminated"]
    seat: int


class Income(Wire):
    type: Literal["income"]
    mana: list[int]
    tables: list[int]


class MatchOver(Outcome):
    type: Literal["match_over"]


class SpecialUsed(Wire):
    type: Literal["special_used"]
    seat: int
    special: Special
    cost: int
    mana: list[int]
    land: int | None = None
    shield: int | None = None


class SpecialSeen(Wire):
    type: Literal["special_seen"]
    seat: int
    special: Special
    land: int | None = None
    flop: list[str] | None = Field(None, description="scout: the faces of the flop")
    card: CardId | None = Field(None, description="joker: the card set as the joker")


# -- the view (docs/games/conquest.md, "View") ---------------------------------------------------
class SeatInfo(Wire):
    seat: int
    mana: int
    tables: int
    eliminated: bool
    start_land: int
    must_act: bool
    submitted: bool
    specials: list[Special] | None = None
    double_income_land: int | None = None


class Land(Wire):
    id: int
    q: int
    r: int
    owner: int | None
    neighbours: list[int]
    flop: list[Card]
    shield: int | None = None


class Participant(Wire):
    seat: Who
    role: Literal["attacker", "defender", "neutral"]
    status: Status
    hand: list[Card] | None
    paid: int | None = None
    refunded: int | None = None
    category: str | None = None


class BattleView(Wire):
    land: int
    holder: Who
    stage: Literal["assign", "turn", "river", "done"]
    flop: list[Face] | None
    turn: Face | None
    river: Face | None
    participants: list[Participant]
    winner: Who | None
    result: str | None


class Submission(Wire):
    type: Literal["orders", "defend", "assign", "decide"]
    attack: list[int] | None = None
    lands: list[int] | None = None
    hands: dict[LandKey, list[CardId]] | None = None
    folds: list[int] | None = None
    keep: dict[LandKey, list[CardId]] | None = None


class You(Wire):
    seat: int
    mana: int
    max_battles: int
    submission: Submission | None
    pool: list[Face]
    attackable: list[int]
    defendable: list[int]
    battle_lands: list[int]
    decision_lands: list[int]
    attacks_made: int | None = None
    loadout: list[Special] | None = None
    hand_size: int | None = None
    special_costs: dict[str, int] | None = None
    reserved: int | None = None
    scout_costs: dict[LandKey, int] | None = None
    jokers: list[int] | None = None


class View(Wire):
    """``GAME.view(state, viewer)``: ``you`` for seats only; ``pools`` and ``submissions`` for the admin."""

    game: Literal["conquest"]
    viewer: int
    round: int
    max_rounds: int
    tables_to_win: int
    phase: Phase
    phase_id: int
    seats: list[SeatInfo]
    lands: list[Land]
    attacks: list[Attack]
    defences: list[int]
    passed: list[Passed]
    battles: list[BattleView]
    outcome: Outcome | None
    you: You | None = None
    pools: dict[str, list[Card]] | None = None
    submissions: dict[str, Submission] | None = None


ACTIONS = (Orders, Defend, Assign, Decide, UseSpecial)
EVENTS = (Submitted, RoundStarted, Activations, AttacksWithdrawn, Defences, TablePassed, PoolDealt, HandsSet,
          BattlesStarted, StageOpened, Folds, Showdown, BattleWon, Eliminated, Income, MatchOver, SpecialUsed,
          SpecialSeen)
