"""Parties and rematches in the browser, with two people in two browser contexts: one makes a
party and shares its link, the other opens it; the leader queues, both see the waiting indicator
and land in the same match; at its end both agree to a rematch and land in the new match; next
time one declines and the other is told at once."""
from __future__ import annotations

import re

from .conftest import rest, screenshot, sign_in


def _token(page) -> str:
    return page.evaluate("JSON.parse(localStorage.getItem('bannerfall.player')).token")


def _match_id(page, not_this: str | None = None) -> str:
    page.wait_for_url(re.compile(r".*#/match/[0-9a-f]+$"), timeout=30_000)
    if not_this:
        page.wait_for_function(f"!location.hash.endsWith('{not_this}')")
    return page.url.rsplit("/", 1)[1]


def _abort(server, match_id: str) -> None:
    rest(server, "POST", f"/admin/matches/{match_id}/abort", server.admin_token, json={"reason": "test"})


def test_a_party_queues_together_then_rematches_and_a_decline_is_seen(pages):
    ann, bob = pages.new(), pages.new()
    sign_in(ann, "ann")
    sign_in(bob, "bob")
    ann.wait_for_selector("#party-make")
    ann.select_option("#qp-game", "provinces")
    ann.fill("#qp-seats", "3")
    ann.click("#party-make")
    ann.wait_for_selector("#party-view #party-members li")
    link = ann.input_value("#party-invite-link")
    assert re.search(r"/#/join/[\w-]{20,}$", link), link
    bob.goto(link)
    bob.wait_for_selector("#party-view #party-members li >> nth=1")
    ann.wait_for_selector("#party-members li >> nth=1")        # the leader sees bob join (long-poll)
    assert ann.inner_text("#party-members").count("\n") >= 1 and "bob" in ann.inner_text("#party-members")
    assert bob.is_hidden("#party-queue")                        # only the leader queues
    ann.select_option("#party-bots", "2")
    ann.click("#party-queue")
    for page in (ann, bob):                                     # both see the waiting indicator
        page.wait_for_selector("#party-waiting:not([hidden])")
    screenshot(ann, "party-waiting.png")
    first_a, first_b = _match_id(ann), _match_id(bob)
    assert first_a == first_b
    match = rest(pages.server, "GET", f"/matches/{first_a}", _token(ann))
    assert sorted(s["name"] for s in match["seats"] if not s["bot"]) == ["ann", "bob"]
    assert [bool(s["bot"]) for s in match["seats"]].count(True) == 1
    ann.wait_for_selector("#board")

    # the match ends: both are offered a rematch; ann asks, bob sees it, bob agrees: a new match
    _abort(pages.server, first_a)
    for page in (ann, bob):
        page.wait_for_selector("#rematch-go:not([hidden])")
    ann.click("#rematch-go")
    ann.wait_for_selector("#rematch-status:has-text('waiting for bob')")
    bob.wait_for_selector("#rematch-status:has-text('ann wants a rematch')")
    screenshot(bob, "rematch-offer.png")
    bob.click("#rematch-go")
    second_a, second_b = _match_id(ann, first_a), _match_id(bob, first_a)
    assert second_a == second_b != first_a
    again = rest(pages.server, "GET", f"/matches/{second_a}", _token(ann))
    assert [s["player_id"] for s in again["seats"] if not s["bot"]] == \
        [s["player_id"] for s in match["seats"] if not s["bot"]]

    # next time bob declines: ann is told at once and nobody waits
    ann.wait_for_selector("#board")
    _abort(pages.server, second_a)
    for page in (ann, bob):
        page.wait_for_selector("#rematch-go:not([hidden])")
    ann.click("#rematch-go")
    ann.wait_for_selector("#rematch-status:has-text('waiting for bob')")
    bob.click("#rematch-decline")
    ann.wait_for_selector("#rematch-status:has-text('No rematch: bob declined or left')")
    assert ann.is_hidden("#rematch-go")


def test_a_wrong_invite_link_says_why(pages):
    cat = pages.new()
    sign_in(cat, "cat")
    cat.goto(pages.server.url + "/#/join/not-a-real-code")
    cat.wait_for_selector("#party-join-error")
    assert "bad_invite" in cat.inner_text("#party-join-error")
