"""Quick play in the browser: two people in two browser contexts press Quick play and land in the
same match; one person alone waits (elapsed time shown), and bots fill the table after the wait
they chose. The waiting view can be cancelled."""
from __future__ import annotations

import re

from .conftest import rest, screenshot, sign_in


def _queue(page, game: str, seats: int, bots: str, *, waits: bool = True) -> None:
    """Queue from the home page's panel; ``waits``: the waiting view must show (not for a ticket
    that completes a match at once: its first long-poll may answer before the view is seen)."""
    page.wait_for_selector("#quick-play")
    page.select_option("#qp-game", game)
    page.fill("#qp-seats", str(seats))
    page.select_option("#qp-bots", bots)
    page.click("#quick-play")
    if waits:
        page.wait_for_selector("#queue-view")


def _match_id(page) -> str:
    page.wait_for_url(re.compile(r".*#/match/[0-9a-f]+$"), timeout=30_000)
    return page.url.rsplit("/", 1)[1]


def test_two_people_quick_play_into_one_match(pages):
    ann, bob = pages.new(), pages.new()
    sign_in(ann, "ann")
    sign_in(bob, "bob")
    _queue(ann, "provinces", 2, "")
    ann.wait_for_function("document.querySelector('#qp-elapsed').textContent !== ''")
    screenshot(ann, "quickplay-waiting.png")
    _queue(bob, "provinces", 2, "", waits=False)  # bob completes the match: straight into it
    match_a, match_b = _match_id(ann), _match_id(bob)
    assert match_a == match_b
    token = ann.evaluate("JSON.parse(localStorage.getItem('bannerfall.player')).token")
    match = rest(pages.server, "GET", f"/matches/{match_a}", token)
    assert sorted(s["name"] for s in match["seats"]) == ["ann", "bob"]
    ann.wait_for_selector("#board")
    bob.wait_for_selector("#board")


def test_alone_bots_fill_after_the_chosen_wait_and_cancel_works(pages):
    cat = pages.new()
    sign_in(cat, "cat")
    _queue(cat, "warrior", 3, "")  # nobody else queues warrior for 3: cancel it
    assert "Looking for players" in cat.inner_text("#qp-status")
    cat.click("#qp-cancel")
    cat.wait_for_selector("#quick-play")
    _queue(cat, "provinces", 3, "2")
    match_id = _match_id(cat)
    assert match_id
    cat.wait_for_selector("#board")
    token = cat.evaluate("JSON.parse(localStorage.getItem('bannerfall.player')).token")
    match = rest(pages.server, "GET", f"/matches/{match_id}", token)
    assert [bool(s["bot"]) for s in match["seats"]].count(True) == 2


def test_a_ticket_the_server_lost_ends_the_wait_and_offers_to_queue_again(pages):
    """The embedded server keeps its queue in memory: restarted while a ticket waits, it answers
    the waiting view's long-poll ``410 ticket_lost``; the view says the place was lost, forgets the
    ticket and links back to the panel, where Quick play queues a fresh ticket."""
    dan = pages.new()
    sign_in(dan, "dan")
    _queue(dan, "warrior", 3, "")
    lost = dan.url.rsplit("/", 1)[1]
    pages.server.stop()
    pages.server.start()  # same port, same database, an empty queue
    dan.wait_for_selector("#qp-again", timeout=30_000)
    assert "lost your place" in dan.inner_text("#qp-status")
    assert dan.evaluate("localStorage.getItem('bannerfall.ticket')") is None
    dan.click("#qp-again")
    _queue(dan, "warrior", 3, "")
    assert dan.url.rsplit("/", 1)[1] != lost
    dan.click("#qp-cancel")
    dan.wait_for_selector("#quick-play")
