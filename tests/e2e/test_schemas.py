"""Every message a real match sends validates against its published JSON Schema model, and the
schema files in docs/schemas/ are current."""
from __future__ import annotations

import asyncio
import json

import orjson
import pytest
from pydantic import ValidationError

from app.api.messages import CLIENT, SERVER, validate_server_message, write_schemas
from app.client.socket import play
from app.runtime.bots import make_bot
from tests.conftest import ROOT
from tests.e2e.helpers import connect, start_match


def test_schema_files_are_current(tmp_path):
    for path in write_schemas(tmp_path):
        committed = ROOT / "docs" / "schemas" / path.name
        assert committed.exists(), f"{committed} missing: run python -m app.api.messages"
        assert json.loads(committed.read_text()) == json.loads(path.read_text()), path.name
    assert set(CLIENT) == {"hello", "act", "resume", "ping"}
    assert set(SERVER) == {"state", "delta", "ack", "error", "ended", "pong"}


def test_the_delta_and_hello_models_take_what_the_protocol_sends_and_refuse_the_rest():
    from app.api.messages import Hello

    good = {"type": "delta", "match_id": "m", "base": 3, "version": 5, "events": [{"v": 4, "type": "x", "n": 1}],
            "patch": [{"op": "add", "path": "/view/hand/-", "value": None},
                      {"op": "remove", "path": "/view/a~1b"}, {"op": "replace", "path": "", "value": {}}]}
    validate_server_message(good)
    for bad in ({"op": "move", "path": "/a", "from": "/b"}, {"op": "remove", "path": "/a", "value": 1},
                {"op": "add", "path": "/a"}, {"op": "replace", "value": 1}):
        with pytest.raises(ValidationError):
            validate_server_message(good | {"patch": [bad]})
    with pytest.raises(ValidationError):
        validate_server_message(good | {"extra": 1})
    assert Hello.model_validate({"type": "hello", "token": "t"}).deltas is True
    assert Hello.model_validate({"type": "hello", "token": "t", "deltas": False}).deltas is False
    with pytest.raises(ValidationError):
        Hello.model_validate({"type": "hello", "token": "t", "deltas": "no"})


async def test_real_traffic_matches_the_schemas(server):
    for game, seats in (("provinces", 2), ("conquest", 2), ("warrior", 2)):
        table = await start_match(server.url, game, seats, options={"max_rounds": 2} if game != "warrior" else {})
        seen: dict[str, int] = {}

        def check(msg, seen=seen):
            validate_server_message(msg)
            seen[msg["type"]] = seen.get(msg["type"], 0) + 1

        socks = []
        firsts = []
        for c in table.players:
            s, first = await connect(server.url, table.match_id, c.token, record=True)
            socks.append(s)
            firsts.append(first)
        await socks[0].send({"type": "ping", "t": 5})
        await socks[0].send({"type": "nope"})
        bots = [make_bot(game, "random", i) for i in range(seats)]
        await asyncio.wait_for(asyncio.gather(*(play(s, b.decide, initial=f)
                                                for s, b, f in zip(socks, bots, firsts, strict=True))), 300)
        # the frames as they came off the wire (a delta included), not the client's synthesized states
        for s in socks:
            for _, raw in s.raw_received:
                check(orjson.loads(raw))
        assert {"state", "ack", "ended", "pong", "error"} <= set(seen), (game, seen)
        for s in socks:
            await s.close()
        await table.close()
