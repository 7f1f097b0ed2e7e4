"""What a player sees in the browser when the server is upgraded under a running match with a rules
version it no longer has (``docs/operations.md``, "Deploying a rules change"): the page reconnects
by itself and shows the match aborted, "rules changed", with the reason in place of the board, and
no error in the page."""
from __future__ import annotations

import pytest

from tests.conftest import ServerProcess

from .conftest import rest, sign_in

LAUNCHER = "tests.rules_versions.serve"


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("browserdb") / "bannerfall.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", module=LAUNCHER).start()
    yield srv
    srv.stop()


def test_the_match_page_shows_a_match_aborted_by_a_rules_change(pages, live_server):
    ann = pages.new()
    sign_in(ann, "ann")
    token = ann.evaluate("JSON.parse(localStorage.getItem('bannerfall.player')).token")
    lobby = rest(live_server, "POST", "/lobbies", token,
                 json={"game": "provinces", "seats": 2, "options": {"turn_seconds": 600}})
    rest(live_server, "POST", f"/lobbies/{lobby['id']}/bots", token, json={"kind": "random"})
    match_id = rest(live_server, "POST", f"/lobbies/{lobby['id']}/start", token)["match_id"]
    ann.goto(f"{live_server.url}/#/match/{match_id}")
    ann.wait_for_selector("#board .province")
    live_server.stop()
    live_server.extra_env["TEST_GAME_ENGINES"] = "provinces=tests.rules_versions.provinces_v2"
    live_server.start()
    ann.wait_for_selector("#board .unavailable")  # the page reconnected by itself
    assert "provinces rules version 1" in ann.inner_text("#board")
    ann.wait_for_selector("#standings")
    assert "Match aborted" in ann.inner_text("#standings")
    assert "rules changed" in ann.inner_text("#standings")
    assert "aborted" in ann.inner_text("#prompt-bar")
    assert rest(live_server, "GET", f"/matches/{match_id}", token)["status"] == "aborted"
    # the admin console shows the reason too, and the replay tab says why it cannot replay
    admin = pages.new("/admin")
    admin.fill("#admin-token", live_server.admin_token)
    admin.click("#admin-login")
    admin.wait_for_selector("#filter-status")
    admin.select_option("#filter-status", "aborted")
    admin.wait_for_selector(f'#admin-matches tr[data-match="{match_id}"]')
    admin.click(f'#admin-matches tr[data-match="{match_id}"]')
    admin.wait_for_selector("#admin-board .unavailable")
    assert "provinces rules version 1" in admin.inner_text("#admin-board")
    admin.click("#tab-replay")
    admin.wait_for_selector("#admin-below .error")
    assert "played under provinces rules version 1" in admin.inner_text("#admin-below")
