"""What a live match remembers of its past records, kept compact: the events of its last log records
for ``resume`` (:class:`EventHistory`; docs/protocol.md: a socket that resumes gets the events of the
last 256 log records it could see that it missed) and each seat's last client seqs for duplicates
(:class:`RecentSeqs`; the last 128 per seat).

A record's events as Python objects (``Event`` and their data dicts, lists and strings) took
0.5–1 MB per match at 256 records; here each record is kept as one line of JSON (``[[type, data,
audience or null], ...]``), and every :data:`CHUNK` lines are compressed together (zlib level 1):
~100–150 bytes per record. The versions of each record (the match's and every audience's) stay
uncompressed in one ``array`` (the window and the floors are read on every resume and spectator
flush). Reading events back decodes only the records asked for. ``docs/benchmarks/server.md``
("Memory") has the figures.
"""
from __future__ import annotations

import zlib
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from app.games.base import ADMIN, Event

__all__ = ["CHUNK", "EventHistory", "RecentSeqs", "still_needed"]

#: records compressed together (more: smaller, but a read decompresses more)
CHUNK = 16


def still_needed(versions: Sequence[int], before: Sequence[int], current: Sequence[int], size: int) -> bool:
    """Whether a record is one of the last ``size`` records some audience could see: for an audience
    ``i`` its version rose (``versions[i] > before[i]``, ``before`` being the audience versions
    before the record) and is above ``current[i] - size`` (an audience's version rises by exactly 1
    per record it could see; ``current``: the newest versions)."""
    for v, b, c in zip(versions, before, current, strict=True):
        if v > b and v > c - size:
            return True
    return False


def _line(events: Sequence[Event]) -> str:
    """The record's events as JSON text: a ``str`` (exactly its size; the ``bytes`` orjson returns
    hold a 4 KB buffer however short the text)."""
    rows = [[e.type, e.data, None if e.audience is None else list(e.audience)] for e in events]
    try:
        return orjson.dumps(rows).decode()
    except TypeError:  # int keys, as the wire encodes them (app.runtime.wire.encode)
        return orjson.dumps(rows, option=orjson.OPT_NON_STR_KEYS).decode()


class EventHistory:
    """The events and versions of a match's recent log records, for ``width`` audiences.

    Two parts. The **window**: the last ``size`` records (what admins, who see every record, can
    resume from), each record kept once for every audience. The **spill**: a record that leaves the
    window while it is still one of the last ``size`` records some audience could see (its version
    rose; :func:`still_needed`) is kept for that audience until it is no longer. So every audience
    keeps its own last ``size`` records, and what it can resume — its events, ``events_complete`` —
    depends only on the records it could see, never on how many others made that it could not
    (docs/protocol.md: nothing you receive counts the actions you could not see). At most
    ``size × (width + 1)`` records are kept.

    ``append(version, events, versions)`` adds a record (``versions``: every audience's version after
    it). ``start`` is the audience versions before the oldest record kept anywhere (``floor`` given,
    or the first record's own versions); :attr:`floor` is each audience's own floor. Iterating gives
    every record kept, ``(version, events, versions)``, oldest first (events rebuilt from their JSON)."""

    __slots__ = ("_base", "_chunks", "_count", "_first", "_floor", "_front", "_marks", "_open", "_spill",
                 "_wants", "size", "width")

    def __init__(self, size: int, width: int,
                 entries: Iterable[tuple[int, Sequence[Event], Sequence[int]]] = (),
                 floor: Sequence[int] | None = None) -> None:
        self.size = size
        self.width = width
        #: per record of the window, oldest first: its version, then each audience's version after it
        self._marks = array("q")
        #: sealed records, CHUNK per compressed blob, oldest first (the first may hold dropped ones);
        #: tuples of atoms, as ``_open`` and ``_front``: the cyclic collector untracks them, so a live
        #: match's history is two tracked objects (itself and ``_marks``) until a record spills
        self._chunks: tuple[bytes, ...] = ()
        #: the newest records' JSON lines, not sealed yet
        self._open: tuple[str, ...] = ()
        #: records of the oldest chunk already dropped
        self._first = 0
        self._count = 0
        #: the audience versions before the window's oldest record
        self._floor: tuple[int, ...] | None = tuple(floor) if floor is not None else None
        #: the audience versions before the first record this history was given (it knows nothing older)
        self._base: tuple[int, ...] | None = self._floor
        #: the oldest chunk's lines once decompressed (records leaving the window are read from it)
        self._front: tuple[bytes, ...] | None = None
        #: spilled records: match version -> [compressed JSON line, audience versions, audiences holding it]
        self._spill: dict[int, list[Any]] = {}
        #: per audience holding spilled records, those records: (its version at the record, match
        #: version), ascending (an audience is absent while it holds none)
        self._wants: dict[int, deque[tuple[int, int]]] = {}
        for version, events, versions in entries:
            self.append(version, events, versions)

    def __len__(self) -> int:
        """Records in the window (the last ``size``)."""
        return self._count

    @property
    def start(self) -> tuple[int, ...]:
        """The audience versions before the oldest record kept (window or spill)."""
        if self._floor is None:
            raise LookupError("an empty history without a floor")
        if self._spill:
            oldest = min(self._spill)
            return tuple(self._spill[oldest][3])
        return self._floor

    @property
    def floor(self) -> tuple[int, ...]:
        """Per audience, the version after which it still has every event it could see: the newest
        version minus ``size`` (its last ``size`` records), or what the history began with — a
        function of the audience's own records only."""
        if self._floor is None or self._base is None:
            raise LookupError("an empty history without a floor")
        if not self._count:
            return self._floor
        stride = self.width + 1
        at = (self._count - 1) * stride + 1
        newest = self._marks[at:at + self.width]
        size = self.size
        return tuple([b if b > c - size else c - size for b, c in zip(self._base, newest, strict=True)])

    @property
    def oldest_version(self) -> int | None:
        """The match version of the window's oldest record (None when empty)."""
        return self._marks[0] if self._count else None

    def append(self, version: int, events: Sequence[Event], versions: Sequence[int]) -> None:
        """Keep record ``version``'s ``events`` and ``versions`` (one per audience; ValueError
        otherwise). The window's oldest record leaves it once there are ``size``: spilled for the
        audiences that still need it (:func:`still_needed`), else gone."""
        if len(versions) != self.width:
            raise ValueError(f"{len(versions)} audience versions for {self.width} audiences")
        stride = self.width + 1
        if self._floor is None:
            self._floor = tuple(versions)
        if self._base is None:
            self._base = self._floor
        if self._count == self.size:
            oldest = tuple(self._marks[1:stride])
            if still_needed(oldest, self._floor, versions, self.size):
                self._keep_spilled(int(self._marks[0]), oldest, self._floor, versions)
            self._floor = oldest
            del self._marks[:stride]
            self._count -= 1
            if self._chunks:
                self._first += 1
                if self._first == CHUNK:
                    self._chunks = self._chunks[1:]
                    self._front = None
                    self._first = 0
            else:
                self._open = self._open[1:]
        self._marks.append(version)
        self._marks.extend(versions)
        self._open += (_line(events),)
        self._count += 1
        if len(self._open) == CHUNK:
            self._chunks += (zlib.compress("\n".join(self._open).encode(), 1),)
            self._open = ()
        if self._spill:
            self._release(versions)

    def _keep_spilled(self, version: int, versions: tuple[int, ...], before: tuple[int, ...],
                      newest: Sequence[int]) -> None:
        """Spill the window's oldest record (match ``version``) for every audience that could see it
        and still needs it."""
        if self._chunks:
            if self._front is None:
                self._front = tuple(zlib.decompress(self._chunks[0]).split(b"\n"))
            line = self._front[self._first]
        else:
            line = self._open[0].encode()
        holders = 0
        size = self.size
        for i in range(self.width):
            v = versions[i]
            if v > before[i] and v > newest[i] - size:
                wants = self._wants.get(i)
                if wants is None:
                    wants = self._wants[i] = deque()
                wants.append((v, version))
                holders += 1
        self._spill[version] = [zlib.compress(line, 1), versions, holders, before]

    def _release(self, newest: Sequence[int]) -> None:
        """Drop, per audience, the spilled records that are no longer among its last ``size``."""
        size = self.size
        spill = self._spill
        for i, wants in list(self._wants.items()):
            limit = newest[i] - size
            while wants and wants[0][0] <= limit:
                _v, version = wants.popleft()
                entry = spill[version]
                entry[2] -= 1
                if entry[2] == 0:
                    del spill[version]
            if not wants:
                del self._wants[i]

    def _rows(self, wanted: list[int]) -> Iterator[tuple[int, list[Any]]]:
        """``(k, rows)`` of the window's records ``wanted`` (ascending indexes, 0 = oldest kept)."""
        sealed = len(self._chunks) * CHUNK
        lines: list[bytes] = []
        chunk = -1
        for k in wanted:
            at = self._first + k
            if at >= sealed:
                yield k, orjson.loads(self._open[at - sealed])
                continue
            if at // CHUNK != chunk:
                chunk = at // CHUNK
                lines = zlib.decompress(self._chunks[chunk]).split(b"\n")
            yield k, orjson.loads(lines[at % CHUNK])

    def events_between(self, audience: int | None, viewer: int, after: int, upto: int) -> list[dict[str, Any]]:
        """The events ``viewer`` may see of the records whose version for ``audience`` (an index of
        the book; None: the match's version, for admins: the window only) is in ``(after, upto]``,
        each tagged ``v`` = that version, oldest first (as ``app.runtime.audience.audience_events``
        tags them). For an audience, only records after its own :attr:`floor`."""
        stride = self.width + 1
        column = 0 if audience is None else 1 + audience
        out: list[dict[str, Any]] = []
        if audience is not None and self._count:
            own = self.floor[audience]
            if after < own:
                after = own
            for v, version in self._wants.get(audience, ()):  # spilled: older than the window
                if after < v <= upto:
                    rows = orjson.loads(zlib.decompress(self._spill[version][0]))
                    for kind, data, seen_by in rows:
                        if seen_by is None or viewer in seen_by:
                            out.append({"v": v, "type": kind, **data})
        marks = self._marks
        wanted: list[int] = []
        for k in range(self._count - 1, -1, -1):  # versions only grow: walk back from the newest
            v = marks[k * stride + column]
            if v <= after:
                break
            if v <= upto:
                wanted.append(k)
        wanted.reverse()
        for k, rows in self._rows(wanted):
            v = marks[k * stride + column]
            for kind, data, seen_by in rows:
                if seen_by is None or viewer == ADMIN or viewer in seen_by:
                    out.append({"v": v, "type": kind, **data})
        return out

    def __iter__(self) -> Iterator[tuple[int, list[Event], tuple[int, ...]]]:
        for version in sorted(self._spill):
            line, versions, _holders, _before = self._spill[version]
            yield (version,
                   [Event(kind, data, None if seen_by is None else frozenset(seen_by))
                    for kind, data, seen_by in orjson.loads(zlib.decompress(line))],
                   tuple(versions))
        stride = self.width + 1
        marks = self._marks
        for k, rows in self._rows(list(range(self._count))):
            yield (marks[k * stride],
                   [Event(kind, data, None if seen_by is None else frozenset(seen_by)) for kind, data, seen_by in rows],
                   tuple(marks[k * stride + 1:(k + 1) * stride]))


class RecentSeqs:
    """Every seat's last ``size`` client seqs (integers in [0, 2**62), as the protocol checks them)
    and the seat's audience version each was acknowledged at (-1 while its record is committing): one
    object per match, whatever its seat count.

    Per seat, two ``bytearray`` rings of 8-byte integers (~2 KB for 128), held in tuples with each
    seat's last slot written and highest seq kept (``bytearray`` and ``int`` hold no references, so
    the cyclic collector untracks those tuples and has only this object to track); a lookup of a seq
    above every one a seat keeps (the usual case: clients count up) is known new at once, others
    scan the seat's ring in C. A seat never seen keeps nothing (``get`` gives None)."""

    __slots__ = ("_last", "_seqs", "_size", "_top", "_versions")

    def __init__(self, size: int) -> None:
        self._size = size
        self._seqs: tuple[bytearray, ...] = ()
        self._versions: tuple[bytearray, ...] = ()
        self._last: tuple[int, ...] = ()  # per seat, the slot written last
        self._top: tuple[int, ...] = ()  # per seat, no seq kept is above this

    def count(self, seat: int) -> int:
        """How many seqs ``seat`` keeps."""
        return len(self._seqs[seat]) >> 3 if 0 <= seat < len(self._seqs) else 0

    def seats(self) -> list[int]:
        """The seats that keep seqs."""
        return [seat for seat, seqs in enumerate(self._seqs) if seqs]

    def _slot(self, seat: int, seq: int) -> int:
        if seat < 0 or seat >= len(self._top) or seq > self._top[seat]:
            return -1
        seqs = self._seqs[seat]
        last = self._last[seat]
        key = seq.to_bytes(8, "little")
        if seqs[last << 3:(last << 3) + 8] == key:
            return last
        start = 0
        while True:  # an aligned match (a key found across two slots is skipped)
            found = seqs.find(key, start)
            if found < 0:
                return -1
            if found & 7 == 0:
                return found >> 3
            start = found + 1

    def get(self, seat: int, seq: int) -> int | None:
        """The version ``seat``'s ``seq`` was acknowledged at, -1 while it is committing, None if not kept."""
        slot = self._slot(seat, seq)
        if slot < 0:
            return None
        return int.from_bytes(self._versions[seat][slot << 3:(slot << 3) + 8], "little", signed=True)

    def add(self, seat: int, seq: int, version: int = -1) -> None:
        """Keep ``seat``'s ``seq`` (not kept yet), dropping the seat's oldest once it keeps ``size``.
        ``seat`` ≥ 0 (ValueError otherwise)."""
        if seat < 0:
            raise ValueError(f"seat {seat}: seqs are kept for seats only")
        grow = seat + 1 - len(self._seqs)
        if grow > 0:
            self._seqs += tuple(bytearray() for _ in range(grow))
            self._versions += tuple(bytearray() for _ in range(grow))
            self._last += (-1,) * grow
            self._top += (-1,) * grow
        seqs, versions = self._seqs[seat], self._versions[seat]
        key = seq.to_bytes(8, "little")
        value = version.to_bytes(8, "little", signed=True)
        if len(seqs) < self._size << 3:
            seqs.extend(key)
            versions.extend(value)
            last = (len(seqs) >> 3) - 1
        else:
            last = (self._last[seat] + 1) % self._size
            at = last << 3
            seqs[at:at + 8] = key
            versions[at:at + 8] = value
        self._last = self._last[:seat] + (last,) + self._last[seat + 1:]
        if seq > self._top[seat]:
            self._top = self._top[:seat] + (seq,) + self._top[seat + 1:]

    def acknowledge(self, seat: int, seq: int, version: int) -> None:
        """``seat``'s ``seq`` was acknowledged at ``version`` (nothing if it is no longer kept)."""
        slot = self._slot(seat, seq)
        if slot >= 0:
            self._versions[seat][slot << 3:(slot << 3) + 8] = version.to_bytes(8, "little", signed=True)
