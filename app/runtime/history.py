"""What a live match remembers of its past records, kept compact: the events of its last log records
for ``resume`` (:class:`EventHistory`; docs/protocol.md: a socket that resumes gets the events of the
last 256 log records it missed) and each seat's last client seqs for duplicates (:class:`RecentSeqs`;
the last 128 per seat).

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

__all__ = ["CHUNK", "EventHistory", "RecentSeqs"]

#: records compressed together (more: smaller, but a read decompresses more)
CHUNK = 16


def _line(events: Sequence[Event]) -> str:
    """The record's events as JSON text: a ``str`` (exactly its size; the ``bytes`` orjson returns
    hold a 4 KB buffer however short the text)."""
    rows = [[e.type, e.data, None if e.audience is None else list(e.audience)] for e in events]
    try:
        return orjson.dumps(rows).decode()
    except TypeError:  # int keys, as the wire encodes them (app.runtime.wire.encode)
        return orjson.dumps(rows, option=orjson.OPT_NON_STR_KEYS).decode()


class EventHistory:
    """The events and versions of the last ``size`` log records of a match with ``width`` audiences.

    ``append(version, events, versions)`` adds a record (``versions``: every audience's version after
    it) and drops the oldest beyond ``size``; ``floor`` is the audience versions before the oldest
    record kept (``floor`` given, or the first record's own versions). Iterating gives
    ``(version, events, versions)`` as they were appended (events rebuilt from their JSON)."""

    __slots__ = ("_chunks", "_count", "_first", "_floor", "_marks", "_open", "size", "width")

    def __init__(self, size: int, width: int,
                 entries: Iterable[tuple[int, Sequence[Event], Sequence[int]]] = (),
                 floor: Sequence[int] | None = None) -> None:
        self.size = size
        self.width = width
        #: per record kept, oldest first: its version, then each audience's version after it
        self._marks = array("q")
        #: sealed records, CHUNK per compressed blob, oldest first (the first may hold dropped ones)
        self._chunks: deque[bytes] = deque()
        #: the newest records' JSON lines, not sealed yet
        self._open: list[str] = []
        #: records of the oldest chunk already dropped
        self._first = 0
        self._count = 0
        self._floor: tuple[int, ...] | None = tuple(floor) if floor is not None else None
        for version, events, versions in entries:
            self.append(version, events, versions)

    def __len__(self) -> int:
        return self._count

    @property
    def floor(self) -> tuple[int, ...]:
        """The audience versions before the oldest record kept."""
        if self._floor is None:
            raise LookupError("an empty history without a floor")
        return self._floor

    @property
    def oldest_version(self) -> int | None:
        """The match version of the oldest record kept (None when empty)."""
        return self._marks[0] if self._count else None

    def append(self, version: int, events: Sequence[Event], versions: Sequence[int]) -> None:
        """Keep record ``version``'s ``events`` and ``versions`` (one per audience; ValueError
        otherwise); the oldest record goes once there are ``size``."""
        if len(versions) != self.width:
            raise ValueError(f"{len(versions)} audience versions for {self.width} audiences")
        stride = self.width + 1
        if self._floor is None:
            self._floor = tuple(versions)
        if self._count == self.size:
            self._floor = tuple(self._marks[1:stride])
            del self._marks[:stride]
            self._count -= 1
            if self._chunks:
                self._first += 1
                if self._first == CHUNK:
                    self._chunks.popleft()
                    self._first = 0
            else:
                del self._open[0]
        self._marks.append(version)
        self._marks.extend(versions)
        self._open.append(_line(events))
        self._count += 1
        if len(self._open) == CHUNK:
            self._chunks.append(zlib.compress("\n".join(self._open).encode(), 1))
            self._open = []

    def _rows(self, wanted: list[int]) -> Iterator[tuple[int, list[Any]]]:
        """``(k, rows)`` of the kept records ``wanted`` (ascending indexes, 0 = oldest kept)."""
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
        the book; None: the match's version, for admins) is in ``(after, upto]``, each tagged ``v`` =
        that version, oldest first (as ``app.runtime.audience.audience_events`` tags them)."""
        stride = self.width + 1
        column = 0 if audience is None else 1 + audience
        marks = self._marks
        wanted: list[int] = []
        for k in range(self._count - 1, -1, -1):  # versions only grow: walk back from the newest
            v = marks[k * stride + column]
            if v <= after:
                break
            if v <= upto:
                wanted.append(k)
        wanted.reverse()
        out: list[dict[str, Any]] = []
        for k, rows in self._rows(wanted):
            v = marks[k * stride + column]
            for kind, data, seen_by in rows:
                if seen_by is None or viewer == ADMIN or viewer in seen_by:
                    out.append({"v": v, "type": kind, **data})
        return out

    def __iter__(self) -> Iterator[tuple[int, list[Event], tuple[int, ...]]]:
        stride = self.width + 1
        marks = self._marks
        for k, rows in self._rows(list(range(self._count))):
            yield (marks[k * stride],
                   [Event(kind, data, None if seen_by is None else frozenset(seen_by)) for kind, data, seen_by in rows],
                   tuple(marks[k * stride + 1:(k + 1) * stride]))


class RecentSeqs:
    """The last ``size`` client seqs of one seat (integers in [0, 2**62), as the protocol checks them)
    and the seat's audience version each was acknowledged at (-1 while its record is committing).

    Two ``array`` objects used as a ring (~2 KB for 128, where a dict of ack dicts took ~45 KB); a lookup
    scans them in C, except for a seq above every one kept (the usual case: clients count up),
    which is known new at once."""

    __slots__ = ("_last", "_seqs", "_size", "_top", "_versions")

    def __init__(self, size: int) -> None:
        self._size = size
        self._seqs = array("q")
        self._versions = array("q")
        self._last = -1  # the slot written last
        self._top = -1  # no seq kept is above this

    def __len__(self) -> int:
        return len(self._seqs)

    def _slot(self, seq: int) -> int:
        if seq > self._top:
            return -1
        last = self._last
        if self._seqs[last] == seq:
            return last
        try:
            return self._seqs.index(seq)
        except ValueError:
            return -1

    def get(self, seq: int) -> int | None:
        """The version ``seq`` was acknowledged at, -1 while it is committing, None if not kept."""
        slot = self._slot(seq)
        return None if slot < 0 else self._versions[slot]

    def add(self, seq: int, version: int = -1) -> None:
        """Keep ``seq`` (not kept yet), dropping the oldest once ``size`` are kept."""
        if len(self._seqs) < self._size:
            self._seqs.append(seq)
            self._versions.append(version)
            self._last = len(self._seqs) - 1
        else:
            self._last = (self._last + 1) % self._size
            self._seqs[self._last] = seq
            self._versions[self._last] = version
        if seq > self._top:
            self._top = seq

    def acknowledge(self, seq: int, version: int) -> None:
        """``seq`` was acknowledged at ``version`` (nothing if it is no longer kept)."""
        slot = self._slot(seq)
        if slot >= 0:
            self._versions[slot] = version
