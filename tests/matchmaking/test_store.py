"""One contract for both ticket stores (in-process and Redis): one live ticket per player, atomic
claims (never two claims on one ticket, even racing), finish and release only for the claim that
holds the tickets, cancel only while waiting, and the long-poll wake-up."""
from __future__ import annotations

import asyncio
import time

import pytest

from app.matchmaking.store import RedisTicketStore, TicketExists
from tests.matchmaking.conftest import new_ticket
from tests.timing import scaled


async def test_a_player_has_at_most_one_live_ticket_even_when_racing(make_store):
    store = await make_store()
    tickets = [new_ticket("p1") for _ in range(20)]
    results = await asyncio.gather(*(store.create(t) for t in tickets), return_exceptions=True)
    made = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, TicketExists)]
    assert len(made) == 1 and len(refused) == 19
    assert {r.ticket_id for r in refused} == {made[0]["id"]}
    pool = tickets[0]["pool"]
    assert [t["id"] for t in await store.waiting(pool)] == [made[0]["id"]]


async def test_cancel_frees_the_player_and_changes_nothing_twice(make_store):
    store = await make_store()
    first = await store.create(new_ticket("p1"))
    assert await store.cancel(first["id"], "someone-else") == "missing"
    assert await store.cancel(first["id"], "p1") == "ok"
    assert (await store.get(first["id"]))["status"] == "cancelled"
    assert await store.waiting(first["pool"]) == []
    second = await store.create(new_ticket("p1"))
    assert second["status"] == "waiting"


async def test_second_cancel_reports_the_status(make_store):
    store = await make_store()
    ticket = await store.create(new_ticket("p1"))
    assert await store.cancel(ticket["id"], "p1") == "ok"
    status = await store.cancel(ticket["id"], "p1")
    # a cancelled ticket is no longer waiting: its status is answered, nothing changes
    assert status == "cancelled" and (await store.get(ticket["id"]))["status"] == "cancelled"


async def test_claim_is_all_or_nothing_and_racing_claims_never_share_a_ticket(make_store):
    stores = [await make_store(), await make_store()]
    tickets = [await stores[0].create(new_ticket(f"p{i}")) for i in range(12)]
    pool = tickets[0]["pool"]
    ids = [t["id"] for t in tickets]
    # 40 claims of overlapping pairs, from two "nodes" at once
    pairs = [(ids[i % 12], ids[(i * 5 + 1) % 12]) for i in range(40)]
    pairs = [p for p in pairs if p[0] != p[1]]
    claims = [(f"c{i}", list(p)) for i, p in enumerate(pairs)]
    won = await asyncio.gather(*(stores[i % 2].claim(c, pool, p, time.time() + 30) for i, (c, p) in enumerate(claims)))
    seen: dict[str, str] = {}
    for (claim_id, pair), ok in zip(claims, won, strict=True):
        if ok:
            for tid in pair:
                assert tid not in seen, f"{tid} in {seen[tid]} and {claim_id}"
                seen[tid] = claim_id
    for tid in ids:
        ticket = await stores[1].get(tid)
        assert ticket["status"] == ("claimed" if tid in seen else "waiting")
        assert ticket["claim"] == seen.get(tid)
    assert {t["id"] for t in await stores[1].waiting(pool)} == set(ids) - set(seen)
    # a claim naming a ticket that is not waiting takes none of the others
    free = sorted(set(ids) - set(seen))
    if free:
        taken = next(iter(seen))
        assert not await stores[0].claim("late", pool, [free[0], taken], time.time() + 30)
        assert (await stores[0].get(free[0]))["status"] == "waiting"


async def test_finish_and_release_act_only_for_the_holding_claim(make_store):
    store = await make_store()
    a, b = (await store.create(new_ticket("pa")), await store.create(new_ticket("pb")))
    pool = a["pool"]
    assert await store.claim("c1", pool, [a["id"], b["id"]], time.time() - 1)
    assert await store.expired_claims(time.time()) == ["c1"]
    assert await store.cancel(a["id"], "pa") == "claimed"  # a claimed ticket cannot be cancelled
    assert await store.release("c1") == 2
    assert await store.release("c1") == 0  # idempotent
    assert await store.expired_claims(time.time()) == []
    assert [t["id"] for t in await store.waiting(pool)] == [a["id"], b["id"]]  # their old places
    assert await store.claim("c2", pool, [a["id"], b["id"]], time.time() + 30)
    assert await store.finish("c1", "m-stale", "c1") == 0  # an old claim finishes nothing
    assert await store.finish("c2", "m1", "c2") == 2
    assert await store.finish("c2", "m1", "c2") == 0
    for tid in (a["id"], b["id"]):
        ticket = await store.get(tid)
        assert (ticket["status"], ticket["match_id"], ticket["lobby_id"]) == ("matched", "m1", "c2")
    assert await store.release("c2") == 0  # a matched ticket never goes back
    assert (await store.create(new_ticket("pa")))["status"] == "waiting"  # matched: may queue again


async def test_a_claim_in_another_pool_is_refused(make_store):
    store = await make_store()
    a = await store.create(new_ticket("pa", seats=2))
    b = await store.create(new_ticket("pb", seats=3))
    assert not await store.claim("c", a["pool"], [a["id"], b["id"]], time.time() + 30)
    assert await store.pools() == sorted({a["pool"], b["pool"]})


async def test_wait_wakes_when_the_ticket_is_matched(make_store):
    waiter_store, other = await make_store(), await make_store()
    a, b = await other.create(new_ticket("pa")), await other.create(new_ticket("pb"))
    if isinstance(waiter_store, RedisTicketStore):  # its listener subscribes in the background
        await asyncio.wait_for(waiter_store.subscribed.wait(), 5.0)
    started = time.monotonic()
    waiting = asyncio.create_task(waiter_store.wait(a["id"], 10.0))
    while waiter_store.waiters() == 0:  # the task has reached its wait
        assert time.monotonic() - started < scaled(5.0)
        await asyncio.sleep(0)
    assert await other.claim("c", a["pool"], [a["id"], b["id"]], time.time() + 30)
    await other.finish("c", "m", "c")
    await asyncio.wait_for(waiting, 5.0)
    assert time.monotonic() - started < scaled(1.5)


@pytest.mark.parametrize("kind", ["local"])
async def test_wait_times_out(make_store):
    store = await make_store()
    started = time.monotonic()
    await store.wait("nobody", 0.2)
    assert 0.15 < time.monotonic() - started < scaled(2.0)


async def test_empty_pools_leave_the_pool_list_and_come_back(make_store):
    store = await make_store()
    a = await store.create(new_ticket("pa"))
    assert await store.pools() == [a["pool"]]
    assert await store.cancel(a["id"], "pa") == "ok"
    assert await store.waiting(a["pool"]) == []  # the matcher's read of an empty pool prunes it
    assert await store.pools() == []
    b, c = await store.create(new_ticket("pb")), await store.create(new_ticket("pc"))
    assert await store.claim("c", b["pool"], [b["id"], c["id"]], time.time() + 30)
    await store.waiting(b["pool"])
    assert await store.pools() == []
    assert await store.release("c") == 2  # released tickets bring their pool back
    assert await store.pools() == [b["pool"]]


async def test_expired_tickets_leave_the_queue_and_free_the_player(kind, make_store):
    store = await make_store()
    old = await store.create(new_ticket("pa", created_at=time.time() - 7200))
    if kind == "redis":  # Redis expires the key (TTL); make it happen now
        await store.client.delete(store.prefix + "mm:t:" + old["id"], store.prefix + "mm:p:pa")
    assert await store.waiting(old["pool"]) == []
    assert await store.pools() == []
    assert await store.get(old["id"]) is None
    assert (await store.create(new_ticket("pa")))["status"] == "waiting"
