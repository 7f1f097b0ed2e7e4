"""Provinces: the hex map (rule 1.3).

A map is ``6 × players`` hex cells in axial coordinates ``(q, r)``; two provinces are adjacent when
their cells share a side. The map grows from ``(0, 0)`` by repeatedly adding a random empty cell
next to the map, each candidate weighted by how many sides it shares with the map (compact,
connected shapes). Province ids are assigned in reading order (by ``r``, then ``q``).
"""
from __future__ import annotations

from typing import Any

from app.games.base import Rng

#: The six axial neighbour offsets of a hex cell.
HEX_DIRECTIONS = ((1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1))


class Board:
    """The static map of a match, shared by all its states.

    - ``coords``: per province id, its axial ``(q, r)``.
    - ``adjacent``: per province id, the sorted tuple of adjacent province ids.
    """

    __slots__ = ("coords", "adjacent", "size", "static", "view_memo")

    def __init__(self, coords: tuple[tuple[int, int], ...], adjacent: tuple[tuple[int, ...], ...]) -> None:
        self.coords = coords
        self.adjacent = adjacent
        self.size = len(coords)
        #: (id, q, r, adjacent ids) of every province, for views (tuples of ints)
        self.static = tuple((p, q, r, adjacent[p]) for p, (q, r) in enumerate(coords))
        #: not part of the map: the encoded view parts last built from it (``view.view_parts``), so
        #: that unchanged provinces are not encoded again. Never pickled.
        self.view_memo: dict[str, Any] = {}

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        return None, {"coords": self.coords, "adjacent": self.adjacent, "size": self.size, "static": self.static}

    def __setstate__(self, state: tuple[None, dict[str, object]]) -> None:
        for name, value in state[1].items():
            object.__setattr__(self, name, value)
        self.view_memo = {}

    @classmethod
    def from_coords(cls, coords: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> "Board":
        """A board from the given cells, ids in the given order; adjacency is computed from the hex
        grid. Raises ValueError for duplicate cells or a disconnected map."""
        coords = tuple((int(q), int(r)) for q, r in coords)
        index = {cell: p for p, cell in enumerate(coords)}
        if len(index) != len(coords):
            raise ValueError("duplicate cells")
        adjacent = tuple(
            tuple(sorted(index[(q + dq, r + dr)] for dq, dr in HEX_DIRECTIONS if (q + dq, r + dr) in index))
            for q, r in coords
        )
        board = cls(coords, adjacent)
        if coords and not board.connected():
            raise ValueError("the map is not connected")
        return board

    def connected(self) -> bool:
        seen = {0}
        todo = [0]
        while todo:
            for other in self.adjacent[todo.pop()]:
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return len(seen) == self.size


def generate_board(rng: Rng, provinces: int) -> Board:
    """A connected hex map of ``provinces`` cells, deterministic from ``rng`` (rule 1.3)."""
    cells = {(0, 0)}
    candidates: list[tuple[int, int]] = []

    def add_neighbours(q: int, r: int) -> None:
        for dq, dr in HEX_DIRECTIONS:
            cell = (q + dq, r + dr)
            if cell not in cells:
                candidates.append(cell)

    add_neighbours(0, 0)
    while len(cells) < provinces:
        cell = candidates[rng.randbelow(len(candidates))]
        if cell in cells:
            continue
        cells.add(cell)
        add_neighbours(*cell)
        candidates = [c for c in candidates if c not in cells]
    ordered = sorted(cells, key=lambda cell: (cell[1], cell[0]))
    return Board.from_coords(ordered)
