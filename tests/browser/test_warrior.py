"""One person plays a whole Warrior match (three rounds) against two bots through the page,
answering every decision the server asks of them."""
from __future__ import annotations

import time

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .conftest import screenshot, sign_in


def test_play_warrior_against_bots(pages):
    ann = pages.new()
    sign_in(ann, "ann")
    ann.select_option("#new-game", "warrior")
    ann.fill("#new-seats", "3")
    ann.click("#create-lobby")
    ann.click("#add-bots")
    ann.click("#start-match:not([disabled])")
    ann.wait_for_selector("#board .mats .mat")

    seen: dict[str, int] = {}
    errors: list[str] = []
    shot = False
    deadline = time.time() + 120
    while ann.locator("#standings").count() == 0:
        assert time.time() < deadline, f"the match did not end in time (decisions: {seen}, errors: {errors})"
        decision = None
        if ann.locator("#prompt-bar.mine").count():
            decision = ann.evaluate("window.__bannerfall.state.view.decision")
        if not decision or decision.get("submission"):
            time.sleep(0.1)
            continue
        kind = decision["kind"]
        seen[kind] = seen.get(kind, 0) + 1
        version = ann.evaluate("window.__bannerfall.state.version")
        if kind == "keep":
            # pick cards until the page enables the button (a click made while the page is busy
            # with another answer, or just before a re-render, may not count: look, then click again)
            for _ in range(100):
                if ann.locator("#hand").count() == 0:
                    break  # the phase ended meanwhile (its deadline)
                try:
                    submit = ann.locator("#submit-keep:not([disabled])")
                    if submit.count():
                        submit.click(timeout=2000)
                        break
                    if ann.locator("#hand button.wcard.chosen").count() < decision["keep"]:
                        ann.locator("#hand button.wcard:not(.chosen)").first.click(timeout=2000)
                except PlaywrightTimeout:
                    pass
                time.sleep(0.1)
        elif kind == "place_wizards":
            ann.click("#submit-wizards")
        elif kind == "siege":
            ann.click("#submit-siege")  # hold the engines
        elif kind == "target":
            if decision["force_size"]:
                for card in ann.locator("#force button.wcard").all()[: decision["force_size"]]:
                    card.click()
            ann.locator("#controls .target-btn.attack:not([disabled])").first.click()
        elif kind == "lose":
            for card in ann.locator("#lose button.wcard").all()[: decision["count"]]:
                card.click()
            ann.click("#submit-lose:not([disabled])")
        elif kind == "continue":
            if not shot and ann.locator(".attack-box .die").count():
                screenshot(ann, "warrior.png", full_page=True)
                shot = True
            ann.click("#go-on" if seen[kind] % 2 else "#stop-attack")
        elif kind == "reattack":
            ann.click("#end-attack")
        else:
            raise AssertionError(f"unknown decision {kind}")
        # the server answers with a new state, or (when a deadline closed the phase meanwhile) an error
        ann.wait_for_function(
            f"window.__bannerfall.state.version > {version} || !document.querySelector('#error-bar').hidden")
        if ann.locator("#error-bar:not([hidden])").count():
            errors.append(f"{kind}: {ann.inner_text('#error-bar')}")
            ann.evaluate("document.querySelector('#error-bar').hidden = true")

    assert seen.get("keep", 0) >= 3, seen  # three rounds
    assert len(errors) <= 2, errors  # only a phase that closed under our feet may refuse an answer
    assert ann.locator("#standings tbody tr").count() == 3
    if not shot:
        screenshot(ann, "warrior.png", full_page=True)
