"""The meta-game in the page (conquest.md 5): watching a slot machine spin stop on the server's
reels and checking its proof, and picking a loadout in a Conquest lobby that reaches the match."""
from __future__ import annotations

from .conftest import rest, screenshot, sign_in


def _me(page) -> dict:
    return page.evaluate("JSON.parse(localStorage.getItem('bannerfall.player'))")


def test_watch_a_spin_and_verify_it(pages, live_server):
    ann = pages.new()
    sign_in(ann, "ann")
    me = _me(ann)
    rest(live_server, "POST", f"/admin/players/{me['player']['id']}/crystals", live_server.admin_token,
         json={"amount": 50, "reason": "browser test"})
    ann.click("#nav-inventory")
    ann.wait_for_selector("#crystals:text('50')")
    committed = ann.inner_text("#next-seed-hash")
    assert len(committed) == 64
    ann.fill("#client-seed", "watching")
    ann.click("#spin")
    # the reels run while the answer is awaited and stop one by one, left to right
    ann.wait_for_selector("#slot-machine[data-state='spinning']")
    ann.wait_for_selector("#slot-machine[data-state='done']", timeout=20_000)
    [spin] = rest(live_server, "GET", "/players/me/spins", me["token"])
    shown = [ann.get_attribute(f"#reel-{i}", "data-symbol") for i in range(3)]
    assert shown == spin["reels"]
    assert spin["seed_hash"] == committed and spin["client_seed"] == "watching"
    assert ann.inner_text("#crystals") == "30"
    assert ann.inner_text("#spin-seed") == spin["seed"]
    assert ann.inner_text("#next-seed-hash") != committed
    if spin["prize"]:
        assert "You won" in ann.inner_text("#spin-result")
        ann.wait_for_selector(f"#owned-specials tr[data-special='{spin['prize']['special']}']")
    else:
        assert "No special" in ann.inner_text("#spin-result")
    ann.click("#verify-spin")
    ann.wait_for_selector("#verify-result")
    assert "✓" in ann.inner_text("#verify-result")
    assert ann.locator("#ledger tr[data-kind='spin']").count() == 1
    screenshot(ann, "slot-machine.png", full_page=True)
    # one more spin leaves 10 crystals: the button is then disabled
    ann.click("#spin")
    ann.wait_for_selector("#slot-machine[data-state='spinning']")
    ann.wait_for_selector("#slot-machine[data-state='done']", timeout=20_000)
    assert ann.inner_text("#crystals") == "10"
    assert ann.is_disabled("#spin")


def test_pick_a_loadout_that_reaches_the_match(pages, live_server):
    bob = pages.new()
    sign_in(bob, "bob")
    me = _me(bob)
    for special, matches in (("scout", 3), ("joker", 1)):
        rest(live_server, "POST", f"/admin/players/{me['player']['id']}/specials", live_server.admin_token,
             json={"special": special, "matches": matches, "reason": "browser test"})
    bob.select_option("#new-game", "conquest")
    bob.fill("#new-seats", "2")
    bob.click("#create-lobby")
    bob.wait_for_selector("#loadout-picker input[data-special='scout']")
    assert bob.locator("#loadout-picker input[type=checkbox]").count() == 2
    bob.check("#loadout-picker input[data-special='joker']")
    bob.wait_for_selector(".seats li[data-seat='0'] .tag.special[data-special='joker']")
    lobby_id = bob.evaluate("location.hash.split('/')[2]")
    assert rest(live_server, "GET", f"/lobbies/{lobby_id}", me["token"])["seats"][0]["loadout"] == ["joker"]
    bob.check("#loadout-picker input[data-special='scout']")
    bob.wait_for_selector(".seats li[data-seat='0'] .tag.special[data-special='scout']")
    screenshot(bob, "loadout.png")
    bob.click("#add-bots")
    bob.click("#start-match:not([disabled])")
    bob.wait_for_selector("#board")
    match_id = bob.evaluate("location.hash.split('/')[2]")
    match = rest(live_server, "GET", f"/matches/{match_id}", me["token"])
    assert match["options"]["loadouts"][0] == ["scout", "joker"]  # table order
    assert match["options"]["loadouts"][1]  # the bot brought some


def test_admin_grants_crystals_from_the_console(pages, live_server):
    """The player's inventory shows their id; an admin grants crystals and a special from the
    console with a reason, sees the player's inventory and ledger; the player's page shows them."""
    cid = pages.new()
    sign_in(cid, "cid")
    cid.click("#nav-inventory")
    player_id = cid.inner_text("#my-player-id")
    assert player_id == _me(cid)["player"]["id"]
    admin = pages.new("/admin")
    admin.fill("#admin-token", live_server.admin_token)
    admin.click("#admin-login")
    admin.fill("#grant-player", player_id)
    admin.fill("#grant-amount", "70")
    admin.fill("#grant-reason", "paid order 42")
    admin.click("#grant-go")
    admin.wait_for_selector("#grant-balance:text('70')")
    admin.select_option("#grant-special", "hound")
    admin.fill("#grant-amount", "2")
    admin.click("#grant-go")
    admin.wait_for_selector("#grant-result tr[data-kind='grant'] >> text=hound")
    admin.fill("#grant-player", "nobody")
    admin.click("#grant-go")
    admin.wait_for_selector("#grant-result .error")
    ledger = rest(live_server, "GET", "/players/me/ledger", _me(cid)["token"])["items"]
    assert [(r["asset"], r["delta"], r["reason"]) for r in ledger] == [("hound", 2, "paid order 42"),
                                                                       ("crystals", 70, "paid order 42")]
    cid.reload()
    cid.wait_for_selector("#crystals:text('70')")
    cid.wait_for_selector("#owned-specials tr[data-special='hound']")
