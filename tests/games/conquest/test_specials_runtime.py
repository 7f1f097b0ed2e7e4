"""Specials through the match runner (the socket pipeline on its in-memory twins): a prompted seat
activates one, gets its ack once durable, the phase and its deadline do not move, and what it shows
reaches that seat's socket only (section 5, docs/games/conquest.md "special")."""
from __future__ import annotations

import json

from app.games import registry
from app.games.base import SPECTATOR
from app.games.conquest.state import NEUTRAL
from tests.games.conquest.support import position
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


# ---- seed 5.1.3: at any moment, from any living seat (issue 26 item 6) ------------------------------

FREE = {"loadouts": [["spy", "scout", "loyalty"], ["spy", "scout", "loyalty"]],
        "special_costs": {"spy": 0, "scout": 0}}


def _unprompted_runner(out_round=None, **kwargs):
    """Seat 1 has no mana at round 1's orders, so no prompt; seat 0 is prompted. ``out_round``: the
    state's per-seat elimination rounds, when given."""
    state = position(options=FREE, mana=[10, 0], **kwargs)
    if out_round is not None:
        state.out_round = out_round
    assert [p.seat for p in conquest.prompts(state)] == [0]
    runner, writer, scheduled, _ = make_runner(conquest, 2, FREE, state=state)
    peers = {v: FakePeer(v, deltas=True) for v in (0, 1, SPECTATOR)}
    for peer in peers.values():
        runner.attach(peer)
    for peer in peers.values():
        peer.messages.clear()
    return runner, writer, scheduled, peers


def test_5_1_3_a_seat_without_a_prompt_activates_and_uses_specials():
    runner, writer, scheduled, peers = _unprompted_runner()
    prompts, deadlines = list(runner.prompts), dict(runner.deadlines)
    runner.act(peers[1], 1, {"type": "special", "special": "spy"}, version=0)
    writer.commit()
    assert peers[1].messages[-1] == {"type": "ack", "seq": 1, "version": 1}
    assert runner.prompts == prompts and runner.deadlines == deadlines and scheduled == []  # not a submission
    for v in (0, SPECTATOR):  # the activation is public (seats[].specials), what it shows is not
        (delta,) = peers[v].of_type("delta")
        assert [e["type"] for e in delta["events"]] == ["special_used"] and '"seen"' not in json.dumps(delta)
    # a scout at no price changes nothing the others may see: they get nothing, their versions stay
    before = {v: runner.audience_version(v) for v in (0, SPECTATOR)}
    sent = {v: len(peers[v].messages) for v in (0, SPECTATOR)}
    land = next(land for land in range(runner.state.board.size)
                if conquest.can_act(runner.state, 1, {"type": "special", "special": "scout", "land": land}))
    runner.act(peers[1], 2, {"type": "special", "special": "scout", "land": land}, version=1)
    writer.commit()
    assert peers[1].messages[-1] == {"type": "ack", "seq": 2, "version": 2}
    assert [e["type"] for e in peers[1].of_type("delta")[-1]["events"]] == ["special_seen"]
    for v in (0, SPECTATOR):
        assert len(peers[v].messages) == sent[v] and runner.audience_version(v) == before[v]
    # anything else still needs a prompt
    runner.act(peers[1], 3, {"type": "orders", "attack": []})
    assert peers[1].messages[-1]["code"] == "not_your_turn" and runner.version == 2


def test_5_1_3_an_unprompted_special_obeys_the_stale_rule_of_the_current_phase():
    """protocol.md: a ``version`` older than the start of the current phase is ``stale_version``
    for a seat without a prompt too; the current one is accepted."""
    runner, writer, _, peers = _unprompted_runner()
    start = runner.audience_version(1)
    (orders,) = [k for k in conquest.legal_actions(runner.state, 0) if k.type == "orders"]
    neutral = next(land for land in orders.domains["attack"]["subset_of"] if runner.state.owner[land] == NEUTRAL)
    runner.act(peers[0], 1, {"type": "orders", "attack": [neutral]})  # on to the battle's turn decision
    writer.commit()
    assert [(p.seat, p.kind) for p in runner.prompts] == [(0, "decision")]
    now = runner.audience_version(1)
    assert now > start and not any(p.seat == 1 for p in runner.prompts)
    runner.act(peers[1], 2, {"type": "special", "special": "spy"}, version=start)
    assert peers[1].messages[-1]["code"] == "stale_version" and peers[1].messages[-1]["version"] == now
    runner.act(peers[1], 3, {"type": "special", "special": "spy"}, version=now)
    writer.commit()
    assert peers[1].messages[-1] == {"type": "ack", "seq": 3, "version": now + 1}


def test_5_1_3_an_eliminated_seat_gets_not_your_turn():
    runner, writer, _, peers = _unprompted_runner(out_round=[0, 1])  # seat 1 is out of the match
    runner.act(peers[1], 1, {"type": "special", "special": "spy"})
    assert peers[1].messages[-1]["code"] == "not_your_turn" and runner.version == 0
