"""``GET /games`` publishes what each installed game declares (no list of games or bot kinds in the
server), each game's board files are served from its package (and nothing else is), and
``/events.json`` holds every game's wording."""
from __future__ import annotations

import httpx
import pytest

from app.client import RestClient
from app.games import registry
from tests.conftest import ServerProcess


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    server = ServerProcess(f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('games') / 'g.db'}").start()
    yield server
    server.stop()


def test_every_game_is_published_as_it_declares_itself(srv):
    listed = httpx.get(srv.url + "/api/v1/games", timeout=10).json()
    assert [g["id"] for g in listed] == list(registry())
    for entry in listed:
        info = registry()[entry["id"]].info
        assert entry["bot_kinds"] == list(info.bots)
        assert (entry["hidden_information"], entry["simultaneous_moves"], entry["chance"], entry["max_actions"]) == \
            (info.hidden_information, info.simultaneous_moves, sorted(info.chance), info.max_actions)
        assert entry["phases"] == list(info.phases) and entry["action_types"] == sorted(info.action_types)
        assert entry["board"] == f"/games/{info.id}/web/board.js"
        board = httpx.get(srv.url + entry["board"], timeout=10)
        assert board.status_code == 200 and board.headers["content-type"].startswith("text/javascript")
        assert "export function createBoard" in board.text


@pytest.mark.parametrize("path", [
    "/games/provinces/web/../game.py", "/games/provinces/web/%2e%2e/game.py", "/games/provinces/web/../../base.py",
    "/games/provinces/web/board.py", "/games/no_such_game/web/board.js", "/games/provinces/web/missing.js",
    "/games/provinces/web/.hidden.js",
])
def test_nothing_but_a_games_web_files_is_served(srv, path):
    answer = httpx.get(srv.url + path, timeout=10)
    assert answer.status_code == 404, (path, answer.status_code, answer.text[:100])
    assert "def " not in answer.text


async def test_a_game_of_its_own_distribution_fills_a_lobby_with_its_own_bot_kinds(srv):
    """The example game's bots are ``random`` and ``greedy``: no server list of kinds caps them."""
    if "tricks" not in registry():
        pytest.fail("examples/tricks is not installed: pip install -e examples/tricks (.ci/run does)", pytrace=False)
    async with RestClient(srv.url) as host:
        await host.register("host")
        assert (await host.request("GET", "/games/tricks"))["bot_kinds"] == ["random", "greedy"]
        lobby = await host.create_lobby("tricks", 2, {"hands": 1})
        await host.fill_bots(lobby["id"], "greedy")
        started = await host.start(lobby["id"])
        match = await host.match(started["match_id"])
        assert match["game"] == "tricks" and match["seats"][1]["bot"] == "greedy"
        words = httpx.get(srv.url + "/events.json", timeout=10).json()
        assert set(words["tricks"]["events"]) == {"dealt", "hand_started", "played", "trick_won", "hand_over",
                                                  "match_over"}
