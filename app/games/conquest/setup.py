"""Hold'em Conquest setup (conquest.md 1): options, the board, starting lands and mana, fresh tables and the
stacked positions used by tests.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from pydantic import BaseModel

from app.games.base import CardTokens, Event, Rng
from app.games.conquest import poker
from app.games.conquest.board import generate_board
from app.games.conquest.round import _fresh_table, _run, _start_round
from app.games.conquest.state import NEUTRAL, ORDERS, Options, State

# --------------------------------------------------------------------------------------------
# Setup
# --------------------------------------------------------------------------------------------

def coerce_options(options: BaseModel | Mapping[str, Any] | None) -> Options:
    """The lobby options as :class:`Options` (accepts an Options, another model, a dict or None)."""
    if options is None:
        return Options()
    if isinstance(options, Options):
        return options
    if isinstance(options, BaseModel):
        options = options.model_dump()
    return Options.model_validate(dict(options))


def setup(seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> State:
    """A new match at round 1's ORDERS phase (conquest.md 1.1–1.4). Raises ValueError for a seat
    count outside 2–4, an empty seed, or ``options.loadouts`` listing more seats than the match has
    (section 5)."""
    if not isinstance(seats, int) or not 2 <= seats <= 4:
        raise ValueError("conquest is for 2-4 seats")
    opts = coerce_options(options)
    if len(opts.loadouts) > seats:
        raise ValueError(f"loadouts for {len(opts.loadouts)} seats in a {seats}-seat match")
    st = State.__new__(State)
    st.seats = seats
    st.options = opts
    st.rng = Rng(seed)
    st.board = generate_board(seats, st.rng)
    st.tokens = CardTokens(seed)
    st.dealt = 0
    st.round = 1
    st.phase = ORDERS
    st.phase_id = 0
    st.owner = [NEUTRAL] * st.board.size
    for seat, land in enumerate(st.board.starts):
        st.owner[land] = seat
    st.mana = [opts.starting_mana] * seats
    st.out_round = [0] * seats
    st.tables = [_fresh_table(st) for _ in range(st.board.size)]
    st.required = frozenset()
    st.submissions = {}
    st.attacks = {}
    st.defences = ()
    st.passed = ()
    st.battles = {}
    st.battle_lands = {}
    st.pools = {}
    st.pool_stack = {}
    st.result = None
    st.targets = {}
    st.view_memo = {}
    st.active = {}
    st.scouted = {}
    st.shields = {}
    st.double_land = {}
    st.hand_sizes = {}
    st.order_prices = {}
    events: list[Event] = []
    _start_round(st, events)
    _run(st, events)
    return st


def stacked_position(
    seats: int = 2,
    *,
    seed: bytes = b"conquest-position",
    options: BaseModel | Mapping[str, Any] | None = None,
    owner: Mapping[int, int] | None = None,
    mana: Iterable[int] | None = None,
    table_decks: Mapping[int, str | Iterable[str]] | None = None,
    pools: Mapping[int, str | Iterable[str]] | None = None,
) -> State:
    """Test support: an exact position at round 1's ORDERS phase.

    - ``owner``: land -> seat for every player-owned land (all others neutral); default: the map's
      starting lands. Lands come from the map of ``seed`` (see ``state.board``).
    - ``mana``: seat -> mana.
    - ``table_decks``: land -> its deck top first, e.g. ``"3h4s5c 9d Kh"``: the first 3 cards are the
      flop, the next are drawn in order (the neutral's hand, then turn, then river — skipping any card
      in a participant's hand, 3.8); unnamed cards follow in ascending order.
    - ``pools``: seat -> cards dealt first to its next pool (2.3), in order.
    """
    st = setup(seats, options, seed).clone()
    if owner is not None:
        st.owner = [NEUTRAL] * st.board.size
        for land, seat in owner.items():
            st.owner[land] = seat
    if mana is not None:
        st.mana = list(mana)
    for land, names in (table_decks or {}).items():
        cards = poker.parse_cards(names)
        st.tables[land] = _fresh_table(st, cards + [c for c in range(52) if c not in cards])
    if pools:  # a new dict: ``pool_stack`` is replaced, never changed in place (State.clone)
        st.pool_stack = {**st.pool_stack, **{seat: tuple(poker.parse_cards(names)) for seat, names in pools.items()}}
    _start_round(st, [])
    _run(st, [])
    return st
