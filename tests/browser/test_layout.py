"""Web details measured in the browser (issue 26 item 18): the players panel's badges are never cut,
no page is wider than a 390 px phone, a guest is warned before signing out and sees how to keep its
player, a first rating is explained, quick play names the game, the admin console shows a match's
options in words and says when the server has no admin token."""
from __future__ import annotations

import json

import pytest

from tests.conftest import ServerProcess

from .conftest import CHROMIUM, Pages, rest, sign_in

PHONE = {"width": 390, "height": 844}
LONG_NAME = "Bartholomew the Magnificent"   # 27 characters: longer than the panel has room for

#: "bot"/"you" badges of the players panel that are cut: clipped by an ancestor that hides overflow,
#: or shortened by an ellipsis of their own; each as the text of its row
CUT_BADGES = """() => [...document.querySelectorAll('.seat-list .tag')].filter((tag) => {
  const r = tag.getBoundingClientRect();
  for (let a = tag.parentElement; a && a.tagName !== 'UL'; a = a.parentElement) {
    const st = getComputedStyle(a);
    if (st.overflowX !== 'visible') {
      const box = a.getBoundingClientRect();
      if (r.right > box.right + 0.5 || r.left < box.left - 0.5) return true;
    }
  }
  return tag.scrollWidth > tag.clientWidth + 1 || r.width < 1;
}).map((tag) => tag.closest('li').innerText)"""

WIDTHS = "[document.documentElement.scrollWidth, document.querySelector('.topbar').scrollWidth]"


def _signed_in(page, server, player: dict, path: str) -> None:
    page.evaluate("p => localStorage.setItem('bannerfall.player', p)", json.dumps(player))
    page.goto(server.url + "/" + path)


def _bot_match(server, token: str, game: str, seats: int) -> str:
    lobby = rest(server, "POST", "/lobbies", token, json={"game": game, "seats": seats})
    rest(server, "POST", f"/lobbies/{lobby['id']}/bots", token, json={"kind": "smart"})
    return rest(server, "POST", f"/lobbies/{lobby['id']}/start", token)["match_id"]


@pytest.fixture(scope="module")
def long_named(live_server):
    """A guest with a long name, hosting a running match of each game against bots."""
    player = rest(live_server, "POST", "/players", json={"name": LONG_NAME})
    matches = {game: _bot_match(live_server, player["token"], game, seats)
               for game, seats in (("provinces", 4), ("conquest", 4), ("warrior", 4))}
    return player, matches


@pytest.mark.parametrize("width", [1280, 1024, 1400])
def test_the_players_panel_never_cuts_a_badge(pages, live_server, long_named, width):
    player, matches = long_named
    page = pages.new(viewport={"width": width, "height": 900})
    for game, match_id in matches.items():
        _signed_in(page, live_server, player, f"#/match/{match_id}")
        page.wait_for_selector(".seat-list .tag.you")
        assert page.locator(".seat-list .tag").count() == 4, game   # "you" and three "bot"
        assert page.evaluate(CUT_BADGES) == [], (game, width)
        assert page.evaluate(WIDTHS)[0] <= width, (game, width)


def test_no_page_is_wider_than_a_390_px_phone(pages, live_server, long_named):
    player, matches = long_named
    page = pages.new(viewport=PHONE)
    page.wait_for_selector("#guest-name")                     # the welcome page, before signing in
    assert page.evaluate(WIDTHS) == [390, 390]
    lobby = rest(live_server, "POST", "/lobbies", player["token"], json={"game": "provinces", "seats": 3})
    paths = ["#/", "#/inventory", "#/leaderboard", "#/account", f"#/player/{player['player']['id']}",
             f"#/lobby/{lobby['id']}", *(f"#/match/{m}" for m in matches.values())]
    for path in paths:
        _signed_in(page, live_server, player, path)
        page.wait_for_selector("#me-name")
        page.wait_for_load_state("networkidle")
        widths = page.evaluate(WIDTHS)
        assert widths[0] <= 390 and widths[1] <= 390, (path, widths)
        assert page.locator("#nav-keep").is_visible(), path   # a guest: "Keep this player" in sight
    admin = pages.new("/admin/", viewport=PHONE)
    admin.fill("#admin-token", live_server.admin_token)
    admin.click("#admin-login")
    admin.click(f'#admin-matches tr[data-match="{matches["conquest"]}"]')
    admin.wait_for_selector("#detail-options")
    assert admin.evaluate(WIDTHS)[0] <= 390


def test_a_guest_is_warned_before_signing_out_and_can_keep_its_player(pages, live_server):
    page = pages.new()
    sign_in(page, "Dora")
    me = page.evaluate("JSON.parse(localStorage.getItem('bannerfall.player'))")
    rest(live_server, "POST", f"/admin/players/{me['player']['id']}/crystals", live_server.admin_token,
         json={"amount": 45, "reason": "layout test"})
    page.wait_for_selector("#nav-keep")
    # sign out: a warning naming what would be lost; cancel keeps everything
    page.click("#sign-out")
    page.wait_for_selector("#sign-out-dialog[open]")
    warning = page.inner_text("#sign-out-warning")
    assert "guest" in warning and "45 crystals" in warning and "Dora" in warning and "for good" in warning
    page.click("#sign-out-cancel")
    page.wait_for_selector("#sign-out-dialog", state="detached")
    assert page.inner_text("#me-name") == "Dora"
    # "Keep this player" from the warning: the claim form; once claimed, the button goes and sign-out is quiet
    page.click("#sign-out")
    page.click("#sign-out-keep")
    page.wait_for_selector("#claim-form")
    page.fill("#claim-username", "dora_keeps")
    page.fill("#claim-password", "dora's long password")
    page.click("#claim-go")
    page.wait_for_selector("#account-username:text('dora_keeps')")
    page.wait_for_selector("#nav-keep", state="detached")
    page.click("#sign-out")
    page.wait_for_selector("#guest-name")
    assert page.locator("#sign-out-dialog").count() == 0
    # another guest takes the loss knowingly
    other = pages.new()
    sign_in(other, "Eli")
    other.click("#sign-out")
    other.click("#sign-out-anyway")
    other.wait_for_selector("#guest-name")
    assert other.evaluate("localStorage.getItem('bannerfall.player')") is None


def test_keep_this_player_is_found_in_the_top_bar(pages):
    page = pages.new()
    sign_in(page, "Finn")
    page.click("#nav-keep")
    page.wait_for_selector("#claim-form")


def test_the_leaderboard_explains_what_a_rating_is(pages):
    page = pages.new()
    sign_in(page, "Gus")
    page.click("#nav-leaderboard")
    page.wait_for_selector("#rating-note:has-text('1000')")
    note = page.inner_text("#rating-note")
    assert "starts at 1000" in note and "never below 0" in note and "10 rated matches" in note


def test_quick_play_names_the_game_by_its_title(pages):
    page = pages.new()
    sign_in(page, "Hal")
    page.wait_for_selector("#quick-play")
    page.select_option("#qp-game", "conquest")
    page.fill("#qp-seats", "3")
    page.select_option("#qp-bots", "")
    page.click("#quick-play")
    page.wait_for_selector("#queue-view h2:has-text('Hold')")
    assert page.inner_text("#queue-view h2") == "Quick play: Hold'em Conquest, 3 seats"
    page.click("#qp-cancel")
    page.wait_for_selector("#quick-play")


def test_the_admin_console_shows_options_and_loadouts_in_words(pages, live_server, long_named):
    player, matches = long_named
    admin = pages.new("/admin/")
    admin.fill("#admin-token", live_server.admin_token)
    admin.click("#admin-login")
    admin.click(f'#admin-matches tr[data-match="{matches["conquest"]}"]')
    admin.wait_for_selector("#detail-loadouts li")
    options = admin.inner_text("#detail-options")
    assert "[object Object]" not in options and "object" not in options
    assert "special costs" in options and "big brother 8" in options
    match = rest(live_server, "GET", f"/matches/{matches['conquest']}", player["token"])
    rows = admin.locator("#detail-loadouts li")
    assert rows.count() == len(match["seats"])
    for seat in match["seats"]:
        text = rows.nth(seat["seat"]).inner_text()
        brought = match["options"]["loadouts"][seat["seat"]]
        assert text.startswith(f"{seat['name']}: ")
        assert text.endswith(", ".join(s.replace("_", " ") for s in brought) if brought else "no specials")


def test_an_admin_console_without_an_admin_token_says_how_to_set_one(browser, tmp_path):
    if not CHROMIUM:
        pytest.skip("no Chromium")
    server = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'no-admin.db'}", env={"BANNERFALL_ADMIN_TOKEN": ""})
    server.start()
    pages = Pages(browser, server)
    try:
        page = pages.new("/admin/")
        page.wait_for_selector("#admin-no-token")   # said before any token is typed
        assert "no admin token" in page.inner_text("#admin-no-token")
        page.fill("#admin-token", "some-token-that-cannot-work")
        page.click("#admin-login")
        page.wait_for_selector(".login .error:has-text('BANNERFALL_ADMIN_TOKEN')")
        text = page.inner_text(".login .error")
        assert "no admin token" in text and "secrets.token_urlsafe" in text and "unknown token" not in text
        assert not pages.errors, pages.errors
    finally:
        pages.close()
        server.stop()
