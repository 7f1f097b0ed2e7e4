"""One contract for parties and rematch offers in both stores (in-process and Redis): the party's
ticket is made atomically with the checks of the party and every member, joins never pass the seat
count even racing, a leave or cancel racing the match's claim is answered one way, and a rematch
is started by exactly one of the players who agree."""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from app.matchmaking.parties import PartyRefused, rematch_key
from app.matchmaking.store import TicketExists
from tests.matchmaking.conftest import new_ticket
from tests.timing import scaled


def new_party(leader: str, seats: int = 3, *, code: str | None = None, expires_in: float = 600.0) -> dict:
    now = time.time()
    return {"id": uuid.uuid4().hex, "leader_id": leader, "game": "provinces", "seats": seats, "options": {},
            "code": code or uuid.uuid4().hex, "code_expires_at": now + expires_in, "created_at": now}


async def made(store, leader: str = "L", members: tuple[str, ...] = (), seats: int = 3) -> dict:
    party = new_party(leader, seats)
    assert await store.create_party(party) is None
    for m in members:
        assert await store.join_party(party["code"], m) == party["id"]
    return await store.party(party["id"])


def party_ticket(party: dict, **kw) -> dict:
    return new_ticket(party["leader_id"], seats=party["seats"], **kw)


async def test_a_party_is_made_joined_by_its_code_and_one_per_player(make_store):
    store = await make_store()
    party = await made(store, "L", ("a", "b"))
    assert party["members"] == ["L", "a", "b"] and party["leader_id"] == "L" and party["version"] == 3
    assert await store.party_of("a") == party["id"]
    assert await store.create_party(new_party("a")) == party["id"]   # already in one: nothing changes
    with pytest.raises(PartyRefused) as err:
        await store.join_party(party["code"], "c")                     # 3 seats: full
    assert err.value.code == "party_full"
    with pytest.raises(PartyRefused) as err:
        await store.join_party("nope", "c")
    assert err.value.code == "bad_invite"
    assert await store.join_party(party["code"], "a") == party["id"]  # again: idempotent
    other = await made(store, "M")
    with pytest.raises(PartyRefused) as err:
        await store.join_party(other["code"], "a")
    assert err.value.code == "in_party"


async def test_racing_joins_never_pass_the_seat_count(make_store):
    stores = [await make_store(), await make_store()]
    party = await made(stores[0], "L", seats=4)
    results = await asyncio.gather(*(stores[i % 2].join_party(party["code"], f"p{i}") for i in range(12)),
                                   return_exceptions=True)
    joined = [r for r in results if r == party["id"]]
    assert len(joined) == 3
    assert all(isinstance(r, PartyRefused) and r.code == "party_full" for r in results if r != party["id"])
    assert len((await stores[1].party(party["id"]))["members"]) == 4


async def test_an_expired_or_replaced_invite_code_does_not_work(make_store):
    store = await make_store()
    party = new_party("L", expires_in=1.0)
    await store.create_party(party)
    await store.new_invite(party["id"], "L", "fresh-code", time.time() + 600)
    with pytest.raises(PartyRefused) as err:
        await store.join_party(party["code"], "a")      # the old code stopped working at once
    assert err.value.code == "bad_invite"
    with pytest.raises(PartyRefused) as err:
        await store.new_invite(party["id"], "a", "x", time.time() + 600)
    assert err.value.code == "not_found"
    assert await store.join_party("fresh-code", "a") == party["id"]
    with pytest.raises(PartyRefused) as err:
        await store.new_invite(party["id"], "a", "x", time.time() + 600)
    assert err.value.code == "not_leader"
    short = new_party("M", expires_in=1.0)
    await store.create_party(short)
    await asyncio.sleep(1.6)
    with pytest.raises(PartyRefused) as err:
        await store.join_party(short["code"], "b")
    assert err.value.code == "bad_invite"


async def test_queueing_a_party_seats_every_member_on_one_ticket(make_store):
    store = await make_store()
    party = await made(store, "L", ("a",))
    with pytest.raises(PartyRefused) as err:
        await store.queue_party(party["id"], "a", party["members"], party_ticket(party))
    assert err.value.code == "not_leader"
    with pytest.raises(PartyRefused) as err:
        await store.queue_party(party["id"], "L", ["L"], party_ticket(party))   # read before "a" joined
    assert err.value.code == "party_changed"
    ticket = await store.queue_party(party["id"], "L", party["members"], party_ticket(party))
    assert ticket["members"] == ["L", "a"] and ticket["party_id"] == party["id"]
    assert (await store.get(ticket["id"]))["members"] == ["L", "a"]
    for member in ("L", "a"):   # every member's one live ticket is the party's
        with pytest.raises(TicketExists) as err:
            await store.create(new_ticket(member, seats=3))
        assert err.value.ticket_id == ticket["id"]
    with pytest.raises(PartyRefused) as err:
        await store.queue_party(party["id"], "L", party["members"], party_ticket(party))
    assert err.value.code == "party_queued"
    with pytest.raises(PartyRefused) as err:
        await store.join_party(party["code"], "b")
    assert err.value.code == "party_queued"
    assert await store.cancel(ticket["id"], "a") == "ok"        # any member may cancel it
    assert await store.create(new_ticket("a", seats=3))         # and then queue alone


async def test_a_member_with_a_live_ticket_is_named_and_nothing_is_queued(make_store):
    store = await make_store()
    party = await made(store, "L", ("a", "b"))
    solo = await store.create(new_ticket("b", seats=2))
    with pytest.raises(TicketExists) as err:
        await store.queue_party(party["id"], "L", party["members"], party_ticket(party))
    assert (err.value.player_id, err.value.ticket_id) == ("b", solo["id"])
    assert (await store.party(party["id"]))["ticket_id"] is None
    assert await store.waiting(party_ticket(party)["pool"]) == []
    with pytest.raises(TicketExists):   # L and a were not given a ticket either
        await store.create(new_ticket("b", seats=2))
    assert await store.create(new_ticket("L", seats=2))


async def test_a_solo_ticket_racing_the_party_queue_one_wins(make_store):
    stores = [await make_store(), await make_store()]
    for _ in range(10):
        party = await made(stores[0], uuid.uuid4().hex, (uuid.uuid4().hex,))
        member = party["members"][1]
        results = await asyncio.gather(
            stores[0].queue_party(party["id"], party["leader_id"], party["members"], party_ticket(party)),
            stores[1].create(new_ticket(member, seats=2)), return_exceptions=True)
        won = [r for r in results if isinstance(r, dict)]
        assert len(won) == 1 and all(isinstance(r, TicketExists) for r in results if not isinstance(r, dict))


async def test_leave_or_cancel_racing_the_claim_is_answered_one_way(make_store):
    """The leader cancels, or a member leaves, while another node claims the party's ticket for a
    match: either the cancel wins (the claim is refused, the ticket is cancelled) or the claim wins
    (the cancel says claimed, and the claim finishes into a match); never both."""
    stores = [await make_store(), await make_store()]
    outcomes = set()
    for i in range(16):
        party = await made(stores[0], uuid.uuid4().hex, (uuid.uuid4().hex,))
        ticket = await stores[0].queue_party(party["id"], party["leader_id"], party["members"], party_ticket(party))
        stranger = await stores[1].create(new_ticket(uuid.uuid4().hex, seats=3))
        claim = uuid.uuid4().hex
        undo = (stores[0].cancel(ticket["id"], party["leader_id"]) if i % 2
                else stores[0].leave_party(party["id"], party["members"][1]))
        grab = stores[1].claim(claim, ticket["pool"], [ticket["id"], stranger["id"]], time.time() + 10)
        if i % 4 < 2:   # either one sent first
            claimed, cancelled = await asyncio.gather(grab, undo, return_exceptions=True)
        else:
            cancelled, claimed = await asyncio.gather(undo, grab, return_exceptions=True)
        after = await stores[1].get(ticket["id"])
        if claimed is True:
            assert cancelled == "claimed" or (isinstance(cancelled, PartyRefused)
                                              and cancelled.code == "party_claimed")
            assert after["status"] == "claimed"
            assert await stores[1].finish(claim, "m", "l") == 2
            assert (await stores[0].get(ticket["id"]))["status"] == "matched"
            outcomes.add("claim")
        else:
            assert cancelled in ("ok", True) and after["status"] == "cancelled"
            assert (await stores[1].get(stranger["id"]))["status"] == "waiting"
            outcomes.add("cancel")
            await stores[1].cancel(stranger["id"], stranger["player_id"])
        for m in party["members"]:  # either way every member is free again
            assert await stores[0].create(new_ticket(m, seats=2))
    assert outcomes == {"claim", "cancel"}


async def test_leaving_hands_the_lead_on_and_the_last_one_out_ends_the_party(make_store):
    store = await make_store()
    party = await made(store, "L", ("a", "b"))
    ticket = await store.queue_party(party["id"], "L", party["members"], party_ticket(party))
    assert await store.leave_party(party["id"], "L") is True   # the waiting ticket is cancelled with it
    assert (await store.get(ticket["id"]))["status"] == "cancelled"
    now = await store.party(party["id"])
    assert now["members"] == ["a", "b"] and now["leader_id"] == "a" and await store.party_of("L") is None
    with pytest.raises(PartyRefused) as err:
        await store.leave_party(party["id"], "L")
    assert err.value.code == "not_found"
    with pytest.raises(PartyRefused) as err:
        await store.leave_party(party["id"], "b", disband=True)
    assert err.value.code == "not_leader"
    assert await store.leave_party(party["id"], "a", disband=True) is False
    assert await store.party(party["id"]) is None and await store.party_of("b") is None
    with pytest.raises(PartyRefused):
        await store.join_party(party["code"], "c")


async def test_party_waiters_wake_on_every_change(make_store):
    stores = [await make_store(), await make_store()]
    if hasattr(stores[0], "subscribed"):
        await asyncio.wait_for(stores[0].subscribed.wait(), 5)
    party = await made(stores[1], "L")
    started = time.monotonic()
    waiting = asyncio.create_task(stores[0].wait(party["id"], 10))
    await asyncio.sleep(0.05)
    await stores[1].join_party(party["code"], "a")
    await asyncio.wait_for(waiting, 10)
    assert time.monotonic() - started < scaled(1.5)


async def test_a_rematch_starts_once_when_every_player_agrees(make_store):
    stores = [await make_store(), await make_store()]
    needed, expires = ["a", "b", "c"], time.time() + 60
    assert await stores[0].rematch_vote("m1", "x", needed, expires) == "not_seated"
    assert await stores[0].rematch_vote("m1", "a", needed, expires) == "open"
    assert await stores[0].rematch_vote("m1", "a", needed, expires) == "open"  # again: nothing new
    results = await asyncio.gather(stores[0].rematch_vote("m1", "b", needed, expires),
                                   stores[1].rematch_vote("m1", "c", needed, expires))
    assert sorted(results) == ["open", "start"]     # exactly one of the last two starts it
    assert (await stores[1].rematch("m1"))["status"] == "starting"
    assert await stores[1].rematch_decline("m1", "a", needed, expires) == "starting"  # too late: nothing
    await stores[0].rematch_done("m1", "started", "m2")
    offer = await stores[1].rematch("m1")
    assert (offer["status"], offer["new_match_id"], sorted(offer["agreed"])) == ("started", "m2", needed)


async def test_a_decline_cancels_the_offer_for_everyone_and_a_late_vote_expires(make_store):
    store = await make_store()
    needed = ["a", "b"]
    assert await store.rematch_vote("m1", "a", needed, time.time() + 60) == "open"
    waiting = asyncio.create_task(store.wait(rematch_key("m1"), 10))
    await asyncio.sleep(0.05)
    assert await store.rematch_decline("m1", "b", needed, time.time() + 60) == "ok"
    await asyncio.wait_for(waiting, 5)
    offer = await store.rematch("m1")
    assert (offer["status"], offer["declined_by"]) == ("cancelled", "b")
    assert await store.rematch_vote("m1", "a", needed, time.time() + 60) == "cancelled"
    assert await store.rematch_vote("m2", "a", needed, time.time() - 1) == "expired"
