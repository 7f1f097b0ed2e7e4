"""The answer of every lobby change (create, join in each of its cases, bots, leave, start) is the
lobby as a fresh read shows it after the commit, on SQLite and Postgres: the changes answer from
what they read under the lobby's lock with their own change applied, without reading it again."""
from __future__ import annotations

import secrets
import time
import uuid
from typing import Any

import pytest

from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.repo import LobbyRefused, Repository
from tests.conftest import make_db_url


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    if request.param == "postgres":
        request.getfixturevalue("postgres_server")
    url, pg = make_db_url(request.param, tmp_path)
    yield url
    if pg:
        pg.drop()


@pytest.fixture
async def repo(db_url):
    await upgrade_async(db_url)
    engine = make_engine(db_url)
    repository = Repository(engine)
    try:
        yield repository
    finally:
        await repository.aclose()
        await engine.dispose()


async def _player(repo: Repository, name: str) -> str:
    player_id = uuid.uuid4().hex
    await repo.create_player(player_id, name, "player", secrets.token_hex(32))
    return player_id


async def _lobby(repo: Repository, host: str, seats: int = 4) -> str:
    lobby: dict[str, Any] = {"id": uuid.uuid4().hex, "game": "provinces", "options": {"turn_seconds": 3600},
                             "seat_count": seats, "host_id": host, "status": "open", "match_id": None,
                             "created_at": time.time(), "rated": False}
    assert await repo.create_lobby(lobby, host, host_username=True) is None  # a guest has no username
    return lobby["id"]


async def _same_as_read(repo: Repository, answer: dict[str, Any]) -> None:
    read = await repo.lobby(answer["id"])
    assert read is not None
    assert answer == read


async def test_join_answers_are_the_lobby_as_read(repo):
    host = await _player(repo, "host")
    a, b, c, d = [await _player(repo, n) for n in ("a", "b", "c", "d")]
    lobby_id = await _lobby(repo, host)
    created = await repo.lobby(lobby_id)
    assert created is not None and [s["player_id"] for s in created["seats"]] == [host, None, None, None]
    assert created["players"][host]["name"] == "host"

    joined = await repo.join_lobby(lobby_id, a, 2)  # the asked seat
    assert [s["player_id"] for s in joined["seats"]] == [host, None, a, None]
    assert joined["players"][a] == {"id": a, "name": "a", "role": "player", "username": None}
    await _same_as_read(repo, joined)

    first_free = await repo.join_lobby(lobby_id, b)  # no seat asked: the first free one
    assert [s["player_id"] for s in first_free["seats"]] == [host, b, a, None]
    await _same_as_read(repo, first_free)

    again = await repo.join_lobby(lobby_id, a, 3)  # seated already: the same seat, whatever is asked
    assert [s["player_id"] for s in again["seats"]] == [host, b, a, None]
    await _same_as_read(repo, again)

    with pytest.raises(LobbyRefused) as taken:
        await repo.join_lobby(lobby_id, c, 2)
    assert taken.value.code == "no_free_seat"
    with pytest.raises(LobbyRefused) as bad:
        await repo.join_lobby(lobby_id, c, 4)
    assert bad.value.code == "bad_seat"
    assert (await repo.lobby(lobby_id)) == again  # refusals changed nothing

    with_loadout = await repo.join_lobby(lobby_id, c, None, ["x"])
    assert with_loadout["seats"][3] == {"lobby_id": lobby_id, "seat": 3, "player_id": c, "bot": None, "loadout": ["x"]}
    await _same_as_read(repo, with_loadout)
    loadout_again = await repo.join_lobby(lobby_id, c, None, ["y"])  # seated: the loadout replaced
    assert loadout_again["seats"][3]["loadout"] == ["y"]
    await _same_as_read(repo, loadout_again)

    with pytest.raises(LobbyRefused) as full:
        await repo.join_lobby(lobby_id, d)
    assert full.value.code == "no_free_seat"

    left = await repo.leave_lobby(lobby_id, b)
    assert [s["player_id"] for s in left["seats"]] == [host, None, a, c] and b not in left["players"]
    await _same_as_read(repo, left)
    closed = await repo.leave_lobby(lobby_id, host)  # the host leaving closes it
    assert closed["status"] == "closed"
    await _same_as_read(repo, closed)
    with pytest.raises(LobbyRefused) as not_open:
        await repo.join_lobby(lobby_id, d)
    assert not_open.value.code == "lobby_not_open"
    with pytest.raises(LobbyRefused) as missing:
        await repo.join_lobby(uuid.uuid4().hex, d)
    assert missing.value.code == "not_found"


async def test_bots_and_start_answer_the_lobby_as_read(repo):
    host = await _player(repo, "host")
    guest = await _player(repo, "guest")
    lobby_id = await _lobby(repo, host, seats=3)
    await repo.join_lobby(lobby_id, guest)

    def make_bot(seat: int) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex, "name": f"random-bot-{seat}", "role": "bot",
                "token_hash": secrets.token_hex(32), "created_at": time.time()}

    filled = await repo.fill_lobby_bots(lobby_id, "random", None, make_bot)
    assert [s["bot"] for s in filled["seats"]] == [None, None, "random"]
    await _same_as_read(repo, filled)

    def refuse(_seats: list[dict[str, Any]]) -> None:
        raise LobbyRefused("lobby_changed", "refused in the lock")

    match_id = uuid.uuid4().hex
    match = {"id": match_id, "game": "provinces", "options": {}, "seat_count": 3, "seed": "00", "seed_hash": "00",
             "status": "running", "lobby_id": lobby_id, "deadlines": {}, "outcome": None, "version": 0,
             "created_at": time.time(), "ended_at": None, "owner_epoch": 1, "owner_node": "test",
             "rules_version": 1}
    with pytest.raises(LobbyRefused):  # a refusal under the lock rolls the start's mark back
        await repo.start_lobby_match(lobby_id, lambda seats: {**match, "seats": seats}, refuse, match_id=match_id)
    after_refusal = await repo.lobby(lobby_id)
    assert after_refusal is not None and after_refusal["status"] == "open" and after_refusal["match_id"] is None
    assert await repo.match(match_id) is None

    started = await repo.start_lobby_match(lobby_id, lambda seats: {**match, "seats": seats}, match_id=match_id)
    assert [s["name"] for s in started["seats"]] == ["host", "guest", "random-bot-2"]
    read = await repo.lobby(lobby_id)
    assert read is not None and read["status"] == "started" and read["match_id"] == match_id
    with pytest.raises(LobbyRefused) as twice:
        await repo.start_lobby_match(lobby_id, lambda seats: {**match, "seats": seats}, match_id=uuid.uuid4().hex)
    assert twice.value.code == "lobby_not_open"
