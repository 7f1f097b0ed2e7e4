"""A rolling upgrade with a rules change, on real processes sharing Postgres and Redis: a node of the
new release (Tally rules version 2) and one of the previous release (version 1, which knows nothing
of version 2). ``docs/operations.md``, "Deploying a rules change":

- a socket on the old node for a match started under version 2 is linked to the new node running it;
- when the new node stops, the old node leaves that match alone (one warning line, no traceback, no
  epoch raised, nothing written) and answers its sockets ``storage_unavailable`` + 1013;
- once a new node is back it runs the match on, as it was.
"""
from __future__ import annotations

import asyncio

import pytest

from app.client import RestClient
from tests.conftest import PostgresDatabase, ServerProcess
from tests.e2e.helpers import connect, recv_until, start_match
from tests.timing import scaled

pytestmark = [pytest.mark.postgres, pytest.mark.redis]
LAUNCHER = "tests.rules_versions.serve"


async def _eventually(check, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + scaled(timeout)
    while not await check():
        assert loop.time() < end, "not within the time"
        await asyncio.sleep(0.1)


async def test_an_old_node_leaves_a_match_of_newer_rules_to_a_new_node(postgres_server, redis_env):
    db = PostgresDatabase()
    url = await asyncio.to_thread(db.create)
    new = ServerProcess(url, env={**redis_env, "TALLY_RULES": "tally_v2"}, module=LAUNCHER)
    old = ServerProcess(url, env={**redis_env, "TALLY_RULES": "tally_v1"}, module=LAUNCHER)
    old.admin_token = new.admin_token
    table = None
    admin = None
    try:
        new.start()
        old.start()
        admin = RestClient(old.url, old.admin_token)
        table = await start_match(new.url, "tally", 2)
        match_id = table.match_id
        sock, first = await connect(old.url, match_id, table.players[0].token)
        assert first["type"] == "state" and first["view"]["target"] == 12  # linked to the new node
        await sock.close()
        seat = first["prompts"][0]["seat"]
        sock, state = await connect(old.url, match_id, table.players[seat].token)
        await sock.act({"type": "add", "n": 2}, version=state["version"])  # counts 4 under version 2
        assert (await recv_until(sock, lambda m: m["type"] in ("ack", "error")))["type"] == "ack"
        await sock.close()
        async with RestClient(new.url, new.admin_token) as on_new:
            before = await on_new.admin_match(match_id)
        assert before["view"]["totals"][seat] == 4
        shown = await admin.admin_match(match_id)  # the old node shows it through the stand-in
        assert shown["view"]["unavailable"]["rules_version"] == 2 and shown["match"]["rules_version"] == 2

        new.stop()
        line = f"match {match_id} left running for a node with its rules"
        await _eventually(lambda: asyncio.sleep(0, result=line in old.logs()))
        sock, first = await connect(old.url, match_id, table.players[0].token)
        assert first["type"] == "error" and first["code"] == "storage_unavailable" and first["retry_after"] >= 1
        await sock.close()
        after = await admin.admin_match(match_id)
        assert after["match"]["status"] == "running" and after["version"] == before["version"]
        assert len((await admin.admin_log(match_id))["actions"]) == 1

        new.start()
        async def reachable() -> bool:
            s, msg = await connect(old.url, match_id, table.players[0].token)
            await s.close()
            return msg["type"] == "state"
        await _eventually(reachable)
        sock, state = await connect(new.url, match_id, table.players[0].token)
        assert state["view"]["totals"] == before["view"]["totals"]  # as it was, under its own rules
        seat = state["prompts"][0]["seat"]
        if seat != 0:
            await sock.close()
            sock, state = await connect(new.url, match_id, table.players[seat].token)
        await sock.act({"type": "add", "n": 2}, version=state["version"])
        assert (await recv_until(sock, lambda m: m["type"] in ("ack", "error")))["type"] == "ack"
        await sock.close()
        logs = old.logs()
        assert logs.count(line) == 1 and "Traceback" not in logs, logs[-3000:]
        assert "aborted" not in logs
    finally:
        if table is not None:
            await table.close()
        if admin is not None:
            await admin.close()
        new.stop()
        old.stop()
        await asyncio.to_thread(db.drop)
