"""One person plays Hold'em Conquest against two bots through the page, phase by phase, to the end."""
from __future__ import annotations

import time

from .conftest import rest, screenshot, sign_in


def _phase(page) -> str:
    return page.evaluate("window.__bannerfall.state.view.phase")


def test_play_conquest_against_bots(pages):
    ann = pages.new()
    sign_in(ann, "ann")
    ann.select_option("#new-game", "conquest")
    ann.fill("#new-seats", "3")
    ann.fill("#opt-max_rounds", "2")
    ann.fill("#opt-phase_seconds", "30")
    ann.fill("#opt-decision_seconds", "30")
    ann.click("#create-lobby")
    ann.select_option("#bot-kind", "smart")
    ann.click("#add-bots")
    ann.click("#start-match:not([disabled])")
    ann.wait_for_selector("#board svg.conquest-map .land")

    seen = set()
    shot = False
    deadline = time.time() + 90
    while ann.locator("#standings").count() == 0:
        assert time.time() < deadline, f"the match did not end in time (phases seen: {seen})"
        if ann.locator("#prompt-bar.mine").count() == 0:
            time.sleep(0.1)
            continue
        phase = _phase(ann)
        version = ann.evaluate("window.__bannerfall.state.version")
        seen.add(phase)
        if phase == "orders":
            first = ann.locator("#controls .target-btn.attack").first
            if first.count():
                first.click()  # attack one land
                ann.wait_for_selector("#controls .target-btn.attack.on")
            ann.click("#submit-orders")
        elif phase == "defence":
            ann.locator("#controls .target-btn.move").first.click()
            ann.click("#submit-defence")
        elif phase == "assign":
            for card in ann.locator("#pool button.pcard").all():
                card.click()
            ann.click("#submit-assign:not([disabled])")
        elif phase in ("turn", "river"):
            # others' hands stay face down until a showdown: the page has nothing else to show
            for row in ann.locator(".battle-card:not(.done) table.hands tr:not(.me)").all():
                assert row.locator(".pcard:not(.back)").count() == 0
            if not shot:
                screenshot(ann, "conquest.png", full_page=True)
                shot = True
            ann.click("#submit-decide")
        ann.wait_for_function(f"window.__bannerfall.state.version > {version}")

    assert "orders" in seen
    assert ann.locator("#standings tbody tr").count() == 3
    if not shot:  # no battle was fought: still keep a picture of the board
        screenshot(ann, "conquest.png", full_page=True)


def _token(page) -> str:
    return page.evaluate("JSON.parse(localStorage.getItem('bannerfall.player')).token")


def _view(page) -> dict:
    return page.evaluate("window.__bannerfall.state.view")


def test_conquest_specials_change_what_one_player_sees(pages, live_server):
    """ann brings spy and scout (section 5): after activating them her board shows the neutral flops
    and bob's table's flop, marked as seen through a special; bob's board shows none of it.

    The specials reach ann the meta-game's way: an admin grants them (audited) and she brings them
    with the ``loadout`` of the lobby she creates (lobby options refuse ``loadouts``)."""
    ann = pages.new()
    sign_in(ann, "ann")
    bob = pages.new()
    sign_in(bob, "bob")
    ann_id = ann.evaluate("JSON.parse(localStorage.getItem('bannerfall.player')).player.id")
    for special in ("spy", "scout", "hound"):
        rest(live_server, "POST", f"/admin/players/{ann_id}/specials", live_server.admin_token,
             json={"special": special, "matches": 2, "reason": "browser test"})
    options = {"phase_seconds": 120, "decision_seconds": 60, "max_rounds": 3}
    lobby = rest(live_server, "POST", "/lobbies", _token(ann), json={
        "game": "conquest", "seats": 2, "options": options, "loadout": ["spy", "scout", "hound"]})
    rest(live_server, "POST", f"/lobbies/{lobby['id']}/join", _token(bob))
    started = rest(live_server, "POST", f"/lobbies/{lobby['id']}/start", _token(ann))
    for page in (ann, bob):
        page.goto(f"{live_server.url}/#/match/{started['match_id']}")
        page.wait_for_selector("#board svg.conquest-map .land")
        page.wait_for_selector("#prompt-bar.mine")  # both are prompted for orders

    assert bob.locator("#specials").count() == 0  # bob brought nothing
    assert ann.locator("#board .mini-card.seen").count() == 0
    spy = ann.locator("#special-spy")
    assert "3 mana" in spy.inner_text()
    spy.click()
    neutral = [land["id"] for land in _view(ann)["lands"] if land["owner"] is None]
    ann.wait_for_selector(f"#board .land[data-land='{neutral[0]}'] rect.mini-card.seen")
    assert ann.locator("#board .mini-card.seen[data-seen='spy']").count() == 3 * len(neutral)
    assert ann.locator("#special-spy").inner_text().endswith("active")

    # scout bob's table: select it on the map, then the scout button names it and its price
    bob_land = next(land["id"] for land in _view(ann)["lands"] if land["owner"] == 1)
    ann.click(f"#board .land[data-land='{bob_land}']")
    scout = ann.locator("#special-scout")
    assert scout.inner_text() == f"Scout L{bob_land} (1 mana)"
    scout.click()
    ann.wait_for_selector(f"#board .land[data-land='{bob_land}'] rect.mini-card.seen[data-seen='scout']")
    assert ann.locator(f"#board .land[data-land='{bob_land}'] rect.mini-card.seen").count() == 3
    assert _view(ann)["you"]["mana"] == 10 - 3 - 1
    screenshot(ann, "conquest-specials.png", full_page=True)

    # bob: the activations are public, what they show is not
    bob.wait_for_selector(".specials-public .tag:has-text('spy')")
    assert bob.locator("#board .mini-card.seen").count() == 0
    assert bob.locator("#board rect.mini-card.open").count() == 0
    assert all("card" not in c for land in _view(bob)["lands"] for c in land["flop"])
