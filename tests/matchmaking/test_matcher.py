"""The pure matcher: compatible tickets, closest ratings first, windows that widen with waiting,
bots after the wait a ticket names (docs/decisions.md, "Quick play")."""
from __future__ import annotations

from app.matchmaking.matcher import Window, form_groups

W = Window(base=3.0, widen=0.5, max=30.0)


def t(tid: str, rating: float, created: float, bots: float | None = None) -> dict:
    return {"id": tid, "rating": rating, "created_at": created, "bots_after_seconds": bots}


def test_window_widens_with_waiting_and_is_capped():
    assert W.at(0) == 3.0
    assert W.at(10) == 8.0
    assert W.at(1000) == 30.0
    assert W.at(-5) == 3.0


def test_close_ratings_match_at_once_far_ones_wait_until_the_window_reaches():
    tickets = [t("a", 0.0, 100.0), t("b", 10.0, 100.0)]
    assert form_groups(tickets, 2, now=100.0, window=W) == []  # 10 apart, window 3
    assert form_groups(tickets, 2, now=113.0, window=W) == []  # window 9.5
    groups = form_groups(tickets, 2, now=114.0, window=W)      # window 10
    assert [g.ticket_ids for g in groups] == [("a", "b")] and groups[0].bots == 0


def test_the_closest_ratings_are_preferred_and_each_ticket_is_used_once():
    tickets = [t("a", 0.0, 1.0), t("far", 2.9, 2.0), t("near", 0.5, 3.0), t("x", 2.8, 4.0)]
    groups = form_groups(tickets, 2, now=5.0, window=W)
    assert [g.ticket_ids for g in groups] == [("a", "near"), ("far", "x")]
    ids = [i for g in groups for i in g.ticket_ids]
    assert len(ids) == len(set(ids))


def test_bots_fill_after_the_anchors_wait_and_only_with_tickets_that_accept_bots():
    tickets = [t("a", 0.0, 0.0, bots=5.0), t("b", 0.1, 0.0)]  # b does not accept bots
    assert form_groups(tickets, 3, now=4.0, window=W) == []
    groups = form_groups(tickets, 3, now=5.0, window=W)
    assert [(g.ticket_ids, g.bots) for g in groups] == [(("a",), 2)]


def test_an_anchor_that_cannot_match_does_not_block_younger_tickets():
    tickets = [t("old", 100.0, 0.0), t("y1", 0.0, 1.0), t("y2", 0.5, 1.0)]
    groups = form_groups(tickets, 2, now=2.0, window=W)
    assert [g.ticket_ids for g in groups] == [("y1", "y2")]
