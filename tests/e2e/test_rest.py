"""REST over a real server process, on SQLite and on Postgres."""
from __future__ import annotations

import httpx
import pytest

from app.client import ApiError, RestClient


async def test_guest_player_and_me(server):
    async with RestClient(server.url) as c:
        out = await c.register("ann")
        assert out["player"]["name"] == "ann" and out["player"]["role"] == "player"
        assert len(out["token"]) >= 32
        me = await c.me()
        assert me["id"] == out["player"]["id"]
        assert "token_hash" not in me and "token" not in me


@pytest.mark.parametrize("header", [None, "Bearer nope", "Bearer " + "x" * 300, "Basic abc"])
async def test_wrong_or_missing_token_is_401(server, header):
    headers = {"Authorization": header} if header else {}
    r = httpx.get(server.url + "/api/v1/players/me", headers=headers)
    assert r.status_code == 401
    assert r.json()["code"] == "unauthorized"


async def test_games_list_option_schemas(server):
    async with RestClient(server.url) as c:
        await c.register()
        games = {g["id"]: g for g in await c.games()}
    assert "provinces" in games
    p = games["provinces"]
    assert p["min_seats"] == 2 and p["max_seats"] == 6
    props = p["options_schema"]["properties"]
    assert props["turn_seconds"]["default"] == 60
    assert "random" in p["bot_kinds"]


async def test_lobby_lifecycle(server):
    async with RestClient(server.url) as host, RestClient(server.url) as guest, RestClient(server.url) as other:
        await host.register("host")
        await guest.register("guest")
        await other.register("other")
        lobby = await host.create_lobby("provinces", 3, {"turn_seconds": 30})
        assert lobby["status"] == "open" and lobby["options"]["turn_seconds"] == 30
        assert lobby["seats"][0]["player"]["name"] == "host"
        assert lobby["id"] in [x["id"] for x in await guest.lobbies()]
        lobby = await guest.join(lobby["id"])
        assert lobby["seats"][1]["player"]["name"] == "guest"
        again = await guest.join(lobby["id"], seat=2)  # idempotent: the seat they hold, whatever they ask
        assert again["seats"] == lobby["seats"]
        with pytest.raises(ApiError) as e:
            await guest.start(lobby["id"])
        assert e.value.code == "not_host" and e.value.status == 403
        with pytest.raises(ApiError) as e:
            await guest.fill_bots(lobby["id"])
        assert e.value.code == "not_host"
        with pytest.raises(ApiError) as e:
            await host.start(lobby["id"])
        assert e.value.code == "seats_empty"
        lobby = await guest.leave(lobby["id"])
        assert lobby["seats"][1]["player"] is None
        lobby = await other.join(lobby["id"], seat=2)
        assert lobby["seats"][2]["player"]["name"] == "other"
        lobby = await host.fill_bots(lobby["id"], "random")
        assert lobby["seats"][1]["bot"] == "random"
        with pytest.raises(ApiError) as e:
            await guest.join(lobby["id"])
        assert e.value.code == "no_free_seat"
        lobby = await host.start(lobby["id"])
        assert lobby["status"] == "started" and lobby["match_id"]
        with pytest.raises(ApiError) as e:
            await host.start(lobby["id"])
        assert e.value.code == "lobby_not_open"
        match = await guest.match(lobby["match_id"])
        assert match["status"] == "running" and match["seed"] is None and len(match["seed_hash"]) == 64
        assert [s["name"] for s in match["seats"]][0] == "host"


@pytest.mark.parametrize("body,code,status", [
    ({"game": "chess", "seats": 2}, "unknown_game", 404),
    ({"game": "provinces", "seats": 9}, "bad_seat_count", 422),
    ({"game": "provinces", "seats": 1}, "bad_seat_count", 422),
    ({"game": "provinces", "seats": 2, "options": {"turn_seconds": -5}}, "invalid_options", 422),
    ({"game": "provinces", "seats": 2, "options": {"tie_rule": "coin_flip"}}, "invalid_options", 422),
    ({"game": "provinces"}, "invalid_request", 422),
    ({"game": "provinces", "seats": "many"}, "invalid_request", 422),
    ({"game": "provinces", "seats": "2"}, "invalid_request", 422),
    ({"game": "provinces", "seats": 2.0}, "invalid_request", 422),
    ({"game": "provinces", "seats": True}, "invalid_request", 422),
    ({"game": "provinces", "seats": 2, "options": {"turn_seconds": "60"}}, "invalid_options", 422),
    ({"game": "provinces", "seats": 2, "options": {"turn_seconds": 60.0}}, "invalid_options", 422),
    ({"game": "conquest", "seats": 2, "options": {"phase_seconds": 2**64}}, "invalid_options", 422),
    ({"game": "provinces", "seats": 2, "colour": "red"}, "invalid_request", 422),
    ({"game": "provinces", "seats": 2**63}, "invalid_request", 422),
    ({"game": "prov\u0000inces", "seats": 2}, "invalid_text", 422),
    ({"game": "provinces", "seats": 2, "options": {"a\u0000": 1}}, "invalid_text", 422),
])
async def test_bad_lobby_requests(server, body, code, status):
    async with RestClient(server.url) as c:
        await c.register()
        r = httpx.post(server.url + "/api/v1/lobbies", json=body, headers={"Authorization": f"Bearer {c.token}"})
        assert r.status_code == status, r.text
        assert r.json()["code"] == code
        assert isinstance(r.json()["message"], str)


async def test_malformed_json_body(server):
    async with RestClient(server.url) as c:
        await c.register()
        r = httpx.post(server.url + "/api/v1/lobbies", content=b"{nope",
                       headers={"Authorization": f"Bearer {c.token}", "Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["code"] == "invalid_request"


async def test_admin_routes_need_admin(server):
    async with RestClient(server.url) as c, RestClient(server.url, server.admin_token) as admin:
        await c.register()
        with pytest.raises(ApiError) as e:
            await c.admin_matches()
        assert e.value.status == 403
        assert (await admin.me())["role"] == "admin"
        assert isinstance(await admin.admin_matches(), list)


async def test_unknown_ids_are_404(server):
    async with RestClient(server.url) as c, RestClient(server.url, server.admin_token) as admin:
        await c.register()
        for call in (c.lobby("nope"), c.match("nope"), c.join("nope"), admin.admin_match("nope"),
                     admin.admin_log("nope"), admin.admin_abort("nope")):
            with pytest.raises(ApiError) as e:
                await call
            assert e.value.status == 404 and e.value.code == "not_found"


async def test_health_ready_metrics_openapi(server):
    assert httpx.get(server.url + "/healthz").json()["status"] == "ok"
    ready = httpx.get(server.url + "/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["database"] == "ok"
    assert "bannerfall_sockets" in httpx.get(server.url + "/metrics").text
    paths = httpx.get(server.url + "/openapi.json").json()["paths"]
    assert "/api/v1/lobbies" in paths and "/api/v1/admin/matches/{match_id}/abort" in paths
    assert httpx.get(server.url + "/docs").status_code == 200


def test_head_is_get_without_the_body(server):
    """HEAD on any GET route (a load balancer's health check): the GET's status and headers, no
    body (RFC 9110 9.3.2). Found by a newcomer on 2 Dec 2026: HEAD /healthz answered 404."""
    for path in ("/healthz", "/readyz", "/api/v1/games", "/"):
        get = httpx.get(server.url + path)
        head = httpx.head(server.url + path)
        assert (head.status_code, get.status_code) == (200, 200), path
        assert head.content == b"", path
        if path != "/readyz":  # its body carries the probes' timings: its length varies per request
            assert head.headers["content-length"] == get.headers["content-length"], path
        assert head.headers["content-type"] == get.headers["content-type"], path
    missing = httpx.head(server.url + "/api/v1/lobbies/nope")
    assert missing.status_code in (401, 404) and missing.content == b""


@pytest.mark.parametrize("kind", ["genius", "RANDOM", "x" * 32])
async def test_unknown_bot_kind_is_unknown_bot(server, kind):
    """Issue 11 item 7: a bot kind the game has no bot for answers 422 ``unknown_bot`` (naming the
    game's bots), not ``invalid_request``; nothing changes."""
    async with RestClient(server.url) as host:
        await host.register("host")
        lobby = await host.create_lobby("provinces", 2)
        with pytest.raises(ApiError) as e:
            await host.fill_bots(lobby["id"], kind)
        assert (e.value.status, e.value.code) == (422, "unknown_bot")
        assert "random" in str(e.value) and "smart" in str(e.value)
        assert (await host.lobby(lobby["id"]))["seats"][1]["bot"] is None


async def test_bot_kind_shape_is_still_checked(server):
    async with RestClient(server.url) as host:
        await host.register("host")
        lobby = await host.create_lobby("provinces", 2)
        for kind in (7, "", "x" * 33):
            with pytest.raises(ApiError) as e:
                await host.request("POST", f"/lobbies/{lobby['id']}/bots", json={"kind": kind})
            assert e.value.code == "invalid_request"


@pytest.mark.parametrize("body, content_type", [
    (b'{"name": "\xff\xfe"}', "application/json"),  # not UTF-8
    (b'{"name": "\xe9t\xe9"}', "application/json; charset=latin-1"),  # latin-1 bytes: not UTF-8
    (b'{"name":' + b"[" * 5000 + b"]" * 5000 + b"}", "application/json"),  # past the parser's depth
])
def test_an_unreadable_body_is_400_malformed_body(server, body, content_type):
    """2 Dec 2026, found by a newcomer: such bodies answered 400 with the undocumented code
    ``http_error``; now ``malformed_body`` (protocol.md, REST errors). The route never ran."""
    r = httpx.post(server.url + "/api/v1/players", content=body, headers={"Content-Type": content_type})
    assert (r.status_code, r.json()["code"]) == (400, "malformed_body"), r.text
