"""Parties and rematches against real server processes: parties of 2 and 3 queueing with strangers
on two nodes sharing Postgres and Redis (racing matchers, cancels and leaves racing the match),
the refusals a party gives, the per-player bound on long-polls, and rematches (agree, decline,
expiry, bots) on one node."""
from __future__ import annotations

import asyncio
import collections
import time

import httpx
import pytest

from app.api.routes.parties import CODE_BYTES, _code
from app.client import ApiError, MatchSocket, RestClient
from app.client.socket import play
from app.matchmaking.rematch import rematch_lobby_id
from app.runtime.bots import make_bot
from tests.conftest import ServerProcess
from tests.e2e.test_matchmaking import two_nodes  # noqa: F401  (the fixture: two nodes, Postgres + Redis)
from tests.timing import scaled


async def guests(url: str, n: int, name: str = "pp") -> list[RestClient]:
    out = []
    for i in range(n):
        c = RestClient(url, timeout=40.0)
        await c.register(f"{name}{i}")
        out.append(c)
    return out


async def wait_party_matched(client: RestClient, party_id: str, timeout: float = 40.0) -> dict:
    """Long-poll the party (as a member) until its ticket is matched; the party."""
    end = time.monotonic() + scaled(timeout)
    party = await client.party(party_id)
    while not (party["ticket"] and party["ticket"]["status"] == "matched"):
        assert time.monotonic() < end, party
        party = await client.party(party_id, wait=10, state=party["state"])
    return party


# --------------------------------------------------------------------------- two nodes
@pytest.mark.postgres
@pytest.mark.redis
async def test_parties_of_two_and_three_queue_with_strangers_across_two_nodes(two_nodes):  # noqa: F811
    """Two parties of 3 and two of 2 (leaders and members spread over both nodes) and six strangers
    queue at once for 4-seat tables; both nodes' matchers race. Every party lands whole in one
    match on seats of its own, nobody is in two matches, and every seat is filled (by strangers, or
    by bots after the 5 s the tickets allow when no exact table is left)."""
    a, b = two_nodes
    nodes = [a.url, b.url]
    options = {"turn_seconds": 600}
    parties, people = [], []
    for size in (3, 3, 2, 2):
        members = [(await guests(nodes[(len(people) + i) % 2], 1, f"m{size}"))[0] for i in range(size)]
        people += members
        party = await members[0].create_party("provinces", 4, options)
        for m in members[1:]:
            joined = await m.join_party(party["invite_code"])
            assert joined["id"] == party["id"]
        parties.append((party["id"], members))
    strangers = [(await guests(nodes[i % 2], 1, "s"))[0] for i in range(6)]
    try:
        queued = await asyncio.gather(*(ms[0].queue_party(pid, bots_after_seconds=5) for pid, ms in parties),
                                      *(s.queue("provinces", 4, options, bots_after_seconds=5) for s in strangers))
        assert all(t["status"] in ("waiting", "claimed", "matched") for t in queued)
        done_parties = await asyncio.gather(*(wait_party_matched(ms[-1], pid) for pid, ms in parties))
        done_strangers = await asyncio.gather(*(s.wait_for_match(t["id"], timeout=scaled(40))
                                                for s, t in zip(strangers, queued[len(parties):], strict=True)))
        assert {t["status"] for t in done_strangers} == {"matched"}
        seen: dict[str, str] = {}   # player -> match
        for (_pid, members), party in zip(parties, done_parties, strict=True):
            match = await members[0].match(party["ticket"]["match_id"])
            seated = [s["player_id"] for s in match["seats"]]
            ids = [(await m.me())["id"] for m in members]
            assert set(ids) <= set(seated) and len(set(seated)) == len(seated) == 4   # seats of their own
            for pid_ in ids:
                assert seen.setdefault(pid_, match["id"]) == match["id"]
        for s, t in zip(strangers, done_strangers, strict=True):
            me = (await s.me())["id"]
            assert seen.setdefault(me, t["match_id"]) == t["match_id"]
        admin = RestClient(a.url, a.admin_token)
        matches = [m for m in await admin.admin_matches() if m["game"] == "provinces"]
        await admin.close()
        humans = [s["player_id"] for m in matches for s in m["seats"] if not s["bot"]]
        assert len(humans) == len(set(humans)) == 16                   # nobody in two matches
        assert all(len(m["seats"]) == 4 for m in matches)
        assert {m["id"] for m in matches} == set(seen.values())
    finally:
        for c in people + strangers:
            await c.close()


@pytest.mark.postgres
@pytest.mark.redis
async def test_cancels_and_leaves_racing_the_match_are_answered_one_way(two_nodes):  # noqa: F811
    """A party of 2 waits for a 3-seat table; a stranger queues on the other node while the leader
    cancels (or the member leaves). Each time exactly one thing happens: the cancel or leave wins
    (the party's ticket is cancelled, nobody of the party is in a match, the stranger still waits),
    or the match wins (the cancel is refused with ticket_claimed/ticket_matched, the leave with
    party_claimed, or, once the match is made, the leave is accepted with ``ticket_cancelled``
    false; and all three play one match)."""
    a, b = two_nodes
    outcomes: collections.Counter[str] = collections.Counter()
    admin = RestClient(a.url, a.admin_token)
    try:
        for i in range(10):
            leader, member = (await guests(a.url, 1, "L"))[0], (await guests(b.url, 1, "M"))[0]
            stranger = (await guests(b.url, 1, "S"))[0]
            options = {"turn_seconds": 600 + i}     # a pool of its own each round
            party = await leader.create_party("provinces", 3, options)
            await member.join_party(party["invite_code"])
            ticket = await leader.queue_party(party["id"])
            their = await stranger.queue("provinces", 3, options)
            undo = leader.cancel_party_queue(party["id"]) if i % 2 else member.leave_party(party["id"])
            try:
                answer = await undo
                # a leave after the match was made is accepted and cancels nothing: the match won
                won = "match" if answer.get("ticket_cancelled") is False else "cancel"
                assert answer.get("status") == "cancelled" or "ticket_cancelled" in answer
                if won == "match":
                    assert (await leader.ticket(ticket["id"]))["status"] == "matched"
            except ApiError as exc:
                won = "match"
                assert (exc.status, exc.code) in ((409, "ticket_claimed"), (409, "ticket_matched"),
                                                  (409, "party_claimed"))
            outcomes[won] += 1
            lead_ticket = await leader.ticket(ticket["id"])
            if won == "cancel":
                assert lead_ticket["status"] == "cancelled"
                assert (await stranger.ticket(their["id"]))["status"] == "waiting"
                mine = {(await c.me())["id"] for c in (leader, member)}
                seated = {s["player_id"] for m in await admin.admin_matches(game="provinces") for s in m["seats"]}
                assert not mine & seated
                await stranger.cancel_ticket(their["id"])
            else:
                done = await leader.wait_for_match(ticket["id"], timeout=scaled(20))
                other = await stranger.wait_for_match(their["id"], timeout=scaled(20))
                assert done["status"] == other["status"] == "matched" and done["match_id"] == other["match_id"]
                match = await leader.match(done["match_id"])
                assert {s["player_id"] for s in match["seats"]} == {(await c.me())["id"]
                                                                    for c in (leader, member, stranger)}
            for c in (leader, member):   # either way both are free to queue again
                t = await c.queue("provinces", 6, {"turn_seconds": 700 + i})
                await c.cancel_ticket(t["id"])
            for c in (leader, member, stranger):
                await c.close()
    finally:
        await admin.close()
    print("cancel races:", dict(outcomes))


# --------------------------------------------------------------------------- one node
@pytest.fixture(scope="module")
def node(tmp_path_factory):
    db = tmp_path_factory.mktemp("partydb") / "bannerfall.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}",
                        env={"BANNERFALL_MAX_LONG_POLLS_PER_PLAYER": "2", "BANNERFALL_REMATCH_SECONDS": "8",
                             "BANNERFALL_MATCHMAKING_TICK_SECONDS": "0.1",
                             "BANNERFALL_RATE_LIMIT_PARTY_INVITES": "4/minute",
                             "BANNERFALL_RATE_LIMIT_PARTY_JOINS": "3/minute"}).start()
    yield srv
    srv.stop()


async def test_a_party_refuses_clearly_and_changes_nothing(node):
    lead, amy, bob, cat, dan = await guests(node.url, 5, "r")
    try:
        with pytest.raises(ApiError) as err:
            await lead.create_party("provinces", 9)
        assert (err.value.status, err.value.code) == (422, "bad_seat_count")
        party = await lead.create_party("provinces", 4, {"turn_seconds": 600})
        assert party["status"] == "open" and party["invite_path"] == f"#/join/{party['invite_code']}"
        assert len(party["invite_code"]) >= 20
        with pytest.raises(ApiError) as err:
            await lead.create_party("provinces", 2)
        assert (err.value.status, err.value.code) == (409, "party_exists") and party["id"] in err.value.message
        with pytest.raises(ApiError) as err:
            await amy.join_party("not-a-code")
        assert (err.value.status, err.value.code) == (404, "bad_invite")
        with pytest.raises(ApiError) as err:     # a stranger does not see the party
            await amy.party(party["id"])
        assert err.value.status == 404
        for c in (amy, bob, cat):
            await c.join_party(party["invite_code"])
        with pytest.raises(ApiError) as err:
            await dan.join_party(party["invite_code"])
        assert (err.value.status, err.value.code) == (409, "party_full")
        await cat.leave_party(party["id"])   # three of four seats: the party waits for a stranger
        with pytest.raises(ApiError) as err:
            await amy.queue_party(party["id"])
        assert (err.value.status, err.value.code) == (403, "not_leader")
        # a member already queued: named, nothing queued
        solo = await bob.queue("warrior", 4)
        with pytest.raises(ApiError) as err:
            await lead.queue_party(party["id"])
        assert (err.value.status, err.value.code) == (409, "member_queued") and "r2" in err.value.message
        assert (await lead.party(party["id"]))["status"] == "open"
        await bob.cancel_ticket(solo["id"])
        # a member seated in a running match: named, nothing queued
        lobby = await amy.create_lobby("provinces", 2, {"turn_seconds": 600})
        await amy.fill_bots(lobby["id"], "smart")
        running = (await amy.start(lobby["id"]))["match_id"]
        with pytest.raises(ApiError) as err:
            await lead.queue_party(party["id"])
        assert (err.value.status, err.value.code) == (409, "member_in_match")
        assert "r1" in err.value.message and running in err.value.message
        async with RestClient(node.url, node.admin_token) as admin:
            await admin.admin_abort(running)
        # queued: a member's long-poll wakes; joining and queueing again are refused
        before = await amy.party(party["id"])
        polling = asyncio.create_task(amy.party(party["id"], wait=20, state=before["state"]))
        ticket = await lead.queue_party(party["id"])
        woke = await asyncio.wait_for(polling, scaled(10))
        assert woke["status"] == "queued" and woke["ticket"]["id"] == ticket["id"]
        assert ticket["members"] == [p["id"] for p in before["members"]]
        with pytest.raises(ApiError) as err:
            await lead.queue_party(party["id"])
        assert (err.value.status, err.value.code) == (409, "party_queued")
        assert (await amy.ticket(ticket["id"]))["party_id"] == party["id"]   # members read the ticket
        with pytest.raises(ApiError) as err:
            await amy.cancel_party_queue(party["id"])
        assert (err.value.status, err.value.code) == (403, "not_leader")
        assert (await lead.cancel_party_queue(party["id"]))["status"] == "cancelled"
        with pytest.raises(ApiError) as err:
            await lead.cancel_party_queue(party["id"])
        assert (err.value.status, err.value.code) == (409, "ticket_cancelled")
        # a new invite code: the old one stops working
        fresh = await lead.request("POST", f"/parties/{party['id']}/invite")
        assert fresh["invite_code"] != party["invite_code"]
        await bob.leave_party(party["id"])
        with pytest.raises(ApiError) as err:
            await cat.join_party(party["invite_code"])
        assert err.value.code == "bad_invite"
        assert (await cat.join_party(fresh["invite_code"]))["id"] == party["id"]
        # the leader ends it: everyone is out
        await lead.request("DELETE", f"/parties/{party['id']}")
        for c in (amy, cat):
            with pytest.raises(ApiError) as err:
                await c.request("GET", "/parties/mine")
            assert err.value.status == 404
    finally:
        for c in (lead, amy, bob, cat, dan):
            await c.close()


async def test_invites_and_failed_joins_are_rate_limited_per_player(node):
    lead, guesser = await guests(node.url, 2, "rl")
    try:
        party = await lead.create_party("provinces", 3)
        for _ in range(3):
            await lead.request("POST", f"/parties/{party['id']}/invite")
        with pytest.raises(ApiError) as err:        # the fifth party or code within a minute
            await lead.request("POST", f"/parties/{party['id']}/invite")
        assert (err.value.status, err.value.code) == (429, "rate_limited")
        code = (await lead.party(party["id"]))["invite_code"]
        for i in range(3):                          # only failures count
            with pytest.raises(ApiError) as err:
                await guesser.join_party(f"guess-{i}")
            assert err.value.code == "bad_invite"
        with pytest.raises(ApiError) as err:        # then even the right code waits
            await guesser.join_party(code)
        assert (err.value.status, err.value.code) == (429, "rate_limited")
        assert [m["id"] for m in (await lead.party(party["id"]))["members"]] == [(await lead.me())["id"]]
    finally:
        for c in (lead, guesser):
            await c.close()


async def test_a_party_plays_with_bots_after_its_wait_and_members_learn_of_it(node):
    lead, amy = await guests(node.url, 2, "b")
    try:
        party = await lead.create_party("warrior", 3, {})
        await amy.join_party(party["invite_code"])
        ticket = await lead.queue_party(party["id"], bots_after_seconds=0.5)
        done = await wait_party_matched(amy, party["id"])
        assert done["ticket"]["id"] == ticket["id"]
        match = await amy.match(done["ticket"]["match_id"])
        assert [bool(s["bot"]) for s in match["seats"]].count(True) == 1
        ids = {(await c.me())["id"] for c in (lead, amy)}
        assert ids == {s["player_id"] for s in match["seats"] if not s["bot"]}
    finally:
        for c in (lead, amy):
            await c.close()


async def test_long_polls_are_bounded_in_time_and_in_count_per_player(node):
    [p] = await guests(node.url, 1, "w")
    try:
        ticket = await p.queue("provinces", 6, {"turn_seconds": 601})
        with pytest.raises(ApiError) as err:
            await p.ticket(ticket["id"], wait=31)
        assert err.value.status == 422
        party = await p.create_party("provinces", 3)
        polls = [asyncio.create_task(p.ticket(ticket["id"], wait=15)),
                 asyncio.create_task(p.party(party["id"], wait=15, state=party["state"]))]
        deadline = time.monotonic() + scaled(10)
        async with httpx.AsyncClient() as raw:   # both are waiting on the node before the third asks
            while "bannerfall_matchmaking_long_polls 2.0" not in (await raw.get(node.url + "/metrics")).text:
                assert time.monotonic() < deadline, "the long-polls never started waiting"
        with pytest.raises(ApiError) as err:
            await p.ticket(ticket["id"], wait=5)
        assert (err.value.status, err.value.code) == (429, "too_many_long_polls")
        assert (await p.ticket(ticket["id"]))["status"] == "waiting"   # not waiting: not counted
        await p.cancel_ticket(ticket["id"])   # the ticket's long-poll answers at once
        assert (await asyncio.wait_for(polls[0], scaled(5)))["status"] == "cancelled"
        await p.leave_party(party["id"])      # the party's too (404: no longer a member)
        with pytest.raises(ApiError) as err:
            await asyncio.wait_for(polls[1], scaled(5))
        assert err.value.status == 404
        t2 = await p.queue("provinces", 6, {"turn_seconds": 602})
        assert (await p.ticket(t2["id"], wait=0.2))["status"] == "waiting"  # slots were given back
        await p.cancel_ticket(t2["id"])
    finally:
        await p.close()


# --------------------------------------------------------------------------- rematch
async def _play_to_the_end(url: str, match_id: str, clients: list[RestClient]) -> None:
    socks = [MatchSocket(url, match_id, c.token) for c in clients]
    for s in socks:
        await s.connect()
    try:
        ended = await asyncio.gather(*(play(s, make_bot("provinces", "smart", i).decide, idle_timeout=120)
                                       for i, s in enumerate(socks)))
        assert {e["type"] for e in ended} == {"ended"}
    finally:
        for s in socks:
            await s.close()


async def test_a_rematch_starts_when_every_player_agrees_with_the_same_seats_and_options(node):
    ann, bob, eve = await guests(node.url, 3, "rm")
    try:
        options = {"max_rounds": 1, "turn_seconds": 600}
        ta, tb = await ann.queue("provinces", 2, options), await bob.queue("provinces", 2, options)
        da = await ann.wait_for_match(ta["id"], timeout=scaled(20))
        await bob.wait_for_match(tb["id"], timeout=scaled(20))
        old = await ann.match(da["match_id"])
        with pytest.raises(ApiError) as err:
            await ann.agree_rematch(old["id"])
        assert (err.value.status, err.value.code) == (409, "match_not_ended")
        await _play_to_the_end(node.url, old["id"], [ann, bob])
        with pytest.raises(ApiError) as err:
            await eve.agree_rematch(old["id"])
        assert (err.value.status, err.value.code) == (403, "not_a_player")
        offer = await bob.rematch(old["id"])
        assert offer["status"] == "open" and offer["agreed"] == [] and 0 < offer["seconds_left"] <= 8
        polling = asyncio.create_task(bob.rematch(old["id"], wait=10, state=offer["state"]))
        mine = await ann.agree_rematch(old["id"])
        ann_id = (await ann.me())["id"]
        assert mine["status"] == "open" and mine["agreed"] == [ann_id]
        woke = await asyncio.wait_for(polling, scaled(5))
        assert woke["agreed"] == [ann_id]
        polling = asyncio.create_task(ann.rematch(old["id"], wait=10, state=woke["state"]))
        started = await bob.agree_rematch(old["id"])
        assert started["status"] == "started" and started["new_match_id"]
        seen = await asyncio.wait_for(polling, scaled(5))   # woken by "starting" or "started"
        if seen["status"] == "starting":
            seen = await ann.rematch(old["id"], wait=10, state=seen["state"])
        assert seen["status"] == "started" and seen["new_match_id"] == started["new_match_id"]
        assert (await ann.agree_rematch(old["id"]))["new_match_id"] == started["new_match_id"]  # again: same
        new = await ann.match(started["new_match_id"])
        assert new["status"] == "running" and new["id"] != old["id"]
        assert [s["player_id"] for s in new["seats"]] == [s["player_id"] for s in old["seats"]]
        assert new["options"] == old["options"]
        lobby = await ann.lobby(rematch_lobby_id(old["id"]))
        assert lobby["match_id"] == new["id"] and lobby["rated"] is True   # quick play's lobby was rated
        # the rematch ended (aborted here): a decline cancels its offer for everyone at once
        async with RestClient(node.url, node.admin_token) as admin:
            await admin.admin_abort(new["id"])
        first = await ann.agree_rematch(new["id"])
        polling = asyncio.create_task(ann.rematch(new["id"], wait=10, state=first["state"]))
        declined = await bob.decline_rematch(new["id"])
        assert declined["status"] == "cancelled" and declined["declined_by"] == (await bob.me())["id"]
        assert (await asyncio.wait_for(polling, scaled(5)))["status"] == "cancelled"
        with pytest.raises(ApiError) as err:
            await ann.agree_rematch(new["id"])
        assert (err.value.status, err.value.code) == (409, "rematch_cancelled")
    finally:
        for c in (ann, bob, eve):
            await c.close()


async def test_an_offer_nobody_completes_expires_and_holds_nobody(node):
    ann, bob = await guests(node.url, 2, "ex")
    try:
        lobby = await ann.create_lobby("provinces", 2, {"turn_seconds": 600})
        await bob.join(lobby["id"])
        match_id = (await ann.start(lobby["id"]))["match_id"]
        async with RestClient(node.url, node.admin_token) as admin:
            await admin.admin_abort(match_id)
        offer = await ann.agree_rematch(match_id)
        assert offer["status"] == "open"
        # bob never answers; ann is not held: she may queue at once, and the offer expires by itself
        t = await ann.queue("provinces", 6, {"turn_seconds": 603})
        await ann.cancel_ticket(t["id"])
        end = time.monotonic() + scaled(20)
        while offer["status"] == "open":
            assert time.monotonic() < end
            offer = await ann.rematch(match_id, wait=10, state=offer["state"])
        assert offer["status"] == "expired" and offer["seconds_left"] == 0
        with pytest.raises(ApiError) as err:
            await bob.agree_rematch(match_id)
        assert (err.value.status, err.value.code) == (409, "rematch_expired")
    finally:
        for c in (ann, bob):
            await c.close()


async def test_a_rematch_with_bots_needs_only_the_humans_and_keeps_the_bots_seats(node):
    [ann] = await guests(node.url, 1, "solo")
    try:
        lobby = await ann.create_lobby("provinces", 3, {"turn_seconds": 600})
        await ann.fill_bots(lobby["id"], "random")
        match_id = (await ann.start(lobby["id"]))["match_id"]
        async with RestClient(node.url, node.admin_token) as admin:
            await admin.admin_abort(match_id)
        old = await ann.match(match_id)
        started = await ann.agree_rematch(match_id)
        assert started["status"] == "started"
        new = await ann.match(started["new_match_id"])
        assert [s["bot"] for s in new["seats"]] == [s["bot"] for s in old["seats"]] == [None, "random", "random"]
        assert new["seats"][0]["player_id"] == old["seats"][0]["player_id"]
        assert {s["player_id"] for s in new["seats"][1:]}.isdisjoint({s["player_id"] for s in old["seats"][1:]})
        # the rematch is running; ann's agreement to a rematch of the first match cannot put her in two
        async with RestClient(node.url, node.admin_token) as admin:
            lobby2 = await ann.create_lobby("provinces", 2, {"turn_seconds": 600})
            await ann.fill_bots(lobby2["id"], "random")
            third = (await ann.start(lobby2["id"]))["match_id"]
            await admin.admin_abort(third)
            with pytest.raises(ApiError) as err:          # she still plays the rematch of the first
                await ann.agree_rematch(third)
            assert (err.value.status, err.value.code) == (409, "rematch_failed") and new["id"] in err.value.message
            assert (await ann.rematch(third))["status"] == "cancelled"
            await admin.admin_abort(new["id"])
    finally:
        await ann.close()


def test_invite_codes_are_random_and_a_rematchs_lobby_id_is_one_per_match():
    codes = {_code() for _ in range(1000)}
    assert len(codes) == 1000 and CODE_BYTES >= 16 and all(len(c) >= 21 for c in codes)
    assert rematch_lobby_id("m1") == rematch_lobby_id("m1") != rematch_lobby_id("m2")
    assert len(rematch_lobby_id("m1")) == 32
