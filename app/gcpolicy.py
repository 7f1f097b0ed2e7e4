"""The cyclic garbage collector of a serving process: CPython's own, measured.

CPython frees almost everything a match makes by reference counting; its cyclic collector finds
objects that refer to each other in a loop, and while looking it stops the event loop for as long
as it walks the objects of the generations it collects. What keeps those pauses short is what a live
match holds, not a schedule: documents kept as encoded parts (``app/parts.py``), game states of
atoms and tuples, one protocol object per socket (``app/transport/fast.py``), so a node with
thousands of live matches has few container objects for the collector to walk
(``docs/benchmarks/capacity.md`` measures it).

:class:`GcPolicy` (made in the app's lifespan):

- :meth:`start`: one collection, then ``gc.freeze()`` of what start-up made (modules, the app,
  engines, the matches recovered at start: long-lived, never garbage), so no later collection walks
  them; the automatic collector stays on, with ``thresholds`` (``GC_THRESHOLDS``, CPython's
  ``gc.set_threshold``). Everything made afterwards is collected as CPython collects it.
- every collection is timed (``gc.callbacks``) into ``bannerfall_gc_pause_seconds{generation}`` and
  what it freed into ``bannerfall_gc_collected_objects``; one over ``log_ms`` is logged, so operators
  see at once if something starts making cyclic garbage or pauses grow.
- :meth:`stop` removes the callback and unfreezes.
"""
from __future__ import annotations

import gc
import logging
import time
from typing import Any

log = logging.getLogger("bannerfall.gc")

__all__ = ["GcPolicy"]


class GcPolicy:
    """``thresholds``: "gen0,gen1,gen2" for ``gc.set_threshold``; ``metrics``: an
    :class:`app.metrics.Metrics` or None; ``log_ms``: a collection longer than this is logged
    (0: none)."""

    def __init__(self, *, thresholds: str, metrics: Any = None, log_ms: float = 20.0) -> None:
        self.thresholds = tuple(int(part) for part in thresholds.split(","))
        self.metrics = metrics
        self.log_ms = log_ms
        #: collections seen since :meth:`start`, per generation
        self.collections = [0, 0, 0]
        self._started = 0.0
        self._installed = False

    def start(self) -> None:
        gc.collect()
        gc.freeze()
        gc.set_threshold(*self.thresholds)
        gc.enable()
        if not self._installed:
            gc.callbacks.append(self._callback)
            self._installed = True
        if self.metrics is not None:
            self.metrics.gc_frozen.set(gc.get_freeze_count())

    async def stop(self) -> None:
        if self._installed:
            gc.callbacks.remove(self._callback)
            self._installed = False
        gc.unfreeze()

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        pause = time.perf_counter() - self._started
        generation = int(info.get("generation", 0))
        self.collections[generation] += 1
        collected = int(info.get("collected", 0))
        if self.metrics is not None:
            self.metrics.gc_pause.labels(str(generation)).observe(pause)
            if collected:
                self.metrics.gc_collected.inc(collected)
        if self.log_ms and pause * 1000 >= self.log_ms:
            log.info("garbage collection of generation %d: %.1f ms, %d objects freed", generation, pause * 1000,
                     collected)
