"""A real server upgraded under a running match (SQLite, Postgres, Postgres + Redis): a match of
the test game Tally is started under rules version 1, the server is restarted with version 2 of the
engine, and its players reconnect. ``docs/operations.md``, "Deploying a rules change":

- version 1 not kept: the match ends ``aborted: rules changed`` at the rebuild; a player that
  reconnects is told (``state`` of the aborted match, then ``ended``), never 1013; ``bannerfall
  verify`` says which version it needs, and verifies it where that engine is present;
- version 1 kept (``earlier_rules``): the match goes on under version 1, and new matches start under 2.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from app.client import RestClient
from tests.conftest import ROOT, ServerProcess
from tests.e2e.helpers import connect, my_prompt, recv_until, start_match

LAUNCHER = "tests.rules_versions.serve"


def verify(match_id: str, database_url: str, rules: str, command: str = "verify") -> subprocess.CompletedProcess:
    """``bannerfall verify`` (or ``replay``) on an installation whose Tally engine is ``rules``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TALLY_RULES": rules, "BANNERFALL_LOG_LEVEL": "warning"}
    env.pop("BANNERFALL_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", LAUNCHER, command, match_id, "--database-url", database_url],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


async def _add_three(url: str, table) -> tuple[int, int]:
    """The seat on turn adds 3 (legal under version 1 only); returns (that seat, its version after)."""
    sock, state = await connect(url, table.match_id, table.players[0].token)
    seat = state["prompts"][0]["seat"]
    if seat != 0:
        await sock.close()
        sock, state = await connect(url, table.match_id, table.players[seat].token)
    assert my_prompt(state) is not None
    await sock.act({"type": "add", "n": 3}, version=state["version"])
    ack = await recv_until(sock, lambda m: m["type"] in ("ack", "error"))
    assert ack["type"] == "ack", ack
    await sock.close()
    return seat, ack["version"]


@pytest.mark.parametrize("upgrade", ["tally_v2", "tally_v2_keeps_v1"])
async def test_a_restart_with_new_rules_does_what_operations_md_says(backend, upgrade):
    srv = ServerProcess(backend.url, env={**backend.env, "TALLY_RULES": "tally_v1"}, module=LAUNCHER).start()
    admin = RestClient(srv.url, srv.admin_token)
    table = None
    try:
        table = await start_match(srv.url, "tally", 2)
        assert (await table.players[0].match(table.match_id))["rules_version"] == 1
        seat, version = await _add_three(srv.url, table)
        srv.stop()
        srv.extra_env["TALLY_RULES"] = upgrade  # the new release
        srv.start()
        sock, first = await connect(srv.url, table.match_id, table.players[seat].token, since_version=version)
        assert first["type"] == "state", first  # never storage_unavailable / 1013
        games = {g["id"]: g for g in await table.players[0].games()}
        assert games["tally"]["rules_version"] == 2
        if upgrade == "tally_v2":
            # the state at the durable version: aborted already, or still running (the abort record
            # being committed, then its change follows) — either way with the reason, and never below
            # the version the socket had
            assert first["version"] >= version and first["view"]["unavailable"]["rules_version"] == 1
            ended = await recv_until(sock, lambda m: m["type"] == "ended")
            assert ended["outcome"]["reason"] == "aborted: rules changed" and ended["seed"]
            assert ended["status"] == "aborted"
            match = await table.players[0].match(table.match_id)
            for _ in range(100):  # the abort record's commit (the ended above may come just before it)
                if match["status"] != "running":
                    break
                await asyncio.sleep(0.05)
                match = await table.players[0].match(table.match_id)
            assert match["status"] == "aborted" and match["rules_version"] == 1 and match["seed"]
            log = (await admin.admin_log(table.match_id))["actions"]
            assert [a["kind"] for a in log] == ["act", "abort"]
            res = verify(table.match_id, backend.url, "tally_v2")
            assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
            assert "tally rules version 1" in res.stderr and "this server has tally rules version 2" in res.stderr
            res = verify(table.match_id, backend.url, "tally_v2", "replay")
            assert res.returncode == 1 and "cannot replay" in res.stderr and "version 1" in res.stderr, res.stderr
            res = verify(table.match_id, backend.url, "tally_v1")  # where that engine is present
            assert res.returncode == 0 and "OK" in res.stdout and "tally rules version 1" in res.stdout, res
        else:
            match = await table.players[0].match(table.match_id)
            assert first["status"] == "running" and first["version"] == version
            assert first["view"]["target"] == 10 and sorted(first["view"]["totals"]) == [0, 3]
            other = table.players[1 - seat]
            await sock.close()
            sock, state = await connect(srv.url, table.match_id, other.token)
            await sock.act({"type": "add", "n": 3}, version=state["version"])  # version 1 allows 3
            ack = await recv_until(sock, lambda m: m["type"] in ("ack", "error"))
            assert ack["type"] == "ack", ack
            assert match["status"] == "running" and match["rules_version"] == 1
            res = verify(table.match_id, backend.url, "tally_v2_keeps_v1")
            assert res.returncode == 0, res.stderr
            assert "tally rules version 1, kept beside the installed version 2" in res.stdout
            fresh = await start_match(srv.url, "tally", 2)
            assert (await fresh.players[0].match(fresh.match_id))["rules_version"] == 2
            await fresh.close()
        await sock.close()
        logs = srv.logs()
        assert "storage_unavailable" not in logs and "Traceback" not in logs, logs[-3000:]
        if upgrade == "tally_v2":
            assert f"match {table.match_id} aborted: rules changed" in logs
    finally:
        if table is not None:
            await table.close()
        await admin.close()
        srv.stop()
