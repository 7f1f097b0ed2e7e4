"""Issue 9 items 7 and 8 with real concurrency against a real server, on SQLite and Postgres:
parallel joins with one token give one seat; a leave (or join) racing the host's start has one
winner, and the lobby, the match and both answers agree."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.conftest import Backend, make_db_url

ROUNDS = 8


@pytest.fixture(params=["sqlite", "postgres"], scope="module")
def backend(request, tmp_path_factory):
    url, pg = make_db_url(request.param, tmp_path_factory.mktemp("db"))
    yield Backend(request.param, url, {})
    if pg:
        pg.drop()


class Player:
    def __init__(self, http: httpx.AsyncClient, token: str, player_id: str) -> None:
        self.http, self.token, self.id = http, token, player_id

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict]:
        r = await self.http.request(method, "/api/v1" + path, json=body,
                                    headers={"Authorization": f"Bearer {self.token}"})
        assert r.headers["content-type"].startswith("application/json"), r.text
        return r.status_code, r.json()


async def _player(http: httpx.AsyncClient, name: str) -> Player:
    r = await http.post("/api/v1/players", json={"name": name})
    out = r.json()
    return Player(http, out["token"], out["player"]["id"])


async def _lobby(host: Player, seats: int = 2) -> str:
    status, lobby = await host.call("POST", "/lobbies", {"game": "provinces", "seats": seats,
                                                         "options": {"turn_seconds": 3600}})
    assert status == 201, lobby
    return lobby["id"]


def _seats_of(lobby: dict, player_id: str) -> list[int]:
    return [s["seat"] for s in lobby["seats"] if s["player"] and s["player"]["id"] == player_id]


async def test_parallel_joins_with_one_token_give_one_seat(server):
    async with httpx.AsyncClient(base_url=server.url, timeout=60,
                                 limits=httpx.Limits(max_connections=20)) as http:
        host = await _player(http, "host")
        for _ in range(ROUNDS):
            lobby_id = await _lobby(host, seats=6)
            guest = await _player(http, "guest")
            bodies = [None, {"seat": 3}, {}, {"seat": 5}, None, {"seat": 1}, None, {"seat": 2}]
            answers = await asyncio.gather(*(guest.call("POST", f"/lobbies/{lobby_id}/join", b) for b in bodies))
            assert all(status == 200 for status, _ in answers), answers
            seats = {tuple(_seats_of(lobby, guest.id)) for _, lobby in answers}
            assert len(seats) == 1 and len(next(iter(seats))) == 1, seats  # every answer: the same one seat
            _, lobby = await guest.call("GET", f"/lobbies/{lobby_id}")
            assert [tuple(_seats_of(lobby, guest.id))] == list(seats)
            assert sum(1 for s in lobby["seats"] if s["player"]) == 2


async def _agree_after_start_race(host: Player, lobby_id: str, start: tuple[int, dict],
                                  other: tuple[int, dict], other_won_code: str) -> str:
    """Both answers, the lobby and the match tell one story; returns which side won."""
    _, lobby = await host.call("GET", f"/lobbies/{lobby_id}")
    if start[0] == 200:
        assert other[0] == 409 and other[1]["code"] == "lobby_not_open", other
        assert lobby["status"] == "started" and lobby["match_id"] == start[1]["match_id"]
        assert start[1]["seats"] == lobby["seats"]
        status, match = await host.call("GET", f"/matches/{lobby['match_id']}")
        assert status == 200
        assert [s["player_id"] for s in match["seats"]] == [s["player"]["id"] for s in lobby["seats"]]
        return "start"
    assert start[0] == 409 and start[1]["code"] == other_won_code, start
    assert other[0] == 200, other
    assert lobby["match_id"] is None
    assert lobby["status"] == other[1]["status"] and lobby["seats"] == other[1]["seats"]
    return "other"


async def test_member_leave_racing_start(server):
    wins = {"start": 0, "other": 0}
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        host = await _player(http, "host")
        for _ in range(ROUNDS):
            lobby_id = await _lobby(host)
            guest = await _player(http, "guest")
            assert (await guest.call("POST", f"/lobbies/{lobby_id}/join"))[0] == 200
            start, leave = await asyncio.gather(host.call("POST", f"/lobbies/{lobby_id}/start"),
                                                guest.call("POST", f"/lobbies/{lobby_id}/leave"))
            winner = await _agree_after_start_race(host, lobby_id, start, leave, "seats_empty")
            if winner == "other":
                assert _seats_of(leave[1], guest.id) == [] and leave[1]["status"] == "open"
            wins[winner] += 1
    assert sum(wins.values()) == ROUNDS


async def test_host_leave_racing_start(server):
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        host = await _player(http, "host")
        for _ in range(ROUNDS):
            lobby_id = await _lobby(host)
            guest = await _player(http, "guest")
            assert (await guest.call("POST", f"/lobbies/{lobby_id}/join"))[0] == 200
            start, leave = await asyncio.gather(host.call("POST", f"/lobbies/{lobby_id}/start"),
                                                host.call("POST", f"/lobbies/{lobby_id}/leave"))
            winner = await _agree_after_start_race(host, lobby_id, start, leave, "lobby_not_open")
            if winner == "other":
                assert leave[1]["status"] == "closed"


async def test_join_racing_start(server):
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        host = await _player(http, "host")
        for _ in range(ROUNDS):
            lobby_id = await _lobby(host)
            guest = await _player(http, "guest")
            start, join = await asyncio.gather(host.call("POST", f"/lobbies/{lobby_id}/start"),
                                               guest.call("POST", f"/lobbies/{lobby_id}/join"))
            _, lobby = await host.call("GET", f"/lobbies/{lobby_id}")
            # The start can only win with the guest in: the lobby had a free seat without them.
            assert join[0] == 200, join
            assert _seats_of(join[1], guest.id) == _seats_of(lobby, guest.id) == [1]
            if start[0] == 200:
                assert lobby["status"] == "started" and lobby["match_id"] == start[1]["match_id"]
                status, match = await host.call("GET", f"/matches/{lobby['match_id']}")
                assert [s["player_id"] for s in match["seats"]] == [host.id, guest.id]
            else:
                assert start[0] == 409 and start[1]["code"] == "seats_empty", start
                assert lobby["status"] == "open" and lobby["match_id"] is None
