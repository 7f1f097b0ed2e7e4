"""The meta-game over a real server (conquest.md 5): inventory, audited grants, the provably fair
slot machine, loadouts through lobbies into a match's options, and lifetimes counted once per
finished match, on SQLite, Postgres and Postgres + Redis."""
from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import time
import uuid

import httpx
import pytest

from app.client import ApiError, MatchSocket, RestClient
from app.client.socket import play
from app.db.database import make_engine
from app.db.repo import Repository
from app.runtime.bots import make_bot
from tests.conftest import ROOT, ServerProcess
from tests.timing import scaled

QUICK = {"max_rounds": 1, "phase_seconds": 5, "decision_seconds": 5}


async def player(url: str, name: str = "p") -> RestClient:
    c = RestClient(url)
    await c.register(name)
    return c


def admin(server) -> RestClient:
    return RestClient(server.url, server.admin_token)


async def wait_for(pred, timeout: float = 30.0, what: str = "condition"):
    end = time.monotonic() + scaled(timeout)
    while True:
        value = await pred()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def test_admin_grants_crystals_audited(server):
    async with await player(server.url, "ann") as ann, admin(server) as adm:
        me = await ann.me()
        inv = await ann.inventory()
        assert inv["crystals"] == 0 and inv["specials"] == [] and len(inv["spin"]["next_seed_hash"]) == 64
        out = await adm.admin_grant_crystals(me["id"], 150, "bought 150 crystals, order 17")
        assert out == {"player_id": me["id"], "asset": "crystals", "balance": 150}
        assert (await ann.inventory())["crystals"] == 150
        [row] = await ann.ledger()
        assert row["kind"] == "grant" and row["delta"] == 150 and row["balance_after"] == 150
        assert row["reason"] == "bought 150 crystals, order 17" and row["actor"] == (await adm.me())["id"]
        # not an admin: 403; no such player: 404; zero / missing reason: 422; overdraw: 409
        with pytest.raises(ApiError) as e:
            await ann.admin_grant_crystals(me["id"], 10)
        assert (e.value.status, e.value.code) == (403, "forbidden")
        with pytest.raises(ApiError) as e:
            await adm.admin_grant_crystals("nobody", 10)
        assert (e.value.status, e.value.code) == (404, "not_found")
        for body in ({"amount": 0, "reason": "x"}, {"amount": 5}, {"amount": "lots", "reason": "x"},
                     {"amount": "5", "reason": "x"}, {"amount": 5, "reason": "a\x00b"},
                     {"amount": 5, "reason": "x", "extra": 1}):
            with pytest.raises(ApiError) as e:
                await adm.request("POST", f"/admin/players/{me['id']}/crystals", json=body)
            assert e.value.status == 422
        with pytest.raises(ApiError) as e:
            await adm.admin_grant_crystals(me["id"], -151)
        assert e.value.code == "insufficient_crystals"
        assert (await ann.inventory())["crystals"] == 150 and len(await ann.ledger()) == 1
        with pytest.raises(ApiError) as e:
            await adm.admin_grant_special(me["id"], "laser", 3)
        assert e.value.code == "unknown_special"
        await adm.admin_grant_special(me["id"], "joker", 4)
        specials = (await ann.inventory())["specials"]
        assert [(s["id"], s["matches_left"], s["cost"]) for s in specials] == [("joker", 4, 6)]


async def test_spin_is_committed_before_and_revealed_after_5_2(server):
    async with await player(server.url) as p, admin(server) as adm:
        pid = (await p.me())["id"]
        offer = await p.next_spin()
        assert offer["price"] == 20 and len(offer["strip"]) == 20
        with pytest.raises(ApiError) as e:
            await p.spin()
        assert (e.value.status, e.value.code) == (409, "insufficient_crystals")
        assert (await p.next_spin())["next_seed_hash"] == offer["next_seed_hash"]
        await adm.admin_grant_crystals(pid, 45)
        spin = await p.spin("my lucky words")
        assert spin["seed_hash"] == offer["next_seed_hash"]
        assert hashlib.sha256(bytes.fromhex(spin["seed"])).hexdigest() == spin["seed_hash"]
        assert spin["crystals"] == 25 and len(spin["reels"]) == 3
        assert (await p.next_spin())["next_seed_hash"] == spin["next_seed_hash"] != spin["seed_hash"]
        assert await p.verify_spin(spin["id"]) == {"spin_id": spin["id"], "ok": True, "problems": []}
        inv = await p.inventory()
        ledger = await p.ledger()
        assert ("crystals", "spin", -20) in [(r["asset"], r["kind"], r["delta"]) for r in ledger]
        if spin["prize"]:
            left = {s["id"]: s["matches_left"] for s in inv["specials"]}
            assert left[spin["prize"]["special"]] == spin["prize"]["matches"]
        # another player cannot read it; bad ids are 404
        async with await player(server.url) as other:
            for sid, status in ((spin["id"], 404), ("x" * 100, 422)):
                with pytest.raises(ApiError) as e:
                    await other.verify_spin(sid)
                assert e.value.status == status
        with pytest.raises(ApiError) as e:
            await p.request("POST", "/players/me/spins", json={"client_seed": "x" * 65})
        assert e.value.status == 422


async def test_racing_spins_over_http_one_wins(server):
    async with await player(server.url) as p, admin(server) as adm:
        pid = (await p.me())["id"]
        await adm.admin_grant_crystals(pid, 39)
        clients = [RestClient(server.url, p.token) for _ in range(8)]
        try:
            results = await asyncio.gather(*(c.spin(str(i)) for i, c in enumerate(clients)), return_exceptions=True)
        finally:
            for c in clients:
                await c.close()
        assert sum(isinstance(r, dict) for r in results) == 1
        assert all(r.code == "insufficient_crystals" for r in results if not isinstance(r, dict))
        assert (await p.inventory())["crystals"] == 19


async def test_loadout_refusals_and_the_lobby_seat(server):
    async with await player(server.url, "host") as host, await player(server.url, "guest") as guest, \
            admin(server) as adm:
        hid, gid = (await host.me())["id"], (await guest.me())["id"]
        info = httpx.get(server.url + "/api/v1/games/conquest", timeout=10).json()
        props = info["options_schema"]["properties"]
        assert props["loadouts"]["readOnly"] and props["special_costs"]["readOnly"]  # the server's: said so
        assert not any(p.get("readOnly") for k, p in props.items() if k not in ("loadouts", "special_costs"))
        for reserved in ({"loadouts": [["scout"]]}, {"special_costs": {"scout": 0}}):
            with pytest.raises(ApiError) as e:
                await host.create_lobby("conquest", 2, reserved)
            assert (e.value.status, e.value.code) == (422, "reserved_option")
            with pytest.raises(ApiError) as e:  # a game without that option: just an unknown one
                await host.create_lobby("provinces", 2, reserved)
            assert (e.value.status, e.value.code) == (422, "invalid_options")
        with pytest.raises(ApiError) as e:
            await host.create_lobby("conquest", 2, loadout=["scout"])
        assert e.value.code == "special_not_owned"
        await adm.admin_grant_special(hid, "scout", 2)
        await adm.admin_grant_special(gid, "hound", 1)
        for bad, code in ((["scout", "scout"], "duplicate_special"), (["laser"], "unknown_special")):
            with pytest.raises(ApiError) as e:
                await host.create_lobby("conquest", 2, loadout=bad)
            assert e.value.code == code
        with pytest.raises(ApiError) as e:
            await host.create_lobby("provinces", 2, loadout=["scout"])
        assert e.value.code == "loadout_not_supported"
        lobby = await host.create_lobby("conquest", 2, QUICK, loadout=["scout"])
        assert lobby["seats"][0]["loadout"] == ["scout"]
        with pytest.raises(ApiError) as e:
            await guest.join(lobby["id"], loadout=["scout"])
        assert e.value.code == "special_not_owned"
        assert (await host.lobby(lobby["id"]))["seats"][1]["player"] is None  # a refused join takes no seat
        lobby = await guest.join(lobby["id"], loadout=["hound"])
        assert lobby["seats"][1]["loadout"] == ["hound"]
        lobby = await guest.set_loadout(lobby["id"], [])
        assert lobby["seats"][1]["loadout"] == []
        await guest.set_loadout(lobby["id"], ["hound"])
        # a player who leaves takes their loadout along: the next one in that seat brings nothing of it
        await guest.leave(lobby["id"])
        async with await player(server.url) as third:
            await adm.admin_grant_special((await third.me())["id"], "hound", 1)
            lobby = await third.join(lobby["id"])
            assert lobby["seats"][1]["player"]["id"] == (await third.me())["id"]
            assert lobby["seats"][1]["loadout"] is None
        async with await player(server.url) as stranger:
            with pytest.raises(ApiError) as e:
                await stranger.set_loadout(lobby["id"], [])
            assert e.value.code == "not_seated"
        await host.leave(lobby["id"])


async def _play_out(url: str, rest: RestClient, match_id: str) -> dict:
    sock = MatchSocket(url, match_id, rest.token)
    await sock.connect()
    try:
        return await asyncio.wait_for(play(sock, make_bot("conquest", "random", 7).decide), 240)
    finally:
        await sock.close()


async def _insert_ended_match(url: str, player_id: str, loadout: list[str]) -> str:
    engine = make_engine(url)
    try:
        mid = uuid.uuid4().hex
        await Repository(engine).create_match({
            "id": mid, "game": "conquest", "options": {"loadouts": [loadout]}, "seat_count": 1,
            "seats": [{"player_id": player_id, "name": "p", "bot": None, "loadout": loadout}], "seed": "00",
            "seed_hash": "00", "status": "finished", "lobby_id": None, "deadlines": {}, "outcome": None,
            "version": 0, "created_at": time.time(), "ended_at": time.time()})
        return mid
    finally:
        await engine.dispose()


async def test_loadouts_reach_the_match_and_count_once_per_finished_match_even_across_nodes_5_1_2(server, backend):
    async with await player(server.url, "host") as host, admin(server) as adm:
        hid = (await host.me())["id"]
        await adm.admin_grant_special(hid, "scout", 2)
        await adm.admin_grant_special(hid, "hound", 1)
        lobby = await host.create_lobby("conquest", 2, QUICK, loadout=["scout", "hound"])
        await host.fill_bots(lobby["id"], "smart")
        lobby = await host.start(lobby["id"])
        match = await host.match(lobby["match_id"])
        opts = match["options"]
        assert opts["loadouts"][0] == ["scout", "hound"]
        assert opts["loadouts"][1] and set(opts["loadouts"][1]) <= set(opts["special_costs"])  # the bot's
        assert opts["special_costs"]["big_brother"] == 8 and len(opts["special_costs"]) == 15
        # one match of each is reserved as the match starts: hound's last one is in play
        assert {s["id"]: s["matches_left"] for s in (await host.inventory())["specials"]} == {"scout": 1}
        ended = await _play_out(server.url, host, match["id"])
        assert ended["status"] == "finished"

        async def counted():
            inv = await host.inventory()
            return inv if {s["id"]: s["matches_left"] for s in inv["specials"]} == {"scout": 1} else None

        # counted as the match ends on its node (the sweep runs only every 30 s here)
        await wait_for(counted, timeout=10, what="the match's specials to be counted")
        # A match that ended without being settled (as if its node died first), written straight to
        # the database: a second node starting on the same database sweeps ended matches, counts
        # that one, and counts the played one no second time.
        await adm.admin_grant_special(hid, "spy", 3)
        lost = await _insert_ended_match(backend.url, hid, ["spy"])
        # a node without Redis claims its database alone (app/db/node_lock.py): there the second node
        # is the first one's successor, started once it stopped
        alone = "BANNERFALL_REDIS_URL" not in backend.env
        if alone:
            await asyncio.to_thread(server.stop)
        second = ServerProcess(backend.url, env={**backend.env, "BANNERFALL_SETTLE_SWEEP_SECONDS": "0.2"})
        try:
            await asyncio.to_thread(second.start)
            async with RestClient(second.url, host.token) as again:
                async def swept():
                    inv = await again.inventory()
                    return {s["id"]: s["matches_left"] for s in inv["specials"]} == {"scout": 1, "spy": 2}
                await wait_for(swept, what="the sweep")
                await asyncio.sleep(0.6)  # a few more sweeps
                inv = await again.inventory()
                uses = [r for r in await again.ledger() if r["kind"] == "match_use"]
        finally:
            await asyncio.to_thread(second.stop)
            if alone:
                await asyncio.to_thread(server.start)
        assert {s["id"]: s["matches_left"] for s in inv["specials"]} == {"scout": 1, "spy": 2}
        assert sorted((r["asset"], r["delta"], r["ref"]) for r in uses) == sorted([
            ("hound", -1, match["id"]), ("scout", -1, match["id"]), ("spy", -1, lost)])
        # verify still reproduces the match from its seed and log (the loadouts are in its options)
        out = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "app.cli", "verify", match["id"], "--database-url", backend.url],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
        assert out.returncode == 0, out.stdout + out.stderr


async def test_a_special_with_one_match_left_plays_in_one_match_of_five_started_at_once_5_1_2(server, backend):
    """A special with 1 match left brought to 5 lobbies whose starts race, on two nodes when the
    database is shared (Postgres), else on one: one match gets it, the 4 others start without it,
    and the ledger shows one -1 and no "already expired" row. Aborting that match gives it back."""
    second = None
    if backend.kind == "postgres+redis":  # nodes share a database only with Redis (app/db/node_lock.py)
        second = ServerProcess(backend.url, env=backend.env).start()
    try:
        async with await player(server.url, "many") as host, admin(server) as adm:
            hid = (await host.me())["id"]
            await adm.admin_grant_special(hid, "hound", 1)
            await adm.admin_grant_special(hid, "scout", 9)
            lobbies = []
            for _ in range(5):
                lobby = await host.create_lobby("conquest", 2, QUICK, loadout=["hound", "scout"])
                await host.fill_bots(lobby["id"], "smart")
                lobbies.append(lobby["id"])
            other = RestClient(second.url if second else server.url, host.token)
            try:
                started = await asyncio.gather(*((other if i % 2 else host).start(lid)
                                                 for i, lid in enumerate(lobbies)))
                matches = [await host.match(s["match_id"]) for s in started]
            finally:
                await other.close()
            brought = [m for m in matches if "hound" in m["options"]["loadouts"][0]]
            assert len(brought) == 1, [m["options"]["loadouts"][0] for m in matches]
            assert all(m["options"]["loadouts"][0] in (["hound", "scout"], ["scout"]) for m in matches)
            inv = {s["id"]: s["matches_left"] for s in (await host.inventory())["specials"]}
            assert inv == {"scout": 4}  # 5 matches, 5 of scout's 9 reserved; hound's 1 in play
            uses = [r for r in await host.ledger() if r["asset"] == "hound" and r["kind"] == "match_use"]
            assert [(r["delta"], r["ref"]) for r in uses] == [(-1, brought[0]["id"])]
            # the match that has it is aborted: its matches come back (when the match ends on its node)
            await adm.admin_abort(brought[0]["id"])

            async def given_back():
                inv = {s["id"]: s["matches_left"] for s in (await host.inventory())["specials"]}
                return inv if inv == {"hound": 1, "scout": 5} else None

            await wait_for(given_back, timeout=30, what="the aborted match's specials to be given back")
            for m in matches:
                if m["id"] != brought[0]["id"]:
                    await adm.admin_abort(m["id"])
            await wait_for(lambda: _inventory_is(host, {"hound": 1, "scout": 9}), timeout=30, what="all given back")
            rows = await host.ledger(500)
            assert not [r for r in rows if r["reason"] == "already expired"]
            assert sum(r["delta"] for r in rows if r["asset"] == "hound") == 1
    finally:
        if second is not None:
            second.stop()


async def _inventory_is(client: RestClient, expected: dict[str, int]) -> bool:
    return {s["id"]: s["matches_left"] for s in (await client.inventory())["specials"]} == expected


def test_verify_spin_command(server, backend):
    if backend.kind == "postgres+redis":
        pytest.skip("the command reads the database; once is enough")

    async def make_spin():
        async with await player(server.url) as p, admin(server) as adm:
            await adm.admin_grant_crystals((await p.me())["id"], 20)
            return await p.spin("cli")

    spin = asyncio.run(make_spin())
    out = subprocess.run([sys.executable, "-m", "app.cli", "verify-spin", spin["id"], "--database-url", backend.url],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok: sha256(seed)" in out.stdout and " | ".join(spin["reels"]) in out.stdout
    out = subprocess.run([sys.executable, "-m", "app.cli", "verify-spin", "nope", "--database-url", backend.url],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2


def test_openapi_lists_the_meta_game(server):
    paths = httpx.get(server.url + "/openapi.json").json()["paths"]
    for p in ("/api/v1/players/me/inventory", "/api/v1/players/me/spins", "/api/v1/players/me/spins/next",
              "/api/v1/spins/{spin_id}/verify", "/api/v1/admin/players/{player_id}/crystals",
              "/api/v1/lobbies/{lobby_id}/loadout"):
        assert p in paths


def test_demo_conquest_shows_loadouts_and_their_countdown(tmp_path):
    """`bannerfall demo --game conquest`: every seat brings specials (the host's granted by the demo's
    admin, the bots' chosen by the engine) and the host's count down once after the match."""
    out = subprocess.run([sys.executable, "-m", "app.cli", "demo", "--game", "conquest", "--players", "3", "--quiet"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    brings = [line for line in out.stdout.splitlines() if " brings " in line]
    assert len(brings) == 3 and all("no specials" not in line for line in brings)
    after = next(line for line in out.stdout.splitlines() if line.startswith("host's specials after the match"))
    assert "2 match" not in after and "1 match(es) left" in after
