"""The JavaScript SDK's ``MatchConnection`` (clients/js/src/connection.ts), as the web client loads it
(app/web/js/sdk/bannerfall-client.js), applies deltas like the Python client: run in node with a
stand-in WebSocket, fed the same synthetic frames as tests/client/test_socket_deltas.py, it says
``deltas: true`` in hello, hands its listeners full states (synthesized from deltas, equal to the
server's full state of that version), resumes from the held version on a gap or a bad patch, drops
deltas until the next full state, takes a full state as it is, and hands each event on once (by
``v``). Skipped when ``node`` is not installed."""
from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from app.games import registry
from app.games.base import SPECTATOR
from tests.client.test_socket_deltas import delta, game_states, state
from tests.conftest import ROOT

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

RUNNER = """
import { readFileSync } from "node:fs";
class FakeSocket {
  constructor(url) { this.url = url; this.readyState = 1; this.sent = []; FakeSocket.last = this; }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() {}
}
const { MatchConnection } = await import("./sdk.mjs");
const { frames, deltas } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const got = [];
const events = [];
// the listener keeps a snapshot, then wrecks the view it got: nothing of that may reach the held document
const onMessage = (m) => {
  got.push(JSON.parse(JSON.stringify(m)));
  if (m.view && typeof m.view === "object") for (const k of Object.keys(m.view)) delete m.view[k];
};
const conn = new MatchConnection({ baseUrl: "http://bannerfall.test", matchId: "m1", token: "tok", deltas,
  WebSocket: FakeSocket, heartbeatMs: 0 });
conn.on("state", onMessage);
conn.on("ended", onMessage);
conn.on("error", onMessage);
conn.on("events", (evs) => events.push(...evs));
const ws = FakeSocket.last;
ws.onopen();
for (const f of frames) ws.onmessage({ data: JSON.stringify(f) });
conn.close();
process.stdout.write(JSON.stringify({ got, sent: ws.sent, url: ws.url, version: conn.version, resumes: conn.resumes,
  events }));
"""


def run_conn(tmp_path, frames: list[dict[str, Any]], deltas: bool = True) -> dict[str, Any]:
    (tmp_path / "sdk.mjs").write_text((ROOT / "app" / "web" / "js" / "sdk" / "bannerfall-client.js").read_text())
    (tmp_path / "run.mjs").write_text(RUNNER)
    (tmp_path / "in.json").write_text(json.dumps({"frames": frames, "deltas": deltas}))
    assert NODE is not None
    res = subprocess.run([NODE, str(tmp_path / "run.mjs"), str(tmp_path / "in.json")], capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def plain(msg: dict[str, Any]) -> str:
    assert msg["via_delta"] is True
    return json.dumps({k: v for k, v in msg.items() if k != "via_delta"}, sort_keys=True)


@pytest.mark.parametrize("deltas", [True, False])
def test_hello_says_deltas(tmp_path, deltas):
    out = run_conn(tmp_path, [state(0, {"n": 0})], deltas)
    assert out["sent"][0] == {"type": "hello", "token": "tok", "deltas": deltas, "since_version": 0, "protocol": 1}
    assert out["url"] == "ws://bannerfall.test/ws/matches/m1"


def test_every_delta_of_seeded_matches_makes_the_full_state(tmp_path):
    count = 0
    for game_id in sorted(registry()):
        for viewer in (0, SPECTATOR):
            states = game_states(game_id, 2, b"conn-js-" + game_id.encode(), 30, viewer)
            frames = [states[0], *(delta(a, b) for a, b in zip(states, states[1:], strict=False))]
            out = run_conn(tmp_path, frames)
            assert len(out["got"]) == len(states) > 10
            for got, want in zip(out["got"], states, strict=True):
                if got.get("via_delta"):
                    assert plain(got) == json.dumps(want, sort_keys=True)
                else:
                    assert got == want
            assert out["sent"][1:] == [] and out["resumes"] == 0  # only the hello
            assert [e["v"] for e in out["events"]] == [s["version"] for s in states if s["events"]]
            count += len(states)
    assert count > 100


def test_a_gap_or_a_bad_patch_resumes_and_deltas_wait_for_the_next_state(tmp_path):
    s = [state(v, {"n": v, "hand": list(range(v))}) for v in range(10)]
    bad = delta(s[6], s[7]) | {"patch": [{"op": "remove", "path": "/view/nothing"}]}
    frames = [s[0], delta(s[0], s[1]),
              delta(s[2], s[3]),  # base 2, held 1: resume from 1
              delta(s[1], s[2]),  # dropped: waiting for the full state
              {"type": "ack", "seq": 1, "version": 2},
              s[5], delta(s[5], s[6]),
              bad,                # does not apply: resume from 6
              delta(s[7], s[8]),  # dropped
              s[8], delta(s[8], s[9])]
    out = run_conn(tmp_path, frames)
    assert out["sent"][1:] == [{"type": "resume", "since_version": 1}, {"type": "resume", "since_version": 6}]
    assert [(m["type"], m.get("version"), bool(m.get("via_delta"))) for m in out["got"]] == [
        ("state", 0, False), ("state", 1, True), ("state", 5, False), ("state", 6, True), ("state", 8, False),
        ("state", 9, True)]  # the ack is the connection's own (it resolves act), not the page's
    assert plain(out["got"][-1]) == json.dumps(s[9], sort_keys=True)
    assert out["version"] == 9 and out["resumes"] == 2


def test_events_are_handed_on_once_by_v(tmp_path):
    def ev(v: int) -> dict[str, Any]:
        return {"v": v, "type": "step", "n": v}

    s = [state(v, {"n": v}, events=[ev(v)] if v else []) for v in range(6)]
    frames = [s[0], delta(s[0], s[1]), delta(s[1], s[2]),
              s[2] | {"events": [ev(1), ev(2)]},         # a full state repeating events handed on already
              delta(s[2], s[3]),
              s[4] | {"events": [ev(2), ev(3), ev(4)]},  # the answer to a hello from an older version
              delta(s[4], s[5])]
    out = run_conn(tmp_path, frames)
    assert [e["v"] for e in out["events"]] == [1, 2, 3, 4, 5]
    assert [[e["v"] for e in m["events"]] for m in out["got"]] == [[], [1], [2], [], [3], [4], [5]]
