"""What a live match keeps of its views costs about its text: every part a game's ``view_parts``
returns (each seat's, the spectator's and the admin's view, after some random play) is a ``bytes``
of its own size, not orjson's ~4 KB working buffer (``app.parts.dumps``). Measured with
``tracemalloc`` over the parts kept: a part that kept orjson's buffer would cost ~4,000 B."""
from __future__ import annotations

import random
import tracemalloc

import orjson
import pytest

from app.games import registry
from app.games.base import ADMIN, SPECTATOR
from app.parts import dumps
from app.testing.play import random_step

#: bytes a kept part may cost above its text, on average (the object header is 33 B)
SLACK = 120


def _unique_parts(all_parts) -> list[bytes]:
    seen: dict[int, bytes] = {}
    for parts in all_parts:
        for _key, part in parts:
            for item in (part if isinstance(part, tuple) else (part,)):
                seen.setdefault(id(item), item)
    return list(seen.values())


def test_dumps_gives_a_bytes_of_its_own_size():
    value = {"id": 12, "owner": 3, "garrison": [[1, "7", "h", 7], [2, "K", "s", 13]]}
    assert dumps(value) == orjson.dumps(value)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [dumps({**value, "id": i}) for i in range(2000)]
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown / len(kept) < len(kept[0]) + SLACK + 8, grown / len(kept)  # + the list's slot


@pytest.mark.parametrize("game_id", list(registry()))
def test_the_parts_a_match_keeps_cost_about_their_text(game_id):
    game = registry()[game_id]
    seats = game.info.max_seats
    state = game.setup(seats, dict(game.info.test_options or {}), b"parts-memory-seed")
    rng = random.Random(7)
    for _ in range(40):
        step = random_step(game, state, seats, rng)
        if step is None or game.outcome(state) is not None:
            break
        state, _ = game.apply(state, *step)
    viewers = [*range(seats), SPECTATOR, ADMIN]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = game.view_parts(state, viewers)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    parts = _unique_parts(kept)
    text = sum(len(p) for p in parts)
    assert parts, "no parts"
    # everything view_parts allocated and kept (parts, their tuples and dicts) over the parts' count
    per_part = (grown - text) / len(parts)
    assert per_part < SLACK * 4, f"{game_id}: {per_part:.0f} B kept per part beyond its text ({len(parts)} parts)"
