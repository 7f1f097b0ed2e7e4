"""What a live match keeps for the cyclic collector to walk, beyond its game state: the runtime's own
part stays a handful of objects however long the match runs (``docs/benchmarks/capacity.md``: a
collection of the middle generation walks every live match's objects, so each one per match is
paid ~N times per collection).

- the event history (``EventHistory``) is itself and its ``array`` of versions until a record
  spills, and back to that once the spilled records are released;
- an audience book handed to a snapshot keeps no documents of its own (only the snapshot's);
- a record that leaves a seat's prompt as it was keeps that prompt's object;
- a runner with no spectator or admin attached keeps no container for them."""
from __future__ import annotations

import gc
import pickle

import pytest

from app.games import registry
from app.games.base import SPECTATOR, Event, Prompt
from app.runtime.history import EventHistory
from tests.runtime.twins import FakePeer, make_runner

conquest = registry()["conquest"]
provinces = registry()["provinces"]


def _tracked_from(root: object) -> list[object]:
    """The objects the cyclic collector tracks that ``root`` reaches through its own attributes (the
    walk stops at anything untracked, as the collector does, and at classes)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, type):
            continue
        seen[id(obj)] = obj
        stack.extend(gc.get_referents(obj))
    return list(seen.values())


def test_a_history_that_spills_nothing_is_two_tracked_objects():
    width = 5
    history = EventHistory(256, width, (), (0,) * width)
    for version in range(1, 700):  # every audience sees every record: nothing spills
        history.append(version, [Event("moved", {"seat": version % 4, "to": [1, 2]}, None)], (version,) * width)
    gc.collect()  # tuples of atoms are untracked at the first collection that sees them
    kept = _tracked_from(history)
    assert sorted(type(o).__name__ for o in kept) == ["EventHistory", "array"], kept


def test_a_history_releases_what_it_spilled():
    width = 3
    history = EventHistory(4, width, (), (0,) * width)
    versions = [0] * width
    for version in range(1, 40):
        versions[0] += 1  # audience 0 sees every record, the others only the first ten
        if version <= 10:
            versions[1] += 1
            versions[2] += 1
        history.append(version, [Event("moved", {"n": version}, None)], tuple(versions))
    assert history._spill and history._wants  # the others still hold their last 4 records
    for version in range(40, 60):  # now they see every record again: theirs leave their windows
        versions = [v + 1 for v in versions]
        history.append(version, [Event("moved", {"n": version}, None)], tuple(versions))
    assert not history._spill and not history._wants
    assert [e["n"] for e in history.events_between(1, 1, versions[1] - 4, versions[1])] == [56, 57, 58, 59]


def test_a_runner_keeps_no_documents_in_its_book_and_no_sets_for_absent_viewers():
    runner, writer, _, _ = make_runner(provinces, 2)
    runner.attach(FakePeer(0))
    runner.attach(FakePeer(1))
    runner.act(FakePeer(runner.prompts[0].seat), 1, {"type": "end_turn"})
    writer.commit()
    assert runner.book.docs == () and runner.book.versions == ()
    assert len(runner.durable.docs) == 3  # the snapshot holds the documents
    # beside them, their shapes (keys and lengths: no parts), one tuple of member keys for all
    # audiences, and nothing the collector keeps walking once it has seen them
    shapes = runner.durable.shapes
    assert len(shapes) == 3 and len({id(shape[0]) for shape in shapes}) == 1
    gc.collect()
    gc.collect()
    assert not gc.is_tracked(shapes) and not any(gc.is_tracked(shape) for shape in shapes)
    assert not gc.is_tracked(runner.spectators) and not gc.is_tracked(runner.admins)
    watcher = FakePeer(SPECTATOR)
    runner.attach(watcher)
    assert list(runner.spectators) == [watcher] and watcher.of_type("state")
    runner.detach(watcher)
    assert not runner.spectators


def test_a_seat_whose_prompt_did_not_change_keeps_its_prompt_object():
    runner, writer, _, _ = make_runner(conquest, 3)
    peers = [FakePeer(i) for i in range(3)]
    for p in peers:
        runner.attach(p)
    before = {p.seat: p for p in runner.prompts if p.kind == "orders"}
    assert len(before) == 3
    runner.act(peers[0], 1, {"type": "orders", "attack": []}, 0)
    after = {p.seat: p for p in runner.prompts}
    assert after[0] is not before[0] and after[0].submitted  # seat 0's changed: a new object
    assert after[1] is before[1] and after[2] is before[2]  # the others' are the objects they were
    assert after[1] == before[1] and not after[1].submitted


def test_a_prompt_keeps_its_default_action_as_no_tracked_object():
    runner, _, _, _ = make_runner(conquest, 4)
    for prompt in runner.prompts:
        default = prompt.default_action
        assert default == {"type": "orders", "attack": []}
        assert _tracked_from(prompt) == [prompt]  # no dict, no list behind it
        default["attack"].append([1, 2])  # a reader's copy: the prompt's own stays as it was
        assert prompt.default_action == {"type": "orders", "attack": []}


def test_a_prompt_is_an_immutable_value():
    prompt = Prompt(2, "orders", 7, 60.0, {"type": "orders", "attack": [[1, 2]]}, True)
    same = Prompt(seat=2, kind="orders", phase_id=7, deadline_seconds=60.0,
                  default_action={"type": "orders", "attack": [[1, 2]]}, simultaneous=True)
    assert prompt == same and hash(prompt) == hash(same)
    assert prompt != Prompt(2, "orders", 7, 60.0, {"type": "orders", "attack": []}, True)
    assert prompt != Prompt(2, "orders", 7, 60.0, {"type": "orders", "attack": [[1, 2]]}, True, True)
    assert pickle.loads(pickle.dumps(prompt)) == prompt
    with pytest.raises(AttributeError):
        prompt.seat = 3  # type: ignore[misc]
    odd = Prompt(0, "turn", 1, 5.0, {"type": "x", "at": {1, 2}})  # JSON cannot encode a set: kept as given
    assert odd.default_action == {"type": "x", "at": {1, 2}}
