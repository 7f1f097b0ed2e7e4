"""The match socket over a real server, on SQLite and Postgres: a whole match, bad input, dedupe,
spectators, seat replacement, resume, deadlines and admin tools; on both socket transports (lean on
every backend, ASGI in production mode: ``tests/conftest.py``, ``backends_and_transports``)."""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys

import pytest
import websockets

from app.client import ApiError, RestClient
from app.client.socket import play
from app.runtime.bots import make_bot
from tests.conftest import ROOT, backends_and_transports
from tests.e2e.helpers import connect, my_prompt, recv_until, start_match

pytestmark = backends_and_transports


async def _whose_turn(url, table):
    """Sockets for every seat, their first states, and the seat on turn."""
    socks, states = [], []
    for c in table.players:
        s, st = await connect(url, table.match_id, c.token)
        socks.append(s)
        states.append(st)
    turn_seat = states[0]["prompts"][0]["seat"]
    return socks, states, turn_seat


async def test_whole_match_over_sockets_then_verify(server, db_url):
    table = await start_match(server.url, "provinces", 3, options={"max_rounds": 6})
    spectator = RestClient(server.url)
    await spectator.register("watcher")
    try:
        spec_sock, spec_first = await connect(server.url, table.match_id, spectator.token)
        assert spec_first["viewer"] == "spectator" and spec_first["seat"] is None
        socks, firsts = [], []
        for c in table.players:
            s, first = await connect(server.url, table.match_id, c.token)
            socks.append(s)
            firsts.append(first)
        bots = [make_bot("provinces", "random", seat) for seat in range(3)]
        results = await asyncio.wait_for(
            asyncio.gather(*(play(s, b.decide, initial=f) for s, b, f in zip(socks, bots, firsts, strict=True))),
            timeout=60)
        ended = results[0]
        assert ended["type"] == "ended" and ended["status"] == "finished"
        assert hashlib.sha256(bytes.fromhex(ended["seed"])).hexdigest() == ended["seed_hash"]
        assert sorted(ended["outcome"]["ranks"]) == ["0", "1", "2"]
        spec_end = await recv_until(spec_sock, lambda m: m["type"] == "ended", timeout=30)
        assert spec_end["outcome"] == ended["outcome"]
        match = await table.players[0].match(table.match_id)
        assert match["status"] == "finished" and match["seed"] == ended["seed"]
        assert match["outcome"] == ended["outcome"]
        for s in socks + [spec_sock]:
            await s.close()
        env = {**os.environ, "BANNERFALL_DATABASE_URL": db_url}
        out = subprocess.run([sys.executable, "-m", "app.cli", "verify", table.match_id], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stdout.startswith("OK")
        out = subprocess.run([sys.executable, "-m", "app.cli", "replay", table.match_id], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
        replayed = re.search(r"(\d+) actions replayed", out.stdout)
        assert out.returncode == 0 and replayed is not None, out.stdout
        # versions on the wire are per audience: a seat's count no more than the match's actions
        assert int(replayed[1]) >= ended["version"] >= spec_end["version"] > 0
    finally:
        await table.close()
        await spectator.close()


async def test_bad_input_changes_nothing(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        other = 1 - turn
        version = states[0]["version"]

        last_error: dict = {}

        async def expect_error(sock, raw, code):
            await sock.ws.send(raw)
            msg = await recv_until(sock, lambda m: m["type"] in ("error", "ack"))
            assert msg["type"] == "error" and msg["code"] == code, msg
            assert msg["message"]
            last_error.clear()
            last_error.update(msg)

        await expect_error(socks[turn], "{not json", "malformed_json")
        await expect_error(socks[turn], "[1,2]", "malformed_message")
        await expect_error(socks[turn], json.dumps({"type": "teleport"}), "unknown_message_type")
        await expect_error(socks[turn], json.dumps({"type": "act", "seq": 1, "action": {"type": "nuke"}}),
                           "unknown_action")
        await expect_error(socks[turn], json.dumps({"type": "act", "seq": "x", "action": {"type": "end_turn"}}),
                           "bad_seq")
        await expect_error(socks[turn], json.dumps({"type": "act", "seq": 2, "action": "end_turn"}),
                           "malformed_action")
        await expect_error(socks[turn], json.dumps({"type": "act", "seq": 3, "action": {"type": "end_turn"},
                                                    "version": 99}), "bad_version")
        assert last_error["version"] == states[turn]["version"] and last_error["seq"] == 3  # the newest it may hold
        await expect_error(socks[other], json.dumps({"type": "act", "seq": 1, "action": {"type": "end_turn"}}),
                           "not_your_turn")
        await expect_error(socks[turn], json.dumps({"type": "ping", "pad": "x" * 20000}), "message_too_large")
        # nested deeper than anything could log or echo (orjson writes 254 levels): refused whole
        deep = "[" * 300 + "1" + "]" * 300
        await expect_error(socks[turn], '{"type":"act","seq":7,"action":{"type":"end_turn","x":' + deep + "}}",
                           "malformed_message")
        await expect_error(socks[turn], '{"type":"ping","t":' + deep + "}", "malformed_message")
        await expect_error(socks[turn], json.dumps({"type": "hello", "token": "t"}), "already_authenticated")
        # nothing above changed the match
        await socks[turn].send({"type": "resume", "since_version": version})
        st = await recv_until(socks[turn], lambda m: m["type"] == "state")
        assert st["version"] == version and st["events"] == []
        # a legal action still works, and is acked after it is durable
        seq = await socks[turn].act({"type": "end_turn"}, version=version)
        ack = await recv_until(socks[turn], lambda m: m["type"] in ("ack", "error"))
        assert ack == {"type": "ack", "seq": seq, "version": version + 1}
        # the other seat, deciding on the old version (before its phase began), is stale
        await expect_error(socks[other], json.dumps({"type": "act", "seq": 5, "action": {"type": "end_turn"},
                                                     "version": version}), "stale_version")
        for s in socks:
            await s.close()
    finally:
        await table.close()


async def test_wrong_token_and_missing_hello(server):
    table = await start_match(server.url, "provinces", 2)
    try:
        url = server.url.replace("http", "ws") + f"/ws/matches/{table.match_id}"
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"type": "hello", "token": "wrong"}))
            msg = json.loads(await ws.recv())
            assert msg["code"] == "unauthorized"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd.code == 4401
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"type": "act", "seq": 1, "action": {"type": "end_turn"}}))
            msg = json.loads(await ws.recv())
            assert msg["code"] == "hello_required"
        bad = server.url.replace("http", "ws") + "/ws/matches/nope"
        async with websockets.connect(bad) as ws:
            await ws.send(json.dumps({"type": "hello", "token": table.players[0].token}))
            assert json.loads(await ws.recv())["code"] == "not_found"
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"type": "hello", "token": table.players[0].token}))
            assert json.loads(await ws.recv())["type"] == "state"
            await ws.send(json.dumps({"type": "resume", "since_version": "a"}))
            assert json.loads(await ws.recv())["code"] == "bad_version"
        for bad in ({"as": "god"}, {"since_version": -5}, {"since_version": "abc"}):
            async with websockets.connect(url) as ws:
                await ws.send(json.dumps({"type": "hello", "token": table.players[0].token, **bad}))
                assert json.loads(await ws.recv())["code"] == "bad_hello"
        async with websockets.connect(url) as ws:  # as admin without the role
            await ws.send(json.dumps({"type": "hello", "token": table.players[0].token, "as": "admin"}))
            assert json.loads(await ws.recv())["code"] == "forbidden"
    finally:
        await table.close()


async def test_same_seq_applied_once(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        v = states[turn]["version"]
        raw = json.dumps({"type": "act", "seq": 42, "action": {"type": "end_turn"}})
        await socks[turn].ws.send(raw)
        await socks[turn].ws.send(raw)
        acks = []
        while len(acks) < 2:
            m = await socks[turn].recv(timeout=10)
            if m["type"] in ("ack", "error"):
                acks.append(m)
        assert acks[0] == acks[1] == {"type": "ack", "seq": 42, "version": v + 1}
        # reconnect and resend: still the same answer, nothing applied again
        await socks[turn].close()
        s2, st = await connect(server.url, table.match_id, table.players[turn].token)
        assert st["version"] == v + 1
        await s2.ws.send(raw)
        m = await recv_until(s2, lambda m: m["type"] in ("ack", "error"))
        assert m == {"type": "ack", "seq": 42, "version": v + 1}
        await asyncio.sleep(0.3)
        await s2.send({"type": "resume", "since_version": v + 1})
        st = await recv_until(s2, lambda m: m["type"] == "state")
        assert st["version"] == v + 1
        await s2.close()
        await socks[1 - turn].close()
    finally:
        await table.close()


async def test_spectator_cannot_act_and_newer_socket_replaces_older(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    watcher = RestClient(server.url)
    await watcher.register("w")
    try:
        spec, st = await connect(server.url, table.match_id, watcher.token)
        await spec.act({"type": "end_turn"})
        m = await recv_until(spec, lambda m: m["type"] == "error")
        assert m["code"] == "not_a_player"
        a, _ = await connect(server.url, table.match_id, table.players[0].token)
        b, st_b = await connect(server.url, table.match_id, table.players[0].token)
        assert st_b["seat"] == 0
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await recv_until(a, lambda m: False, timeout=10)
        assert closed.value.rcvd.code == 4001
        for s in (spec, b):
            await s.close()
    finally:
        await table.close()
        await watcher.close()


async def test_resume_sends_missed_events(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        v0 = states[0]["version"]
        await socks[1 - turn].close()
        await socks[turn].act({"type": "end_turn"}, version=v0)
        await recv_until(socks[turn], lambda m: m["type"] == "ack")
        sock = RestClient  # noqa: F841 - keep names short below
        s2, st = await connect(server.url, table.match_id, table.players[1 - turn].token, since_version=v0)
        assert st["version"] == v0 + 1
        assert st["events"] and all(e["v"] == v0 + 1 for e in st["events"])
        assert any(e["type"] == "turn_ended" for e in st["events"])
        assert my_prompt(st) is not None  # now it is this seat's turn
        await s2.close()
        await socks[turn].close()
    finally:
        await table.close()


async def test_turn_deadline_applies_end_turn(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 5})
    admin = RestClient(server.url, server.admin_token)
    try:
        s, st = await connect(server.url, table.match_id, table.players[0].token)
        first = st["prompts"][0]
        assert first["deadline_at"] is not None
        nxt = await recv_until(s, lambda m: m["type"] == "state" and m["version"] >= 1, timeout=20)
        assert nxt["prompts"][0]["seat"] != first["seat"]
        assert nxt["prompts"][0]["phase_id"] != first["phase_id"]
        log = (await admin.admin_log(table.match_id))["actions"]
        assert log[0]["kind"] == "deadline" and log[0]["action"] == {"type": "end_turn"}
        assert log[0]["seat"] == first["seat"]
        await s.close()
    finally:
        await table.close()
        await admin.close()


async def test_admin_state_log_replay_and_abort(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    admin = RestClient(server.url, server.admin_token)
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        await socks[turn].act({"type": "end_turn"})
        await recv_until(socks[turn], lambda m: m["type"] == "ack")
        full = await admin.admin_match(table.match_id)
        assert full["viewer"] == "admin" and full["version"] == 1
        assert full["seed"] and set(full["hidden_from"]) == {"0", "1"}
        listed = await admin.admin_matches(status="running", game="provinces")
        assert table.match_id in [m["id"] for m in listed]
        log = await admin.admin_log(table.match_id)
        assert [a["seq"] for a in log["actions"]] == [1]
        step0 = await admin.request("GET", f"/admin/matches/{table.match_id}/replay", params={"version": 0})
        step1 = await admin.request("GET", f"/admin/matches/{table.match_id}/replay", params={"version": 1})
        assert step0["version"] == 0 and step1["version"] == 1 and step1["action"]["action"]["type"] == "end_turn"
        assert step1["view"] == full["view"]
        await admin.admin_abort(table.match_id, "test")
        ended = await recv_until(socks[0], lambda m: m["type"] == "ended")
        assert ended["status"] == "aborted" and ended["seed"]
        stored = await table.players[0].match(table.match_id)  # what the database holds, not the route's answer
        assert stored["status"] == "aborted" and stored["version"] == 2 and stored["seed"]
        with pytest.raises(ApiError) as e:
            await admin.admin_abort(table.match_id)
        assert e.value.code == "match_over"
        await socks[1].act({"type": "end_turn"})
        m = await recv_until(socks[1], lambda m: m["type"] in ("error", "ack"))
        assert m["code"] == "match_over"
        for s in socks:
            await s.close()
    finally:
        await table.close()
        await admin.close()


# -- "Rules a client can rely on" (docs/protocol.md, issue 11 item 7): one test per rule ----------------
TYPE_REQUIRED = "a message needs a string 'type': one of hello, act, resume, ping"


def _ws_url(url: str, match_id: str) -> str:
    return url.replace("http", "ws") + f"/ws/matches/{match_id}"


async def _refused_hello(url: str, match_id: str, first: str | bytes) -> dict:
    """Send ``first`` as the first frame; the answer, after asserting the socket is then closed 4401."""
    async with websockets.connect(url) as ws:
        await ws.send(first)
        msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401, (first, msg)
    return msg


async def _unchanged(url: str, table, socks, version: int) -> None:
    """Nothing moved: no seat was sent anything (its next message answers its ping), the match is
    still at ``version`` (a resume on each socket: that version, no events; the stored version too)."""
    for i, s in enumerate(socks):
        await s.send({"type": "ping", "t": i})
        pong = await s.recv(timeout=10)
        assert pong["type"] == "pong" and pong["t"] == i, pong
        await s.send({"type": "resume", "since_version": version})
        st = await s.recv(timeout=10)
        assert st["type"] == "state" and st["version"] == version and st["events"] == [], st
    assert (await table.players[0].match(table.match_id))["version"] == version


async def _send_expect(sock, raw: str | bytes, code: str) -> dict:
    """Send one raw frame; its answer must be the error ``code`` (and nothing else before it)."""
    await sock.ws.send(raw)
    msg = await sock.recv(timeout=10)
    assert msg["type"] == "error" and msg["code"] == code, (raw, msg)
    return msg


async def test_hello_with_an_unknown_field_or_without_a_string_token_is_bad_hello(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        url, token = _ws_url(server.url, table.match_id), table.players[0].token
        for bad in ({"type": "hello", "token": token, "colour": "red"},
                    {"type": "hello", "token": token, "since_version": 0, "version": 0},
                    {"type": "hello"},
                    {"type": "hello", "token": None},
                    {"type": "hello", "token": 7},
                    {"type": "hello", "token": [token]},
                    {"type": "hello", "token": token, "deltas": "yes"},
                    {"type": "hello", "token": token, "deltas": 1},
                    {"type": "hello", "token": token, "deltas": None}):
            msg = await _refused_hello(url, table.match_id, json.dumps(bad))
            assert msg["type"] == "error" and msg["code"] == "bad_hello", (bad, msg)
            assert msg["message"]
        msg = await _refused_hello(url, table.match_id, json.dumps({"type": "hello", "token": token, "colour": 1}))
        assert "'colour'" in msg["message"]  # the field is named
        # nothing was attached or changed: the seat's socket is the first one it gets
        s, st = await connect(server.url, table.match_id, token)
        assert st["type"] == "state" and st["version"] == 0
        assert (await table.players[0].match(table.match_id))["version"] == 0
        await s.close()
    finally:
        await table.close()


async def test_a_first_message_that_is_not_a_hello_is_hello_required(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        url, token = _ws_url(server.url, table.match_id), table.players[0].token
        for first in (json.dumps({"type": "act", "seq": 1, "action": {"type": "end_turn"}}),
                      json.dumps({"type": 7, "token": token}),
                      json.dumps({"token": token}),
                      json.dumps([{"type": "hello", "token": token}]),
                      "{not json"):
            msg = await _refused_hello(url, table.match_id, first)
            assert msg["code"] == "hello_required", (first, msg)
        assert (await table.players[0].match(table.match_id))["version"] == 0
    finally:
        await table.close()


async def test_a_binary_first_frame_is_hello_required_even_holding_a_valid_hello(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        hello = json.dumps({"type": "hello", "token": table.players[0].token}).encode()
        msg = await _refused_hello(_ws_url(server.url, table.match_id), table.match_id, hello)
        assert msg["code"] == "hello_required"
    finally:
        await table.close()


async def test_hello_deltas_true_or_false_is_accepted(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        url = _ws_url(server.url, table.match_id)
        for i, deltas in enumerate((True, False)):
            async with websockets.connect(url) as ws:
                await ws.send(json.dumps({"type": "hello", "token": table.players[i].token, "deltas": deltas,
                                          "since_version": 0}))
                st = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert st["type"] == "state" and st["seat"] == i and st["version"] == 0, st
    finally:
        await table.close()


async def test_unknown_fields_in_act_resume_and_ping_are_malformed_and_change_nothing(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        v = states[turn]["version"]
        # a legal end_turn by the seat on turn, but for one extra field: refused, seq echoed
        act = {"type": "act", "seq": 11, "action": {"type": "end_turn"}, "version": v}
        msg = await _send_expect(socks[turn], json.dumps({**act, "colour": "red"}), "malformed_message")
        assert msg["seq"] == 11 and "'colour'" in msg["message"]
        msg = await _send_expect(socks[turn], json.dumps({**act, "seq": "x", "x": 1}), "malformed_message")
        assert "seq" not in msg  # not an integer: not echoed
        msg = await _send_expect(socks[turn], json.dumps({**act, "seq": True, "x": 1}), "malformed_message")
        assert "seq" not in msg
        msg = await _send_expect(socks[turn], json.dumps({"type": "resume", "since_version": v, "full": True}),
                                 "malformed_message")
        assert "seq" not in msg and "'full'" in msg["message"]
        await _send_expect(socks[turn], json.dumps({"type": "ping", "t": 1, "u": 2}), "malformed_message")
        await _unchanged(server.url, table, socks, v)
        # seq 11 was not used up: the same act without the extra field is applied
        await socks[turn].send(act)
        ack = await recv_until(socks[turn], lambda m: m["type"] in ("ack", "error"))
        assert ack == {"type": "ack", "seq": 11, "version": v + 1}
        for s in socks:
            await s.close()
    finally:
        await table.close()


async def test_a_type_that_is_not_a_string_is_unknown_message_type(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        v = states[turn]["version"]
        for raw in ({"type": 7, "seq": 1, "action": {"type": "end_turn"}}, {"seq": 1, "action": {"type": "end_turn"}},
                    {"type": None}, {"type": ["act"]}, {"type": {"act": 1}}):
            msg = await _send_expect(socks[turn], json.dumps(raw), "unknown_message_type")
            assert msg["message"] == TYPE_REQUIRED, msg
        msg = await _send_expect(socks[turn], json.dumps({"type": "teleport"}), "unknown_message_type")
        assert "'teleport'" in msg["message"] and "None" not in msg["message"]
        await _unchanged(server.url, table, socks, v)
        for s in socks:
            await s.close()
    finally:
        await table.close()


async def test_a_negative_act_version_is_bad_version(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        v = states[turn]["version"]
        for i, version in enumerate((-1, -(2**40), 1.5, True, "0")):
            msg = await _send_expect(socks[turn], json.dumps({"type": "act", "seq": 20 + i,
                                                              "action": {"type": "end_turn"}, "version": version}),
                                     "bad_version")
            assert msg["seq"] == 20 + i, msg
        await _unchanged(server.url, table, socks, v)
        for s in socks:
            await s.close()
    finally:
        await table.close()


async def test_a_binary_frame_after_hello_is_malformed_and_changes_nothing(server):
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        socks, states, turn = await _whose_turn(server.url, table)
        v = states[turn]["version"]
        # a legal end_turn by the seat on turn, sent as a binary frame: refused, not applied
        raw = json.dumps({"type": "act", "seq": 1, "action": {"type": "end_turn"}, "version": v}).encode()
        msg = await _send_expect(socks[turn], raw, "malformed_message")
        assert msg["message"] == "send JSON in text frames" and "seq" not in msg
        await _send_expect(socks[turn], b"\x00\xff not json", "malformed_message")
        await _unchanged(server.url, table, socks, v)
        for s in socks:
            await s.close()
    finally:
        await table.close()
