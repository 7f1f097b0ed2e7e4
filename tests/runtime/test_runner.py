"""The match runner's pipeline on in-memory twins: durability before acks, dedupe, deadlines,
simultaneous phases, storage failure."""
from __future__ import annotations

import pytest

from app.games import registry
from app.games.base import SPECTATOR, IllegalAction
from app.runtime.protocol import route
from tests.runtime.twins import Clock, FakePeer, make_runner

provinces = registry()["provinces"]
conquest = registry()["conquest"]


def _turn_seat(runner) -> int:
    return runner.prompts[0].seat


def test_ack_and_views_only_after_commit():
    runner, writer, scheduled, _ = make_runner(provinces, 2)
    peers = [FakePeer(0), FakePeer(1), FakePeer(SPECTATOR)]
    for p in peers:
        runner.attach(p)
    seat = _turn_seat(runner)
    runner.act(peers[seat], 1, {"type": "end_turn"})
    assert runner.version == 1 and runner.durable_version == 0
    assert peers[seat].of_type("ack") == []
    assert all(len(p.of_type("state")) == 1 for p in peers)  # only the first state so far
    assert writer.commit() == 1
    assert peers[seat].of_type("ack") == [{"type": "ack", "seq": 1, "version": 1}]
    for p in peers:
        states = p.of_type("state")
        assert len(states) == 2 and states[-1]["version"] == 1
        assert any(e["type"] == "turn_ended" for e in states[-1]["events"])
    assert writer.rows[0]["seat"] == seat and writer.rows[0]["kind"] == "act"
    assert scheduled and scheduled[-1][1] == runner.prompts[0].phase_id  # the new turn's deadline is armed


def test_duplicate_seq_same_answer_once_applied():
    runner, writer, _, _ = make_runner(provinces, 2)
    peers = [FakePeer(0), FakePeer(1)]
    for p in peers:
        runner.attach(p)
    seat = _turn_seat(runner)
    runner.act(peers[seat], 7, {"type": "end_turn"})
    runner.act(peers[seat], 7, {"type": "end_turn"})  # while the first is still committing
    assert runner.version == 1
    writer.commit()
    runner.act(peers[seat], 7, {"type": "end_turn"})  # after
    assert peers[seat].of_type("ack") == [{"type": "ack", "seq": 7, "version": 1}] * 3
    assert runner.version == 1 and len(writer.rows) == 1


def test_errors_change_nothing():
    runner, writer, _, _ = make_runner(provinces, 2)
    peers = [FakePeer(0), FakePeer(1), FakePeer(SPECTATOR)]
    for p in peers:
        runner.attach(p)
    seat = _turn_seat(runner)
    before = provinces.view(runner.state, -2)
    cases = [(peers[1 - seat], 1, {"type": "end_turn"}, None, "not_your_turn"),
             (peers[2], 1, {"type": "end_turn"}, None, "not_a_player"),
             (peers[seat], 2, {"type": "warp"}, None, "unknown_action"),
             (peers[seat], 3, "end_turn", None, "malformed_action"),
             (peers[seat], None, {"type": "end_turn"}, None, "bad_seq"),
             (peers[seat], 4, {"type": "end_turn"}, 5, "bad_version")]
    for peer, seq, action, version, code in cases:
        # through the one route every client message takes (app.runtime.protocol)
        msg = {"type": "act", "seq": seq, "action": action}
        if version is not None:
            msg["version"] = version
        route(runner, peer, msg)
        assert peer.messages[-1]["type"] == "error" and peer.messages[-1]["code"] == code
    assert runner.version == 0 and writer.pending == []
    assert provinces.view(runner.state, -2) == before


def test_stale_version_is_rejected():
    runner, writer, _, _ = make_runner(provinces, 2)
    peers = [FakePeer(0), FakePeer(1)]
    for p in peers:
        runner.attach(p)
    seat = _turn_seat(runner)
    runner.act(peers[seat], 1, {"type": "end_turn"}, 0)
    writer.commit()
    # the other seat's turn started at version 1; an action decided on version 0 is stale
    runner.act(peers[1 - seat], 1, {"type": "end_turn"}, 0)
    assert peers[1 - seat].messages[-1]["code"] == "stale_version"
    runner.act(peers[1 - seat], 2, {"type": "end_turn"}, 1)
    assert runner.version == 2


def test_deadline_for_ended_phase_does_nothing():
    clock = Clock()
    runner, writer, _, _ = make_runner(provinces, 2, clock=clock)
    peers = [FakePeer(0), FakePeer(1)]
    for p in peers:
        runner.attach(p)
    old_phase = runner.prompts[0].phase_id
    runner.act(peers[_turn_seat(runner)], 1, {"type": "end_turn"})
    writer.commit()
    clock.t += 3600
    assert runner.deadline(old_phase) == 0
    assert runner.version == 1
    current = runner.prompts[0]
    assert runner.deadline(current.phase_id) == 1  # the current turn's deadline applies end_turn
    assert runner.version == 2 and writer.pending[-1][0]["kind"] == "deadline"
    writer.commit()
    assert writer.rows[-1]["kind"] == "deadline" and writer.rows[-1]["seat"] == current.seat
    assert runner.deadline(current.phase_id) == 0  # firing twice: nothing more


def test_early_deadline_is_rescheduled_not_applied():
    clock = Clock()
    runner, writer, scheduled, _ = make_runner(provinces, 2, clock=clock)
    phase = runner.prompts[0].phase_id
    assert runner.deadline(phase) == 0 and runner.version == 0
    assert scheduled[-1][1] == phase and scheduled[-1][2] == runner.deadlines[phase]


def _orders_prompts(runner):
    return [p for p in runner.prompts if p.kind == "orders"]


def test_simultaneous_submissions_both_kept_and_phase_resolves_once():
    runner, writer, _, _ = make_runner(conquest, 3)
    peers = [FakePeer(i) for i in range(3)]
    for p in peers:
        runner.attach(p)
    prompts = _orders_prompts(runner)
    assert len(prompts) == 3 and all(p.simultaneous for p in prompts)
    phase = prompts[0].phase_id
    # two seats submit "in the same instant": both applied before either is committed
    runner.act(peers[0], 1, {"type": "orders", "attack": []}, 0)
    runner.act(peers[1], 1, {"type": "orders", "attack": []}, 0)
    assert runner.version == 2
    writer.commit()
    assert [m["type"] for m in peers[0].messages if m["type"] == "ack"] == ["ack"]
    assert [m["type"] for m in peers[1].messages if m["type"] == "ack"] == ["ack"]
    assert {p.seat for p in runner.prompts if p.phase_id == phase and p.submitted} == {0, 1}
    # the last seat submits and the deadline fires at the same moment: the phase resolves once
    runner.act(peers[2], 1, {"type": "orders", "attack": []}, 0)
    assert all(p.phase_id != phase for p in runner.prompts)
    version = runner.version
    assert runner.deadline(phase) == 0
    assert runner.version == version
    writer.commit()
    phase_rows = [r for r in writer.rows if r["action"].get("type") == "orders"]
    assert len(phase_rows) == 3


def test_deadline_first_then_late_submission_is_rejected():
    clock = Clock()
    runner, writer, _, _ = make_runner(conquest, 3, clock=clock)
    peers = [FakePeer(i) for i in range(3)]
    for p in peers:
        runner.attach(p)
    phase = _orders_prompts(runner)[0].phase_id
    runner.act(peers[0], 1, {"type": "orders", "attack": []})
    clock.t += 3600
    applied = runner.deadline(phase)
    assert applied == 2  # seats 1 and 2 get their defaults, in seat order
    assert all(p.phase_id != phase for p in runner.prompts)
    version = runner.version
    runner.act(peers[2], 1, {"type": "orders", "attack": []}, 0)
    assert peers[2].messages[-1]["type"] == "error"
    assert peers[2].messages[-1]["code"] in ("stale_version", "not_your_turn")
    assert runner.version == version
    writer.commit()
    assert [r["kind"] for r in writer.rows] == ["act", "deadline", "deadline"]


def test_replacing_a_submission_is_kept():
    runner, writer, _, _ = make_runner(conquest, 2)
    peers = [FakePeer(0), FakePeer(1)]
    for p in peers:
        runner.attach(p)
    runner.act(peers[0], 1, {"type": "orders", "attack": []})
    runner.act(peers[0], 2, {"type": "orders", "attack": []})
    writer.commit()
    assert [m["seq"] for m in peers[0].of_type("ack")] == [1, 2]
    assert runner.version == 2
    # the view after both submissions: still the orders phase, seat 0 submitted, seat 1 not
    view = conquest.view(runner.state, 0)
    assert view["phase"] == "orders"
    assert {p.seat: p.submitted for p in runner.prompts} == {0: True, 1: False}
    assert [r["client_seq"] for r in writer.rows] == [1, 2]  # both submissions are in the log


def test_storage_failure_closes_peers_and_drops_the_runner():
    runner, writer, _, finished = make_runner(provinces, 2)
    peers = [FakePeer(0), FakePeer(1)]
    for p in peers:
        runner.attach(p)
    runner.act(peers[_turn_seat(runner)], 1, {"type": "end_turn"})
    writer.fail(OSError("disk gone"))
    assert runner.failed and finished == [runner]
    for p in peers:
        assert p.messages[-1]["code"] == "storage_unavailable"
        assert p.closed and p.closed[0] == 1011
        assert p.of_type("ack") == []
    runner.act(peers[0], 2, {"type": "end_turn"})
    assert peers[0].messages[-1]["code"] == "match_over"


def test_resume_sends_missed_events_and_state():
    runner, writer, _, _ = make_runner(provinces, 2)
    a = FakePeer(0)
    runner.attach(a)
    seat = _turn_seat(runner)
    actor = FakePeer(seat)
    runner.attach(actor)
    runner.act(actor, 1, {"type": "end_turn"})
    writer.commit()
    late = FakePeer(1 - seat)
    runner.attach(late, since_version=0)
    st = late.messages[-1]
    assert st["type"] == "state" and st["version"] == 1
    assert st["events"] and {e["v"] for e in st["events"]} == {1}


def test_a_viewer_attaching_mid_commit_sees_the_durable_state_only():
    runner, writer, _, _ = make_runner(provinces, 2)
    seat = _turn_seat(runner)
    actor = FakePeer(seat)
    runner.attach(actor)
    durable_view = provinces.view(runner.state, SPECTATOR)
    runner.act(actor, 1, {"type": "end_turn"})  # applied, not yet committed
    late = FakePeer(SPECTATOR)
    runner.attach(late)
    first = late.messages[0]
    assert first["version"] == 0 and first["view"] == durable_view
    assert first["prompts"][0]["seat"] == seat  # the prompts of version 0, too
    writer.commit()
    assert late.messages[-1]["version"] == 1 and late.messages[-1]["view"] != durable_view


def test_timer_of_a_phase_that_ended_early_is_cancelled():
    runner, writer, scheduled, _ = make_runner(provinces, 2)
    cancelled = []
    runner._cancel = lambda match_id, phase_id: cancelled.append(phase_id)
    first = runner.prompts[0].phase_id
    peer = FakePeer(runner.prompts[0].seat)
    runner.attach(peer)
    runner.act(peer, 1, {"type": "end_turn"})
    assert cancelled == []  # not before the commit
    writer.commit()
    assert cancelled == [first]
    assert scheduled[-1][1] == runner.prompts[0].phase_id != first


def test_a_deadline_needs_a_valid_lease():
    clock = Clock()
    runner, writer, scheduled, _ = make_runner(provinces, 2, clock=clock)
    lease = {"valid": False}
    runner._holds_lease = lambda: lease["valid"]
    phase = runner.prompts[0].phase_id
    clock.t += 3600
    scheduled.clear()
    assert runner.deadline(phase) == 0 and runner.version == 0 and writer.pending == []
    assert scheduled and scheduled[-1][1] == phase  # re-armed, not lost
    lease["valid"] = True
    assert runner.deadline(phase) == 1


def test_abort_cancels_its_deadlines_once_durable_and_reports():
    runner, writer, _, finished = make_runner(conquest, 2)
    cancelled: list[int] = []
    runner._cancel = lambda match_id, phase_id: cancelled.append(phase_id)
    open_phases = set(runner.deadlines)
    done: list = []
    runner.abort("test", "admin", done.append)
    assert cancelled == [] and done == []  # not before the commit
    writer.commit()
    assert set(cancelled) == open_phases and done == [None] and finished == [runner]


def test_a_failed_abort_reports_its_error():
    runner, writer, _, _ = make_runner(conquest, 2)
    done: list = []
    runner.abort("test", "admin", done.append)
    writer.fail(OSError("disk gone"))
    assert isinstance(done[0], OSError) and runner.failed and runner.failure == "storage"


def test_an_action_without_a_valid_lease_is_not_applied():
    """A node that woke up after its lease ran out answers match_moved (4503) and applies nothing,
    even before its keeper noticed (issue 9 item 2)."""
    runner, writer, _, _ = make_runner(provinces, 2)
    lease = {"valid": False}
    runner._holds_lease = lambda: lease["valid"]
    peer = FakePeer(_turn_seat(runner))
    runner.attach(peer)
    runner.act(peer, 1, {"type": "end_turn"})
    assert peer.messages[-1]["code"] == "match_moved" and peer.closed[0] == 4503
    assert runner.version == 0 and writer.pending == []
    with pytest.raises(IllegalAction):
        runner.abort("test", "admin")
    assert runner.status == "running" and writer.pending == []


def test_a_match_loaded_after_it_ended_still_says_its_outcome():
    """``ended`` of a runner made for an ended match (a restart, another node) carries the outcome
    its row holds, as the one sent when it ended did (protocol.md: ``outcome`` is an object)."""
    from typing import cast

    from app.runtime.logwriter import LogWriter
    from app.runtime.match import MatchRunner
    from app.runtime.rows import MatchRow
    from tests.runtime.twins import FakeLogWriter

    game = registry()["provinces"]
    state = game.setup(2, game.Options(), b"s" * 32)
    outcome = {"ranks": {"0": 2, "1": 1}, "scores": {"0": 3, "1": 9}, "reason": "aborted: test"}
    match = {"id": "m9", "game": "provinces", "seed": "00", "seed_hash": "h", "seat_count": 2,
             "seats": [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(2)],
             "options": {}, "outcome": outcome}
    runner = MatchRunner(match=cast(MatchRow, match), game=game, state=state, version=4, deadlines={},
                         log_writer=cast(LogWriter, FakeLogWriter()), schedule=lambda *a: None,
                         on_finished=lambda r: None, status="aborted")
    peer = FakePeer(0, "p0")
    runner.attach(peer)
    ended = peer.of_type("ended")
    assert len(ended) == 1 and ended[0]["status"] == "aborted" and ended[0]["outcome"] == outcome
