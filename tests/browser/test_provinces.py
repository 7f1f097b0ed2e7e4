"""Two people in two browsers play a whole Provinces match against each other and two bots;
a dropped socket and a lost network in the middle of a turn resume by themselves."""
from __future__ import annotations

import re
import time

from .conftest import rest, screenshot, sign_in


def _state(page) -> dict:
    return page.evaluate("window.__bannerfall && window.__bannerfall.state")


def _my_turn(page) -> bool:
    return page.locator("#prompt-bar.mine").count() > 0


def _best_province(state: dict) -> tuple[int, int] | None:
    """(province, enemy neighbour) for an attack from my biggest frontline garrison."""
    view = state["view"]
    me = state["seat"]
    best = None
    for p in view["provinces"]:
        if p["owner"] != me or not p["garrison"] or p["attacked"] or p["received"]:
            continue
        enemies = [a for a in p["adjacent"] if view["provinces"][a]["owner"] != me]
        if enemies and (best is None or len(p["garrison"]) > best[2]):
            best = (p["id"], enemies[0], len(p["garrison"]))
    return best[:2] if best else None


def _play_turn(page, *, show_illegal: bool, shot: str | None = None) -> None:
    """One turn through the UI: select a province, an illegal attack with no cards (the server
    explains), a real attack with every card, then end the turn."""
    text = page.inner_text("#prompt-bar")
    assert re.search(r"Your move: turn — \d+ s left", text), text
    state = _state(page)
    choice = _best_province(state)
    if choice is not None:
        src, dst = choice
        page.click(f'#board .province[data-province="{src}"]')
        page.wait_for_selector(f".province-head:has-text('P{src}')")
        if shot:
            screenshot(page, shot)
        if show_illegal:
            page.click(".choose-row button:has-text('none')")
            page.click(f'button[data-attack="{dst}"]')
            page.wait_for_selector("#error-bar:not([hidden])")
            assert "at least one card" in page.inner_text("#error-bar")
            page.click(".choose-row button:has-text('all')")
        version = _state(page)["version"]
        page.click(f'button[data-attack="{dst}"]')
        page.wait_for_function(f"window.__bannerfall.state.version > {version}")
        page.wait_for_selector("#event-log li[data-type=battle]")
    if _my_turn(page):  # a conquest that eliminated the last rival ends the match at once
        page.click("#end-turn")
        page.wait_for_function("!document.querySelector('#prompt-bar.mine')")


def test_two_people_and_two_bots_play_provinces_to_the_end(pages, live_server):
    t0 = time.time()
    ann = pages.new()
    sign_in(ann, "ann")
    bob = pages.new()
    sign_in(bob, "bob")

    # ann makes a 4-seat lobby with short turns and 2 rounds
    ann.select_option("#new-game", "provinces")
    ann.fill("#new-seats", "4")
    ann.fill("#opt-turn_seconds", "30")
    ann.fill("#opt-max_rounds", "2")
    ann.click("#create-lobby")
    ann.wait_for_selector("#add-bots")
    lobby_id = ann.url.rsplit("/", 1)[1]

    # bob sees it in the open lobbies and joins
    bob.wait_for_selector(f'#lobby-list tr[data-lobby="{lobby_id}"] button.join', timeout=10_000)
    bob.click(f'#lobby-list tr[data-lobby="{lobby_id}"] button.join')
    bob.wait_for_selector("text=Waiting for the host to start")
    ann.wait_for_selector("ol.seats li:has-text('bob')")

    ann.select_option("#bot-kind", "smart")
    ann.click("#add-bots")
    ann.wait_for_selector("#start-match:not([disabled])")
    ann.click("#start-match")
    for page in (ann, bob):
        page.wait_for_selector("#board svg.hexmap .province")
        page.wait_for_selector("#conn-status.conn-connected")

    # everyone sees whom the match waits for, with a live countdown
    names = {"ann", "bob", "smart-bot-2", "smart-bot-3"}
    seen_waiting = False
    turns = {"ann": 0, "bob": 0}
    deadline = time.time() + 120
    while time.time() < deadline:
        if ann.locator("#standings").count() and bob.locator("#standings").count():
            break
        acted = False
        for who, page in (("ann", ann), ("bob", bob)):
            if _my_turn(page) and page.locator("#standings").count() == 0:
                other = bob if page is ann else ann
                waiting = other.inner_text("#prompt-bar")
                if re.search(rf"waiting for: {who} \(turn, \d+ s\)", waiting):
                    seen_waiting = True
                _play_turn(page, show_illegal=turns[who] == 0,
                           shot="provinces.png" if who == "ann" and turns[who] == 1 else None)
                turns[who] += 1
                acted = True
        if not acted:
            time.sleep(0.1)
    else:
        raise AssertionError("the match did not end in time")

    assert turns["ann"] >= 1 and turns["bob"] >= 1, turns
    assert seen_waiting
    for page in (ann, bob):
        rows = page.locator("#standings tbody tr")
        assert rows.count() == 4
        standings = " ".join(page.locator("#standings tbody td:nth-child(2)").all_inner_texts())
        assert all(n in standings for n in names), standings
        assert "(you)" in standings
        assert "over" in page.inner_text("#prompt-bar")
        # the page never shows a joker it was not sent: every joker drawn is in its own garrisons
        me = _state(page)["seat"]
        for owner in page.locator("#board .province:has(.chip-joker)").evaluate_all(
                "els => els.map(e => Number(e.dataset.owner))"):
            assert owner == me
    match = rest(live_server, "GET", f"/matches/{_state(ann)['match_id']}", _token(ann))
    assert match["status"] == "finished"
    assert time.time() - t0 < 150


def _token(page) -> str:
    return page.evaluate("JSON.parse(localStorage.getItem('bannerfall.player')).token")


def test_reconnect_in_the_middle_of_a_turn(pages, live_server):
    ann = pages.new()
    sign_in(ann, "ann")
    ann.select_option("#new-game", "provinces")  # the form lists the installed games by id
    ann.fill("#new-seats", "2")
    ann.fill("#opt-turn_seconds", "120")
    ann.click("#create-lobby")
    ann.click("#add-bots")
    ann.click("#start-match:not([disabled])")
    ann.wait_for_selector("#prompt-bar.mine", timeout=20_000)
    ann.wait_for_selector("#conn-status.conn-connected")
    version = _state(ann)["version"]

    # 1. the socket drops (closed under the page): it reconnects, resumes at the same version,
    #    and the turn can go on
    ann.evaluate("window.__bannerfall.conn.drop()")
    ann.wait_for_function("window.__bannerfall.conn.reconnects >= 1")
    ann.wait_for_selector("#conn-status.conn-connected")
    assert _state(ann)["version"] == version
    assert _my_turn(ann)
    ann.select_option("#dealing-mode", "most_unevenly")
    ann.wait_for_function(f"window.__bannerfall.state.version > {version}")
    version = _state(ann)["version"]
    assert _state(ann)["view"]["dealing_mode"] == "most_unevenly"

    # 2. the network goes away mid-turn: the page says so; an action clicked meanwhile is sent
    #    when the network is back, and the match moves on
    ann.context.set_offline(True)
    ann.wait_for_selector("#conn-status.conn-offline")
    ann.click("#end-turn")
    time.sleep(0.5)
    assert _state(ann)["version"] == version
    ann.context.set_offline(False)
    ann.wait_for_selector("#conn-status.conn-connected")
    ann.wait_for_function(f"window.__bannerfall.state.version > {version}")
    assert ann.evaluate("window.__bannerfall.conn.reconnects") >= 2
    # it is ann's turn again after the bot's: the turn ended once, and no event is shown twice
    ann.wait_for_selector("#prompt-bar.mine")
    keys = ann.locator("#event-log li[data-type]").evaluate_all(
        "els => els.map(e => e.dataset.v + ':' + e.dataset.type + ':' + e.textContent)")
    assert len(keys) == len(set(keys)), keys
    ended = ann.locator("#event-log li[data-type=turn_ended]").all_inner_texts()
    assert sum("ann ended the turn" in t for t in ended) == 1


def test_sort_and_move_through_the_page(pages):
    ann = pages.new()
    sign_in(ann, "ann")
    ann.select_option("#new-game", "provinces")  # the form lists the installed games by id
    ann.fill("#new-seats", "2")
    ann.fill("#opt-turn_seconds", "120")
    ann.click("#create-lobby")
    ann.click("#add-bots")
    ann.click("#start-match:not([disabled])")
    ann.wait_for_selector("#prompt-bar.mine", timeout=20_000)
    state = _state(ann)
    me = state["seat"]
    provinces = state["view"]["provinces"]

    # sort: a frontline province's top card goes one down
    front = next(p for p in provinces if p["owner"] == me and p["frontline"] and len(p["garrison"]) >= 2)
    ann.click(f'#board .province[data-province="{front["id"]}"]')
    ann.locator(".garrison .card .arrow[title='move down']").first.click()
    ann.click("#apply-order")
    ann.wait_for_function(f"window.__bannerfall.state.version > {state['version']}")
    order = [c["id"] for c in _state(ann)["view"]["provinces"][front["id"]]["garrison"]]
    before = [c["id"] for c in front["garrison"]]
    assert order == [before[1], before[0], *before[2:]]

    # move: one card to a neighbouring province of ann's
    version = _state(ann)["version"]
    pair = next(((p, a) for p in _state(ann)["view"]["provinces"] if p["owner"] == me and p["garrison"]
                 for a in p["adjacent"] if provinces[a]["owner"] == me and len(provinces[a]["garrison"]) < 7), None)
    if pair is None:  # the deal left ann no two neighbouring provinces (rare): nothing to move
        return
    src, dst = pair
    ann.click(f'#board .province[data-province="{src["id"]}"]')
    ann.click(".choose-row button:has-text('none')")
    ann.locator(".garrison .card").first.click()
    ann.click(f'button[data-move="{dst}"]')
    ann.wait_for_function(f"window.__bannerfall.state.version > {version}")
    after = _state(ann)["view"]["provinces"]
    assert after[dst]["garrison"][-1]["id"] == src["garrison"][0]["id"]
    assert after[dst]["received"] is True
    ann.wait_for_selector("#event-log li[data-type=moved]")
