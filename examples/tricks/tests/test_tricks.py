"""Tricks under Bannerfall's suites (``app.testing``) and its own rule tests.

- the game is registered (its ``bannerfall.games`` entry point) like Bannerfall's own games;
- the conformance suite: every check of the game contract, in-process;
- its declarations: the wording and the doc's events table name exactly the declared events, every
  rule code is documented, the committed JSON Schemas are current;
- the socket leak suite: bot matches over real sockets of a real server, every frame checked
  against what its viewer may not see (hidden_tokens and the oracle), frames against the schemas;
- the board: a person plays a whole match in a real browser (skipped without Chromium).
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path

import pytest
from app.client.wording import game_wording
from app.games import declared_file, game_dir, registry
from app.games.base import IllegalAction
from app.games.contract import game_schemas
from app.testing import browser, conformance, leak
from app.testing.contracts import doc_problems, wording_problems
from app.testing.server import LocalServer

from bannerfall_tricks import GAME, TricksGame

SCHEMAS = Path(__file__).resolve().parents[1] / "bannerfall_tricks" / "schemas" / "tricks"


def test_the_game_is_registered():
    assert isinstance(registry()["tricks"], TricksGame)


@pytest.mark.parametrize("check", conformance.CHECKS, ids=lambda c: c.__name__)
def test_conformance(check):
    check(GAME)


def test_the_wording_and_the_doc_name_exactly_the_declared_events():
    assert wording_problems(GAME, game_wording(GAME)) == []
    doc = declared_file(GAME, GAME.info.doc)
    assert doc is not None and doc_problems(GAME, doc) == []


def test_every_rule_code_is_documented():
    doc = declared_file(GAME, GAME.info.doc).read_text()
    codes = {m for path in game_dir(GAME).rglob("*.py")
             for m in re.findall(r'IllegalAction\(\s*"([a-z_]+)"', path.read_text())}
    assert codes and {c for c in codes if f"`{c}`" not in doc} == set()


def test_the_committed_schemas_are_current():
    """Regenerate with: python -m app.games.contract tricks bannerfall_tricks/schemas"""
    for part, schema in game_schemas(GAME).items():
        assert json.loads((SCHEMAS / f"{part}.json").read_text()) == schema, part


def test_no_hidden_card_reaches_any_socket():
    with LocalServer(env={"BANNERFALL_RUN_BOTS": "false"}) as server:
        report = asyncio.run(leak.run_matches(server.url, server.admin_token, "tricks", matches=20))
    assert report.problems == [], report.problems[:10]
    assert report.matches == 20 and report.frames > 200


def test_a_person_plays_a_whole_match_on_the_board():
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    from playwright.sync_api import sync_playwright

    if browser.chromium() is None:
        pytest.skip("no Chromium (apt-get install chromium)")
    with LocalServer() as server, sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=browser.chromium(), args=browser.ARGS)
        try:
            page = chrome.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            match = browser.bot_match(server.url, "tricks", 2, options={"hands": 1})
            browser.open_match(page, server.url, match)
            assert browser.board_shown(page), "the game's board module did not draw the match"
            while browser.state(page)["status"] == "running":
                if page.locator("button[data-play]:not([disabled])").count():
                    version = browser.state(page)["version"]
                    page.locator("button[data-play]:not([disabled])").first.click()
                    browser.wait_until(page, f"window.__bannerfall.state.version > {version}")
                else:
                    page.wait_for_timeout(100)
            browser.wait_until(page, "document.querySelector('#outcome') && "
                                     "document.querySelector('#outcome').textContent.length > 0")
            assert errors == []
        finally:
            chrome.close()


def _position(hands, trump, leader=0):
    """A hand in play: ``hands`` as two lists of "Qh"-style cards (rank, then suit letter)."""
    from dataclasses import replace

    from bannerfall_tricks.state import Card

    suits = {"c": "clubs", "d": "diamonds", "h": "hearts", "s": "spades"}
    count = iter(range(100))

    def card(text):
        return Card(f"tok{next(count):09d}", suits[text[-1]], text[:-1])

    state = GAME.setup(2, {"hands": 1}, b"t" * 32)
    return replace(state, hands=tuple(tuple(card(c) for c in hand) for hand in hands), trump=card(trump),
                   leader=leader, current=leader, table=())


def _play(state, seat, text):
    card = next(c for c in state.hands[seat] if f"{c.rank}{c.suit[0]}" == text)
    return GAME.apply(state, seat, {"type": "play", "card": card.token})


def test_the_other_seat_must_follow_suit_when_it_can():
    state = _position([["9c", "Ah"], ["Kc", "Ad"]], trump="9s")
    state, _ = _play(state, 0, "9c")
    assert GAME.legal_actions(state, 1)[0].domains["card"] == [state.hands[1][0].token]  # the king of clubs
    with pytest.raises(IllegalAction) as refused:
        _play(state, 1, "Ad")
    assert refused.value.code == "must_follow_suit"


def test_a_trump_beats_the_suit_led_and_the_highest_of_the_suit_led_wins_otherwise():
    state = _position([["Ac", "9d"], ["9s", "Kd"]], trump="Js")
    state, events = _play(state, 0, "Ac")
    state, events = _play(state, 1, "9s")  # no club: a trump takes the ace
    assert next(e for e in events if e.type == "trick_won").data["seat"] == 1 and state.leader == 1
    state, events = _play(state, 1, "Kd")
    state, events = _play(state, 0, "9d")
    assert next(e for e in events if e.type == "trick_won").data["seat"] == 1
    assert [e.type for e in events][-2:] == ["hand_over", "match_over"] and GAME.outcome(state).ranks == {0: 2, 1: 1}


def test_an_off_suit_card_never_wins_and_the_leader_alternates_between_hands():
    state = _position([["9c", "10h"], ["Ad", "Qc"]], trump="Ks", leader=0)
    state = dataclasses.replace(state, options=state.options.model_copy(update={"hands": 2}))
    state, events = _play(state, 0, "9c")
    state, events = _play(state, 1, "Qc")
    assert next(e for e in events if e.type == "trick_won").data["seat"] == 1
    state, _ = _play(state, 1, "Ad")
    state, events = _play(state, 0, "10h")  # hearts on a diamond lead: the diamond wins
    assert next(e for e in events if e.type == "trick_won").data["seat"] == 1
    started = next(e for e in events if e.type == "hand_started")
    assert started.data["leader"] == 1 and state.current == 1 and len(state.hands[0]) == 6


def test_a_hand_is_six_cards_each_and_the_trump_card_is_not_in_either():
    state = GAME.setup(2, None, b"s" * 32)
    cards = [(c.suit, c.rank) for hand in state.hands for c in hand]
    assert [len(h) for h in state.hands] == [6, 6] and len(set(cards)) == 12
    assert (state.trump.suit, state.trump.rank) not in cards
    with pytest.raises(ValueError):
        GAME.setup(3, None, b"s" * 32)
