"""The cyclic garbage collector of a serving process (issue 11 item 5: no event-loop stall over
20 ms; measured in ``docs/benchmarks/server.md``, "Garbage collection").

CPython frees almost everything a match makes by reference counting; its cyclic collector only
finds objects that refer to each other in a loop. Measured on the benchmark (``bench_matrix.py``,
``collected`` per collection): Provinces play makes no cyclic garbage at all, Conquest about one
object per 15 actions. The automatic collector nevertheless stops the event loop whenever the number
of live container objects grows by its threshold, and walks every object promoted since start: with
50 Conquest matches its young-generation collections took up to 25 ms of CPU and its middle ones
75-120 ms.

With ``full_seconds > 0`` (``GC_FULL_SECONDS``; the default, 600) the automatic collector is off once
the server has started (``gc.freeze`` first: the objects made at start are never walked again), and
collections run on this policy's own clock, in two kinds:

- a **young** collection when ``growth_objects`` more container objects are alive than after the
  last one, or at the latest every ``full_seconds`` (cyclic garbage is never freed by reference
  counting, so it raises the count by itself; steady play, whose new state replaces old, does not,
  and a timer alone would walk its ~40,000 live young objects for nothing; CPython keeps that
  count, ``gc.get_count()[0]``, even while the collector is disabled). It walks only what was
  made since the previous collection and then freezes the survivors (``gc.freeze``), so its pause
  is bounded by the growth (~0.3-0.8 µs per object walked), however many matches the node holds.
  The count is a net growth (objects made minus objects freed, frozen ones included), so where new
  state replaces old a collection walks 2-4 times ``growth_objects``: with 20,000, 30,000-75,000
  objects, 10-44 ms, under Conquest's closed loop (10,000: four times as many collections, 4x the
  collector's CPU, 12-24 ms each, because objects that would soon have died are walked and
  frozen). Until 1 Dec 2026 every collection walked everything made since start: ~150 ms with ~750
  live matches (bench/server.md);
- a **deep** collection every ``deep_seconds`` (``GC_DEEP_SECONDS``; 0: never): everything is
  unfrozen and walked once (the old pause), for the cycles of objects that were frozen while alive
  and died later (a match that ended: it leaves almost none, measured in ``docs/decisions.md``).

Each collection is logged with its kind, pause and what it freed, and counted in
``bannerfall_gc_pause_seconds`` / ``bannerfall_gc_collected_objects``; the frozen part is
``bannerfall_gc_frozen_objects`` (counted at start and after each deep collection: the count walks
the whole frozen list, ~10 ns per object): operators see at once if something starts making cyclic garbage
or the frozen part grows without bound. REST requests and socket lives make none (1 Dec 2026:
``tests/runtime/test_cyclic_garbage.py``). ``full_seconds = 0`` keeps CPython's automatic collector
with ``thresholds`` instead.
"""
from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any

log = logging.getLogger("bannerfall.gc")

__all__ = ["GcPolicy"]


class GcPolicy:
    """Start with :meth:`start` once the server has made its long-lived objects; :meth:`stop` gives
    the collector back to CPython (``gc.enable``). ``thresholds``: "gen0,gen1,gen2" for
    ``gc.set_threshold`` (used when ``full_seconds`` is 0); ``full_seconds`` and ``growth_objects``:
    when a young collection is due; ``deep_seconds``: between two deep collections (0: never);
    ``check_seconds``: how often the growth is looked at. ``metrics``: an
    :class:`app.metrics.Metrics` or None."""

    def __init__(self, *, thresholds: str, full_seconds: float, growth_objects: int, metrics: Any = None,
                 check_seconds: float = 0.1, deep_seconds: float = 0.0) -> None:
        self.thresholds = tuple(int(part) for part in thresholds.split(","))
        self.full_seconds = full_seconds
        self.growth_objects = growth_objects
        self.metrics = metrics
        self.check_seconds = check_seconds
        self.deep_seconds = deep_seconds
        self.collections = 0
        self.deep_collections = 0
        self._task: asyncio.Task[None] | None = None
        self._last = self._last_deep = time.monotonic()

    def start(self) -> None:
        gc.collect()
        gc.freeze()
        self._count_frozen()
        if self.full_seconds <= 0:
            gc.set_threshold(*self.thresholds)
            return
        gc.disable()
        self._last = self._last_deep = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gc-policy")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        gc.enable()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.check_seconds)
            if self.deep_due():
                self.collect_deep()
            elif self.due():
                self.collect()

    def due(self) -> bool:
        """True when a young collection is due: ``full_seconds`` since the last collection, or
        ``growth_objects`` more live container objects than after it."""
        return (time.monotonic() - self._last >= self.full_seconds
                or gc.get_count()[0] >= self.growth_objects)

    def deep_due(self) -> bool:
        """True when a deep collection is due (``deep_seconds`` since the last one; never if 0)."""
        return self.deep_seconds > 0 and time.monotonic() - self._last_deep >= self.deep_seconds

    def collect(self) -> int:
        """One young collection now: the objects made since the previous collection are walked, and
        the survivors frozen. Returns the objects it freed (logged and counted)."""
        return self._collect(deep=False)

    def collect_deep(self) -> int:
        """One deep collection now: everything is unfrozen, walked, and the survivors frozen again.
        Returns the objects it freed."""
        return self._collect(deep=True)

    def _collect(self, *, deep: bool) -> int:
        grown = gc.get_count()[0]
        start = time.perf_counter()
        if deep:
            gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
        pause = time.perf_counter() - start
        self._last = time.monotonic()
        if deep:
            self._last_deep = self._last
            self.deep_collections += 1
        self.collections += 1
        if self.metrics is not None:  # bannerfall_gc_frozen_objects: start-up and deep collections only
            self.metrics.gc_pause.observe(pause)
            self.metrics.gc_collected.inc(freed)
        # the frozen count walks the whole frozen list: only after a deep collection (hourly)
        frozen = self._count_frozen() if deep else None
        log.info("%s garbage collection: %.1f ms, %d objects freed, %d more live objects than after the "
                 "previous one%s", "deep" if deep else "young", pause * 1000, freed, grown,
                 f", {frozen} frozen" if deep else "")
        return freed

    def _count_frozen(self) -> int:
        """Count the frozen objects (a walk of the whole frozen list) into ``bannerfall_gc_frozen_objects``."""
        frozen = gc.get_freeze_count()
        if self.metrics is not None:
            self.metrics.gc_frozen.set(frozen)
        return frozen
