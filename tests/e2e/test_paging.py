"""Issue 14 item 5: every list that grows pages with an opaque cursor (``?cursor=…&limit=…`` →
``{items, next_cursor}``): lobbies, matches, admin matches. One guest with many lobbies no longer
hides everyone else's; pages are stable under inserts; a foreign or broken cursor is refused."""
from __future__ import annotations

import httpx
import pytest

from tests.conftest import ServerProcess, make_db_url

API = "/api/v1"


@pytest.fixture(params=["sqlite", "postgres"], scope="module")
def paged_server(request, tmp_path_factory):
    if request.param == "postgres":
        request.getfixturevalue("postgres_server")
    url, pg = make_db_url(request.param, tmp_path_factory.mktemp("paging"))
    srv = ServerProcess(url, env={"BANNERFALL_MAX_LOBBIES_PER_PLAYER": "0",
                                  "BANNERFALL_MAX_BOT_MATCHES_PER_PLAYER": "0",
                                  "BANNERFALL_RATE_LIMIT_PLAYER": "",
                                  "BANNERFALL_RATE_LIMIT_NEW_PLAYERS": ""}).start()
    yield srv
    srv.stop()
    if pg:
        pg.drop()


def _guest(srv, name: str) -> httpx.Client:
    token = httpx.post(srv.url + API + "/players", json={"name": name}, timeout=10).json()["token"]
    return httpx.Client(base_url=srv.url + API, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _all_pages(client: httpx.Client, path: str, limit: int, between=None) -> list[str]:
    ids, cursor, pages = [], None, 0
    while True:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = client.get(path, params=params).json()
        assert set(page) == {"items", "next_cursor"}
        assert len(page["items"]) <= limit
        ids += [x["id"] for x in page["items"]]
        cursor, pages = page["next_cursor"], pages + 1
        if between:
            between(pages)
        if cursor is None:
            return ids


def test_one_guest_with_many_lobbies_hides_nobody(paged_server):
    flood, other = _guest(paged_server, "flooder"), _guest(paged_server, "quiet")
    mine = other.post("/lobbies", json={"game": "provinces", "seats": 2}).json()["id"]
    for _ in range(105):
        assert flood.post("/lobbies", json={"game": "provinces", "seats": 2}).status_code == 201
    first = other.get("/lobbies").json()
    assert len(first["items"]) == 50 and first["next_cursor"]
    assert mine in _all_pages(other, "/lobbies", 40)


def test_lobby_pages_are_stable_under_inserts(paged_server):
    reader, writer = _guest(paged_server, "reader"), _guest(paged_server, "writer")
    before = _all_pages(reader, "/lobbies", 1000)
    added: list[str] = []

    def insert(_page: int) -> None:  # new lobbies arrive while the reader pages
        added.append(writer.post("/lobbies", json={"game": "provinces", "seats": 2}).json()["id"])

    seen = _all_pages(reader, "/lobbies", 7, between=insert)
    assert len(seen) == len(set(seen))  # nobody twice
    assert set(before) <= set(seen)  # nobody there all along skipped
    assert not set(added) & set(seen)  # the new ones are newer than the first page: not mixed in


def test_bad_cursors_are_refused_and_change_nothing(paged_server):
    c = _guest(paged_server, "cursor tester")
    c.post("/lobbies", json={"game": "provinces", "seats": 2})
    c.post("/lobbies", json={"game": "provinces", "seats": 2})
    lobby_cursor = c.get("/lobbies", params={"limit": 1}).json()["next_cursor"]
    for path, cursor in [("/lobbies", "garbage!"), ("/lobbies", "e30"), ("/matches", lobby_cursor),
                         ("/lobbies", "x" * 600)]:
        r = c.get(path, params={"cursor": cursor})
        assert r.status_code == 422, (path, cursor, r.text)
        assert r.json()["code"] in ("bad_cursor", "invalid_request")
    assert c.get("/lobbies", params={"limit": 0}).status_code == 422


def test_matches_and_admin_matches_page(paged_server):
    host = _guest(paged_server, "host")
    started = []
    for _ in range(5):
        lobby = host.post("/lobbies", json={"game": "provinces", "seats": 2}).json()
        host.post(f"/lobbies/{lobby['id']}/bots", json={"kind": "random"})
        started.append(host.post(f"/lobbies/{lobby['id']}/start").json()["match_id"])
    seen = _all_pages(host, "/matches", 2)
    assert set(started) <= set(seen) and len(seen) == len(set(seen))
    admin = httpx.Client(base_url=paged_server.url + API,
                         headers={"Authorization": f"Bearer {paged_server.admin_token}"}, timeout=30)
    admin_seen = _all_pages(admin, "/admin/matches", 3)
    assert set(started) <= set(admin_seen) and len(admin_seen) == len(set(admin_seen))


def test_the_ledger_pages_with_a_cursor(paged_server):
    player = _guest(paged_server, "saver")
    me = player.get("/players/me").json()["id"]
    admin = httpx.Client(base_url=paged_server.url + API,
                         headers={"Authorization": f"Bearer {paged_server.admin_token}"}, timeout=30)
    for i in range(5):
        grant = {"amount": 10 + i, "reason": f"grant {i}"}
        assert admin.post(f"/admin/players/{me}/crystals", json=grant).status_code == 200
    rows, cursor = [], None
    while True:
        page = player.get("/players/me/ledger", params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        rows += page["items"]
        admin.post(f"/admin/players/{me}/crystals", json={"amount": 1, "reason": "while paging"})  # newer: not mixed in
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [r["delta"] for r in rows] == [14, 13, 12, 11, 10]
    assert len(admin.get(f"/admin/players/{me}/ledger", params={"limit": 100}).json()["items"]) == 5 + 3
    other_cursor = player.get("/lobbies", params={"limit": 1}).json()["next_cursor"] or "x"
    bad = player.get("/players/me/ledger", params={"cursor": other_cursor})
    assert (bad.status_code, bad.json()["code"]) == (422, "bad_cursor")
