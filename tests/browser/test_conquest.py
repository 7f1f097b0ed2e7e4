"""One person plays Hold'em Conquest against two bots through the page, phase by phase, to the end."""
from __future__ import annotations

import time

from .conftest import screenshot, sign_in


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
