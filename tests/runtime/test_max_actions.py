"""The runtime enforces a game's bound on a match's length (``GameInfo.max_actions``): the record
that reaches it is the last action applied; the match is then aborted (reason ``max_actions``), its
viewers get ``ended``, and nothing more is accepted — whoever sends it, a seat or a deadline."""
from __future__ import annotations

import dataclasses
from typing import ClassVar

from app.games.base import GameInfo
from app.games.provinces.game import ProvincesGame
from tests.runtime.twins import FakePeer, make_runner


class ShortProvinces(ProvincesGame):
    """Provinces whose matches may have at most 5 records."""

    info: ClassVar[GameInfo] = dataclasses.replace(ProvincesGame.info, max_actions=5)


def test_a_match_that_reaches_max_actions_is_aborted_and_accepts_nothing_more():
    game = ShortProvinces()
    runner, writer, _scheduled, finished = make_runner(game, 2)
    peers = {seat: FakePeer(seat) for seat in range(2)}
    for peer in peers.values():
        runner.attach(peer)
    for seq in range(1, 6):
        seat = runner.prompts[0].seat
        runner.act(peers[seat], seq, {"type": "end_turn"})
        writer.commit()
    assert runner.status == "aborted" and finished == [runner]
    assert [row["kind"] for row in writer.rows] == ["act"] * 5 + ["abort"]
    assert writer.rows[-1]["action"]["reason"] == "max_actions"
    assert runner.outcome is not None and runner.outcome.reason == "aborted: max_actions"
    for peer in peers.values():
        ended = peer.of_type("ended")
        assert len(ended) == 1 and ended[0]["status"] == "aborted"
    runner.act(peers[0], 99, {"type": "end_turn"})
    assert peers[0].messages[-1]["code"] == "match_over"
    assert runner.deadline(runner.version) == 0  # a late deadline applies nothing either
    assert len(writer.rows) == 6


def test_a_match_under_its_bound_runs_on():
    runner, writer, _, finished = make_runner(ProvincesGame(), 2)
    peer = {seat: FakePeer(seat) for seat in range(2)}
    for seq in range(1, 6):
        seat = runner.prompts[0].seat
        runner.act(peer[seat], seq, {"type": "end_turn"})
        writer.commit()
    assert runner.status == "running" and not finished
