"""The Python client applies deltas (issue 11 item 1; docs/protocol.md "Deltas, audiences and
versions"): fed synthetic message sequences, ``MatchSocket`` hands callers full states (synthesized
from deltas, equal to the server's full state of that version), resumes on a gap or a bad patch and
drops deltas until the next full state, and ``play`` decides on states only, whichever of ``ack`` and
``state`` comes first. No server is needed: the frames are built here from real game views."""
from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import orjson
import pytest
import websockets

from app.client.socket import MatchSocket, play
from app.delta import diff
from app.games import registry
from app.games.base import SPECTATOR
from tests.games.test_conformance import random_step


class FakeWS:
    """Stands in for a websockets connection: frames to deliver, and what the client sent."""

    def __init__(self, frames: list[Any] | None = None) -> None:
        self.inbox: asyncio.Queue[str] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []
        self.on_send = None
        for f in frames or []:
            self.push(f)

    def push(self, frame: Any) -> None:
        self.inbox.put_nowait(frame if isinstance(frame, str) else orjson.dumps(frame).decode())

    async def recv(self) -> str:
        return await self.inbox.get()

    async def send(self, text: str) -> None:
        msg = json.loads(text)
        self.sent.append(msg)
        if self.on_send is not None:
            self.on_send(msg)

    async def close(self) -> None:
        pass


def sock_with(frames: list[Any], **kw: Any) -> tuple[MatchSocket, FakeWS]:
    sock = MatchSocket("http://bannerfall.test", "m1", "tok", **kw)
    ws = FakeWS(frames)
    sock.ws = ws
    return sock, ws


def state(version: int, view: dict[str, Any], *, prompts: list | None = None, status: str = "running",
          events: list | None = None, seat: int | None = 0) -> dict[str, Any]:
    return {"type": "state", "match_id": "m1", "game": "toy", "version": version, "status": status,
            "seat": seat, "viewer": "seat" if seat is not None else "spectator", "prompts": prompts or [],
            "view": view, "events": events or []}


def delta(old: dict[str, Any], new: dict[str, Any], *, events: list | None = None) -> dict[str, Any]:
    """The server's delta from full state ``old`` to full state ``new``."""
    def doc(s):
        return {"status": s["status"], "prompts": s["prompts"], "view": s["view"]}
    return {"type": "delta", "match_id": "m1", "base": old["version"], "version": new["version"],
            "patch": diff(doc(old), doc(new)), "events": events if events is not None else new["events"]}


def without_marker(msg: dict[str, Any]) -> dict[str, Any]:
    """A synthesized state without its ``via_delta`` mark (which it must have)."""
    assert msg["via_delta"] is True
    return {k: v for k, v in msg.items() if k != "via_delta"}


def game_states(game_id: str, seats: int, seed: bytes, steps: int, viewer: int) -> list[dict[str, Any]]:
    """Full states of a seeded random match for one viewer, one per version (versions 0..)."""
    game = registry()[game_id]
    rng = random.Random(seed)
    st = game.setup(seats, None, seed)
    seat = None if viewer == SPECTATOR else viewer
    out = [state(0, json.loads(json.dumps(game.view(st, viewer))), seat=seat)]
    for _ in range(steps):
        if game.outcome(st) is not None:
            break
        step = random_step(game, st, seats, rng, verify=False)
        assert step is not None
        st, _ = game.apply(st, *step)
        v = len(out)
        prompts = [{"seat": v % seats, "kind": "turn", "phase_id": v, "simultaneous": False,
                    "submitted": False, "deadline_at": None}]
        out.append(state(v, json.loads(json.dumps(game.view(st, viewer))), prompts=prompts, seat=seat,
                         events=[{"v": v, "type": "step", "n": v}]))
    return out


# -- hello ------------------------------------------------------------------------------------
@pytest.mark.parametrize("deltas", [True, False])
async def test_hello_always_says_deltas_and_a_real_socket_applies_them(deltas):
    hellos: list[dict[str, Any]] = []
    s0 = state(0, {"hand": [1, 2], "a/b": {"c~d": 1}})
    s1 = state(1, {"hand": [1, 2, 3], "a/b": {"c~d": 2}}, events=[{"v": 1, "type": "drew"}])

    async def handler(ws):
        hellos.append(json.loads(await ws.recv()))
        await ws.send(orjson.dumps(s0).decode())
        await ws.send(orjson.dumps(delta(s0, s1)).decode())
        await ws.wait_closed()

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        sock = MatchSocket(f"http://127.0.0.1:{port}", "m1", "tok", deltas=deltas, as_="spectator")
        await sock.connect(since_version=0)
        assert await sock.recv(timeout=5) == s0
        assert without_marker(await sock.recv(timeout=5)) == s1
        await sock.close()
    assert hellos == [{"type": "hello", "token": "tok", "deltas": deltas, "protocol": 1, "as": "spectator",
                       "since_version": 0}]
    assert sock.hello()["deltas"] is deltas and "since_version" not in sock.hello()


# -- applying deltas --------------------------------------------------------------------------
@pytest.mark.parametrize("game_id", sorted(registry()))
async def test_synthesized_states_equal_the_full_states_for_every_viewer(game_id):
    """A seat and a spectator, a few seeded matches per game: every delta, applied, gives exactly
    the full state of its version (1 and 1.0 and true told apart)."""
    game = registry()[game_id]
    for i in range(4):
        seats = min(max(game.info.min_seats, 2 + i % 2), game.info.max_seats)
        for viewer in (0, SPECTATOR):
            states = game_states(game_id, seats, b"client-%s-%d" % (game_id.encode(), i), 40, viewer)
            assert len(states) > 5
            frames: list[Any] = [states[0]]
            frames += [delta(a, b) for a, b in zip(states, states[1:], strict=False)]
            sock, ws = sock_with(frames)
            assert await sock.recv(timeout=1) == states[0]
            for expected in states[1:]:
                got = without_marker(await sock.recv(timeout=1))
                assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True), (game_id, i)
                assert sock.version == expected["version"]
            assert ws.sent == [] and sock.resumes == 0


async def test_a_spectator_delta_may_skip_versions_and_a_state_always_resets():
    s0, s3 = state(0, {"n": 0}, seat=None), state(3, {"n": 3, "x": [1]}, seat=None)
    s4 = state(4, {"n": 4}, seat=None, status="finished")
    other = state(9, {"fresh": True}, seat=None)  # a full state is taken as is, whatever came before
    sock, ws = sock_with([s0, delta(s0, s3), delta(s3, s4), other, delta(other, s4 | {"version": 10})])
    assert (await sock.recv(1))["version"] == 0
    assert without_marker(await sock.recv(1)) == s3
    assert without_marker(await sock.recv(1)) == s4
    assert await sock.recv(1) == other and sock.version == 9
    assert without_marker(await sock.recv(1)) == s4 | {"version": 10}
    assert ws.sent == []


async def test_the_caller_may_change_what_it_got_without_harm():
    s0, s1, s2 = state(0, {"hand": [1]}), state(1, {"hand": [1, 2]}), state(2, {"hand": [1, 2, 3]})
    sock, _ = sock_with([s0, delta(s0, s1), delta(s1, s2)])
    (await sock.recv(1))["view"]["hand"].append(99)
    (await sock.recv(1))["view"]["hand"].clear()
    assert without_marker(await sock.recv(1)) == s2


# -- gaps -------------------------------------------------------------------------------------
async def test_a_gap_sends_resume_once_and_drops_deltas_until_the_next_state():
    s = [state(v, {"n": v}) for v in range(8)]
    ack = {"type": "ack", "seq": 1, "version": 2}
    frames = [s[0], delta(s[0], s[1]),
              delta(s[2], s[3]),  # base 2, held 1: a gap
              delta(s[1], s[2]),  # would apply, but the socket waits for the full state now
              ack,                # other messages still come through
              delta(s[3], s[4]),
              s[5] | {"events": [{"v": 2, "type": "x"}]},  # the resume's answer
              delta(s[5], s[6])]
    sock, ws = sock_with(frames, record=True)
    assert (await sock.recv(1))["version"] == 0
    assert without_marker(await sock.recv(1)) == s[1]
    assert await sock.recv(1) == ack
    assert ws.sent == [{"type": "resume", "since_version": 1}]
    assert (await sock.recv(1))["version"] == 5 and sock.version == 5
    assert without_marker(await sock.recv(1)) == s[6]
    assert ws.sent == [{"type": "resume", "since_version": 1}] and sock.resumes == 1
    # raw frames: every one, dropped deltas included, as bytes; received: what the caller got
    assert [k for k, _ in sock.raw_received] == ["state", "delta", "delta", "delta", "ack", "delta", "state", "delta"]
    assert [orjson.loads(b) for _, b in sock.raw_received] == frames
    assert [m["version"] for m in sock.received] == [0, 1, 2, 5, 6]
    assert [m.get("via_delta", False) for m in sock.received] == [False, True, False, False, True]


@pytest.mark.parametrize("bad", [
    {"patch": [{"op": "remove", "path": "/view/nothing"}]},
    {"patch": [{"op": "replace", "path": "/view/hand/5", "value": 1}]},
    {"patch": [{"op": "move", "from": "/view/hand", "path": "/view/x"}]},
    {"patch": [{"op": "add", "path": "view", "value": 1}]},
    {"patch": [{"op": "replace", "path": "", "value": [1]}]},  # the document must stay {status, prompts, view}
    {"patch": [{"op": "replace", "path": ""}]},
    {"patch": [{"path": 3}]},
    {"patch": {"op": "add"}},
    {"patch": ["x"]},
    {"version": 1},  # not after its base
    {"version": "2"},
    {"base": None},
])
async def test_a_patch_that_does_not_apply_resumes_from_the_held_version(bad):
    s1, s2 = state(1, {"hand": [1, 2]}), state(2, {"hand": [1, 2, 3]})
    good = delta(s1, s2)
    frames = [s1, good | bad, good, s2 | {"version": 7}]
    sock, ws = sock_with(frames)
    await sock.recv(1)
    assert await sock.recv(1) == s2 | {"version": 7}  # the broken delta and the next one were dropped
    assert ws.sent == [{"type": "resume", "since_version": 1}]


async def test_deltas_before_any_state_are_dropped_silently():
    s0, s1 = state(0, {"n": 0}), state(1, {"n": 1})
    sock, ws = sock_with([delta(s0, s1), s1])
    assert await sock.recv(1) == s1
    assert ws.sent == [] and sock.resumes == 0


# -- play decides on states only --------------------------------------------------------------
@pytest.mark.parametrize("ack_first", [False, True])
@pytest.mark.parametrize("via_deltas", [True, False])
async def test_play_decides_on_the_state_of_the_acked_version_in_either_order(ack_first, via_deltas):
    """The server answers each act with its state (or delta) and its ack, in the spec's order
    (state first) or today's (ack first): play decides once per version, on that version's view,
    and sends that version."""
    prompt = [{"seat": 0, "kind": "turn", "phase_id": 0, "simultaneous": False, "submitted": False,
               "deadline_at": None}]
    states = [state(v, {"n": v}, prompts=prompt) for v in range(4)]
    states[3] = state(3, {"n": 3}, status="finished")
    sock, ws = sock_with([states[0]])
    acts: list[dict[str, Any]] = []

    def server(msg):
        if msg["type"] != "act":
            return
        acts.append(msg)
        v = msg["version"] + 1
        if msg["action"]["n"] != msg["version"]:
            ws.push({"type": "error", "code": "stale_version", "message": "stale", "seq": msg["seq"]})
            return
        update = delta(states[v - 1], states[v]) if via_deltas else states[v]
        ack = {"type": "ack", "seq": msg["seq"], "version": v}
        for frame in ([ack, update] if ack_first else [update, ack]):
            ws.push(frame)
        if v == 3:
            ws.push({"type": "ended", "match_id": "m1", "status": "finished", "version": 3, "outcome": None,
                     "seed": "00", "seed_hash": "x"})

    ws.on_send = server
    seen: list[str] = []
    decided: list[int] = []

    def decide(view, p):
        decided.append(view["n"])
        return {"type": "go", "n": view["n"]}

    ended = await asyncio.wait_for(play(sock, decide, on_message=lambda m: seen.append(m["type"])), 5)
    assert ended["type"] == "ended"
    assert [(a["version"], a["action"]["n"]) for a in acts] == [(0, 0), (1, 1), (2, 2)]
    assert decided == [0, 1, 2]
    assert "delta" not in seen and seen.count("state") == 4
