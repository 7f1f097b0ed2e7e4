"""Specials through the match runner (the socket pipeline on its in-memory twins): a prompted seat
activates one, gets its ack once durable, the phase and its deadline do not move, and what it shows
reaches that seat's socket only (section 5, docs/games/conquest.md "special")."""
from __future__ import annotations

import json

from app.games import registry
from app.games.base import SPECTATOR
from tests.runtime.twins import FakePeer, make_runner

conquest = registry()["conquest"]


def test_5_a_prompted_seat_activates_a_special_over_the_runner_and_only_it_sees_the_flops():
    runner, writer, scheduled, _ = make_runner(conquest, 2, {"loadouts": [["loyalty", "spy"], []]})
    peers = [FakePeer(0), FakePeer(1), FakePeer(SPECTATOR)]
    for peer in peers:
        runner.attach(peer)
    prompts = [(p.seat, p.phase_id, p.submitted) for p in runner.prompts]
    deadlines = dict(runner.deadlines)
    runner.act(peers[0], 1, {"type": "special", "special": "spy"})
    assert peers[0].of_type("ack") == []  # not before it is durable
    writer.commit()
    assert peers[0].of_type("ack") == [{"type": "ack", "seq": 1, "version": 1}]
    assert [(p.seat, p.phase_id, p.submitted) for p in runner.prompts] == prompts  # not a submission
    assert runner.deadlines == deadlines
    mine = peers[0].of_type("state")[-1]
    neutral = [land for land in mine["view"]["lands"] if land["owner"] is None]
    assert neutral and all(c["seen"] == "spy" and "card" in c for land in neutral for c in land["flop"])
    assert any(e["type"] == "special_used" for e in mine["events"])
    for peer in peers[1:]:
        state = peer.of_type("state")[-1]
        assert state["version"] == 1 and any(e["type"] == "special_used" for e in state["events"])
        assert '"seen"' not in json.dumps(state)
    # a refused special (not brought) changes nothing and is answered with its code
    runner.act(peers[1], 2, {"type": "special", "special": "spy"})
    assert peers[1].messages[-1]["type"] == "error" and peers[1].messages[-1]["code"] == "not_in_loadout"
    assert runner.version == 1
    assert [row["action"]["type"] for row in writer.rows] == ["special"]
