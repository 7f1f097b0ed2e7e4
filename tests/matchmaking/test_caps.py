"""A cap checked when a ticket is queued holds when its match is formed: the cap on running matches
with bots (``MAX_BOT_MATCHES_PER_PLAYER``) is looked at again when the matcher groups tickets and
once more just before the match is made, since the host may have started bot matches of its own
since it queued. On the real database and queue of ``test_service`` (SQLite with the in-process
store; Postgres with Redis)."""
from __future__ import annotations

import dataclasses

from sqlalchemy import update

from app.db.models import Match
from app.matchmaking.matcher import Window, form_groups
from tests.matchmaking.conftest import new_ticket
from tests.matchmaking.test_service import mm_db, nodes, queue  # noqa: F401  (fixtures)

CAP = 1


def _capped(service):
    service.config = dataclasses.replace(service.config, max_bot_matches_per_player=CAP)
    return service


async def _lobby_of(service, ticket):
    done = await service.store.get(ticket["id"])
    return done, (await service.repo.lobby(done["lobby_id"]) if done.get("lobby_id") else None)


def test_an_anchor_in_no_bots_gets_no_bots_but_may_still_meet_people():
    lone = new_ticket("p", seats=3, bots_after_seconds=0.0, created_at=0.0)
    [group] = form_groups([lone], 3, 10.0, Window())
    assert group.bots == 2
    assert form_groups([lone], 3, 10.0, Window(), frozenset({"p"})) == []
    people = [new_ticket("p", seats=2, bots_after_seconds=0.0, created_at=0.0), new_ticket("q", seats=2)]
    [group] = form_groups(people, 2, 10.0, Window(), frozenset({"p"}))
    assert group.bots == 0 and len(group.ticket_ids) == 2


async def test_a_host_at_the_bot_cap_gets_no_bot_table_until_a_bot_match_ends(nodes):  # noqa: F811
    a = _capped(nodes[0])
    [first] = await queue(a, 1, seats=2, bots_after_seconds=0.0)
    assert await a.tick() == 1  # one running match with a bot: the cap of 1 is reached
    done, lobby = await _lobby_of(a, first)
    assert done["status"] == "matched" and any(s["bot"] for s in lobby["seats"])
    again = await a.store.create(new_ticket(first["player_id"], seats=2, bots_after_seconds=0.0))
    assert await a.tick() == 0
    assert (await a.store.get(again["id"]))["status"] == "waiting"  # it waits, nothing was made
    async with a.repo.engine.begin() as conn:  # the bot match ends
        await conn.execute(update(Match).where(Match.id == done["match_id"]).values(status="finished"))
    assert await a.tick() == 1
    assert (await a.store.get(again["id"]))["status"] == "matched"


async def test_a_host_who_reached_the_cap_after_grouping_is_checked_again_before_the_match(nodes):  # noqa: F811
    a = _capped(nodes[0])
    [first] = await queue(a, 1, seats=2, bots_after_seconds=0.0)
    assert await a.tick() == 1
    # the group of a second ticket was made before the first match started (a stale group):
    # forming it now must look at the cap again
    again = await a.store.create(new_ticket(first["player_id"], seats=2, bots_after_seconds=0.0))
    assert await a.form(again["pool"], [again], bots=1) is None
    done, lobby = await _lobby_of(a, again)
    assert done["status"] == "waiting"  # back in the queue
    assert len(a.starts.started) == 1  # type: ignore[attr-defined]  # no second match was made
    assert lobby is None or lobby["status"] == "closed"  # its claim's lobby fenced off


async def test_a_host_at_the_bot_cap_still_plays_people(nodes):  # noqa: F811
    a = _capped(nodes[0])
    [first] = await queue(a, 1, seats=2, bots_after_seconds=0.0)
    assert await a.tick() == 1
    mine = await a.store.create(new_ticket(first["player_id"], seats=2, bots_after_seconds=0.0))
    [other] = await queue(a, 1, seats=2)
    assert await a.tick() == 1
    done, lobby = await _lobby_of(a, mine)
    assert done["status"] == "matched" and not any(s["bot"] for s in lobby["seats"])
    assert (await a.store.get(other["id"]))["match_id"] == done["match_id"]
