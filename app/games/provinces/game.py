"""The Provinces ``Game`` object (``app.games.base.Game``; rules in ``shared/rules/provinces.md``).

A thin, stateless class over the modules that hold each part: ``rules`` (setup, battle, dealing,
``apply`` and legality), ``view`` (visibility, rules 6.1–6.3), ``bots``.
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping, Sequence

from pydantic import BaseModel

from app.games.base import Event, GameBase, GameInfo, LegalAction, Outcome, Prompt
from app.parts import ViewParts

from . import rules, types
from .bots import GreedyBot, RandomBot
from .state import MAX_ACTIONS_PER_TURN, Options, State
from .view import hidden_tokens, render, render_many, view_parts

#: the most rounds a match may have (the bound of ``Options.max_rounds``, rule 2.4)
MAX_ROUNDS_BOUND: int = next(m.le for m in Options.model_fields["max_rounds"].metadata if hasattr(m, "le"))


class ProvincesGame(GameBase[State]):
    """Provinces: hex-map territory war with garrisons of cards (``shared/rules/provinces.md``)."""

    info: ClassVar[GameInfo] = GameInfo(
        id="provinces",
        title="Provinces",
        min_seats=2,
        max_seats=6,
        options=Options,
        phases=("turn",),
        action_types=frozenset(("attack", "move", "sort", "set_dealing", "end_turn")),
        bots={"random": RandomBot, "smart": GreedyBot},
        rules_version=1,
        # rounds (Options.max_rounds <= 1000) x seats (<= 6) x actions a turn (256 + end_turn), rule 2.4
        max_actions=MAX_ROUNDS_BOUND * 6 * (MAX_ACTIONS_PER_TURN + 1),
        hidden_information=True,  # jokers that have not won (rule 6.1)
        simultaneous_moves=False,
        chance=frozenset(("cards",)),
        actions=types.ACTIONS,
        events=types.EVENTS,
        view=types.View,
        board="web/board.js",
        wording="events.json",
        compiled=("app.games.provinces.view",),
        # 3 rounds: long enough for a joker to be dealt in every match (hidden information)
        test_options={"max_rounds": 3},
    )

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> State:
        """A new match (rules 1.1, 1.3, 2.1). ``options``: an :class:`Options`, a dict of its fields or
        None. Raises ValueError for a bad seat count, pydantic ValidationError for bad options."""
        if options is None:
            options = Options()
        elif not isinstance(options, Options):
            data = options.model_dump() if isinstance(options, BaseModel) else dict(options)
            options = Options(**data)
        return rules.setup_state(seats, options, bytes(seed))

    def prompts(self, state: State) -> list[Prompt]:
        """One ``turn`` prompt for the seat whose turn it is; its default is ``end_turn`` (rule 2.2)."""
        if state.result is not None:
            return []
        assert state.current is not None  # None only once the result is set
        return [
            Prompt(
                seat=state.current,
                kind="turn",
                phase_id=state.phase_id,
                deadline_seconds=float(state.options.turn_seconds),
                default_action={"type": "end_turn"},
            )
        ]

    def check_action(self, state: State, seat: int, action: Mapping[str, Any]) -> None:
        """:func:`app.games.provinces.rules.check_action`."""
        rules.check_action(state, seat, action)

    def legal_actions(self, state: State, seat: int) -> list[LegalAction]:
        """:func:`app.games.provinces.rules.legal_actions`."""
        return rules.legal_actions(state, seat)

    def apply(self, state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
        """:func:`app.games.provinces.rules.apply` (codes in docs/games/provinces.md)."""
        return rules.apply(state, seat, action)

    def view(self, state: State, viewer: int) -> dict[str, Any]:
        """The state as ``viewer`` may see it (rules 6.1–6.3)."""
        return render(state, viewer)

    def views(self, state: State, viewers: Sequence[int]) -> list[dict[str, Any]]:
        """``[view(state, v) for v in viewers]`` (rules 6.1–6.3): :meth:`view_parts` decoded."""
        return render_many(state, viewers)

    def view_parts(self, state: State, viewers: Sequence[int]) -> list[ViewParts]:
        """Every viewer's view as encoded parts, each province encoded once per change (rules 6.1–6.3)."""
        return view_parts(state, viewers)

    def hidden_tokens(self, state: State, viewer: int) -> set[str]:
        """Tokens ``viewer`` must not see now (unrevealed jokers of other seats; rule 6.1)."""
        return hidden_tokens(state, viewer)

    def outcome(self, state: State) -> Outcome | None:
        return state.result
