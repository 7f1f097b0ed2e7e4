"""The server in-process: REST, the match socket, in-process bots and the CLI over one app, fast.
Each behaviour here is also covered end to end over real sockets (tests/e2e); these make the fast
suite exercise app/api, app/db, app/client, app/runtime and app/cli (coverage floor in .ci/run)."""
from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.client.socket import play
from app.runtime.bots import make_bot
from tests.inproc.conftest import InprocSocket, WebSocketDisconnect, running_node


async def _bot_table(node, game: str = "provinces"):
    """A host and one in-process bot in a started match: (host client, match id, the host's seat)."""
    host = node.rest()
    await host.register("host")
    lobby = await host.create_lobby(game, 2, {})
    await host.fill_bots(lobby["id"], "random")
    lobby = await host.start(lobby["id"])
    match = await host.match(lobby["match_id"])
    seat = next(i for i, s in enumerate(match["seats"]) if not s.get("bot"))
    return host, lobby["match_id"], seat


async def test_a_match_against_an_in_process_bot_plays_to_the_end(tmp_path):
    async with running_node(tmp_path) as node:
        host, match_id, seat = await _bot_table(node)
        async with node.socket(match_id) as ws:
            sock = InprocSocket(ws)
            await sock.send({"type": "hello", "token": host.token})
            first = await sock.recv()
            assert first["type"] == "state" and first["seat"] == seat
            running = await host.match(match_id)
            assert running["status"] == "running" and isinstance(running["version"], int)
            assert running["version"] >= first["version"]  # live
            ended = await asyncio.wait_for(play(sock, make_bot("provinces", "random", 7).decide, initial=first), 60)
        assert ended["type"] == "ended" and ended["status"] == "finished"
        final = await host.match(match_id)
        assert final["status"] == "finished" and final["seed"] == ended["seed"]
        rows = await node.app.state.repo.actions(match_id)
        bot_acts = [r for r in rows if r["seat"] == 1 - seat and r["kind"] == "act"]
        assert bot_acts, "the bot seat acted itself (through the pipeline), not by deadline defaults"
        await host.close()
        # the CLI replays and verifies it with the server's replay function
        url = str(node.app.state.settings.database_url)
        runner = CliRunner()
        out = await asyncio.to_thread(runner.invoke, cli, ["verify", match_id, "--database-url", url])
        assert out.exit_code == 0 and out.output.startswith("OK:"), out.output
        out = await asyncio.to_thread(runner.invoke, cli, ["replay", match_id[:8], "--database-url", url])
        assert out.exit_code == 0 and "match over" in out.output, out.output


async def test_a_gap_in_the_log_fails_cli_replay_like_the_server(tmp_path):
    """``bannerfall replay`` runs the server's replay: a missing record is a failure, not skipped."""
    async with running_node(tmp_path) as node:
        host, match_id, seat = await _bot_table(node)
        async with node.socket(match_id) as ws:
            sock = InprocSocket(ws)
            await sock.send({"type": "hello", "token": host.token})
            await asyncio.wait_for(play(sock, make_bot("provinces", "random", 3).decide), 60)
        await host.close()
        from sqlalchemy import text

        async with node.app.state.repo.engine.begin() as conn:
            await conn.execute(text("DELETE FROM match_actions WHERE match_id = :m AND seq = 2"), {"m": match_id})
        url = str(node.app.state.settings.database_url)
        out = await asyncio.to_thread(CliRunner().invoke, cli, ["replay", match_id, "--database-url", url])
        assert out.exit_code == 1 and "log gap" in out.output, out.output


@pytest.mark.parametrize("raw, code", [
    ("{", "malformed_json"),
    ("[1]", "malformed_message"),
    ('{"type":"warp"}', "unknown_message_type"),
    ('{"type":"hello","token":"x"}', "already_authenticated"),
    ('{"type":"act","seq":-1,"action":{"type":"end_turn"}}', "bad_seq"),
    ('{"type":"act","seq":true,"action":{"type":"end_turn"}}', "bad_seq"),
    ('{"type":"act","seq":1,"action":{"type":"end_turn"},"version":"0"}', "bad_version"),
    ('{"type":"resume","since_version":-3}', "bad_version"),
    ('{"type":"act","seq":1,"action":{"type":"x\\u0000"}}', "invalid_text"),
    ('{"type":"act","seq":1,"action":{"type":"end_turn"},"extra":1}', "malformed_message"),
    ('{"type":"resume","since_version":0,"extra":1}', "malformed_message"),
    ('{"type":"ping","extra":1}', "malformed_message"),
    ('{"type":7}', "unknown_message_type"),
    ('{"seq":1}', "unknown_message_type"),
    ('{"type":"act","seq":1,"action":{"type":"end_turn"},"version":-1}', "bad_version"),
    (b'{"type":"act","seq":1,"action":{"type":"end_turn"}}', "malformed_message"),
])
async def test_bad_messages_get_an_error_and_change_nothing(tmp_path, raw, code):
    async with running_node(tmp_path) as node:
        host, match_id, _seat = await _bot_table(node)
        async with node.socket(match_id) as ws:
            sock = InprocSocket(ws)
            await sock.send({"type": "hello", "token": host.token})
            first = await sock.recv()
            await (ws.send_bytes(raw) if isinstance(raw, bytes) else sock.send(raw))
            while (msg := await sock.recv())["type"] != "error":
                pass
            assert msg["code"] == code
            await sock.send({"type": "ping", "t": 5})
            while (msg := await sock.recv())["type"] != "pong":
                pass
            assert msg["t"] == 5
        rows = await node.app.state.repo.actions(match_id)
        assert all(r["seat"] != _seat for r in rows)  # the host sent nothing valid
        assert first["version"] >= 0
        await host.close()


@pytest.mark.parametrize("hello, code, close", [
    ('{"type":"act"}', "hello_required", 4401),
    ('{"type":"hello","token":"nope"}', "unauthorized", 4401),
    ('{"type":"hello","token":"x","as":"king"}', "bad_hello", 4401),
    ('{"type":"hello","token":"x\\u0000"}', "invalid_text", 4400),
    ('{"type":"hello"}', "bad_hello", 4401),
    ('{"type":"hello","token":null}', "bad_hello", 4401),
    ('{"type":"hello","token":"x","extra":1}', "bad_hello", 4401),
    ('{"type":"hello","token":"x","deltas":"no"}', "bad_hello", 4401),
    ('{"type":7,"token":"x"}', "hello_required", 4401),
    (b'{"type":"hello","token":"x"}', "hello_required", 4401),
])
async def test_a_bad_hello_is_refused_with_its_close_code(tmp_path, hello, code, close):
    async with running_node(tmp_path) as node:
        host, match_id, _seat = await _bot_table(node)
        async with node.socket(match_id) as ws:
            await (ws.send_bytes(hello) if isinstance(hello, bytes) else ws.send_text(hello))
            msg = InprocSocket(ws)
            first = await msg.recv()
            assert first["type"] == "error" and first["code"] == code
            with pytest.raises(WebSocketDisconnect) as info:
                await ws.receive_text(timeout=5)
            assert info.value.code == close
        await host.close()


async def test_hello_deltas_is_the_sockets_and_a_bot_takes_full_states(tmp_path):
    """``deltas`` from the hello is on the socket's Connection (default True); the bot seat's
    BotPeer has False (the runtime reads ``peer.deltas``)."""
    async with running_node(tmp_path) as node:
        host, match_id, seat = await _bot_table(node)
        runner = node.app.state.manager.live(match_id)
        for deltas in (False, True, None):
            async with node.socket(match_id) as ws:
                sock = InprocSocket(ws)
                hello = {"type": "hello", "token": host.token}
                if deltas is not None:
                    hello["deltas"] = deltas
                await sock.send(hello)
                assert (await sock.recv())["type"] == "state"
                mine = [p for p in runner.peers if p.viewer == seat]
                assert len(mine) == 1 and mine[0].deltas is (deltas is not False), (deltas, mine)
        bots = [p for p in runner.peers if p.viewer == 1 - seat]
        assert len(bots) == 1 and bots[0].deltas is False
        await host.close()


async def test_an_unknown_match_is_not_found(tmp_path):
    async with running_node(tmp_path) as node:
        host = node.rest()
        await host.register("x")
        async with node.socket("0" * 32) as ws:
            await ws.send_text('{"type":"hello","token":"%s"}' % host.token)
            first = await InprocSocket(ws).recv()
            assert first["code"] == "not_found"
            with pytest.raises(WebSocketDisconnect) as info:
                await ws.receive_text(timeout=5)
            assert info.value.code == 4404
        await host.close()


async def test_resume_sends_the_missed_events_and_a_spectator_sees_the_match(tmp_path):
    async with running_node(tmp_path) as node:
        host, match_id, seat = await _bot_table(node)
        async with node.socket(match_id) as ws:
            sock = InprocSocket(ws)
            await sock.send({"type": "hello", "token": host.token})
            first = await sock.recv()
            await sock.send({"type": "resume", "since_version": 0})
            again = await sock.recv()
            assert again["type"] == "state" and again["version"] >= first["version"]
        watcher = node.rest()
        await watcher.register("watcher")
        async with node.socket(match_id) as ws:
            await ws.send_text('{"type":"hello","token":"%s","as":"spectator"}' % watcher.token)
            state = await InprocSocket(ws).recv()
            assert state["type"] == "state" and state["viewer"] == "spectator" and state["seat"] is None
        listed = await watcher.request("GET", "/matches", params={"status": "running"})
        assert any(m["id"] == match_id and isinstance(m["version"], int) for m in listed["items"])
        await host.close()
        await watcher.close()


ADMIN_TOKEN = "inproc-admin-" + "Kx7pQ2vN9mR4tW8zL3bY6cF1"


async def test_admin_reads_and_aborts_a_live_match(tmp_path):
    """The admin routes reach the runtime only through MatchDirectory: the live version, the admin
    view shaped by the wire module, an abort answered once durable (viewers get ``ended``)."""
    async with running_node(tmp_path, admin_token=ADMIN_TOKEN) as node:
        host, match_id, _seat = await _bot_table(node)
        admin = node.rest(ADMIN_TOKEN)
        listed = await admin.admin_matches(status="running")
        row = next(m for m in listed if m["id"] == match_id)
        assert row["version"] == node.app.state.manager.live_version(match_id)
        full = await admin.admin_match(match_id)
        assert full["type"] == "state" and full["viewer"] == "admin" and full["seed"]
        async with node.socket(match_id) as ws:
            sock = InprocSocket(ws)
            await sock.send({"type": "hello", "token": host.token})
            await sock.recv()
            aborted = await admin.admin_abort(match_id, "test over")
            assert aborted["status"] == "aborted"
            while (msg := await sock.recv())["type"] != "ended":
                pass
            assert msg["status"] == "aborted" and msg["seed"] == full["seed"]
        assert node.app.state.manager.live_version(match_id) is None
        await admin.close()
        await host.close()


async def test_a_node_says_which_hot_paths_run_and_warns_when_the_compiled_ones_are_missing(tmp_path, caplog,
                                                                                         monkeypatch):
    import logging

    import app._native as native

    caplog.set_level(logging.INFO, logger="bannerfall")
    async with running_node(tmp_path) as node:  # the suite asked for the sources: said, not warned about
        gauge = node.app.state.metrics.registry.get_sample_value
        assert gauge("bannerfall_compiled_hot_paths") == 0.0
        monkeypatch.setattr(native, "STATUS", "compiled")
        assert gauge("bannerfall_compiled_hot_paths") == 1.0
        monkeypatch.undo()
    assert f"hot paths: {native.STATUS}" in caplog.text and "not in use" not in caplog.text
    caplog.clear()
    stale = "source: app.delta changed since it was compiled (reinstall: pip install -e .)"
    monkeypatch.setattr(native, "STATUS", stale)
    monkeypatch.setattr(native, "ASKED", False)
    async with running_node(tmp_path):
        pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("compiled hot paths are not in use (app.delta changed since it was compiled" in w for w in warnings)
