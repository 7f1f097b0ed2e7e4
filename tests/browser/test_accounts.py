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
    """The player (by its token) plays one short rated Provinces match to the end against another
    account (rated matches are between accounts only)."""
    async with RestClient(url, token, timeout=15.0) as host, RestClient(url, timeout=15.0) as rival:
        await rival.register("Rival")
        await rival.claim("wrens-rival", "the rival's password")
        lobby = await host.create_lobby("provinces", 2, {"max_rounds": 2}, rated=True)
        await rival.join(lobby["id"])
        match_id = (await host.start(lobby["id"]))["match_id"]
        socks = [MatchSocket(url, match_id, c.token) for c in (host, rival)]
        for sock in socks:
            await sock.connect()
        ended = await asyncio.gather(*(play(sock, make_bot("provinces", "smart", i).decide, idle_timeout=120)
                                       for i, sock in enumerate(socks)))
        for sock in socks:
            await sock.close()
        assert [e["type"] for e in ended] == ["ended", "ended"]
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
        if "provisional" in first.inner_text("#my-rank"):
            break
        first.wait_for_timeout(200)
        first.reload()
    # one rated match: the rating is provisional, so it is not listed, and the page says so
    mine = first.inner_text("#my-rank")
    assert "provisional" in mine and "1 of 10" in mine, mine
    assert not first.query_selector(me_row)
    assert "1000" in first.inner_text("#rating-note")
    screenshot(first, "leaderboard.png")
    first.goto(live_server.url + f"/#/player/{guest['player']['id']}")
    first.wait_for_selector(f"#profile-matches tr[data-match='{match_id}']")
    assert first.inner_text("#profile-ratings tr[data-game='provinces'] td.wins") in ("0", "1")
    shown = first.inner_text("#profile-ratings tr[data-game='provinces'] td.rating")
    assert "provisional" in shown and int(shown.split()[0]) >= 0     # a display rating, never negative
    # the page says what the number is, beside it
    note = first.inner_text("#rating-note")
    assert "1000" in note and "uncertainty" in note and "never below 0" in note
    screenshot(first, "profile.png")


def test_lobby_seats_tell_an_account_holder_from_a_guest_of_the_same_name(pages, live_server):
    """A guest may choose any display name, an account holder's too: the lobby's seats (and the
    lobby list's host) show the account holder's @username and mark the guest as a guest."""
    from .conftest import rest

    holder = rest(live_server, "POST", "/players", json={"name": "Nova"})["token"]
    rest(live_server, "POST", "/accounts/claim", holder, json={"username": "nova_star", "password": "nova's secret"})
    lobby = rest(live_server, "POST", "/lobbies", holder, json={"game": "provinces", "seats": 2})
    assert lobby["seats"][0]["username"] == "nova_star"
    page = pages.new()
    sign_in(page, "Nova")  # the same display name, as a guest
    rest(live_server, "POST", f"/lobbies/{lobby['id']}/join", _me(page)["token"])
    seats = rest(live_server, "GET", f"/lobbies/{lobby['id']}", holder)["seats"]
    assert [(s["player"]["name"], s["username"]) for s in seats] == [("Nova", "nova_star"), ("Nova", None)]
    page.goto(f"{live_server.url}/#/lobby/{lobby['id']}")
    page.wait_for_selector("li[data-seat='0'] .seat-username:has-text('@nova_star')")
    page.wait_for_selector("li[data-seat='1'] .tag.guest")
    assert page.locator("li[data-seat='0'] .tag.guest").count() == 0
    page.goto(f"{live_server.url}/#/")
    page.wait_for_selector(f"tr[data-lobby='{lobby['id']}'] .seat-username:has-text('@nova_star')")
