"""``app.parts.revise`` is ``document`` + ``diff`` made from the parts that changed, exactly, and the
audience book's shortcut through it changes nothing a viewer receives (``app/runtime/audience.py``).

* property test: for random view parts and a random next record's parts (members the same object,
  equal but another object, changed, list items changed, lists grown or shrunk, members added,
  dropped, reordered or changed between a list and a value, status and prompts changed), ``revise``
  either declines (None: the members changed) or gives the document ``document`` gives, with the same keys
  in the same order, the very ``old`` object when nothing changed, and the patch ``diff`` gives;
* over seeded random matches of every game, a book that takes the shortcut and one that never does
  (given no shapes) give the same versions, documents and patches at every record.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.games.base import SPECTATOR
from app.parts import diff, document, revise, shape_of, to_json
from app.runtime import audience
from app.runtime.audience import AudienceBook
from app.runtime.wire import prompts_part, status_part

from .test_conformance import GAMES, ids, random_step

KEYS = ("a", "b/c", "d~e", "f", "g")
VALUES = st.sampled_from([b"1", b"2", b'"x"', b"null", b'{"k":[1,2]}'])
PART = st.one_of(VALUES, st.lists(VALUES, max_size=4).map(tuple))


@st.composite
def views(draw):
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, min_size=1, max_size=len(KEYS)))
    return tuple((key, draw(PART)) for key in keys)


def copied(part):
    """An equal part made of other objects (what a game that encoded a piece again gives)."""
    if isinstance(part, bytes):
        return bytes(bytearray(part))
    return tuple(bytes(bytearray(item)) for item in part)


@st.composite
def next_views(draw, old):
    """The next record's parts: mostly the same shape, sometimes another one."""
    if draw(st.integers(0, 4)) == 0:
        return draw(views())
    out = []
    for key, part in old:
        how = draw(st.sampled_from(["same", "copy", "new", "items", "grow", "shrink"]))
        if how == "same":
            out.append((key, part))
        elif how == "copy":
            out.append((key, copied(part)))
        elif how == "new":
            out.append((key, draw(PART)))
        elif how == "grow" and isinstance(part, tuple):
            out.append((key, part + tuple(draw(st.lists(VALUES, min_size=1, max_size=3)))))
        elif how == "shrink" and isinstance(part, tuple):
            out.append((key, part[:draw(st.integers(0, len(part)))]))
        elif how == "items" and isinstance(part, tuple) and part:
            items = list(part)
            items[draw(st.integers(0, len(items) - 1))] = draw(VALUES)
            out.append((key, tuple(items)))
        else:
            out.append((key, part))
    return tuple(out)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_revise_is_document_and_diff(data):
    old_view = data.draw(views())
    old_status, old_prompts = data.draw(VALUES), data.draw(st.lists(VALUES, max_size=3).map(tuple))
    old = document(old_status, old_prompts, old_view)
    view = data.draw(next_views(old_view))
    status = data.draw(st.sampled_from([old_status, copied(old_status), b'"finished"']))
    prompts = data.draw(st.sampled_from([old_prompts, copied(old_prompts), (b"1",), ()]))
    got = revise(old, shape_of(old_prompts, old_view), status, prompts, view)
    whole = document(status, prompts, view)
    if got is None:
        # it declines only when the members changed
        assert [k for k, _ in view] != [k for k, _ in old_view] or any(
            isinstance(p, bytes) != isinstance(q, bytes) for (_, p), (_, q) in zip(view, old_view, strict=True))
        return
    doc, ops, shape = got
    assert list(doc.items()) == list(whole.items())
    assert shape == shape_of(prompts, view)
    assert to_json(ops) == to_json(diff(old, whole))
    assert (doc is old) == (not ops)
    unpatched = revise(old, shape_of(old_prompts, old_view), status, prompts, view, patch=False)
    assert unpatched is not None and unpatched[1] is None and list(unpatched[0].items()) == list(doc.items())
    assert (unpatched[0] is old) == (doc is old)
    assert old == document(old_status, old_prompts, old_view)  # the old document was not changed


def test_revise_declines_new_members_and_follows_lists():
    old_view = (("a", b"1"), ("b", (b"1", b"2")))
    old = document(b'"running"', (), old_view)
    was = shape_of((), old_view)
    assert revise(old, was, b'"running"', (), (("b", (b"1", b"2")), ("a", b"1"))) is None
    assert revise(old, was, b'"running"', (), (("a", (b"1",)), ("b", (b"1", b"2")))) is None
    assert revise(old, was, b'"running"', (), (("a", b"1"),)) is None
    doc, ops, _ = revise(old, was, b'"finished"', (b"{}",), (("a", b"1"), ("b", (b"1",))))
    assert to_json(ops) == [{"op": "replace", "path": "/status", "value": "finished"},
                            {"op": "add", "path": "/prompts/0", "value": {}},
                            {"op": "remove", "path": "/view/b/1"}]
    doc, ops, shape = revise(old, was, b'"running"', (), (("a", b"1"), ("b", (b"1", b"3"))))
    assert shape is was
    assert to_json(ops) == [{"op": "replace", "path": "/view/b/1", "value": 3}]
    assert doc == document(b'"running"', (), (("a", b"1"), ("b", (b"1", b"3"))))


@pytest.mark.parametrize("wanted", [None, (0, 2)], ids=["every audience", "seats 0 and 2"])
@pytest.mark.parametrize("game", GAMES, ids=ids)
def test_a_book_with_its_shortcut_gives_what_one_without_gives(game, wanted, monkeypatch):
    taken = []

    def counted(*args):
        got = revise(*args)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(audience, "revise", counted)
    seats = min(game.info.max_seats, 4)
    for m in range(3):
        seed = b"revise-%s-%d" % (game.info.id.encode(), m)
        rng = random.Random(seed)
        state = game.setup(seats, None, seed)
        status, part = status_part("running"), prompts_part(game.prompts(state), {})
        quick = AudienceBook(game, seats, state, status, part)
        whole = AudienceBook(game, seats, state, status, part)
        versions, docs, shapes = quick.hand_over()
        whole_versions, whole_docs, _ = whole.hand_over()
        for _ in range(150):
            if game.outcome(state) is not None:
                break
            step = random_step(game, state, seats, rng, verify=False)
            if step is None:
                break
            state, events = game.apply(state, *step)
            status = status_part("running" if game.outcome(state) is None else "finished")
            part = prompts_part(game.prompts(state), {})
            versions, docs, changed, shapes = quick.step(versions, docs, state, status, part, events, wanted, shapes)
            whole_versions, whole_docs, whole_changed, _ = whole.step(whole_versions, whole_docs, state, status,
                                                                      part, events, wanted)  # no shapes
            assert versions == whole_versions
            assert shapes == tuple(shape_of(part, view) for view in game.view_parts(state, quick.keys))
            assert [list(d.items()) for d in docs] == [list(d.items()) for d in whole_docs]
            assert {i: to_json(ops) for i, ops in changed.items()} == \
                {i: to_json(ops) for i, ops in whole_changed.items()}
    assert quick.keys[-1] == SPECTATOR
    assert sum(taken) > len(taken) / 2, "the shortcut was mostly not taken"
