"""The Warrior ``Game`` object (``app.games.base.Game``; rules in ``shared/rules/warrior.md``).

A thin, stateless class over the modules that hold each part: ``cards`` (the card set, data),
``state``, ``dice`` (the exchange), ``rules`` (setup, rounds, prompts, ``apply``, legality),
``common``, ``attack`` and ``siege`` (the flow by topic), ``view`` (visibility) and ``bots``.
The card set is read on first use (not at import) and cached by the instance.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from app.games.base import Event, GameBase, GameInfo, LegalAction, Outcome, Prompt
from app.games.warrior import rules, types
from app.games.warrior import view as view_module
from app.games.warrior.bots import CaptainBot, RandomBot
from app.games.warrior.cards import CardSet, load_card_set
from app.games.warrior.state import (
    CONTINUE,
    KEEP,
    LOSE,
    PLACE_WIZARDS,
    REATTACK,
    SIEGE,
    TARGET,
    Timing,
    WarriorState,
)
from app.parts import ViewParts


class WarriorOptions(BaseModel):
    """Lobby options (warrior.md 3.2, 4.8, 5.2): deadlines in seconds. Unknown options are rejected."""

    model_config = ConfigDict(extra="forbid")

    phase_seconds: int = Field(60, ge=5, le=3600, description="keep phase and wizard placement")
    decision_seconds: int = Field(20, ge=2, le=600, description="each choice inside an attack")
    siege_seconds: int = Field(10, ge=2, le=600, description="each siege window")


class WarriorGame(GameBase[WarriorState]):
    """The Warrior engine. ``card_set``: a :class:`CardSet` to play with (tests), else the default
    table, loaded at the first ``setup`` and kept."""

    info: ClassVar[GameInfo] = GameInfo(
        id="warrior",
        title="Warrior",
        min_seats=2,
        max_seats=4,
        options=WarriorOptions,
        phases=(PLACE_WIZARDS, KEEP, SIEGE, TARGET, LOSE, CONTINUE, REATTACK),
        action_types=frozenset(rules.PHASE_ACTIONS_ALL),
        bots={"random": RandomBot, "smart": CaptainBot},
        rules_version=1,
        # a cap, not a count: three rounds (7) take ~30-300 records, but a seat may replace its keep or
        # wizards submission until the phase ends, so only the deadlines bound those phases
        max_actions=50_000,
        hidden_information=True,  # hands and the pile (7)
        simultaneous_moves=True,  # keep and wizard placement (3.2, 4.8)
        chance=frozenset(("cards", "dice")),
        actions=types.ACTIONS,
        events=types.EVENTS,
        view=types.View,
        board="web/board.js",
        wording="events.json",
        compiled=("app.games.warrior.view",),
        test_options={},
    )

    def __init__(self, card_set: CardSet | None = None) -> None:
        if card_set is not None:
            self.__dict__["card_set"] = card_set

    @cached_property
    def card_set(self) -> CardSet:
        """The card table (``cards.DEFAULT_PATH``), read once on first use. Raises CardSetError."""
        return load_card_set()

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
        """:func:`app.games.warrior.rules.prompts`."""
        return rules.prompts(state)

    def default_action(self, state: WarriorState, seat: int) -> dict[str, Any]:
        """:func:`app.games.warrior.rules.default_action`."""
        return rules.default_action(state, seat)

    def check_action(self, state: WarriorState, seat: int, action: Mapping[str, Any]) -> None:
        """:func:`app.games.warrior.rules.check_action`."""
        rules.check_action(state, seat, action)

    def legal_actions(self, state: WarriorState, seat: int) -> list[LegalAction]:
        """:func:`app.games.warrior.rules.legal_actions`."""
        return rules.legal_actions(state, seat)

    def apply(self, state: WarriorState, seat: int, action: Mapping[str, Any]) -> tuple[WarriorState, list[Event]]:
        """:func:`app.games.warrior.rules.apply` (codes in docs/games/warrior.md)."""
        return rules.apply(state, seat, action)

    def view(self, state: WarriorState, viewer: int) -> dict[str, Any]:
        """:func:`app.games.warrior.view.view` (warrior.md 7)."""
        return view_module.view(state, viewer)

    def views(self, state: WarriorState, viewers: Sequence[int]) -> list[dict[str, Any]]:
        """:func:`app.games.warrior.view.views`: the parts of :meth:`view_parts` decoded."""
        return view_module.views(state, viewers)

    def view_parts(self, state: WarriorState, viewers: Sequence[int]) -> list[ViewParts]:
        """:func:`app.games.warrior.view.view_parts`: each piece encoded once per change (warrior.md 7)."""
        return view_module.view_parts(state, viewers)

    def hidden_tokens(self, state: WarriorState, viewer: int) -> set[str]:
        """:func:`app.games.warrior.view.hidden_tokens`."""
        return view_module.hidden_tokens(state, viewer)

    def outcome(self, state: WarriorState) -> Outcome | None:
        return state.result
