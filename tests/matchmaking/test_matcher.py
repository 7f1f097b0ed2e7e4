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


def party(tid: str, rating: float, created: float, size: int, bots: float | None = None) -> dict:
    return {**t(tid, rating, created, bots), "members": [f"{tid}-{i}" for i in range(size)]}


def test_a_party_takes_as_many_seats_as_it_has_members():
    tickets = [party("p2", 0.0, 1.0, 2), t("a", 0.0, 2.0), t("b", 0.0, 3.0), t("c", 0.0, 4.0)]
    groups = form_groups(tickets, 4, now=5.0, window=W)
    assert [g.ticket_ids for g in groups] == [("p2", "a", "b")] and groups[0].bots == 0
    # a party of 3 at a table of 4 needs one stranger; two parties of 2 fill it together
    tickets = [party("p3", 0.0, 1.0, 3), party("q2", 0.0, 2.0, 2), t("x", 0.5, 3.0)]
    assert [g.ticket_ids for g in form_groups(tickets, 4, now=5.0, window=W)] == [("p3", "x")]
    tickets = [party("p2", 0.0, 1.0, 2), party("q2", 0.1, 2.0, 2)]
    assert [g.ticket_ids for g in form_groups(tickets, 4, now=5.0, window=W)] == [("p2", "q2")]


def test_the_closest_set_that_fills_the_table_exactly_is_taken():
    # 3 seats left: the closest is a party of 3, which fits exactly
    tickets = [t("a", 0.0, 1.0), party("p3", 0.1, 2.0, 3), t("x", 0.2, 3.0), t("y", 0.3, 4.0)]
    assert [g.ticket_ids for g in form_groups(tickets, 4, now=5.0, window=W)] == [("a", "p3")]
    tickets = [t("a", 0.0, 1.0), party("p3", 0.1, 2.0, 3), party("q2", 0.2, 3.0, 2), t("x", 0.3, 4.0)]
    groups = form_groups(tickets, 3, now=5.0, window=W)  # a + q2 fills 3 (a + p3 is 4); p3 is a table alone
    assert [g.ticket_ids for g in groups] == [("a", "q2"), ("p3",)]


def test_a_full_party_is_a_match_by_itself_and_a_party_too_large_never_matches():
    tickets = [party("p3", 0.0, 1.0, 3), t("a", 0.0, 2.0)]
    groups = form_groups(tickets, 3, now=5.0, window=W)
    assert [g.ticket_ids for g in groups] == [("p3",)] and groups[0].bots == 0
    groups = form_groups([party("big", 0.0, 1.0, 5), t("a", 0.0, 2.0), t("b", 0.0, 2.0), t("c", 0.0, 3.0)], 3,
                         now=5.0, window=W)
    assert [g.ticket_ids for g in groups] == [("a", "b", "c")]  # the party of 5 is skipped, not a block


def test_bots_complete_a_party_after_its_wait():
    tickets = [party("p2", 0.0, 0.0, 2, bots=1.0), party("q2", 0.0, 0.5, 2, bots=1.0)]
    assert form_groups(tickets, 3, now=0.9, window=W) == []
    groups = form_groups(tickets, 3, now=1.0, window=W)       # the two parties cannot share 3 seats
    assert [(g.ticket_ids, g.bots) for g in groups] == [(("p2",), 1)]
    assert [(g.ticket_ids, g.bots) for g in form_groups(tickets, 3, now=1.5, window=W)] == [(("p2",), 1),
                                                                                          (("q2",), 1)]
