"""``app.runtime.history.EventHistory`` against a plain list of ``(version, events, versions)``: the
same window (the last ``size`` records and every audience's last ``size`` visible ones), the same
floors and the same events for every audience and range, across the compressed chunks' boundaries."""
from __future__ import annotations

import random

import pytest

from app.games.base import ADMIN, SPECTATOR, Event
from app.runtime.audience import audience_events
from app.runtime.history import CHUNK, EventHistory

SEATS = 3
KEYS = (*range(SEATS), SPECTATOR)


def _records(count: int, seed: int) -> list[tuple[int, list[Event], tuple[int, ...]]]:
    rng = random.Random(seed)
    versions = [0] * len(KEYS)
    out = []
    for version in range(1, count + 1):
        events = []
        for n in range(rng.randrange(0, 4)):
            audience = rng.choice([None, frozenset({rng.randrange(SEATS)}), frozenset({0, SPECTATOR})])
            data = {"seat": rng.randrange(SEATS), "n": n, "cards": [{"id": f"t{version}{n}", "card": "Ah"}]}
            if rng.random() < 0.2:
                data["by_seat"] = {rng.randrange(SEATS): 1.5}  # an int key, as the wire encodes it
            events.append(Event(rng.choice(["dealt", "moved"]), data, audience))
        for i, viewer in enumerate(KEYS):  # an audience moves when it sees an event (or at random)
            if any(e.visible_to(viewer) for e in events) or rng.random() < 0.3:
                versions[i] += 1
        out.append((version, events, tuple(versions)))
    return out


def _naive(records, size, floor0):
    """What the history must keep, from the whole list: the last ``size`` records (the window) and,
    for every audience, the records that raised its version among its last ``size`` (its own
    floor: its newest version minus ``size``, or the start)."""
    window = list(records[-size:]) if size else []
    newest = records[-1][2] if records else floor0
    own = tuple(max(f, c - size) for f, c in zip(floor0, newest, strict=True))
    before = [floor0] + [r[2] for r in records[:-1]]
    kept = [r for k, r in enumerate(records) if r in window
            or any(v > b and v > o for v, b, o in zip(r[2], before[k], own, strict=True))]
    return window, kept, own


def _wire(events):  # what reaches a client: the encoded form (int keys become strings)
    import orjson

    return orjson.loads(orjson.dumps(events, option=orjson.OPT_NON_STR_KEYS))


@pytest.mark.parametrize("count,size", [(0, 8), (5, 8), (8, 8), (40, 8), (CHUNK * 3 + 5, 20), (300, 256)])
def test_window_floors_and_events_match_the_plain_list(count, size):
    records = _records(count, seed=count * 31 + size)
    history = EventHistory(size, len(KEYS), floor=(0,) * len(KEYS))
    for version, events, versions in records:
        history.append(version, events, versions)
    window, kept, own = _naive(records, size, (0,) * len(KEYS))
    assert len(history) == len(window)
    assert history.floor == own
    assert history.oldest_version == (window[0][0] if window else None)
    assert [(v, av) for v, _e, av in history] == [(v, av) for v, _e, av in kept]
    assert [[(e.type, e.audience) for e in evs] for _v, evs, _av in history] == \
        [[(e.type, e.audience) for e in evs] for _v, evs, _av in kept]
    top = records[-1][0] if records else 0
    rng = random.Random(count)
    for _ in range(60):
        after, upto = sorted(rng.randrange(0, top + 2) for _ in range(2))
        for i, viewer in enumerate(KEYS):  # every event it could see after its own floor
            want = [e for _ver, evs, av in records if max(after, own[i]) < av[i] <= upto
                    for e in audience_events(av[i], evs, viewer)]
            assert history.events_between(i, viewer, after, upto) == _wire(want)
        want = [e for ver, evs, _av in window if after < ver <= upto for e in audience_events(ver, evs, ADMIN)]
        assert history.events_between(None, ADMIN, after, upto) == _wire(want)
    # a history rebuilt from what it kept (as a replay hands it over) keeps and answers the same
    if kept:
        start = ([(0,) * len(KEYS)] + [r[2] for r in records])[records.index(kept[0])]
        rebuilt = EventHistory(size, len(KEYS), kept, floor=start)
        assert rebuilt.floor == history.floor
        assert [(v, av) for v, _e, av in rebuilt] == [(v, av) for v, _e, av in history]
        for i, viewer in enumerate(KEYS):
            assert rebuilt.events_between(i, viewer, 0, top) == history.events_between(i, viewer, 0, top)


def test_built_from_entries_takes_the_first_entrys_versions_as_floor_unless_given():
    records = _records(10, seed=3)
    assert EventHistory(256, len(KEYS), records).floor == records[0][2]
    assert EventHistory(256, len(KEYS), records, floor=(0, 0, 0, 0)).floor == (0, 0, 0, 0)
    with pytest.raises(ValueError):
        EventHistory(256, len(KEYS)).append(1, [], (1, 2))


def test_recent_seqs_match_an_ordered_dict_of_the_last_n_per_seat():
    from collections import OrderedDict

    from app.runtime.history import RecentSeqs

    rng = random.Random(7)
    for size in (1, 4, 128):
        recent = RecentSeqs(size)
        plain: dict[int, OrderedDict[int, int]] = {seat: OrderedDict() for seat in range(4)}
        for step in range(3000):
            seat = rng.choice([0, 0, 1, 3])  # seat 2 never acts: it keeps nothing
            mine = plain[seat]
            seq = rng.choice([step, rng.randrange(0, step + 1), rng.randrange(0, 2**62)])
            assert recent.get(seat, seq) == mine.get(seq)
            if seq in mine:
                continue
            recent.add(seat, seq)
            mine[seq] = -1
            while len(mine) > size:
                mine.popitem(last=False)
            assert recent.count(seat) == len(mine)
            if rng.random() < 0.8:  # most are acknowledged, some long after
                acked = rng.choice(list(mine))
                recent.acknowledge(seat, acked, step)
                mine[acked] = step
        for seat, mine in plain.items():
            assert all(recent.get(seat, s) == v for s, v in mine.items())
            assert recent.count(seat) == len(mine)
        assert recent.seats() == [0, 1, 3] and recent.get(2, 0) is None and recent.get(7, 0) is None
        with pytest.raises(ValueError):
            recent.add(-1, 5)


def test_recent_seqs_are_one_tracked_object():
    import gc

    from app.runtime.history import RecentSeqs

    recent = RecentSeqs(128)
    for seq in range(600):
        recent.add(seq % 4, seq, seq)
    gc.collect()  # the tuples of bytearrays and ints are untracked by the first collection
    held = [recent._seqs, recent._versions, recent._last, recent._top]
    assert [gc.is_tracked(t) for t in held] == [False] * 4


def test_records_an_audience_could_not_see_do_not_shrink_its_window():
    """Seat 0 sees 5 records, then seat 1 makes 100 that only it sees: seat 0 still has its 5 events
    and its floor, exactly as if seat 1 had made none (nothing counts what seat 0 could not see)."""
    def run(hidden: int) -> EventHistory:
        history = EventHistory(8, len(KEYS), floor=(0,) * len(KEYS))
        versions = [0] * len(KEYS)
        version = 0
        for n in range(5):
            version += 1
            versions = [v + 1 for v in versions]
            history.append(version, [Event("moved", {"n": n})], tuple(versions))
        for n in range(hidden):
            version += 1
            versions[1] += 1
            history.append(version, [Event("sorted", {"n": n}, frozenset({1}))], tuple(versions))
        return history

    quiet, busy = run(0), run(100)
    assert busy.floor[0] == quiet.floor[0] == 0 and busy.floor[3] == quiet.floor[3] == 0
    for i, viewer in ((0, 0), (2, 2), (3, SPECTATOR)):
        assert busy.events_between(i, viewer, 0, 5) == quiet.events_between(i, viewer, 0, 5)
        assert len(busy.events_between(i, viewer, 0, 5)) == 5
    assert busy.floor[1] == 105 - 8  # seat 1's own window: its last 8
    assert len(busy) <= 8 + 5
