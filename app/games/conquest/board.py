"""The hex map of a Hold'em Conquest match (conquest.md 1.1–1.2).

Lands are hexagons in axial coordinates ``(q, r)``; two lands are adjacent when they share a side,
i.e. when their coordinates differ by one of the six :data:`AXIAL_DIRECTIONS`. Land ids are
``0..n-1`` ordered by ``(r, q)`` (top row first, left to right).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.games.base import Rng

AXIAL_DIRECTIONS = ((1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1))

#: Number of lands by number of seats (conquest.md 1.1).
LANDS_BY_SEATS = {2: 15, 3: 19, 4: 23}

#: How many random candidate sets of starting lands are scored per map (1.2).
_START_TRIALS = 48


@dataclass(frozen=True, slots=True)
class Board:
    """An immutable map, shared by every state of a match.

    - ``coords``: land -> ``(q, r)``; ``neighbours``: land -> adjacent lands, ascending;
      ``neighbour_masks``: land -> the same as a bit set (bit ``n`` for land ``n``);
    - ``distance``: land -> land -> steps between them over shared sides;
    - ``starts``: seat -> its starting land;
    - ``view_parts``: not part of the map (no equality, no repr): the encoded entries of face-down
      lands, which depend only on the map and an owner (``land * 8 + owner + 1`` -> bytes), made once
      per match by :func:`app.games.conquest.view.view_parts`.
    """

    coords: tuple[tuple[int, int], ...]
    neighbours: tuple[tuple[int, ...], ...]
    neighbour_masks: tuple[int, ...]
    distance: tuple[tuple[int, ...], ...]
    starts: tuple[int, ...]
    view_parts: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def size(self) -> int:
        return len(self.coords)


def _grow_region(size: int, rng: Rng) -> list[tuple[int, int]]:
    """A connected set of ``size`` hexes grown from (0, 0); a frontier hex is picked with weight
    (number of region neighbours)², which keeps the region compact rather than snake-like."""
    cells = {(0, 0)}
    while len(cells) < size:
        weights: dict[tuple[int, int], int] = {}
        for q, r in cells:
            for dq, dr in AXIAL_DIRECTIONS:
                cell = (q + dq, r + dr)
                if cell not in cells:
                    weights[cell] = weights.get(cell, 0) + 1
        frontier = sorted(weights)
        total = sum(weights[c] ** 2 for c in frontier)
        pick = rng.randbelow(total)
        for cell in frontier:
            pick -= weights[cell] ** 2
            if pick < 0:
                cells.add(cell)
                break
    return sorted(cells, key=lambda c: (c[1], c[0]))


def _distances(neighbours: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    n = len(neighbours)
    rows = []
    for start in range(n):
        dist = [-1] * n
        dist[start] = 0
        frontier = [start]
        while frontier:
            nxt = []
            for land in frontier:
                for other in neighbours[land]:
                    if dist[other] < 0:
                        dist[other] = dist[land] + 1
                        nxt.append(other)
            frontier = nxt
        rows.append(tuple(dist))
    return tuple(rows)


def _choose_starts(seats: int, neighbours, distance, rng: Rng) -> tuple[int, ...] | None:
    """Starting lands: at least two neighbours each, pairwise at least 2 steps apart (1.2).

    Among random candidate sets, keep the one with the largest minimum distance, then the most even
    split of the map (lands nearest to each start), then the most neighbours for the worst-placed."""
    candidates = [land for land in range(len(neighbours)) if len(neighbours[land]) >= 2]
    if len(candidates) < seats:
        return None
    best = None
    best_score = None
    for _ in range(_START_TRIALS):
        pool = list(candidates)
        rng.shuffle(pool)
        starts = tuple(pool[:seats])
        min_dist = min(distance[a][b] for i, a in enumerate(starts) for b in starts[i + 1:])
        if min_dist < 2:
            continue
        territory = [0] * seats
        for land in range(len(neighbours)):
            near = [distance[s][land] for s in starts]
            closest = min(near)
            owners = [i for i, d in enumerate(near) if d == closest]
            if len(owners) == 1:
                territory[owners[0]] += 1
        score = (min_dist, min(territory) - max(territory), min(len(neighbours[s]) for s in starts))
        if best_score is None or score > best_score:
            best, best_score = starts, score
    return best


def generate_board(seats: int, rng: Rng) -> Board:
    """A map for ``seats`` players (2–4) drawn from ``rng`` (conquest.md 1.1–1.2).

    Raises ValueError for an unsupported number of seats."""
    if seats not in LANDS_BY_SEATS:
        raise ValueError(f"conquest is for 2-4 seats, not {seats}")
    size = LANDS_BY_SEATS[seats]
    while True:
        coords = _grow_region(size, rng)
        index = {c: i for i, c in enumerate(coords)}
        neighbours = tuple(
            tuple(sorted(index[(q + dq, r + dr)] for dq, dr in AXIAL_DIRECTIONS if (q + dq, r + dr) in index))
            for q, r in coords
        )
        distance = _distances(neighbours)
        starts = _choose_starts(seats, neighbours, distance, rng)
        if starts is not None:
            masks = tuple(sum(1 << other for other in near) for near in neighbours)
            return Board(tuple(coords), neighbours, masks, distance, starts)
