"""Migration 0008 on a real database (SQLite and Postgres) taken to 0006 first: the matches that
existed get rules version 1 (what the code before it played), and a node of that code, still
running during the rolling upgrade, inserts matches without the column and gets 1 too."""
from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import insert, select, text

from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.tables import matches_t
from tests.conftest import make_db_url

_MATCH = ("INSERT INTO matches (id, game, options, seat_count, seats, seed, seed_hash, status, lobby_id, "
          "deadlines, outcome, version, created_at, ended_at, owner_epoch, owner_node) VALUES "
          "(:id, 'conquest', '{}', 2, '[]', '00', 'h', :status, NULL, '{}', NULL, 0, 1.0, NULL, 1, 'old')")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_existing_matches_and_an_old_nodes_inserts_get_version_1(kind, tmp_path):
    url, pg = await asyncio.to_thread(make_db_url, kind, tmp_path)
    engine = None
    try:
        await upgrade_async(url, "0006")
        engine = make_engine(url)
        async with engine.begin() as conn:
            await conn.execute(text(_MATCH), {"id": "before-running", "status": "running"})
            await conn.execute(text(_MATCH), {"id": "before-ended", "status": "finished"})
        await upgrade_async(url)
        async with engine.begin() as conn:
            await conn.execute(text(_MATCH), {"id": "old-node", "status": "running"})  # no rules_version
            await conn.execute(insert(matches_t), {
                "id": "new-node", "game": "conquest", "options": {}, "seat_count": 2, "seats": [], "seed": "00",
                "seed_hash": "h", "status": "running", "lobby_id": None, "deadlines": {}, "outcome": None,
                "version": 0, "created_at": 2.0, "ended_at": None, "owner_epoch": 1, "owner_node": "new",
                "rules_version": 7})
            rows = dict((await conn.execute(select(matches_t.c.id, matches_t.c.rules_version))).all())
        assert rows == {"before-running": 1, "before-ended": 1, "old-node": 1, "new-node": 7}
    finally:
        if engine is not None:
            await engine.dispose()
        if pg:
            await asyncio.to_thread(pg.drop)
