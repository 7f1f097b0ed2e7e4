"""The Hold'em Conquest ``Game`` object (``app.games.base.Game``; rules in ``shared/rules/conquest.md``).

A thin, stateless class over the modules that hold each part: ``setup``, ``rules`` (prompts, ``apply``,
legality, the ``special`` action), ``round`` (phase resolution), ``costs``, ``queries``, ``view``
(visibility) and ``bots``.
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping, Sequence

from pydantic import BaseModel

from app.games.base import Event, GameBase, GameInfo, LegalAction, Outcome, Prompt
from app.games.conquest import rules, types, view
from app.games.conquest.bots import RandomBot, SensibleBot
from app.games.conquest.setup import setup
from app.games.conquest.state import Options, State
from app.parts import ViewParts


class ConquestGame(GameBase[State]):
    """The stateless ``Game`` object for Hold'em Conquest."""

    info: ClassVar[GameInfo] = GameInfo(
        id="conquest",
        title="Hold'em Conquest",
        min_seats=2,
        max_seats=4,
        options=Options,
        phases=("orders", "defence", "assign", "decision"),
        action_types=frozenset(("orders", "defend", "assign", "decide", "special")),
        bots={"random": RandomBot, "smart": SensibleBot},
        # seed 5.1.3: specials are activated at any moment of the match, prompted or not
        unprompted_actions=frozenset(("special",)),
        rules_version=1,
        # a cap, not a count: a seat may replace its submission until a phase ends (2), so only the
        # deadlines and the socket's message budget bound a phase; 60 rounds take ~100-300 records
        max_actions=250_000,
        hidden_information=True,  # pools, hands, face-down flops (4)
        simultaneous_moves=True,  # every phase (2)
        chance=frozenset(("cards",)),
        actions=types.ACTIONS,
        events=types.EVENTS,
        view=types.View,
        board="web/board.js",
        wording="events.json",
        compiled=("app.games.conquest.view",),
        test_options={"max_rounds": 2},
    )

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> State:
        """:func:`app.games.conquest.setup.setup` (conquest.md 1)."""
        return setup(seats, options, seed)

    def prompts(self, state: State) -> list[Prompt]:
        """:func:`app.games.conquest.rules.prompts`: one prompt per required seat of the phase."""
        return rules.prompts(state)

    def check_action(self, state: State, seat: int, action: Mapping[str, Any]) -> None:
        """:func:`app.games.conquest.rules.check_action`."""
        rules.check_action(state, seat, action)

    def legal_actions(self, state: State, seat: int) -> list[LegalAction]:
        """:func:`app.games.conquest.rules.legal_actions`."""
        return rules.legal_actions(state, seat)

    def apply(self, state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
        """:func:`app.games.conquest.rules.apply` (codes in docs/games/conquest.md)."""
        return rules.apply(state, seat, action)

    def view(self, state: State, viewer: int) -> dict[str, Any]:
        """:func:`app.games.conquest.view.view` (conquest.md 4)."""
        return view.view(state, viewer)

    def view_parts(self, state: State, viewers: Sequence[int]) -> list[ViewParts]:
        """:func:`app.games.conquest.view.view_parts`: every viewer's view as encoded parts, each piece
        encoded again only when what it shows changed (conquest.md 4)."""
        return view.view_parts(state, viewers)

    def hidden_tokens(self, state: State, viewer: int) -> set[str]:
        """:func:`app.games.conquest.view.hidden_tokens`."""
        return view.hidden_tokens(state, viewer)

    def outcome(self, state: State) -> Outcome | None:
        """:func:`app.games.conquest.rules.outcome` (2.5)."""
        return rules.outcome(state)
