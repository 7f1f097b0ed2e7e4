"""Every message a real match sends validates against its published JSON Schema model, and the
schema files in docs/schemas/ are current."""
from __future__ import annotations

import asyncio
import json

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
    assert set(SERVER) == {"state", "ack", "error", "ended", "pong"}


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
            s, first = await connect(server.url, table.match_id, c.token)
            check(first)
            socks.append(s)
            firsts.append(first)
        await socks[0].send({"type": "ping", "t": 5})
        await socks[0].send({"type": "nope"})
        bots = [make_bot(game, "random", i) for i in range(seats)]
        await asyncio.wait_for(asyncio.gather(*(play(s, b.decide, initial=f, on_message=check)
                                                for s, b, f in zip(socks, bots, firsts, strict=True))), 300)
        assert {"state", "ack", "ended", "pong", "error"} <= set(seen), (game, seen)
        for s in socks:
            await s.close()
        await table.close()
