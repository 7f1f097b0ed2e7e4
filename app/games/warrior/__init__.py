"""Warrior: nations of six races fight with dice over three rounds (``shared/rules/warrior.md``).

``GAME`` is the stateless engine; the package splits into ``cards`` (the card set, data), ``state``,
``dice`` (the exchange), ``rules`` (flow and apply), ``view`` (visibility) and ``bots``.
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict, Field

from app.games.base import Event, Outcome, Prompt
from app.games.warrior import rules
from app.games.warrior import view as view_module
from app.games.warrior.cards import CardSet, load_card_set
from app.games.warrior.state import (
    CONTINUE,
    KEEP,
    LOSE,
    OVER,
    PLACE_WIZARDS,
    REATTACK,
    SIEGE,
    SIMULTANEOUS,
    TARGET,
    Timing,
    WarriorState,
)


class WarriorOptions(BaseModel):
    """Lobby options (warrior.md 3.2, 4.8, 5.2): deadlines in seconds. Unknown options are rejected."""

    model_config = ConfigDict(extra="forbid")

    phase_seconds: int = Field(60, ge=5, le=3600, description="keep phase and wizard placement")
    decision_seconds: int = Field(20, ge=2, le=600, description="each choice inside an attack")
    siege_seconds: int = Field(10, ge=2, le=600, description="each siege window")


class WarriorGame:
    """The Warrior engine (implements ``app.games.base.Game``)."""

    id: ClassVar[str] = "warrior"
    title: ClassVar[str] = "Warrior"
    min_seats: ClassVar[int] = 2
    max_seats: ClassVar[int] = 4
    Options: ClassVar[type[BaseModel]] = WarriorOptions

    def __init__(self, card_set: CardSet | None = None) -> None:
        self.card_set = card_set if card_set is not None else load_card_set()

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> WarriorState:
        """A new match for ``seats`` (2-4) players, deterministic from ``seed``. Raises ValueError on a bad
        seat count (a lobby bug, not client input)."""
        if not isinstance(seats, int) or not self.min_seats <= seats <= self.max_seats:
            raise ValueError(f"warrior is for {self.min_seats}-{self.max_seats} players")
        if options is None:
            opts = WarriorOptions()
        elif isinstance(options, WarriorOptions):
            opts = options
        else:
            opts = WarriorOptions.model_validate(options if isinstance(options, Mapping) else options.model_dump())
        timing = Timing(float(opts.phase_seconds), float(opts.decision_seconds), float(opts.siege_seconds))
        return rules.new_match(seats, timing, bytes(seed), self.card_set)

    def prompts(self, state: WarriorState) -> list[Prompt]:
        """One prompt per seat in ``state.waiting``; [] once the match is over."""
        phase = state.phase
        if phase == OVER:
            return []
        if phase in (KEEP, PLACE_WIZARDS):
            deadline = state.timing.phase
        elif phase == SIEGE:
            deadline = state.timing.siege
        else:
            deadline = state.timing.decision
        simultaneous = phase in SIMULTANEOUS
        return [
            Prompt(
                seat=seat,
                kind=phase,
                phase_id=state.phase_id,
                deadline_seconds=deadline,
                default_action=self.default_action(state, seat),
                simultaneous=simultaneous,
                submitted=state.choices[seat] is not None,
            )
            for seat in state.waiting
        ]

    def default_action(self, state: WarriorState, seat: int) -> dict[str, Any]:
        """The action applied for ``seat`` when its deadline passes (2.3, 3.2, 4.8, 5.2)."""
        phase = state.phase
        if phase == KEEP:
            return rules.keep_choice_to_action(state, rules.default_keep(state, seat))
        if phase == PLACE_WIZARDS:
            return rules.default_place_wizards(state, seat)
        if phase == SIEGE:
            return {"type": "siege", "shots": []}
        if phase == TARGET:
            return rules.default_target(state)
        if phase == LOSE:
            return {"type": "lose", "cards": [state.tokens[c] for c in rules.default_losses(state, seat)]}
        if phase == CONTINUE:
            return {"type": "go_on"}
        if phase == REATTACK:
            return {"type": "end_attack"}
        return {}

    def apply(self, state: WarriorState, seat: int, action: Mapping[str, Any]) -> tuple[WarriorState, list[Event]]:
        return rules.apply(state, seat, action)

    def view(self, state: WarriorState, viewer: int) -> dict[str, Any]:
        return view_module.view(state, viewer)

    def hidden_tokens(self, state: WarriorState, viewer: int) -> set[str]:
        return view_module.hidden_tokens(state, viewer)

    def outcome(self, state: WarriorState) -> Outcome | None:
        return state.result


GAME = WarriorGame()

__all__ = ["GAME", "WarriorGame", "WarriorOptions"]
