"""The server's garbage-collection policy (app/gcpolicy.py): CPython's automatic collector stays on,
with what start-up made frozen out of its sight, and every collection is measured."""
from __future__ import annotations

import asyncio
import gc

from app.gcpolicy import GcPolicy
from app.metrics import Metrics


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_the_automatic_collector_stays_on_with_the_thresholds_and_start_up_frozen(gc_state):
    async def scenario() -> None:
        policy = GcPolicy(thresholds="900,11,12")
        before = Node()
        policy.start()
        assert gc.isenabled() and gc.get_threshold() == (900, 11, 12)
        assert gc.get_freeze_count() > 0 and not any(o is before for o in gc.get_objects())  # frozen
        await policy.stop()
        assert gc.get_freeze_count() == 0

    asyncio.run(scenario())


def test_every_collection_is_timed_by_generation_and_what_it_freed_counted(gc_state):
    metrics = Metrics()
    policy = GcPolicy(thresholds="700,10,10", metrics=metrics, log_ms=0)

    async def scenario() -> None:
        policy.start()
        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b  # a cycle: reference counting alone never frees it
        gc.collect(0)
        gc.collect()
        await policy.stop()

    asyncio.run(scenario())
    assert policy.collections[0] >= 1 and policy.collections[2] >= 1
    assert metrics.registry.get_sample_value("bannerfall_gc_pause_seconds_count", {"generation": "2"}) >= 1
    assert metrics.registry.get_sample_value("bannerfall_gc_pause_seconds_count", {"generation": "0"}) >= 1
    assert metrics.registry.get_sample_value("bannerfall_gc_collected_objects_total") >= 2
    assert policy._callback not in gc.callbacks  # stop() took it out
