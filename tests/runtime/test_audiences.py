"""Audiences, per-audience versions and deltas in the runner (issue 11 items 1–3, provinces.md 6.4).

A client model that follows docs/protocol.md ("Deltas, audiences and versions") alone holds, after
every durable version, exactly the document the server would send in a full ``state``; a private
action sends other audiences nothing and moves none of their versions; an audience's bytes are
encoded once; spectators are batched; a replay of the log derives the same audience versions.
"""
from __future__ import annotations

import itertools
import json
import random
from typing import Any, cast

import orjson
import pytest

from app.delta import apply_patch
from app.games import registry
from app.games.base import ADMIN, SPECTATOR
from app.runtime.logwriter import LogWriter
from app.runtime.match import MatchRunner
from app.runtime.replay import replay
from app.runtime.rows import LogRow, MatchRow
from app.runtime.wire import CLOSE_UNAUTHORIZED
from tests.games.test_conformance import random_step
from tests.runtime.twins import Clock, FakeLogWriter, FakePeer, make_runner

provinces = registry()["provinces"]


def exact(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True)


class Client:
    """A client written from docs/protocol.md: a full ``state`` resets the document; a ``delta``
    applies to it when its ``base`` is the version held."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] | None = None
        self.version: int | None = None
        self.seen = 0

    def feed(self, messages: list[dict[str, Any]]) -> None:
        for msg in messages[self.seen:]:
            if msg["type"] == "state":
                self.doc = {"status": msg["status"], "prompts": msg["prompts"], "view": msg["view"]}
                self.version = msg["version"]
            elif msg["type"] == "delta":
                assert msg["base"] == self.version, (msg["base"], self.version)
                assert msg["version"] > msg["base"]
                self.doc = apply_patch(self.doc, msg["patch"])
                self.version = msg["version"]
        self.seen = len(messages)


def full_doc(runner: MatchRunner, viewer: int) -> dict[str, Any]:
    st = runner.current_state(viewer)
    return {"status": st["status"], "prompts": st["prompts"], "view": st["view"]}


@pytest.mark.parametrize("game_id,seats", [("provinces", 3), ("conquest", 3), ("warrior", 2)])
@pytest.mark.parametrize("seed", range(6))
def test_a_client_applying_every_delta_holds_the_full_document_at_every_version(game_id, seats, seed):
    game = registry()[game_id]
    runner, writer, _, _ = make_runner(game, seats, seed=bytes([seed]) * 32)
    peers = {v: FakePeer(v, deltas=True) for v in [*range(seats), SPECTATOR, ADMIN]}
    clients = {v: Client() for v in peers}
    for peer in peers.values():
        runner.attach(peer)
    rng = random.Random(seed)
    seqs = itertools.count(1)
    for _ in range(120):
        if runner.status != "running":
            break
        step = random_step(game, runner.state, seats, rng, verify=False)
        assert step is not None
        seat, action = step
        runner.act(peers[seat], next(seqs), action)
        writer.commit()
        for v, peer in peers.items():
            assert not peer.of_type("error"), peer.of_type("error")
            clients[v].feed(peer.messages)
            assert clients[v].version == runner.audience_version(v)
            assert exact(clients[v].doc) == exact(full_doc(runner, v)), (game_id, seed, v)
    # every delta moved its audience by exactly one version (spectators unbatched here)
    for peer in peers.values():
        deltas = peer.of_type("delta")
        assert deltas and all(d["version"] == d["base"] + 1 for d in deltas)


def _provinces_on_turn(seats: int = 3):
    runner, writer, _, _ = make_runner(provinces, seats)
    seat = next(p.seat for p in runner.prompts)
    return runner, writer, seat


def test_a_private_action_sends_other_viewers_nothing_and_moves_no_other_version():
    """provinces.md 6.4: a ``set_dealing`` changes only what its seat may see."""
    runner, writer, seat = _provinces_on_turn()
    peers = {v: FakePeer(v, deltas=True) for v in [0, 1, 2, SPECTATOR]}
    for peer in peers.values():
        runner.attach(peer)
    before = {v: runner.audience_version(v) for v in peers}
    for p in peers.values():
        p.messages.clear()
    dealing = next(a.example for a in provinces.legal_actions(runner.state, seat)
                   if a.example.get("type") == "set_dealing")
    runner.act(peers[seat], 1, dealing)
    writer.commit()
    for v, peer in peers.items():
        if v == seat:
            assert [m["type"] for m in peer.messages] == ["delta", "ack"]  # the state first, then the ack
            assert peer.messages[1]["version"] == peer.messages[0]["version"] == before[v] + 1
        else:
            assert peer.messages == [], (v, peer.messages)
            assert runner.audience_version(v) == before[v]
    # the next public change moves every other audience by exactly one
    for p in peers.values():
        p.messages.clear()
    runner.act(peers[seat], 2, {"type": "end_turn"})
    writer.commit()
    for v, peer in peers.items():
        if v != seat:
            (delta,) = peer.of_type("delta")
            assert (delta["base"], delta["version"]) == (before[v], before[v] + 1)


def test_each_audience_is_encoded_once_for_all_its_sockets():
    runner, writer, seat = _provinces_on_turn()
    texts: list[list[str]] = []

    class TextPeer(FakePeer):
        texts: list[str]

        def push(self, text: str) -> None:
            self.texts.append(text)

    spectators = []
    for _ in range(1000):
        p = TextPeer(SPECTATOR, deltas=True)
        p.texts = []
        texts.append(p.texts)
        spectators.append(p)
        runner.attach(p)
    actor = FakePeer(seat, deltas=True)
    runner.attach(actor)
    runner.act(actor, 1, {"type": "end_turn"})
    writer.commit()
    last = [t[-1] for t in texts]
    assert orjson.loads(last[0])["type"] == "delta"
    assert all(t is last[0] for t in last)  # the same str object: built and encoded once


def test_spectators_get_one_delta_per_interval_covering_every_change():
    game = provinces
    state = game.setup(3, game.Options.model_validate({}), b"s" * 32)
    writer = FakeLogWriter()
    timers: list[tuple[float, Any]] = []
    clock = Clock()
    deadlines = {p.phase_id: clock() + p.deadline_seconds for p in game.prompts(state)}
    match = {"id": "m1", "game": "provinces", "seed": (b"s" * 32).hex(), "seed_hash": "h", "seat_count": 3,
             "seats": [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(3)], "options": {}}
    runner = MatchRunner(match=cast(MatchRow, match), game=game, state=state, version=0, deadlines=deadlines,
                         log_writer=cast(LogWriter, writer), schedule=lambda *a: None, on_finished=lambda r: None,
                         now=clock, spectator_patch_seconds=0.1,
                         call_later=lambda delay, fn: timers.append((delay, fn)) or _Handle())
    spectator = FakePeer(SPECTATOR, deltas=True)
    runner.attach(spectator)
    seats = {s: FakePeer(s, deltas=True) for s in range(3)}
    for p in seats.values():
        runner.attach(p)
    for seq in range(1, 4):
        seat = next(p.seat for p in runner.prompts)
        runner.act(seats[seat], seq, {"type": "end_turn"})
        writer.commit()
    assert [m["type"] for m in spectator.messages] == ["state"]  # nothing yet: batched
    assert len(timers) == 1 and timers[0][0] == 0.1  # one send scheduled, not one per change
    timers[0][1]()
    delta = spectator.messages[-1]
    assert delta["type"] == "delta" and delta["base"] == 0 and delta["version"] == runner.audience_version(SPECTATOR)
    assert delta["version"] == 3 and {e["v"] for e in delta["events"]} <= {1, 2, 3}
    client = Client()
    client.feed(spectator.messages)
    assert exact(client.doc) == exact(full_doc(runner, SPECTATOR))


class _Handle:
    def cancel(self) -> None:
        pass


def test_since_version_beyond_the_newest_is_refused():
    runner, _writer, _seat = _provinces_on_turn()
    resumed = FakePeer(1, deltas=True)
    runner.attach(resumed, since_version=5)
    assert resumed.messages[-1]["code"] == "bad_version" and resumed not in runner.peers
    assert resumed.closed is None  # a resume: the socket stays open
    hello = FakePeer(1, deltas=True)
    runner.attach(hello, since_version=1, from_hello=True)
    assert hello.messages[-1]["code"] == "bad_version" and hello.closed[0] == CLOSE_UNAUTHORIZED


def test_act_version_is_the_seats_audience_version():
    runner, writer, seat = _provinces_on_turn()
    actor = FakePeer(seat, deltas=True)
    runner.attach(actor)
    runner.act(actor, 1, {"type": "end_turn"}, version=-1)
    runner.act(actor, 2, {"type": "end_turn"}, version=1)
    assert [m["code"] for m in actor.of_type("error")] == ["bad_version", "bad_version"]
    assert runner.version == 0


@pytest.mark.parametrize("game_id,seats", [("provinces", 3), ("conquest", 4), ("warrior", 3)])
def test_a_replay_of_the_log_derives_the_same_audience_versions(game_id, seats):
    """Audience versions are a function of the log: a node that rebuilds the match gives every
    audience the numbers its sockets already hold (resume works across nodes)."""
    game = registry()[game_id]
    runner, writer, _, _ = make_runner(game, seats, seed=b"r" * 32)
    peers = {s: FakePeer(s) for s in range(seats)}
    for p in peers.values():
        runner.attach(p)
    rng = random.Random(7)
    for seq in range(1, 150):
        if runner.status != "running":
            break
        seat, action = random_step(game, runner.state, seats, rng, verify=False)
        runner.act(peers[seat], seq, action)
        writer.commit()
    match = {"id": "m1", "game": game_id, "seed": (b"r" * 32).hex(), "seed_hash": "h", "seat_count": seats,
             "seats": [], "options": {},
             "deadlines": {str(k): v for k, v in make_runner(game, seats, seed=b"r" * 32)[0].deadlines.items()}}
    result = replay(cast(MatchRow, match), cast(list[LogRow], writer.rows), keep_events=MatchRunner.HISTORY)
    assert result.book is not None and result.book.versions == runner.book.versions
    assert [av for _v, _e, av in result.history] == [av for _v, _e, av in runner.history]
    assert {k: tuple(v) for k, v in result.phase_start_versions.items() if k in runner._phase_start} == \
        {k: v for k, v in runner._phase_start.items()}
    assert exact(result.book.docs) == exact(runner.book.docs)
