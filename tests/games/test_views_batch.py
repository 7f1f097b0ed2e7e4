"""``Game.views`` is ``Game.view`` for several viewers at once, exactly (issue 11; app/games/base.py).

The runtime builds every audience's view with one ``views`` call per log record and diffs it with the
previous one, sharing parts between viewers and between versions (``AudienceBook.advance``). Over
seeded random matches of every game (the toy game included), at every step and for every viewer
(each seat, SPECTATOR, ADMIN):

* ``views(state, viewers)`` equals ``[view(state, v) for v in viewers]`` as exact JSON (key order
  and ``1``/``1.0``/``true`` told apart), also for viewers asked in another order or alone;
* both equal the view of a pickled copy of the state (no view memo carried over: what a fresh
  process or a replay builds);
* no view was changed by a later call (the shared parts are never mutated: the JSON of every view
  of the previous step is the same after this step's calls);
* the runtime's shared diff (``diff(old, new, shared)`` for all audiences of a record with one
  ``shared``) gives the same patches as the plain diff.
"""
from __future__ import annotations

import json
import pickle
import random
from typing import Any

import pytest

from app.delta import diff
from app.games.base import ADMIN, SPECTATOR
from app.parts import diff as parts_diff
from app.parts import to_json

from .test_conformance import GAMES, ids, random_step

#: long random play whose lines targeted tests reach too: not counted for coverage (lines executed
#: by random play prove nothing by being executed; docs/decisions.md, "Coverage floor")
pytestmark = pytest.mark.no_cover

MATCHES = 8
STEPS = 250


def exact(doc: Any) -> str:
    """JSON text that keeps key order and tells 1, 1.0 and true apart."""
    return json.dumps(doc)


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_views_equal_view_for_every_viewer_at_every_step(game):
    seat_choices = list(range(game.info.min_seats, min(game.info.max_seats, 4) + 1))
    checked = 0
    for i in range(MATCHES):
        seats = seat_choices[i % len(seat_choices)]
        seed = b"views-%s-%d" % (game.info.id.encode(), i)
        rng = random.Random(seed)
        state = game.setup(seats, None, seed)
        viewers = [*range(seats), SPECTATOR, ADMIN]
        audiences = [*range(seats), SPECTATOR]
        previous: list[dict[str, Any]] | None = None
        previous_text: list[str] = []
        for _ in range(STEPS):
            batch = game.views(state, viewers)
            texts = [exact(v) for v in batch]
            assert texts == [exact(game.view(state, v)) for v in viewers], (game.info.id, seed)
            assert [exact(v) for v in game.views(state, viewers[::-1])] == texts[::-1]
            fresh = pickle.loads(pickle.dumps(state))
            assert [exact(game.view(fresh, v)) for v in viewers] == texts, (game.info.id, seed)
            assert len({id(v) for v in batch}) == len(batch), "every viewer has its own top-level dict"
            if previous is not None:
                assert [exact(v) for v in previous] == previous_text, "a view changed after it was returned"
                shared: dict = {}
                for k, v in enumerate(audiences):
                    assert diff(previous[k], batch[k], shared) == diff(previous[k], batch[k]), (seed, v)
            previous, previous_text = batch, texts
            checked += 1
            if game.outcome(state) is not None:
                break
            step = random_step(game, state, seats, rng, verify=False)
            if step is None:
                break
            state, _ = game.apply(state, *step)
    assert checked > MATCHES * 5


@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_audience_versions_do_not_depend_on_which_patches_are_made(game):
    """``AudienceBook.advance(..., wanted)``: an audience outside ``wanted`` is tested for change with
    ``!=`` and gets no patch (None), yet every book — all patches, none, some — moves every audience
    to the same version with the same document at every record, and the patches it does make equal
    the plain diff."""
    from app.runtime.audience import AudienceBook

    for i in range(3):
        seats = min(game.info.max_seats, 4) if i else game.info.min_seats
        seed = b"wanted-%s-%d" % (game.info.id.encode(), i)
        rng = random.Random(seed)
        state = game.setup(seats, None, seed)
        subsets: list[tuple[int, ...] | None] = [None, (), (0,), tuple(range(seats))]
        books = [AudienceBook(game, seats, state, b'"running"', ()) for _ in subsets]
        lazy_seen = 0
        for _ in range(120):
            step = random_step(game, state, seats, rng, verify=False)
            if step is None or game.outcome(state) is not None:
                break
            state, events = game.apply(state, *step)
            before = [list(book.docs) for book in books]
            results = [book.advance(state, b'"running"', (), events, wanted)
                       for book, wanted in zip(books, subsets, strict=True)]
            assert len({tuple(book.versions) for book in books}) == 1, seed
            assert len({tuple(results_i) for results_i in results}) == 1, "the same audiences changed"
            for book in books[1:]:
                assert book.docs == books[0].docs
            for k, (book, wanted) in enumerate(zip(books, subsets, strict=True)):
                for audience, patch in results[k].items():
                    if wanted is None or audience in wanted:
                        assert to_json(patch) == to_json(parts_diff(before[k][audience], book.docs[audience]))
                    elif book.docs[audience] is not before[k][audience]:
                        assert patch is None
                        lazy_seen += 1
                    else:
                        assert patch == []  # only events were new
        assert lazy_seen > 0
