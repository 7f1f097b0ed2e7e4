"""An overloaded database gets a clear answer, never a 500: with SQLite's write lock held elsewhere
past the busy timeout, a request that writes is answered ``503 storage_busy`` with ``Retry-After``
and changes nothing (no player, no match, the lobby still open, no lease left behind); once the
lock is free the same requests succeed. Embedded mode (SQLite), a real server."""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import Iterator

import httpx
import pytest

from tests.conftest import Backend, make_db_url


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    url, _ = make_db_url("sqlite", tmp_path_factory.mktemp("db"))
    # a short busy timeout so the test does not wait the default 10 s for each refusal
    yield Backend("sqlite", url, {"BANNERFALL_SQLITE_BUSY_TIMEOUT_MS": "200", "BANNERFALL_RUN_BOTS": "false"})


@contextmanager
def write_lock(db_url: str) -> Iterator[sqlite3.Connection]:
    """Another connection holds the database's write lock (as a long writer would)."""
    conn = sqlite3.connect(db_url.split(":///", 1)[1], isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def count(db_url: str, sql: str) -> int:
    conn = sqlite3.connect(db_url.split(":///", 1)[1])
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def busy(resp: httpx.Response) -> bool:
    return (resp.status_code == 503 and resp.json()["code"] == "storage_busy"
            and resp.headers.get("retry-after") == "1")


async def test_a_locked_database_answers_503_and_changes_nothing(server, backend):
    async with httpx.AsyncClient(base_url=server.url + "/api/v1", timeout=30) as http:
        async def player(name: str) -> str:
            r = await http.post("/players", json={"name": name})
            assert r.status_code == 201, r.text
            return r.json()["token"]

        host, guest = await player("host"), await player("guest")
        auth = {"Authorization": f"Bearer {host}"}
        r = await http.post("/lobbies", json={"game": "provinces", "seats": 2, "options": {"turn_seconds": 3600}},
                            headers=auth)
        assert r.status_code == 201, r.text
        lobby = r.json()
        assert lobby == (await http.get(f"/lobbies/{lobby['id']}", headers=auth)).json()  # answered as stored
        r = await http.post(f"/lobbies/{lobby['id']}/join", json={}, headers={"Authorization": f"Bearer {guest}"})
        assert r.status_code == 200, r.text
        players_before = count(backend.url, "SELECT count(*) FROM players")

        with write_lock(backend.url):
            refused = [await http.post("/players", json={"name": "late"}),
                       await http.post(f"/lobbies/{lobby['id']}/start", headers=auth),
                       await http.post("/lobbies", json={"game": "provinces", "seats": 2}, headers=auth)]
            assert all(busy(r) for r in refused), [(r.status_code, r.text) for r in refused]

        # nothing changed: no player, no match, no lobby; the lobby is open
        assert count(backend.url, "SELECT count(*) FROM players") == players_before
        assert count(backend.url, "SELECT count(*) FROM matches") == 0
        assert count(backend.url, "SELECT count(*) FROM lobbies") == 1
        assert (await http.get(f"/lobbies/{lobby['id']}", headers=auth)).json()["status"] == "open"
        # and the same requests go through once the lock is free (the refused start left no lease)
        r = await http.post(f"/lobbies/{lobby['id']}/start", headers=auth)
        assert r.status_code == 200, r.text
        started = r.json()
        assert started["status"] == "started" and started["match_id"]
        stored = (await http.get(f"/lobbies/{lobby['id']}", headers=auth)).json()
        assert started == stored  # the answer is the lobby as stored
        match = (await http.get(f"/matches/{started['match_id']}", headers=auth)).json()
        assert match["status"] == "running"
        assert (await http.post("/players", json={"name": "late"})).status_code == 201
    logs = server.logs()
    assert "Traceback" not in logs and "internal_error" not in logs
    assert "database busy on POST /api/v1/lobbies" in logs
