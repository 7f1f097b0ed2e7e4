"""Warrior on the wire, as types: one model per action and per event type, and the view
(``GameInfo.actions`` / ``events`` / ``view``; prose and rules in ``docs/games/warrior.md``).

Declarations only: the engine builds plain dicts (``rules``, ``attack``, ``siege``, ``view``); these
types describe them, and Bannerfall's JSON Schemas for the game are made from them
(``app.games.contract``). Races are the card set's (data), so they are strings here.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from app.games.contract import Outcome, Wire

CardId = str
Race = str
Kind = Literal["creature", "attack", "wizard", "siege_engine"]


class _Action(Wire):
    """Actions: extra fields are ignored by the engine (docs/games/warrior.md, "Actions")."""

    model_config = ConfigDict(frozen=True, extra="allow")


class NationRef(Wire):
    """A nation of a player: its seat and race."""

    seat: int
    race: Race


class Shot(Wire):
    engine: CardId
    target: CardId


# -- actions (docs/games/warrior.md, "Actions") --------------------------------------------------
class PlaceWizards(_Action):
    type: Literal["place_wizards"]
    wizards: dict[CardId, Race | None]


class Keep(_Action):
    type: Literal["keep"]
    cards: list[CardId] = Field(max_length=32)
    attacks: dict[CardId, Race | None] | None = None
    wizards: dict[CardId, Race | None] | None = None


class Siege(_Action):
    type: Literal["siege"]
    shots: list[Shot] = Field(max_length=32)


class Target(_Action):
    type: Literal["target"]
    target: NationRef
    nation: Race | None = None
    force: list[CardId] | None = Field(None, max_length=32)


class Lose(_Action):
    type: Literal["lose"]
    cards: list[CardId] = Field(max_length=32)


class GoOn(_Action):
    type: Literal["go_on"]


class Stop(_Action):
    type: Literal["stop"]


class Reattack(_Action):
    type: Literal["reattack"]
    face_down: CardId


class EndAttack(_Action):
    type: Literal["end_attack"]


# -- parts --------------------------------------------------------------------------------------
class Symbols(Wire):
    infantry: int | None = None
    archer: int | None = None
    knight: int | None = None


class Card(Wire):
    """A card: creatures have ``race`` and ``symbols``; attack cards ``number``, ``symbols``,
    ``attack`` and ``mercenaries``. ``face_up`` on a nation's cards, ``nation`` on kept attack cards,
    ``hidden`` (admin view) on cards spectators do not see; pile faces (admin) have no id."""

    id: CardId | None = None
    kind: Kind
    race: Race | None = None
    symbols: Symbols | None = None
    number: int | None = None
    attack: Literal["nation", "mercenary"] | None = None
    mercenaries: int | None = None
    face_up: bool | None = None
    nation: Race | None = None
    hidden: bool | None = None


class Exchange(Wire):
    attacker_rolls: list[int]
    defender_rolls: list[int]
    attacker_dice: list[int]
    defender_dice: list[int]
    attacker_bonus: int
    defender_bonus: int
    attacker_losses: int
    defender_losses: int


class PlacedWizard(Wire):
    wizard: Card
    nation: Race | None


class KeptWizard(Wire):
    wizard: CardId
    nation: Race | None


class KeptAttack(Wire):
    card: CardId
    nation: Race | None


class Majority(Wire):
    race: Race
    creatures: int
    seats: list[int]
    points: int


class SiegeRecord(Wire):
    seat: int
    engine: CardId
    target: Card
    target_seat: int | None
    roll: int
    hit: bool


# -- events (docs/games/warrior.md, "Events") ---------------------------------------------------
class WizardsPlaced(Wire):
    type: Literal["wizards_placed"]
    seat: int
    wizards: list[PlacedWizard]


class Submitted(Wire):
    type: Literal["submitted"]
    seat: int
    phase: str


class RoundStarted(Wire):
    type: Literal["round_started"]
    round: int
    dealt: list[int]
    keep: list[int]


class Dealt(Wire):
    type: Literal["dealt"]
    cards: list[Card]


class DiscardsShuffled(Wire):
    type: Literal["discards_shuffled"]
    cards: int
    pile: int


class Kept(Wire):
    type: Literal["kept"]
    seat: int
    kept: list[Card]
    discarded: list[Card]
    wizards: list[KeptWizard]
    attacks: list[KeptAttack]


class AttackStarted(Wire):
    type: Literal["attack_started"]
    seat: int
    card: Card
    nation: Race | None


class AttackUnused(Wire):
    type: Literal["attack_unused"]
    seat: int
    card: CardId
    reason: Literal["no_legal_target"]


class TargetChosen(Wire):
    type: Literal["target_chosen"]
    seat: int
    nation: Race | None
    force: list[CardId]
    target: NationRef
    reattack: int


class ExchangeRolled(Exchange):
    type: Literal["exchange"]
    seat: int
    target: NationRef


class CardDestroyed(Wire):
    type: Literal["card_destroyed"]
    seat: int
    card: Card
    by: int
    cause: Literal["exchange", "siege"]
    nation: Race | None = None


class WizardDiscarded(Wire):
    type: Literal["wizard_discarded"]
    seat: int
    wizard: CardId
    reason: Literal["nation_gone"]


class AttackGoesOn(Wire):
    type: Literal["attack_goes_on"]
    seat: int


class AttackStopped(Wire):
    type: Literal["attack_stopped"]
    seat: int


class Reattacked(Wire):
    type: Literal["reattack"]
    seat: int
    face_down: CardId
    reattack: int


class AttackEnded(Wire):
    type: Literal["attack_ended"]
    seat: int
    card: CardId
    exchanges: int
    reattacks: int
    face_up_again: list[CardId]


class SiegeShot(SiegeRecord):
    type: Literal["siege_shot"]


class SiegeVoid(Wire):
    type: Literal["siege_void"]
    seat: int
    engine: CardId
    target: CardId


class RoundEnded(Wire):
    type: Literal["round_ended"]
    round: int


class MatchOver(Wire):
    type: Literal["match_over"]
    scores: dict[str, float]
    ranks: dict[str, int]
    victory_piles: list[int]
    majorities: list[Majority]


# -- the view (docs/games/warrior.md, "View") ----------------------------------------------------
class RaceInfo(Wire):
    race: Race
    enemy: Race
    majority_points: int


class Nation(Wire):
    race: Race
    enemy: Race
    size: int
    symbols: Symbols
    cards: list[Card]
    wizard: Card | None


class SeatInfo(Wire):
    seat: int
    nations: list[Nation]
    wizards: list[PlacedWizard]
    engines: list[Card]
    attack_cards: list[Card]
    victory_pile: int
    hand_size: int
    submitted: bool


class AttackView(Wire):
    seat: int
    card: Card
    kind: Literal["nation", "mercenary"]
    nation: Race | None
    force: list[Card]
    face_down: list[Card]
    force_symbols: Symbols
    target: NationRef | None
    started: bool
    exchanges: int
    reattacks: int
    last_exchange: Exchange | None


class Order(Wire):
    seat: int
    number: int
    card: CardId


class TargetNation(Wire):
    seat: int
    race: Race
    size: int


class TargetOption(Wire):
    nation: Race | None
    targets: list[TargetNation]


class Decision(Wire):
    """What the viewer needs for its own pending prompt (the fields of its ``kind``)."""

    kind: Literal["place_wizards", "keep", "siege", "target", "lose", "continue", "reattack"]
    hand: list[Card] | None = None
    keep: int | None = None
    wizards: list[Card] | None = None
    nations: list[Race] | None = None
    engines: list[CardId] | None = None
    targets: list[CardId] | None = None
    options: list[TargetOption] | None = None
    force_size: int | None = None
    force_candidates: list[CardId] | None = None
    count: int | None = None
    candidates: list[CardId] | None = None
    submission: dict[str, Any] | list[Any] | None = None


class View(Wire):
    """``GAME.view(state, viewer)``; the admin's also has ``hands``, ``decisions`` and ``pile``."""

    game: Literal["warrior"]
    viewer: int
    phase: str
    phase_id: int
    round: int
    races: list[RaceInfo]
    seats: list[SeatInfo]
    waiting: list[int]
    pile_size: int
    discards: list[Card]
    attack: AttackView | None
    attack_order: list[Order]
    last_siege: list[SiegeRecord]
    decision: Decision | None
    outcome: Outcome | None
    scores: list[int] | None = None
    majorities: list[Majority] | None = None
    hands: list[list[Card]] | None = None
    decisions: list[Decision | None] | None = None
    pile: list[Card] | None = None


ACTIONS = (PlaceWizards, Keep, Siege, Target, Lose, GoOn, Stop, Reattack, EndAttack)
EVENTS = (WizardsPlaced, Submitted, RoundStarted, Dealt, DiscardsShuffled, Kept, AttackStarted, AttackUnused,
          TargetChosen, ExchangeRolled, CardDestroyed, WizardDiscarded, AttackGoesOn, AttackStopped, Reattacked,
          AttackEnded, SiegeShot, SiegeVoid, RoundEnded, MatchOver)
