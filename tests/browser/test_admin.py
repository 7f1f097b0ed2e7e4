"""The admin console: sign in with the admin token, filter matches, open a finished match and step
its replay, read its action log, abort a running match."""
from __future__ import annotations

import time

from .conftest import rest, screenshot


def _bot_match(server, token: str, options: dict) -> str:
    lobby = rest(server, "POST", "/lobbies", token, json={"game": "provinces", "seats": 2, "options": options})
    rest(server, "POST", f"/lobbies/{lobby['id']}/bots", token, json={"kind": "smart"})
    started = rest(server, "POST", f"/lobbies/{lobby['id']}/start", token)
    return started["match_id"]


def test_admin_opens_a_match_steps_its_replay_and_aborts_another(pages, live_server):
    guest = rest(live_server, "POST", "/players", json={"name": "cara"})["token"]
    # a finished match: cara's seat times out every turn (5 s), so keep it to one round
    finished = _bot_match(live_server, guest, {"turn_seconds": 5, "max_rounds": 1})
    running = _bot_match(live_server, guest, {"turn_seconds": 3600, "max_rounds": 5})

    admin = pages.new("/admin")
    admin.fill("#admin-token", "not-the-token")
    admin.click("#admin-login")
    admin.wait_for_selector(".login .error:has-text('knows no such token')")
    admin.fill("#admin-token", live_server.admin_token)
    admin.click("#admin-login")
    admin.wait_for_selector("#filter-status")

    # the running match is listed under "running"; the other shows up under "finished" once over
    admin.wait_for_selector(f'#admin-matches tr[data-match="{running}"]')
    deadline = time.time() + 30
    while rest(live_server, "GET", f"/matches/{finished}", guest)["status"] != "finished":
        assert time.time() < deadline, "the short match did not finish"
        time.sleep(0.3)
    admin.select_option("#filter-status", "finished")
    # the filtered list replaces the old one asynchronously: wait for the running match to leave it
    # (the finished one may already be listed before the filter applies)
    admin.wait_for_selector(f'#admin-matches tr[data-match="{running}"]', state="detached")
    admin.wait_for_selector(f'#admin-matches tr[data-match="{finished}"]')
    assert admin.locator(f'#admin-matches tr[data-match="{running}"]').count() == 0
    admin.select_option("#filter-game", "provinces")
    admin.click(f'#admin-matches tr[data-match="{finished}"]')
    admin.wait_for_selector("#admin-board svg.hexmap .province")
    assert admin.inner_text("#detail-status") == "finished"
    assert "max rounds" in admin.inner_text("#detail-outcome")

    # the replay: the deal, then step by step, then the end
    admin.click("#tab-replay")
    admin.wait_for_selector("#replay-version")
    last = int(admin.inner_text("#replay-version").split()[-1])
    assert last >= 2
    admin.click("#replay-first")
    admin.wait_for_selector("#replay-version:text-matches('version 0 of', 'i')")
    assert "deal" in admin.inner_text("#admin-below")
    admin.click("#replay-next")
    admin.wait_for_selector("#replay-version:text-matches('version 1 of', 'i')")
    assert admin.locator("#replay-action").count() == 1
    admin.click("#replay-next")
    admin.wait_for_selector("#replay-version:text-matches('version 2 of', 'i')")
    admin.locator("#admin-board .province").first.click()
    admin.wait_for_selector("#admin-panel .province-head")
    admin.click("#replay-last")
    admin.wait_for_selector(f"#replay-version:text-matches('version {last} of', 'i')")
    screenshot(admin, "admin.png")

    # the action log lists every action; a row opens that step in the replay
    admin.click("#tab-log")
    admin.wait_for_selector("#action-log tbody tr")
    assert admin.locator("#action-log tbody tr").count() == last
    admin.locator("#action-log tbody tr").nth(0).click()
    admin.wait_for_selector("#replay-version:text-matches('version 1 of', 'i')")

    # abort the running match
    admin.select_option("#filter-status", "running")
    admin.click(f'#admin-matches tr[data-match="{running}"]')
    admin.wait_for_selector("#detail-status:text('running')")
    admin.wait_for_selector("#admin-prompts:text-matches('waiting for: cara')")
    admin.click("#abort-match")
    admin.fill("#abort-reason", "test abort")
    admin.click("#abort-confirm")
    admin.wait_for_selector("#detail-status:text('aborted')")
    match = rest(live_server, "GET", f"/matches/{running}", guest)
    assert match["status"] == "aborted"
    assert "test abort" in match["outcome"]["reason"]
