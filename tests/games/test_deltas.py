"""Deltas are proven, not trusted (issue 11 items 1 and 6), at the engine level: over 200 seeded
random matches per game, a client that holds a viewer's first full view and applies every patch
(``app.delta.diff`` of the viewer's previous and new view) holds exactly the viewer's full view at
every version, for every seat and for a spectator. Patches are also checked against the ``jsonpatch``
library (RFC 6902) when it is installed, and must be smaller than the full view on average."""
from __future__ import annotations

import copy
import json
import random
from typing import Any

import jsonpatch  # type: ignore[import-untyped]  # a test extra without type stubs
import pytest

from app.delta import PatchError, apply_patch, diff
from app.games import registry
from app.games.base import SPECTATOR
from tests.games.test_conformance import random_step

#: long random play whose lines targeted tests reach too: not counted for coverage (lines executed
#: by random play prove nothing by being executed; docs/decisions.md, "Coverage floor")
pytestmark = pytest.mark.no_cover

MATCHES = 200
#: versions per match checked (a match is cut here; one match per game is played to its end)
STEPS = 20
FULL_MATCHES = 1
FULL_STEPS = 6000


def exact(doc: Any) -> str:
    """JSON text that tells 1, 1.0 and true apart, key order ignored."""
    return json.dumps(doc, sort_keys=True)


def check_match(game: Any, seats: int, seed: bytes, steps: int, *, library: bool) -> tuple[int, int]:
    """Plays one random match; returns (bytes of patches, bytes of full views) over all viewers."""
    rng = random.Random(seed)
    state = game.setup(seats, None, seed)
    viewers = [*range(seats), SPECTATOR]
    held = {v: json.loads(json.dumps(game.view(state, v))) for v in viewers}  # the client's copy
    last = {v: game.view(state, v) for v in viewers}  # the server's previous view
    patch_bytes = full_bytes = 0
    for _ in range(steps):
        if game.outcome(state) is not None:
            break
        step = random_step(game, state, seats, rng, verify=False)
        assert step is not None
        state, _ = game.apply(state, *step)
        for v in viewers:
            view = game.view(state, v)
            patch = diff(last[v], view)
            wire = json.loads(json.dumps(patch))  # what a client receives
            if library and wire:
                assert exact(jsonpatch.apply_patch(held[v], wire)) == exact(view)
            held[v] = apply_patch(held[v], wire, in_place=True)
            assert exact(held[v]) == exact(view), (game.info.id, seed, v)
            patch_bytes += len(json.dumps(patch))
            full_bytes += len(json.dumps(view))
            last[v] = view
    return patch_bytes, full_bytes


@pytest.mark.parametrize("game_id", sorted(registry()))
def test_applying_every_patch_gives_the_full_view_of_every_viewer(game_id):
    game = registry()[game_id]
    seat_choices = list(range(game.info.min_seats, min(game.info.max_seats, 4) + 1))
    patches = fulls = 0
    for i in range(MATCHES):
        seats = seat_choices[i % len(seat_choices)]
        steps = FULL_STEPS if i < FULL_MATCHES else STEPS
        p, f = check_match(game, seats, b"delta-%s-%d" % (game_id.encode(), i), steps, library=i < 10)
        patches += p
        fulls += f
    # deltas pay off on big views (the built-in games' start at 2.5-4.5 KB): there a patch is a fraction
    # of the view; a small view's patch is about its size (JSON Patch's paths and ops), never much more
    first = game.setup(game.info.min_seats, None, b"size")
    if len(json.dumps(game.view(first, 0))) > 2000:
        assert patches < fulls / 3, (game_id, patches, fulls)
    else:
        assert patches < fulls * 1.25, (game_id, patches, fulls)


@pytest.mark.parametrize("old,new", [
    ({}, {"a": 1}), ({"a": 1}, {}), ({"a": 1}, {"a": 1.0}), ({"a": 1}, {"a": True}), ({"a": None}, {"a": 0}),
    ([1, 2, 3], [1]), ([1], [1, 2, 3]), ([], [[]]), ({"a/b": 1, "c~d": 2}, {"a/b": 2, "c~d": [3]}),
    ({"x": [{"y": 1}, {"y": 2}]}, {"x": [{"y": 1}, {"z": 2}, 3]}), (1, "1"), ({"a": 1}, [1]), ("", None),
])
def test_diff_is_exact_for_json(old, new):
    patch = diff(old, new)
    assert exact(apply_patch(old, json.loads(json.dumps(patch)))) == exact(new)
    assert exact(jsonpatch.apply_patch(copy.deepcopy(old), patch)) == exact(new)
    assert diff(new, new) == []


def test_apply_leaves_the_document_alone_and_reports_a_mismatch():
    doc = {"a": [1, 2], "b": {"c": 1}}
    for bad in ([{"op": "remove", "path": "/zz"}], [{"op": "replace", "path": "/a/2", "value": 0}],
                [{"op": "add", "path": "/a/01", "value": 0}], [{"op": "move", "path": "/a", "from": "/b"}],
                [{"op": "add", "path": "a", "value": 1}], [{"op": "replace", "path": "/b/c/d", "value": 1}]):
        with pytest.raises(PatchError):
            apply_patch(doc, bad)
    assert doc == {"a": [1, 2], "b": {"c": 1}}
    assert apply_patch(doc, [{"op": "add", "path": "/a/-", "value": 3}])["a"] == [1, 2, 3]


def test_values_are_copied_unless_the_caller_says_the_patch_is_its_own():
    card = {"id": "x", "card": "Ac"}
    patch = [{"op": "add", "path": "/hand/-", "value": card}, {"op": "replace", "path": "/top", "value": [card]}]
    copied = apply_patch({"hand": [], "top": []}, patch, in_place=True)
    assert copied == {"hand": [card], "top": [card]}
    assert copied["hand"][0] is not card and copied["top"][0] is not card
    shared = apply_patch({"hand": [], "top": []}, patch, in_place=True, copy_values=False)
    assert shared == copied and shared["hand"][0] is card and shared["top"][0] is card
    whole = apply_patch({}, [{"op": "replace", "path": "", "value": {"a": card}}], copy_values=False)
    assert whole["a"] is card


def test_a_member_whose_every_part_changed_is_one_replace():
    """A card revealed (every key removed and another added) is one ``replace`` of the card; a member
    holding containers, or with only some parts changed, is still walked part by part."""
    hidden = {"pile": [{"hidden": True}, {"id": 7, "card": "9h"}]}
    shown = {"pile": [{"id": 3, "card": "As"}, {"id": 7, "card": "9h"}]}
    assert diff(hidden, shown) == [{"op": "replace", "path": "/pile/0", "value": {"id": 3, "card": "As"}}]
    one_field = {"card": {"id": 3, "rank": "A", "suit": "s"}}
    assert diff(one_field, {"card": {"id": 3, "rank": "K", "suit": "s"}}) == [
        {"op": "replace", "path": "/card/rank", "value": "K"}]
    nested_old = {"seats": [{"hand": [1], "n": 1}, {"hand": [2], "n": 2}]}
    nested_new = {"seats": [{"hand": [1], "n": 5}, {"hand": [2], "n": 6}]}
    assert diff(nested_old, nested_new) == [{"op": "replace", "path": "/seats/0/n", "value": 5},
                                            {"op": "replace", "path": "/seats/1/n", "value": 6}]
    for old, new in ((hidden, shown), (one_field, {"card": {"id": 3, "rank": "K", "suit": "s"}}),
                     (nested_old, nested_new)):
        assert exact(apply_patch(old, diff(old, new))) == exact(new)
        assert exact(apply_patch(old, diff(old, new, {}))) == exact(new)
