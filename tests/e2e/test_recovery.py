"""kill -9 a server mid-match and start it again: the match goes on from its log with exactly the
same state, every acknowledged action kept, and its deadline honoured (SQLite and Postgres)."""
from __future__ import annotations

import asyncio

from app.client import RestClient
from app.runtime.bots import make_bot
from tests.conftest import ServerProcess
from tests.e2e.helpers import connect, my_prompt, recv_until, start_match


async def _play_some(url, table, actions: int) -> int:
    """Let random bots play ``actions`` acknowledged actions; returns seat 0's audience version at
    the end. Versions are per audience (a private ``set_dealing`` moves only its seat's), so each
    seat decides on its own socket's newest state: the seat on turn is the one whose own newest
    state gives it the prompt, at the turn the actor's newest state shows."""
    socks, states = [], []
    for c in table.players:
        s, st = await connect(url, table.match_id, c.token)
        socks.append(s)
        states.append(st)
    bots = [make_bot("provinces", "random", i) for i in range(len(socks))]
    done = 0
    actor = 0

    async def newest(i: int, until) -> None:
        while not until(states[i]):
            m = await socks[i].recv(timeout=10)
            if m["type"] == "state":
                states[i] = m

    while done < actions:
        seat = states[actor]["prompts"][0]["seat"]
        turn = states[actor]["view"]["turn"]
        await newest(seat, lambda st, seat=seat, turn=turn: st["view"]["turn"] == turn
                     and st["prompts"][0]["seat"] == seat)
        st = states[seat]
        action = bots[seat].decide(st["view"], my_prompt(st))
        await socks[seat].act(action, version=st["version"])
        while True:  # the state of the new version comes before its ack: keep it
            reply = await socks[seat].recv(timeout=10)
            if reply["type"] == "state":
                states[seat] = reply
            elif reply["type"] in ("ack", "error"):
                break
        if reply["type"] == "ack":
            done += 1
            await newest(seat, lambda st, v=reply["version"]: st["version"] >= v)
        actor = seat
    await newest(0, lambda st: st["view"]["turn"] == states[actor]["view"]["turn"])
    for s in socks:
        await s.close()
    return states[0]["version"]


async def test_kill9_mid_match_resumes_identically_and_deadline_holds(backend):
    srv = ServerProcess(backend.url, env=backend.env).start()
    admin = RestClient(srv.url, srv.admin_token)
    table = await start_match(srv.url, "provinces", 2, options={"turn_seconds": 10})
    try:
        seat0 = await _play_some(srv.url, table, 5)
        before = await admin.admin_match(table.match_id)
        acked = before["version"]  # the match's action count (admins' version)
        assert acked >= 5
        deadline_before = before["prompts"][0]["deadline_at"]
        srv.kill9()
        srv.start()
        # the state at the acknowledged version is rebuilt exactly (the deadline may have fired
        # while the node was down: then it is the one next record)
        at = await admin.request("GET", f"/admin/matches/{table.match_id}/replay", params={"version": acked})
        assert at["view"] == before["view"]
        after = await admin.admin_match(table.match_id)
        assert after["version"] in (acked, acked + 1), "an acknowledged action was lost or invented"
        if after["version"] == acked:
            assert after["view"] == before["view"] and after["prompts"] == before["prompts"]
        # a player reconnects and resumes; the deadline fires once, at its time
        s, st = await connect(srv.url, table.match_id, table.players[0].token, since_version=seat0 - 2)
        assert st["version"] >= seat0 and st["events"]
        fired: list[dict] = []
        for _ in range(300):  # the deadline fires at its time (it may have fired already)
            log = (await admin.admin_log(table.match_id))["actions"]
            fired = [a for a in log if a["kind"] == "deadline"]
            if fired:
                break
            await asyncio.sleep(0.1)
        assert fired and fired[0]["seq"] == acked + 1
        assert fired[0]["created_at"] >= deadline_before - 0.1
        assert fired[0]["seat"] == before["prompts"][0]["seat"]
        # once: any later default is the next turn's own deadline, a whole turn (10 s) later (a
        # slow machine may reach it before the log is read), never a second firing of this one
        assert all(b["created_at"] - a["created_at"] >= 9.5 for a, b in zip(fired, fired[1:], strict=False)), fired
        await s.close()
    finally:
        await table.close()
        await admin.close()
        srv.stop()


async def test_acked_action_survives_immediate_kill(backend):
    srv = ServerProcess(backend.url, env=backend.env).start()
    admin = RestClient(srv.url, srv.admin_token)
    table = await start_match(srv.url, "provinces", 2, options={"turn_seconds": 600})
    try:
        s, st = await connect(srv.url, table.match_id, table.players[0].token)
        turn = st["prompts"][0]["seat"]
        s2, st2 = await connect(srv.url, table.match_id, table.players[turn].token)
        await s2.act({"type": "end_turn"}, version=st2["version"])
        ack = await recv_until(s2, lambda m: m["type"] == "ack")
        srv.kill9()
        srv.start()
        after = await admin.admin_match(table.match_id)
        assert after["version"] == ack["version"]
        assert after["prompts"][0]["seat"] != turn
    finally:
        await table.close()
        await admin.close()
        srv.stop()


async def test_kill9_in_simultaneous_phase_keeps_submissions_and_deadline(backend):
    """Conquest orders phase: one seat submitted, the node dies, the phase's deadline still fires
    exactly once after the restart and the submission made before the crash is kept."""
    srv = ServerProcess(backend.url, env=backend.env).start()
    admin = RestClient(srv.url, srv.admin_token)
    table = await start_match(srv.url, "conquest", 2, options={"phase_seconds": 12})
    try:
        s0, st0 = await connect(srv.url, table.match_id, table.players[0].token)
        prompt = my_prompt(st0)
        assert prompt["kind"] == "orders" and prompt["simultaneous"]
        await s0.act({"type": "orders", "attack": []}, version=st0["version"])
        ack = await recv_until(s0, lambda m: m["type"] == "ack")
        before = await admin.admin_match(table.match_id)
        assert [p["submitted"] for p in before["prompts"] if p["seat"] == 0] == [True]
        srv.kill9()
        srv.start()
        after = await admin.admin_match(table.match_id)
        assert after["version"] >= ack["version"]
        if after["version"] == ack["version"]:
            assert after["prompts"] == before["prompts"]
            s1, st1 = await connect(srv.url, table.match_id, table.players[1].token)
            await recv_until(s1, lambda m: m["type"] == "state" and m["version"] > ack["version"], timeout=30)
            await s1.close()
        log = (await admin.admin_log(table.match_id))["actions"]
        assert log[0]["seat"] == 0 and log[0]["kind"] == "act"
        fired = [a for a in log if a["kind"] == "deadline"]
        assert [(a["seq"], a["seat"]) for a in fired][:1] == [(ack["version"] + 1, 1)]
        phase = prompt["phase_id"]
        assert sum(1 for a in fired if a["action"]["type"] == "orders") == 1
        assert phase is not None
        await s0.close()
    finally:
        await table.close()
        await admin.close()
        srv.stop()
