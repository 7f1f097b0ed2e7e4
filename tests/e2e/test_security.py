"""Issue 13 items 3 and 5: security headers on every page and API answer, ``/docs`` and ``/redoc``
served from a package (no CDN), and an admin seated in a match refused its admin view."""
from __future__ import annotations

import asyncio
import re

import httpx
import pytest
import websockets

from app.client import RestClient
from app.client.rest import ApiError
from tests.conftest import ServerProcess
from tests.e2e.helpers import connect


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    db = tmp_path_factory.mktemp("security") / "security.db"
    server = ServerProcess(f"sqlite+aiosqlite:///{db}").start()
    yield server
    server.stop()


@pytest.mark.parametrize("path", ["/", "/admin/", "/js/main.js", "/style.css", "/api/v1/games", "/api/v1/players/me",
                                  "/api/v1/nope", "/openapi.json", "/docs", "/redoc", "/docs-assets/swagger-ui.css",
                                  "/healthz"])
def test_every_answer_carries_the_security_headers(srv, path):
    answer = httpx.get(srv.url + path, timeout=10)
    assert answer.status_code in (200, 401, 404)
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    csp = answer.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self';" in csp and "default-src 'self'" in csp
    assert "unsafe-eval" not in csp
    if path not in ("/docs", "/redoc"):
        assert "unsafe-inline" not in csp


@pytest.mark.parametrize("page, assets", [
    ("/docs", ["docs-assets/swagger-ui.css", "docs-assets/swagger-ui-bundle.js", "docs-assets/swagger-init.js"]),
    ("/redoc", ["docs-assets/redoc.standalone.js", "docs-assets/redoc-init.js"]),
])
def test_api_docs_load_nothing_from_another_origin(srv, page, assets):
    html = httpx.get(srv.url + page, timeout=10).text
    refs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert refs and not [r for r in refs if "//" in r], refs       # every script and sheet is ours
    assert "<script>" not in html                                   # no inline script (CSP)
    for asset in assets:
        assert asset in refs
        answer = httpx.get(f"{srv.url}/{asset}", timeout=10)
        assert answer.status_code == 200 and len(answer.content) > 10
        assert answer.headers["content-type"].startswith(("text/javascript", "text/css"))
    assert httpx.get(srv.url + "/docs-assets/../main.py", timeout=10).status_code == 404
    assert httpx.get(srv.url + "/docs-assets/other.js", timeout=10).status_code == 404


async def test_an_admin_seated_in_a_running_match_cannot_open_its_admin_view(srv):
    async with RestClient(srv.url, srv.admin_token) as admin, RestClient(srv.url) as guest:
        await guest.register("guest")
        lobby = await admin.create_lobby("provinces", 3)
        await guest.join(lobby["id"])
        await admin.fill_bots(lobby["id"], "random")
        match_id = (await admin.start(lobby["id"]))["match_id"]
        for call in (admin.admin_match, admin.admin_log,
                     lambda m: admin.request("GET", f"/admin/matches/{m}/replay", params={"version": 1})):
            with pytest.raises(ApiError) as refused:
                await call(match_id)
            assert refused.value.status == 403 and refused.value.code == "seated_admin"
        # the socket: "as": "admin" is refused; without it the admin plays the seat
        ws, first = await connect(srv.url, match_id, srv.admin_token, as_="admin")
        assert first["type"] == "error" and first["code"] == "seated_admin"
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv(timeout=10)
        assert closed.value.rcvd.code == 4403
        ws, first = await connect(srv.url, match_id, srv.admin_token)
        assert first["type"] == "state" and first["viewer"] == "seat" and first["seat"] == 0
        await ws.close()
        # a match the admin does not play in opens as before
        other = await guest.create_lobby("provinces", 2)
        await guest.fill_bots(other["id"], "random")
        other_match = (await guest.start(other["id"]))["match_id"]
        assert (await admin.admin_match(other_match))["viewer"] == "admin"
        ws, first = await connect(srv.url, other_match, srv.admin_token, as_="admin")
        assert first["type"] == "state" and first["viewer"] == "admin"
        await ws.close()
        # without "as" an unseated admin watches as a spectator: the admin view only when asked for
        ws, first = await connect(srv.url, other_match, srv.admin_token)
        assert first["type"] == "state" and first["viewer"] == "spectator"
        await ws.close()
        # once the seated match is over, its admin view opens
        await admin.admin_abort(match_id, "test over")
        for _ in range(200):                 # the abort's answer may come before its record is durable
            if (await admin.match(match_id))["status"] == "aborted":
                break
            await asyncio.sleep(0.05)
        assert (await admin.admin_log(match_id))["actions"]
