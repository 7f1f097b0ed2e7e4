"""The cyclic garbage collector of a serving process (issue 11 item 5: no event-loop stall over
20 ms; measured in ``docs/benchmarks/server.md``, "Garbage collection").

CPython frees almost everything a match makes by reference counting; its cyclic collector only
finds objects that refer to each other in a loop. Measured on the benchmark (``bench_matrix.py``,
``collected`` per collection): Provinces play makes no cyclic garbage at all, Conquest about one
object per 15 actions. The automatic collector nevertheless stops the event loop whenever the number
of live container objects grows by its threshold, and walks every object promoted since start: with
50 Conquest matches its young-generation collections took up to 25 ms of CPU and its middle ones
75-120 ms.

With ``full_seconds > 0`` (``GC_FULL_SECONDS``; the default, 60) the automatic collector is off once
the server has started (``gc.freeze`` first: the objects made at start are never walked again), and
a full collection runs on this policy's own clock: every ``full_seconds``, or sooner when
``growth_objects`` more container objects are alive than after the last one (CPython keeps that
count, ``gc.get_count()[0]``, even while the collector is disabled), so a burst of cyclic garbage is
still bounded. Each collection is logged with its pause and what it freed, and counted in
``bannerfall_gc_pause_seconds`` / ``bannerfall_gc_collected_objects``: operators see at once if
something starts making cyclic garbage. REST requests and socket lives make none (1 Dec 2026:
``tests/runtime/test_cyclic_garbage.py``), so what waits between collections is small; a full
collection walks only what was made since start: 10-18 ms for 50 live Conquest matches and 200
sockets (~55,000 objects), against 155 ms with the start-up objects not frozen.
``full_seconds = 0`` keeps CPython's automatic collector with ``thresholds`` instead.
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
    ``gc.set_threshold`` (used when ``full_seconds`` is 0); ``check_seconds``: how often the growth
    is looked at. ``metrics``: an :class:`app.metrics.Metrics` or None."""

    def __init__(self, *, thresholds: str, full_seconds: float, growth_objects: int, metrics: Any = None,
                 check_seconds: float = 1.0) -> None:
        self.thresholds = tuple(int(part) for part in thresholds.split(","))
        self.full_seconds = full_seconds
        self.growth_objects = growth_objects
        self.metrics = metrics
        self.check_seconds = check_seconds
        self.collections = 0
        self._task: asyncio.Task[None] | None = None
        self._last = time.monotonic()

    def start(self) -> None:
        gc.collect()
        gc.freeze()
        if self.full_seconds <= 0:
            gc.set_threshold(*self.thresholds)
            return
        gc.disable()
        self._last = time.monotonic()
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
            if self.due():
                self.collect()

    def due(self) -> bool:
        """True when a full collection is due: ``full_seconds`` since the last one, or
        ``growth_objects`` more live container objects than after it."""
        return (time.monotonic() - self._last >= self.full_seconds
                or gc.get_count()[0] >= self.growth_objects)

    def collect(self) -> int:
        """One full collection now; returns the objects it freed (logged and counted)."""
        grown = gc.get_count()[0]
        start = time.perf_counter()
        freed = gc.collect()
        pause = time.perf_counter() - start
        self._last = time.monotonic()
        self.collections += 1
        if self.metrics is not None:
            self.metrics.gc_pause.observe(pause)
            self.metrics.gc_collected.inc(freed)
        log.info("full garbage collection: %.1f ms, %d objects freed, %d more live objects than after the "
                 "previous one", pause * 1000, freed, grown)
        return freed
