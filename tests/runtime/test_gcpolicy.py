"""The server's garbage-collection policy (app/gcpolicy.py; issue 11 item 5: no loop stall from the
automatic collector)."""
from __future__ import annotations

import asyncio
import gc

from app.gcpolicy import GcPolicy
from app.metrics import Metrics


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_the_automatic_collector_is_off_while_serving_and_back_after(gc_state):
    async def scenario() -> None:
        policy = GcPolicy(thresholds="20000,20,50", full_seconds=600, growth_objects=10**9)
        policy.start()
        assert not gc.isenabled()
        await policy.stop()
        assert gc.isenabled()

    asyncio.run(scenario())


def test_a_full_collection_frees_cycles_and_is_counted(gc_state):
    metrics = Metrics()
    policy = GcPolicy(thresholds="20000,20,50", full_seconds=600, growth_objects=10**9, metrics=metrics)
    gc.disable()
    a, b = Node(), Node()
    a.other, b.other = b, a
    del a, b  # a cycle: reference counting alone never frees it
    assert policy.collect() >= 2
    assert policy.collections == 1
    assert metrics.registry.get_sample_value("bannerfall_gc_collected_objects_total") >= 2
    assert metrics.registry.get_sample_value("bannerfall_gc_pause_seconds_count") == 1


def test_a_young_collection_walks_only_what_was_made_since_the_previous_one(gc_state):
    """Survivors of a collection are frozen (``gc.freeze``): the next young collection does not walk
    them, so its pause stays bounded by the growth however many matches the node holds; a cycle that
    died after being frozen is freed by the next deep collection (everything unfrozen once)."""
    metrics = Metrics()
    policy = GcPolicy(thresholds="20000,20,50", full_seconds=600, growth_objects=10**9, metrics=metrics)
    gc.disable()
    gc.collect()
    old_a, old_b = Node(), Node()
    old_a.other, old_b.other = old_b, old_a
    policy.collect()  # the pair is alive: frozen with the other survivors
    frozen = gc.get_freeze_count()
    assert frozen > 0
    # the gauge is counted only after deep collections (counting walks the whole frozen list)
    assert metrics.registry.get_sample_value("bannerfall_gc_frozen_objects") == 0
    del old_a, old_b  # the frozen pair is now cyclic garbage
    young_a, young_b = Node(), Node()
    young_a.other, young_b.other = young_b, young_a
    del young_a, young_b  # a young cycle
    freed_young = policy.collect()
    assert 2 <= freed_young < 4  # the young pair, not the frozen one (each Node: the object; __dict__ inline)
    assert policy.collect() == 0
    assert policy.collect_deep() >= 2  # the old pair
    assert policy.deep_collections == 1 and policy.collections == 4
    assert gc.get_freeze_count() > 0  # the survivors are frozen again
    counted = metrics.registry.get_sample_value("bannerfall_gc_frozen_objects")
    assert counted > 0 and abs(counted - gc.get_freeze_count()) <= 5  # a frozen object may die since


def test_a_deep_collection_is_due_by_its_own_clock(gc_state):
    policy = GcPolicy(thresholds="20000,20,50", full_seconds=600, growth_objects=10**9, deep_seconds=3600)
    gc.disable()
    assert not policy.deep_due()
    policy._last_deep -= 3600  # the last deep collection an hour ago (no waiting on the clock)
    assert policy.deep_due()
    policy.collect_deep()
    policy.deep_seconds = 3600
    assert not policy.deep_due()
    policy.deep_seconds = 0  # never
    assert not policy.deep_due()


def test_a_collection_is_due_by_time_or_by_growth(gc_state):
    policy = GcPolicy(thresholds="20000,20,50", full_seconds=3600, growth_objects=5000)
    gc.disable()
    policy.collect()
    assert not policy.due()
    grown = [[] for _ in range(6000)]  # 6,000 more live containers than after the collection
    assert policy.due()
    del grown
    policy.full_seconds = 0.0001
    gc.collect()
    assert policy.due()  # by time


def test_the_policy_runs_collections_on_its_own_clock(gc_state):
    async def scenario() -> int:
        policy = GcPolicy(thresholds="20000,20,50", full_seconds=0.02, growth_objects=10**9, check_seconds=0.01)
        policy.start()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if policy.collections >= 2:
                break
        await policy.stop()
        return policy.collections

    assert asyncio.run(scenario()) >= 2


def test_zero_seconds_keeps_the_automatic_collector_with_the_thresholds(gc_state):
    async def scenario() -> None:
        policy = GcPolicy(thresholds="1234,7,9", full_seconds=0, growth_objects=10**9)
        policy.start()
        assert gc.isenabled()
        assert gc.get_threshold() == (1234, 7, 9)
        await policy.stop()

    asyncio.run(scenario())


def test_the_periodic_policy_is_the_default(gc_state, tmp_path):
    """REST requests and sockets make no cyclic garbage (tests/runtime/test_cyclic_garbage.py), so a
    node runs with the automatic collector off and its own collections by default
    (docs/decisions.md, "Garbage collection")."""
    from app.config import Settings

    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/b.db")
    assert settings.gc_full_seconds == 600 and settings.gc_growth_objects == 20_000
    assert settings.gc_deep_seconds == 3600

    async def scenario() -> None:
        policy = GcPolicy(thresholds=settings.gc_thresholds, full_seconds=settings.gc_full_seconds,
                          growth_objects=settings.gc_growth_objects)
        policy.start()
        assert not gc.isenabled() and gc.get_freeze_count() > 0
        await policy.stop()
        assert gc.isenabled()

    asyncio.run(scenario())
