"""Tally, rules version 1: a test game, registered only by the rules-version tests (never in
``app.games.registry``' entry points).

2-4 seats take turns; the first seat is drawn from the match's RNG. On its turn a seat sends
``{"type": "add", "n": N}`` with N in 1..3 (the default at the deadline: 1) and its total grows by
N. The first seat to reach 10 wins (rank 1, every other seat rank 2).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict, Field

from app.games.base import (
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


class TallyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    turn_seconds: int = Field(600, ge=5, le=3600)


@dataclass(frozen=True)
class TallyState:
    seats: int
    turn_seconds: int
    totals: tuple[int, ...]
    turn: int
    phase_id: int
    winner: int | None = None


class TallyGame(GameBase[TallyState]):
    """Rules version 1 (see the module docstring)."""

    info: ClassVar[GameInfo] = GameInfo(
        id="tally", title="Tally", min_seats=2, max_seats=4, options=TallyOptions, phases=("turn",),
        action_types=frozenset(("add",)), rules_version=1,
    )
    #: the largest N an ``add`` may carry, what each point of N adds, and the total that wins
    MAX_ADD: ClassVar[int] = 3
    WEIGHT: ClassVar[int] = 1
    TARGET: ClassVar[int] = 10

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> TallyState:
        if not self.info.min_seats <= seats <= self.info.max_seats:
            raise ValueError(f"tally takes 2-4 seats, not {seats}")
        opts = TallyOptions.model_validate(options or {}) if not isinstance(options, TallyOptions) else options
        return TallyState(seats=seats, turn_seconds=opts.turn_seconds, totals=(0,) * seats,
                          turn=Rng(seed).randbelow(seats), phase_id=1)

    def prompts(self, state: TallyState) -> list[Prompt]:
        if state.winner is not None:
            return []
        return [Prompt(seat=state.turn, kind="turn", phase_id=state.phase_id,
                       deadline_seconds=float(state.turn_seconds), default_action={"type": "add", "n": 1})]

    def check_action(self, state: TallyState, seat: int, action: Mapping[str, Any]) -> None:
        kind = action_type(action)
        if kind != "add":
            raise IllegalAction("unknown_action", f"unknown action type {kind!r}")
        if state.winner is not None:
            raise IllegalAction("match_over", "the match is over")
        if seat != state.turn:
            raise IllegalAction("not_your_turn", "it is not your turn")
        n = action.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= self.MAX_ADD:
            raise IllegalAction("bad_amount", f"n must be a whole number from 1 to {self.MAX_ADD}")

    def legal_actions(self, state: TallyState, seat: int) -> list[LegalAction]:
        if state.winner is not None or seat != state.turn:
            return []
        return [LegalAction("add", {"type": "add", "n": 1}, {"n": list(range(1, self.MAX_ADD + 1))})]

    def apply(self, state: TallyState, seat: int, action: Mapping[str, Any]) -> tuple[TallyState, list[Event]]:
        self.check_action(state, seat, action)
        n = int(action["n"])
        totals = list(state.totals)
        totals[seat] += n * self.WEIGHT
        winner = seat if totals[seat] >= self.TARGET else None
        new = replace(state, totals=tuple(totals), turn=(seat + 1) % state.seats, phase_id=state.phase_id + 1,
                      winner=winner)
        return new, [Event("added", {"seat": seat, "n": n, "total": totals[seat]})]

    def view(self, state: TallyState, viewer: int) -> dict[str, Any]:
        if viewer >= state.seats:
            raise ValueError(f"no seat {viewer}")
        return {"totals": list(state.totals), "turn": state.turn, "target": self.TARGET}

    def hidden_tokens(self, state: TallyState, viewer: int) -> set[str]:
        return set()

    def outcome(self, state: TallyState) -> Outcome | None:
        if state.winner is None:
            return None
        return Outcome(ranks={s: 1 if s == state.winner else 2 for s in range(state.seats)},
                       scores={s: float(t) for s, t in enumerate(state.totals)}, reason="target_reached")


GAME = TallyGame()
