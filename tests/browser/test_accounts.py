"""Issue 14 items 1 and 4 in the page: sign-up (claiming a guest), sign-in in a second browser
context, signing that device out from the first, and the leaderboard and profile after a match."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from app.client import MatchSocket, RestClient
from app.client.socket import play
from app.runtime.bots import make_bot

from .conftest import screenshot, sign_in


def _me(page) -> dict:
    return page.evaluate("JSON.parse(localStorage.getItem('bannerfall.player'))")


async def _play_a_match(url: str, token: str) -> str:
    """The player (by its token) plays one short Provinces match against a server bot to the end."""
    async with RestClient(url, token, timeout=15.0) as host:
        lobby = await host.create_lobby("provinces", 2, {"max_rounds": 2})
        await host.fill_bots(lobby["id"], "smart")
        match_id = (await host.start(lobby["id"]))["match_id"]
        sock = MatchSocket(url, match_id, token)
        await sock.connect()
        ended = await play(sock, make_bot("provinces", "smart", 0).decide, idle_timeout=120)
        await sock.close()
        assert ended["type"] == "ended"
        return match_id


def test_sign_up_sign_in_elsewhere_then_the_leaderboard_after_a_match(pages, live_server):
    first = pages.new()
    sign_in(first, "Wren")
    guest = _me(first)
    # sign-up: claim the guest
    first.click("#me-name")
    first.wait_for_selector("#claim-form")
    first.fill("#claim-username", "admin")  # a reserved name is refused with its code
    first.fill("#claim-password", "wren's password")
    first.click("#claim-go")
    first.wait_for_selector("#claim-error:has-text('reserved_name')")
    first.fill("#claim-username", "wren")
    first.click("#claim-go")
    first.wait_for_selector("#account-username:text('wren')")

    # a second browser (its own storage): sign in with the username, the same player
    second = pages.new()
    second.wait_for_selector("#signin-form")
    second.fill("#signin-username", "Wren")
    second.fill("#signin-password", "wrong password")
    second.click("#signin-go")
    second.wait_for_selector("#signin-error:has-text('bad_credentials')")
    second.fill("#signin-password", "wren's password")
    second.click("#signin-go")
    second.wait_for_selector("#me-name")
    assert second.inner_text("#me-name") == "Wren"
    other = _me(second)
    assert other["player"]["id"] == guest["player"]["id"] and other["token"] != guest["token"]

    # both devices are listed on the first; the first signs the second out
    first.reload()
    first.wait_for_selector("#token-list tr[data-token] >> nth=1")
    first.click("#token-list button.revoke")
    first.wait_for_function("document.querySelectorAll('#token-list tr[data-token]').length === 1")

    # a match, then the leaderboard and the profile show it
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        match_id = pool.submit(asyncio.run, _play_a_match(live_server.url, guest["token"])).result(timeout=180)
    first.goto(live_server.url + "/#/leaderboard/provinces")
    me_row = f"#leaderboard tr[data-player='{guest['player']['id']}']"
    for _ in range(100):  # rated in the background once the match ends: reload until it shows
        first.wait_for_selector("#my-rank")
        if first.query_selector(me_row):
            break
        first.wait_for_timeout(200)
        first.reload()
    first.wait_for_selector(me_row)
    assert "Your rank: 1" in first.inner_text("#my-rank")
    screenshot(first, "leaderboard.png")
    first.click(f"{me_row} a")
    first.wait_for_selector(f"#profile-matches tr[data-match='{match_id}']")
    assert first.inner_text("#profile-ratings tr[data-game='provinces'] td.wins") in ("0", "1")
    screenshot(first, "profile.png")
