"""A quick-play ticket the server acknowledged is never silently forgotten: when its store lost it
(the embedded server restarted: its queue is in memory; production: Redis restarted empty, in
tests/faults/test_outage_answers.py) the player reads ``410 ticket_lost`` and may queue again."""
from __future__ import annotations

import time

import pytest

from app.matchmaking.service import issued_at, new_ticket_id
from tests.inproc.conftest import running_node


def test_a_ticket_id_says_to_whom_and_when_it_was_issued():
    now = time.time()
    ticket = new_ticket_id("p1", now)
    assert len(ticket) == 40 and ticket != new_ticket_id("p1", now)
    assert abs((issued_at(ticket, "p1") or 0) - now) < 0.002
    assert issued_at(ticket, "p2") is None  # another player's: not said to exist
    forged = ticket[:12] + "0" * 8 + ticket[20:]
    assert issued_at(forged, "p1") is None
    for other in ("", "nope", "f" * 32, "z" * 40, ticket[:-1]):
        assert issued_at(other, "p1") is None, other


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_a_ticket_lost_with_a_restart_answers_410_and_the_player_can_queue_again(tmp_path, method):
    async with running_node(tmp_path) as node:
        player = node.rest()
        player_id = (await player.register("queued"))["player"]["id"]
        other = node.rest()
        await other.register("other")
        made = await node.http.post("/api/v1/matchmaking/tickets", json={"game": "provinces", "seats": 2},
                                    headers={"Authorization": f"Bearer {player.token}"})
        assert made.status_code == 201, made.text
        ticket = made.json()["id"]
    async with running_node(tmp_path) as node:  # the same database, a fresh (empty) queue
        asked = await node.http.request(method, f"/api/v1/matchmaking/tickets/{ticket}",
                                        headers={"Authorization": f"Bearer {player.token}"})
        assert asked.status_code == 410 and asked.json()["code"] == "ticket_lost", asked.text
        # another player asking for it learns nothing
        theirs = await node.http.get(f"/api/v1/matchmaking/tickets/{ticket}",
                                     headers={"Authorization": f"Bearer {other.token}"})
        assert theirs.status_code == 404 and theirs.json()["code"] == "not_found"
        # a made-up id is not found, as before
        made_up = await node.http.get("/api/v1/matchmaking/tickets/" + "a" * 32,
                                      headers={"Authorization": f"Bearer {player.token}"})
        assert made_up.status_code == 404
        # one of ours older than MATCHMAKING_TICKET_TTL_SECONDS: expired, not lost
        expired = new_ticket_id(player_id, time.time() - 2 * 3600)
        old = await node.http.get(f"/api/v1/matchmaking/tickets/{expired}",
                                  headers={"Authorization": f"Bearer {player.token}"})
        assert old.status_code == 404
        again = await node.http.post("/api/v1/matchmaking/tickets", json={"game": "provinces", "seats": 2},
                                     headers={"Authorization": f"Bearer {player.token}"})
        assert again.status_code == 201, again.text
    await player.close()
    await other.close()
