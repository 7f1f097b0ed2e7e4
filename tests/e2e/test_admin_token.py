"""Issue 13 item 1 (and issue 9 item 9's admin row): the admin token policy at start, tokens up to
the sign-in limit, rotation revoking the old token, random admin ids, an idempotent admin row when
several nodes start together."""
from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import subprocess
import sys
import threading

import httpx
import pytest
from sqlalchemy import select

from app.api.security import admin_token_problem
from app.db.admins import ensure_admin, legacy_admin_id
from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.models import Player
from tests.conftest import ROOT, PostgresDatabase, ServerProcess

players_t = Player.__table__


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _serve_refused(tmp_path, token: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BANNERFALL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'refused.db'}",
           "BANNERFALL_ADMIN_TOKEN": token, "BANNERFALL_PORT": "1"}
    return subprocess.run([sys.executable, "-m", "app.cli", "serve"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("token, reason", [
    ("a", "at least 24"),
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "one kind"),
    ("abababababababababab1212", "different characters"),
    ("correct horse battery staple 42", "without spaces"),
    ("aB3" * 86, "at most 256"),
])
def test_weak_or_unusable_admin_tokens_are_refused_at_start_with_one_line(tmp_path, token, reason):
    out = _serve_refused(tmp_path, token)
    assert out.returncode == 2, out.stdout + out.stderr  # a setting that is wrong whatever the machine
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "BANNERFALL_ADMIN_TOKEN refused" in lines[0] and reason in lines[0], out.stderr
    if len(token) > 8:
        assert token not in out.stderr and token not in out.stdout
    assert not (tmp_path / "refused.db").exists()  # refused before anything was touched


def test_token_policy_accepts_generated_tokens():
    for _ in range(50):
        assert admin_token_problem(secrets.token_urlsafe(24)) is None
        assert admin_token_problem(secrets.token_hex(16)) is None
    assert admin_token_problem("Xy1" * 8) is not None          # 24 characters but only 3 different
    assert admin_token_problem("x" * 23 + "Y") is not None


def _status(url: str, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.get(url + "/api/v1/admin/matches", headers=headers, timeout=10).status_code


def test_a_256_character_token_signs_in_and_rotation_revokes_the_old_one(tmp_path):
    db = f"sqlite+aiosqlite:///{tmp_path / 'rotation.db'}"
    long_token = (secrets.token_urlsafe(192) + "Aa1")[:256]
    first = ServerProcess(db)
    first.admin_token = long_token
    first.start()
    try:
        assert _status(first.url, long_token) == 200
        headers = {"Authorization": f"Bearer {long_token}"}
        me = httpx.get(first.url + "/api/v1/players/me", headers=headers, timeout=10).json()
        assert me["role"] == "admin"
        # ids reveal nothing about the token: not derived from it or its hash
        assert me["id"] != legacy_admin_id(_sha(long_token)) and me["id"][:12] not in _sha(long_token)
        lobby = httpx.post(first.url + "/api/v1/lobbies", json={"game": "provinces", "seats": 2},
                           headers=headers, timeout=10).json()
        assert lobby["host_id"] == me["id"]
    finally:
        first.stop()

    second = ServerProcess(db, port=first.port)   # restarted with another token
    second.start()
    try:
        assert _status(second.url, long_token) == 401
        assert _status(second.url, second.admin_token) == 200
        # the revoked admin's open lobby was closed
        guest = httpx.post(second.url + "/api/v1/players", json={"name": "g"}, timeout=10).json()
        got = httpx.get(second.url + f"/api/v1/lobbies/{lobby['id']}",
                        headers={"Authorization": f"Bearer {guest['token']}"}, timeout=10).json()
        assert got["status"] == "closed"
    finally:
        second.stop()

    third = ServerProcess(db, port=first.port, env={"BANNERFALL_ADMIN_TOKEN": ""})   # and with none
    third.start()
    try:
        assert _status(third.url, second.admin_token) == 401
        assert _status(third.url, long_token) == 401
        # the answer says the server has no admin token and how to set one (the console shows it)
        for headers in ({}, {"Authorization": f"Bearer {long_token}"}):
            body = httpx.get(third.url + "/api/v1/admin/matches", headers=headers, timeout=10).json()
            assert body["code"] == "unauthorized" and "no admin token" in body["message"]
            assert "BANNERFALL_ADMIN_TOKEN" in body["message"]
        guest = httpx.post(third.url + "/api/v1/players", json={"name": "g"}, timeout=10).json()
        resp = httpx.get(third.url + "/api/v1/admin/matches", headers={"Authorization": f"Bearer {guest['token']}"},
                         timeout=10)
        assert resp.status_code == 403 and "no admin token" in resp.json()["message"]
    finally:
        third.stop()
    assert long_token not in first.logs() + second.logs() + third.logs()


@pytest.mark.postgres
async def test_admin_row_is_idempotent_when_many_nodes_start_together():
    db = PostgresDatabase()
    url = await asyncio.to_thread(db.create)
    try:
        await upgrade_async(url)
        token_hash = _sha(secrets.token_urlsafe(32))
        # a row as older versions made it: its id derived from the hash
        engine = make_engine(url)
        async with engine.begin() as conn:
            await conn.execute(players_t.insert().values(id=legacy_admin_id(token_hash), name="admin", role="admin",
                                                         token_hash=token_hash, created_at=0.0))
        engines = [make_engine(url) for _ in range(6)]
        try:
            rows = await asyncio.gather(*(ensure_admin(e, token_hash) for e in engines))
        finally:
            for e in engines:
                await e.dispose()
        assert len({r["id"] for r in rows}) == 1
        async with engine.connect() as conn:
            admins = (await conn.execute(select(players_t).where(players_t.c.role == "admin"))).all()
        await engine.dispose()
        live = [a for a in admins if a.token_hash == token_hash]
        assert len(live) == 1 and live[0].id == rows[0]["id"] and live[0].id != legacy_admin_id(token_hash)
        assert all(a.token_hash.startswith("revoked:") for a in admins if a.id != live[0].id)
    finally:
        await asyncio.to_thread(db.drop)


@pytest.mark.postgres
def test_three_nodes_start_together_with_one_admin_token(redis_env):
    db = PostgresDatabase()
    url = db.create()
    try:
        subprocess.run([sys.executable, "-m", "app.cli", "migrate"], cwd=ROOT, check=True, capture_output=True,
                       env={**os.environ, "BANNERFALL_DATABASE_URL": url}, timeout=120)
        token = secrets.token_urlsafe(32)
        nodes = [ServerProcess(url, env={"BANNERFALL_MIGRATE_ON_START": "false", **redis_env}) for _ in range(3)]
        errors: list[BaseException] = []

        def start(node: ServerProcess) -> None:
            node.admin_token = token
            try:
                node.start()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(n,)) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        try:
            assert not errors, errors
            ids = {httpx.get(n.url + "/api/v1/players/me", headers={"Authorization": f"Bearer {token}"},
                             timeout=10).json()["id"] for n in nodes}
            assert len(ids) == 1
        finally:
            for n in nodes:
                n.stop()
    finally:
        db.drop()
