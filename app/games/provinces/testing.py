"""Provinces: test support — build exact positions (used by ``tests/games/provinces``).

:func:`build_position` makes a :class:`State` from a small description::

    state = build_position(
        cells=[(0, 0), (1, 0), (2, 0)],        # hex cells; province ids in this order
        owners=[0, 1, 1],                       # owning seat per province
        garrisons=[["J", "9", "2"], ["7", "6", "5", "6", "7"], []],   # top first
        current=0,
    )

A card spec is a rank (``"2"``…``"10"``, ``"J"``, ``"Q"``, ``"K"``, ``"A"``) at face value,
``"rank:value"`` for a card whose current value differs (``"7:4"``), ``"joker"`` for a joker that
has not won, or ``"joker=rank:value"`` for a joker that won and now shows as that card. Suits are
cosmetic and assigned in turn. The shoe is given top first, as rank specs.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from app.games.base import CardTokens, Rng

from .board import Board
from .state import DECK_SIZE, FACE_VALUE, RANK, RANKS, SUITS, VALUE, Card, Options, State, card


def ident_of(rank: str, suit_index: int = 0, deck: int = 0) -> int:
    """The physical card id of ``rank`` (``"joker"`` for a joker) of the given suit and deck."""
    if rank == "joker":
        return deck * DECK_SIZE + 52 + (suit_index & 1)
    return deck * DECK_SIZE + RANKS.index(rank) * 4 + (suit_index & 3)


def make_card(spec: str, token: str, suit_index: int = 0) -> Card:
    """A board card from a spec (see module docstring). Raises ValueError for a bad spec."""
    if spec == "joker":
        return card(token, ident_of("joker", suit_index), "joker", None, None)
    if spec.startswith("joker="):
        rank, _, value = spec[len("joker="):].partition(":")
        if rank not in FACE_VALUE or not value:
            raise ValueError(f"bad card spec {spec!r}")
        return card(token, ident_of("joker", suit_index), rank, SUITS[suit_index & 3], int(value))
    rank, _, value = spec.partition(":")
    if rank not in FACE_VALUE:
        raise ValueError(f"bad card spec {spec!r}")
    strength = int(value) if value else FACE_VALUE[rank]
    return card(token, ident_of(rank, suit_index), rank, SUITS[suit_index & 3], strength)


def build_position(
    *,
    cells: Sequence[tuple[int, int]],
    owners: Sequence[int],
    garrisons: Sequence[Iterable[str]],
    seats: int | None = None,
    current: int = 0,
    seat_order: Sequence[int] | None = None,
    shoe: Sequence[str] = (),
    discard: Sequence[str] = (),
    ages: Sequence[int] | None = None,
    dealing: Sequence[str] | None = None,
    options: Options | None = None,
    turn: int = 1,
    round: int = 1,
    phase_id: int = 1,
    attacked: Iterable[int] = (),
    received: Iterable[int] = (),
    seed: bytes = b"provinces-test",
) -> State:
    """An exact position. ``seats`` defaults to ``max(owners) + 1``; ``seat_order`` to
    ``0..seats-1``; ages to 0; dealing modes to ``evenly``. Card tokens come from
    ``CardTokens(seed)`` with the counter continuing after the last placed card. Seats that own no
    province are listed as eliminated (in seat order)."""
    board = Board.from_coords(list(cells))
    if len(owners) != board.size or len(garrisons) != board.size:
        raise ValueError("owners and garrisons need one entry per cell")
    seats = seats if seats is not None else max(owners) + 1
    tokens = CardTokens(seed)
    counter = 0
    built = []
    suit = 0
    for specs in garrisons:
        garrison = []
        for spec in specs:
            garrison.append(make_card(spec, tokens.token(counter), suit))
            counter += 1
            suit += 1
        built.append(tuple(garrison))
    order = tuple(seat_order) if seat_order is not None else tuple(range(seats))
    return State(
        seats=seats,
        seat_order=order,
        board=board,
        options=options or Options(),
        owners=tuple(owners),
        garrisons=tuple(built),
        ages=tuple(ages) if ages is not None else (0,) * board.size,
        dealing=tuple(dealing) if dealing is not None else ("evenly",) * seats,
        shoe=tuple(ident_of(r, i) for i, r in reversed(list(enumerate(shoe)))),
        discard=tuple(ident_of(r, i) for i, r in enumerate(discard)),
        rng=Rng(seed),
        tokens=tokens,
        next_token=counter,
        turn=turn,
        round=round,
        current=current,
        phase_id=phase_id,
        attacked=sum(1 << p for p in set(attacked)),
        received=sum(1 << p for p in set(received)),
        eliminated=tuple(s for s in order if s not in owners),
    )


def specs(cards: Iterable[Card]) -> list[str]:
    """Cards back as specs (``"7"``, ``"J:10"``, ``"joker"``), for readable assertions."""
    out = []
    for c in cards:
        if c[VALUE] is None:
            out.append("joker")
        elif c[VALUE] == FACE_VALUE[c[RANK]]:
            out.append(c[RANK])
        else:
            out.append(f"{c[RANK]}:{c[VALUE]}")
    return out


def wire_specs(cards: Iterable[dict]) -> list[str]:
    """Wire card dicts (from views and events) as specs, like :func:`specs`."""
    out = []
    for c in cards:
        if c["value"] is None:
            out.append("joker")
        elif c["value"] == FACE_VALUE[c["rank"]]:
            out.append(c["rank"])
        else:
            out.append(f"{c['rank']}:{c['value']}")
    return out
