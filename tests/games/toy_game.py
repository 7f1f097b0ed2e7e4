"""A toy fourth game, only for the conformance suite: it shows that a game gets the whole suite by
being listed (``tests/games/test_conformance.py``), and keeps the suite honest about what it assumes.

High card: every round each seat is dealt one hidden card (1-10, a fresh opaque token); in one
simultaneous ``play`` phase each seat sends ``{"type": "show"}`` (the default) or ``{"type": "fold"}``;
the highest shown card scores a point (ties: nobody). After ``rounds`` rounds the most points wins.
"""
from __future__ import annotations

import random
from typing import Any, ClassVar, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field

from app.games.base import (
    ADMIN,
    CardTokens,
    Event,
    GameBase,
    GameInfo,
    IllegalAction,
    LegalAction,
    Outcome,
    Prompt,
    Rng,
    action_type,
)
from app.games.contract import Outcome as OutcomeWire
from app.games.contract import Wire


class ToyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rounds: int = Field(3, ge=1, le=20)
    play_seconds: int = Field(30, ge=5, le=600)


class Show(Wire):
    type: Literal["show"]


class Fold(Wire):
    type: Literal["fold"]


class ToyCard(Wire):
    seat: int | None = None
    id: str | None = None
    value: int | None = None


class Dealt(Wire):
    type: Literal["dealt"]
    seat: int
    card: ToyCard


class Submitted(Wire):
    type: Literal["submitted"]
    seat: int
    phase_id: int


class RoundOver(Wire):
    type: Literal["round_over"]
    shown: list[ToyCard]
    points: list[int]


class MatchOver(OutcomeWire):
    type: Literal["match_over"]


class ToyView(Wire):
    phase: Literal["play", "over"]
    viewer: int
    round: int
    points: list[int]
    shown: list[ToyCard]
    cards: list[ToyCard]
    submitted: list[int]


class ToyState:
    """Copied on write by ``apply`` (never mutated after it is returned)."""

    def __init__(self, seats: int, options: ToyOptions, seed: bytes) -> None:
        self.seats = seats
        self.options = options
        self.rng = Rng(seed)
        self.tokens = CardTokens(seed)
        self.dealt = 0
        self.round = 0
        self.phase_id = 0
        self.cards: tuple[tuple[str, int], ...] = ()
        self.choices: dict[int, str] = {}
        self.points = (0,) * seats
        self.shown: tuple[tuple[int, str, int], ...] = ()  # the last round's shown cards
        self.result: Outcome | None = None

    def copy(self) -> ToyState:
        new = object.__new__(ToyState)
        new.__dict__.update(self.__dict__)
        new.rng = self.rng.clone()
        new.choices = dict(self.choices)
        return new


def _deal(state: ToyState, events: list[Event]) -> None:
    cards = []
    for seat in range(state.seats):
        token = state.tokens.token(state.dealt)
        state.dealt += 1
        cards.append((token, state.rng.randint(1, 10)))
        events.append(Event("dealt", {"seat": seat, "card": {"id": token, "value": cards[-1][1]}}, frozenset((seat,))))
    state.cards = tuple(cards)
    state.round += 1
    state.phase_id += 1
    state.choices = {}


class ToyRandomBot:
    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        if prompt.get("submitted"):
            return None
        return {"type": self.rng.choice(["show", "fold"])}


class ToyGame(GameBase[ToyState]):
    info: ClassVar[GameInfo] = GameInfo(
        id="toy",
        title="High card",
        min_seats=2,
        max_seats=3,
        options=ToyOptions,
        phases=("play",),
        action_types=frozenset(("show", "fold")),
        bots={"random": ToyRandomBot},
        max_actions=100,
        hidden_information=True,
        simultaneous_moves=True,
        chance=frozenset(("cards",)),
        actions=(Show, Fold),
        events=(Dealt, Submitted, RoundOver, MatchOver),
        view=ToyView,
    )

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> ToyState:
        if not self.min_seats <= seats <= self.max_seats:
            raise ValueError("toy is for 2-3 seats")
        opts = options if isinstance(options, ToyOptions) else ToyOptions.model_validate(dict(options or {}))
        state = ToyState(seats, opts, bytes(seed))
        _deal(state, [])
        return state

    def prompts(self, state: ToyState) -> list[Prompt]:
        if state.result is not None:
            return []
        return [Prompt(seat, "play", state.phase_id, float(state.options.play_seconds), {"type": "show"}, True,
                       seat in state.choices) for seat in range(state.seats)]

    def check_action(self, state: ToyState, seat: int, action: Mapping[str, Any]) -> None:
        kind = action_type(action)
        if state.result is not None:
            raise IllegalAction("match_over", "the match is over")
        if kind not in self.info.action_types:
            raise IllegalAction("unknown_action", f"unknown action type {kind[:40]!r}")
        if type(seat) is not int or not 0 <= seat < state.seats:
            raise IllegalAction("no_prompt", "no such seat")

    def legal_actions(self, state: ToyState, seat: int) -> list[LegalAction]:
        if state.result is not None or type(seat) is not int or not 0 <= seat < state.seats:
            return []
        return [LegalAction("show", {"type": "show"}), LegalAction("fold", {"type": "fold"})]

    def apply(self, state: ToyState, seat: int, action: Mapping[str, Any]) -> tuple[ToyState, list[Event]]:
        self.check_action(state, seat, action)
        new = state.copy()
        new.choices[seat] = action["type"]
        # a replaced choice is the seat's alone: only its first submission is public
        events = [Event("submitted", {"seat": seat, "phase_id": state.phase_id},
                        frozenset((seat,)) if seat in state.choices else None)]
        if len(new.choices) < new.seats:
            return new, events
        shown = tuple((s, *new.cards[s]) for s in range(new.seats) if new.choices[s] == "show")
        new.shown = shown
        best = max((value for _, _, value in shown), default=0)
        winners = [s for s, _, value in shown if value == best]
        if len(winners) == 1:
            points = list(new.points)
            points[winners[0]] += 1
            new.points = tuple(points)
        events.append(Event("round_over", {"shown": [{"seat": s, "id": t, "value": v} for s, t, v in shown],
                                           "points": list(new.points)}))
        if new.round >= new.options.rounds:
            order = sorted(set(new.points), reverse=True)
            new.result = Outcome({s: 1 + order.index(p) for s, p in enumerate(new.points)},
                                 {s: float(p) for s, p in enumerate(new.points)}, "rounds_played")
            new.cards = ()
            events.append(Event("match_over", new.result.to_wire()))
        else:
            _deal(new, events)
        return new, events

    def view(self, state: ToyState, viewer: int) -> dict[str, Any]:
        return {
            "phase": "over" if state.result is not None else "play",
            "viewer": viewer,
            "round": state.round,
            "points": list(state.points),
            "shown": [{"seat": s, "id": t, "value": v} for s, t, v in state.shown],
            "cards": [{"seat": s, "id": t, "value": v} if viewer in (s, ADMIN) else {"seat": s}
                      for s, (t, v) in enumerate(state.cards)],
            "submitted": sorted(state.choices),
        }

    def hidden_tokens(self, state: ToyState, viewer: int) -> set[str]:
        if viewer == ADMIN:
            return set()
        return {t for s, (t, _) in enumerate(state.cards) if s != viewer}

    def outcome(self, state: ToyState) -> Outcome | None:
        return state.result


GAME = ToyGame()
