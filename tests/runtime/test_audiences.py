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
from tests.games.test_conformance import random_step, sample
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


@pytest.mark.parametrize("game_id", list(registry()))
@pytest.mark.parametrize("seed", range(6))
def test_a_client_applying_every_delta_holds_the_full_document_at_every_version(game_id, seed):
    game = registry()[game_id]
    seats = [game.info.min_seats, min(3, game.info.max_seats)][seed % 2]
    runner, writer, _, _ = make_runner(game, seats, dict(game.info.test_options), seed=bytes([seed]) * 32)
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


@pytest.mark.parametrize("game_id", list(registry()))
def test_a_replay_of_the_log_derives_the_same_audience_versions(game_id):
    """Audience versions are a function of the log: a node that rebuilds the match gives every
    audience the numbers its sockets already hold (resume works across nodes)."""
    game = registry()[game_id]
    seats = game.info.max_seats
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
    assert result.snapshot.versions == runner.durable.versions
    assert [av for _v, _e, av in result.history] == [av for _v, _e, av in runner.history]
    assert result.snapshot.phase_starts == runner.durable.phase_starts
    assert result.snapshot.docs == runner.durable.docs


# ------------------------------------------------------------------ actions others may not see (issue 26 A)

class TextPeer(FakePeer):
    """A peer that keeps the exact text of every message (to compare bytes)."""

    def __init__(self, viewer: int, *, deltas: bool = True) -> None:
        super().__init__(viewer, deltas=deltas)
        self.texts: list[str] = []

    def push(self, text: str) -> None:
        self.texts.append(text)
        super().push(text)


#: Conquest with every special in every loadout, three of them free: their uses by a seat with or
#: without a prompt are part of the random play below (conquest.md 5)
_SPECIALS_OPTIONS = {"special_costs": {"scout": 0, "spy": 0, "hound": 0}}


def _options(game_id: str, seats: int) -> dict[str, Any]:
    if game_id != "conquest":
        return {}
    from app.games.conquest.specials import SPECIALS
    return {"loadouts": [list(SPECIALS)] * seats, **_SPECIALS_OPTIONS}


def _anytime_step(game, state, seats: int, rng: random.Random) -> tuple[int, dict[str, Any]] | None:
    """A legal action of any moment (``unprompted_actions``) of a seat without a prompt, or None."""
    prompted = {p.seat for p in game.prompts(state)}
    seats_free = [s for s in range(seats) if s not in prompted]
    rng.shuffle(seats_free)
    for seat in seats_free:
        kinds = [k for k in game.legal_actions(state, seat) if k.type in game.info.unprompted_actions]
        if kinds:
            return seat, dict(rng.choice(kinds).example)
    return None


def _scout_step(game, state, seats: int, rng: random.Random) -> tuple[int, dict[str, Any]] | None:
    """A free scout (no price, its effect the seat's alone) of any living seat, or None."""
    for seat in rng.sample(range(seats), seats):
        for land in rng.sample(range(state.board.size), state.board.size):
            action = {"type": "special", "special": "scout", "land": land}
            if game.can_act(state, seat, action) and not state.shields.get(land):
                return seat, action
    return None


@pytest.mark.parametrize("game_id,seats", [("provinces", 3), ("conquest", 3), ("conquest", 2), ("warrior", 3)])
@pytest.mark.parametrize("seed", range(3))
def test_an_action_a_viewer_cannot_see_leaves_its_version_events_and_bytes_alone(game_id, seats, seed):
    """protocol.md ("nothing you receive … counts the actions you could not see"), provinces.md 6.4:
    random play through the runner, with replaced submissions and (Conquest) specials used with and
    without a prompt. After every accepted action, every other audience whose document did not change
    received no byte and kept its version; one whose document changed got exactly one message."""
    from tests.games.test_conformance import _resubmission

    game = registry()[game_id]
    runner, writer, _, _ = make_runner(game, seats, _options(game_id, seats), seed=bytes([seed + 40]) * 32)
    peers = {v: TextPeer(v, deltas=v != SPECTATOR or seed % 2 == 0) for v in [*range(seats), SPECTATOR]}
    for peer in peers.values():
        runner.attach(peer)
    rng = random.Random(seed)
    seqs = itertools.count(1)
    unseen = replaced = anytime = 0
    for _ in range(400):
        if runner.status != "running":
            break
        roll = rng.random()
        step = None
        if roll < 0.25:
            step = _resubmission(game, runner.state, rng)
            replaced += step is not None
        elif roll < 0.4 and game_id == "conquest":
            step = _anytime_step(game, runner.state, seats, rng) or _scout_step(game, runner.state, seats, rng)
            anytime += step is not None
        step = step or random_step(game, runner.state, seats, rng, verify=False)
        assert step is not None
        seat, action = step
        before = {v: (exact(full_doc(runner, v)), runner.audience_version(v), len(p.texts)) for v, p in peers.items()}
        seq = next(seqs)
        runner.act(peers[seat], seq, action)
        writer.commit()
        assert not peers[seat].of_type("error"), (action, peers[seat].of_type("error"))
        assert {"type": "ack", "seq": seq, "version": runner.audience_version(seat)} in peers[seat].messages
        for v, peer in peers.items():
            if v == seat:
                continue
            doc, version, sent = before[v]
            if exact(full_doc(runner, v)) == doc:
                unseen += 1
                assert peer.texts[sent:] == [], (game_id, v, action, peer.texts[sent:])
                assert runner.audience_version(v) == version
            else:  # one message (and ``ended`` after the last one)
                kinds = [m["type"] for m in peer.messages[len(peer.messages) - len(peer.texts) + sent:]]
                assert kinds in (["delta"], ["state"], ["delta", "ended"], ["state", "ended"]), (v, action, kinds)
                assert runner.audience_version(v) == version + 1, (v, action)
    assert unseen
    if game_id != "provinces":
        assert replaced
    if game_id == "conquest":
        assert anytime


def _submissions(game, state, seat: int, rng: random.Random) -> list[dict[str, Any]]:
    """Up to three different legal submissions of ``seat`` in its simultaneous prompt now."""
    prompt = next(p for p in game.prompts(state) if p.seat == seat)
    bot = game.info.bots["random"](rng.randrange(1000))
    wire_prompt = {"seat": seat, "kind": prompt.kind, "phase_id": prompt.phase_id, "simultaneous": True,
                   "submitted": False, "deadline_at": None}
    found = [dict(prompt.default_action)]
    for _ in range(60):
        if len(found) == 3:
            break
        kinds = [k for k in game.legal_actions(state, seat) if k.type not in game.info.unprompted_actions]
        candidate = bot.decide(game.view(state, seat), wire_prompt) if rng.random() < 0.5 else \
            sample(rng, rng.choice(kinds))
        if candidate and candidate.get("type") not in game.info.unprompted_actions and candidate not in found \
                and game.can_act(state, seat, candidate):
            found.append(candidate)
    return found


@pytest.mark.parametrize("game_id,seats", [("conquest", 3), ("warrior", 3)])
@pytest.mark.parametrize("seed", range(4))
def test_replacing_a_submission_gives_others_byte_identical_messages(game_id, seats, seed):
    """Two matches with the same seed: in one, a seat submits its final choice at once; in the other
    it first submits two other choices and replaces them. Every other seat and the spectators get
    the very same bytes in both, to the end of the match: nothing counts the replacements."""
    game = registry()[game_id]
    rng = random.Random(seed)
    options = _options(game_id, seats)
    state = make_runner(game, seats, options, seed=bytes([seed + 7]) * 32)[0].state
    prefix: list[tuple[int, dict[str, Any]]] = []  # play up to a phase where a seat has choices
    for _ in range(300):
        waiting = [p for p in game.prompts(state) if p.simultaneous and not p.submitted]
        if len(waiting) >= 2:
            actor = waiting[0].seat
            choices = _submissions(game, state, actor, rng)
            if len(choices) >= 2:
                break
        step = random_step(game, state, seats, rng, verify=False)
        prefix.append(step)
        state, _ = game.apply(state, *step)
    else:
        raise AssertionError("no simultaneous phase with a choice")
    final, *others = choices[::-1]
    texts: list[dict[int, list[str]]] = []
    for plan in ([final], [*others, final]):
        runner, writer, _, _ = make_runner(game, seats, options, seed=bytes([seed + 7]) * 32)
        peers = {v: TextPeer(v) for v in [*range(seats), SPECTATOR]}
        for peer in peers.values():
            runner.attach(peer)
        seqs = {v: itertools.count(1) for v in peers}  # each seat numbers its own acts
        for seat, action in prefix:
            runner.act(peers[seat], next(seqs[seat]), action)
            writer.commit()
        for action in plan:
            runner.act(peers[actor], next(seqs[actor]), action)
            writer.commit()
        play_rng = random.Random(seed)  # the same play after it, in both matches
        for _ in range(300):
            if runner.status != "running":
                break
            seat, action = random_step(game, runner.state, seats, play_rng, verify=False)
            runner.act(peers[seat], next(seqs[seat]), action)
            writer.commit()
        assert not [m for p in peers.values() for m in p.of_type("error")]
        texts.append({v: p.texts for v, p in peers.items() if v != actor})
    for v in texts[0]:
        assert len(texts[0][v]) == len(texts[1][v]), v
        for n, (one, two) in enumerate(zip(texts[0][v], texts[1][v], strict=True)):
            assert one == two, (v, n, one, two)


def test_a_sort_of_hidden_jokers_gives_others_byte_identical_messages():
    """provinces.md 6.4, the issue's case: seat 1 holds ``[5, joker, 6]`` and sorts it to
    ``[joker, 5, 6]`` and back, again and again (the visible order stays ``[5, 6]``); seat 0 and the
    spectators get exactly the bytes of a turn without those sorts."""
    from app.games.provinces.testing import build_position

    texts = []
    for sorts in (0, 5):
        state = build_position(cells=[(0, 0), (1, 0), (2, 0)], owners=[0, 1, 1],
                               garrisons=[["2"], ["5", "joker", "6"], ["3"]], current=1, shoe=["4"] * 6)
        runner, writer, _, _ = make_runner(provinces, 2, state=state)
        peers = {v: TextPeer(v) for v in (0, 1, SPECTATOR)}
        for peer in peers.values():
            runner.attach(peer)
        five, joker, six = (c[0] for c in state.garrisons[1])  # the cards' tokens
        orders = [[joker, five, six], [five, six, joker], [five, joker, six]]
        for n in range(sorts):
            runner.act(peers[1], n + 1, {"type": "sort", "province": 1, "order": orders[n % 3]})
            writer.commit()
            assert peers[1].messages[-1]["type"] == "ack"
        if sorts:
            runner.act(peers[1], 99, {"type": "sort", "province": 1, "order": [five, joker, six]})
            writer.commit()
        assert runner.audience_version(0) == runner.audience_version(SPECTATOR) == 0
        runner.act(peers[1], 100, {"type": "end_turn"})
        writer.commit()
        texts.append({v: peers[v].texts for v in (0, SPECTATOR)})
    assert texts[0] == texts[1]


def test_a_resume_gets_the_same_events_whatever_others_did_that_it_could_not_see(monkeypatch):
    """The event window is counted per audience (``app/runtime/history.py``): seat 1 makes 30 sorts
    of a hidden joker, more records than the window holds (8 here); seat 0's ``hello`` with
    ``since_version: 0`` still gets every event it could see and ``events_complete`` as if seat 1 had
    made none — byte for byte — and a match rebuilt from the log answers the same."""
    from app.games.provinces.testing import build_position
    from app.runtime.history import EventHistory

    monkeypatch.setattr(MatchRunner, "HISTORY", 8)
    answers = []
    for hidden in (0, 30):
        state = build_position(cells=[(0, 0), (1, 0), (2, 0)], owners=[0, 1, 1],
                               garrisons=[["2"], ["5", "joker", "6"], ["3"]], current=1, shoe=["4"] * 6)
        runner, writer, _, _ = make_runner(provinces, 2, state=state)
        peers = {v: TextPeer(v) for v in (0, 1, SPECTATOR)}
        for peer in peers.values():
            runner.attach(peer)
        five, joker, six = (c[0] for c in state.garrisons[1])  # the cards' tokens
        seq = itertools.count(1)
        for order in ([six, joker, five], [five, joker, six], [six, joker, five]):  # seen by everyone
            runner.act(peers[1], next(seq), {"type": "sort", "province": 1, "order": order})
            writer.commit()
        for n in range(hidden):  # the joker moves, the visible order [6, 5] stays
            order = [[joker, six, five], [six, five, joker], [six, joker, five]][n % 3]
            runner.act(peers[1], next(seq), {"type": "sort", "province": 1, "order": order})
            writer.commit()
        assert runner.version == 3 + hidden and runner.audience_version(0) == 3
        for viewer in (0, SPECTATOR):
            late = TextPeer(viewer)
            runner.attach(late, since_version=0, from_hello=True)
            state_msg = orjson.loads(late.texts[-1])
            assert state_msg.get("events_complete", True) and [e["v"] for e in state_msg["events"]] == [1, 2, 3]
            answers.append((hidden, viewer, late.texts[-1]))
        rebuilt = EventHistory(8, 3, list(runner.history), runner.history.start)  # as a rebuild hands it over
        for i, viewer in enumerate((0, 1, SPECTATOR)):
            assert rebuilt.floor[i] == runner.history.floor[i]
            assert rebuilt.events_between(i, viewer, 0, 99) == runner.history.events_between(i, viewer, 0, 99)
    by_viewer: dict[int, set[str]] = {}
    for _hidden, viewer, text in answers:
        by_viewer.setdefault(viewer, set()).add(text)
    assert all(len(texts) == 1 for texts in by_viewer.values()), by_viewer


@pytest.mark.parametrize("game_id,seats", [("provinces", 3), ("conquest", 3), ("warrior", 3)])
def test_a_replay_keeps_what_the_runner_keeps_with_a_small_window(game_id, seats, monkeypatch):
    """With a window of 8 records (per audience), a replay of the log keeps the records the live
    runner kept and a runner rebuilt from it answers every audience's resume the same."""
    from app.runtime.history import EventHistory

    monkeypatch.setattr(MatchRunner, "HISTORY", 8)
    game = registry()[game_id]
    runner, writer, _, _ = make_runner(game, seats, seed=b"w" * 32)
    peers = {s: FakePeer(s) for s in range(seats)}
    for p in peers.values():
        runner.attach(p)
    rng = random.Random(3)
    from tests.games.test_conformance import _resubmission

    match = {"id": "m1", "game": game_id, "seed": (b"w" * 32).hex(), "seed_hash": "h", "seat_count": seats,
             "seats": [], "options": {},
             "deadlines": {str(k): v for k, v in make_runner(game, seats, seed=b"w" * 32)[0].deadlines.items()}}
    compared = 0
    for seq in range(1, 400):
        if runner.status != "running":
            break
        step = _resubmission(game, runner.state, rng) if rng.random() < 0.3 else None
        seat, action = step or random_step(game, runner.state, seats, rng, verify=False)
        runner.act(peers[seat], seq, action)
        writer.commit()
        kept = list(runner.history)
        if len(kept) == len(runner.history) or seq % 5:  # compare where records outlive the window
            continue
        result = replay(cast(MatchRow, match), cast(list[LogRow], writer.rows), keep_events=8)
        assert [(v, av) for v, _e, av in result.history] == [(v, av) for v, _e, av in kept]
        rebuilt = EventHistory(8, seats + 1, result.history, result.history_floor)
        assert rebuilt.floor == runner.history.floor
        for i, viewer in enumerate([*range(seats), SPECTATOR]):
            for after in range(max(0, runner.audience_version(viewer) - 12), runner.audience_version(viewer) + 1):
                assert rebuilt.events_between(i, viewer, after, runner.version) == \
                    runner.history.events_between(i, viewer, after, runner.version)
        compared += 1
    assert compared, "no record outlived the window of 8"
