"""The Python client's reconnecting, clock and protocol version (docs/python-client.md,
docs/protocol.md "Reconnecting" and "Server time"), against small websockets servers of the test's
own: a socket closed with 1012 (a server restart), 4503 or without a close frame (1006) opens again
after a backoff, says ``hello`` with the version it holds and resends every unacknowledged ``act``
with its same ``seq``; a close it must not retry (4001: replaced) is raised; the deadline count-down
uses the server's clock."""
from __future__ import annotations

import json
import random
import time
from typing import Any

import orjson
import pytest
import websockets

from app.client.socket import PROTOCOL, RECONNECT_CODES, Backoff, MatchSocket, play


def state(version: int, *, server_time: float, deadline_at: float | None = None) -> dict[str, Any]:
    prompts = [] if deadline_at is None else [{"seat": 0, "kind": "turn", "phase_id": 1, "simultaneous": False,
                                               "submitted": False, "deadline_at": deadline_at}]
    return {"type": "state", "match_id": "m1", "game": "toy", "version": version, "status": "running", "seat": 0,
            "viewer": "seat", "prompts": prompts, "view": {"n": version}, "events": [],
            "server_time": server_time}


class Script:
    """A server that plays one handler per connection, in order; what each connection received."""

    def __init__(self, *handlers: Any) -> None:
        self.handlers = list(handlers)
        self.received: list[list[dict[str, Any]]] = []

    async def __call__(self, ws) -> None:
        got: list[dict[str, Any]] = []
        self.received.append(got)
        handler = self.handlers.pop(0)

        async def recv() -> dict[str, Any]:
            msg = json.loads(await ws.recv())
            got.append(msg)
            return msg
        await handler(ws, recv)


async def serve(script: Script):
    server = await websockets.serve(script, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def quick() -> Backoff:
    return Backoff(first=0.01, cap=0.05, rng=random.Random(1))


def test_backoff_doubles_from_half_a_second_to_thirty_with_jitter_and_honours_retry_after():
    b = Backoff(rng=random.Random(7))
    delays = [b.next() for _ in range(10)]
    for n, d in enumerate(delays):
        ceiling = min(30.0, 0.5 * 2 ** n)
        assert ceiling / 2 <= d <= ceiling, (n, d)
    assert max(delays) > 15 and len(set(delays)) == 10
    assert b.next(retry_after=45) == 45
    b.reset()
    assert b.next() <= 0.5
    assert {1006, 1011, 1012, 1013, 4008, 4503} == RECONNECT_CODES


@pytest.mark.parametrize("close", [1012, 4503, 1006])
async def test_a_closed_socket_reconnects_says_its_version_and_resends_unanswered_acts(close):
    async def first(ws, recv):
        await recv()                                   # hello
        await ws.send(orjson.dumps(state(3, server_time=time.time())).decode())
        await recv()                                   # act seq 1: no answer
        await recv()                                   # act seq 2: no answer
        if close == 1006:
            ws.transport.abort()                       # no close frame
        else:
            await ws.close(close, "bye")

    async def second(ws, recv):
        hello = await recv()
        assert hello["since_version"] == 3 and hello["protocol"] == PROTOCOL
        await ws.send(orjson.dumps(state(4, server_time=time.time())).decode())
        await recv()                                   # the resent acts, after the state
        await recv()
        await ws.send(json.dumps({"type": "ack", "seq": 1, "version": 4}))
        await ws.send(json.dumps({"type": "error", "seq": 2, "code": "not_your_turn", "message": "no"}))
        await ws.wait_closed()

    script = Script(first, second)
    server, url = await serve(script)
    sock = MatchSocket(url, "m1", "tok", reconnect=True, backoff=quick())
    try:
        await sock.connect()
        assert (await sock.recv(timeout=5))["version"] == 3
        assert await sock.act({"type": "a"}, version=3) == 1
        assert await sock.act({"type": "b"}, version=3) == 2
        assert set(sock.unacked) == {1, 2}
        assert (await sock.recv(timeout=10))["version"] == 4   # after the reconnect
        assert (await sock.recv(timeout=5))["type"] == "ack"
        assert (await sock.recv(timeout=5))["code"] == "not_your_turn"
        assert sock.unacked == {} and sock.reconnects == 1
    finally:
        await sock.close()
        server.close()
        await server.wait_closed()
    resent = [m for m in script.received[1] if m["type"] == "act"]
    assert resent == [m for m in script.received[0] if m["type"] == "act"]          # same seqs, same actions
    assert [m["seq"] for m in resent] == [1, 2]


async def test_an_act_answered_match_moved_is_resent_and_a_replaced_socket_is_not_reopened():
    async def first(ws, recv):
        await recv()
        await ws.send(orjson.dumps(state(0, server_time=time.time())).decode())
        await recv()
        await ws.send(json.dumps({"type": "error", "seq": 1, "code": "match_moved", "message": "moved"}))
        await ws.close(4503, "moved")

    async def second(ws, recv):
        await recv()
        await ws.send(orjson.dumps(state(1, server_time=time.time())).decode())
        act = await recv()
        assert act["seq"] == 1
        await ws.close(4001, "replaced")

    script = Script(first, second)
    server, url = await serve(script)
    sock = MatchSocket(url, "m1", "tok", reconnect=True, backoff=quick())
    try:
        await sock.connect()
        await sock.recv(timeout=5)
        await sock.act({"type": "a"})
        assert (await sock.recv(timeout=5))["code"] == "match_moved"
        assert 1 in sock.unacked                          # not applied: kept to resend
        assert (await sock.recv(timeout=10))["version"] == 1
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await sock.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
    finally:
        await sock.close()
        server.close()
        await server.wait_closed()


async def test_play_resends_an_act_refused_by_the_message_budget_with_its_seq_after_retry_after():
    """``too_many_messages`` for the act in flight is not a rejection: ``play`` waits the error's
    ``retry_after`` and sends the same act with the same seq (protocol.md, "Error codes on the
    socket"), instead of deciding again or waiting for an ack that will never come."""
    async def only(ws, recv):
        await recv()
        prompted = state(0, server_time=time.time(), deadline_at=time.time() + 60)
        await ws.send(orjson.dumps(prompted).decode())
        first = await recv()
        await ws.send(json.dumps({"type": "error", "seq": first["seq"], "code": "too_many_messages",
                                  "message": "slow down", "retry_after": 0.05}))
        again = await recv()
        assert again == first
        await ws.send(json.dumps({"type": "ack", "seq": again["seq"], "version": 1}))
        await ws.send(json.dumps({"type": "ended", "status": "finished", "seed": "s"}))
        await ws.wait_closed()

    script = Script(only)
    server, url = await serve(script)
    sock = MatchSocket(url, "m1", "tok")
    decisions: list[int] = []
    try:
        await sock.connect()
        ended = await play(sock, lambda view, prompt: decisions.append(1) or {"type": "a"}, idle_timeout=10)
        assert ended["type"] == "ended"
        assert decisions == [1]                           # decided once, sent twice
        assert [m.get("seq") for m in script.received[0] if m["type"] == "act"] == [1, 1]
        assert not sock.unacked
    finally:
        await sock.close()
        server.close()
        await server.wait_closed()


async def test_reconnecting_gives_up_after_max_reconnects_attempts_in_a_row():
    async def only(ws, recv):
        await recv()
        await ws.send(orjson.dumps(state(0, server_time=time.time())).decode())
        await ws.close(1012, "restart")

    script = Script(only)
    server, url = await serve(script)
    sock = MatchSocket(url, "m1", "tok", reconnect=True, backoff=quick(), max_reconnects=3)
    await sock.connect()
    await sock.recv(timeout=5)
    server.close()                                        # nobody listens any more
    await server.wait_closed()
    with pytest.raises(websockets.ConnectionClosed):
        await sock.recv(timeout=10)
    assert sock.backoff.attempt == 3 and sock.reconnects == 0


async def test_the_deadline_counts_down_on_the_servers_clock():
    ahead = 120.0   # the server's clock runs two minutes ahead of this machine's

    async def only(ws, recv):
        await recv()
        now = time.time() + ahead
        await ws.send(orjson.dumps(state(0, server_time=now, deadline_at=now + 30)).decode())
        ping = await recv()
        await ws.send(json.dumps({"type": "pong", "t": ping["t"], "server_time": time.time() + ahead}))
        await ws.wait_closed()

    server, url = await serve(Script(only))
    sock = MatchSocket(url, "m1", "tok")
    try:
        await sock.connect()
        first = await sock.recv(timeout=5)
        assert sock.clock_offset is not None and abs(sock.clock_offset - ahead) < 1
        left = sock.seconds_left(first["prompts"][0])
        assert left is not None and 28 < left <= 30      # not 150: the machine's own clock is behind
        await sock.ping()
        assert (await sock.recv(timeout=5))["type"] == "pong"
        assert abs(sock.clock_offset - ahead) < 0.5
        assert abs(sock.server_now() - (time.time() + ahead)) < 0.5
        assert sock.seconds_left({"deadline_at": None}) is None
        assert sock.seconds_left({"deadline_at": time.time() + ahead - 5}) == 0.0
    finally:
        await sock.close()
        server.close()
        await server.wait_closed()
