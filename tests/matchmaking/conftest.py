"""Fixtures of the matchmaking suite: every store contract test runs against the in-process store
and the real local Redis (both with parties and rematch offers; a fresh key prefix per test, its
keys deleted afterwards)."""
from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from redis.asyncio import Redis

from app.matchmaking.parties import LocalParties, RedisParties
from app.matchmaking.service import pool_key
from tests.conftest import REDIS_URL

KINDS = ["local", pytest.param("redis", marks=pytest.mark.redis)]


@pytest.fixture(params=KINDS)
def kind(request) -> str:
    return request.param


@pytest.fixture
async def make_store(kind):
    """``make_store()``: a started store of the test's kind; Redis ones share one prefix (two
    "nodes" on one queue). Closed, and their keys deleted, afterwards."""
    prefix = f"bftest:{uuid.uuid4().hex}:"
    made: list[Any] = []
    clients: list[Redis] = []
    local = LocalParties()

    async def factory():
        if kind == "local":
            store: Any = local
        else:
            client = Redis.from_url(REDIS_URL)
            clients.append(client)
            store = RedisParties(client, REDIS_URL, prefix, ticket_ttl=300, recheck=2.0)
        await store.start()
        made.append(store)
        return store

    yield factory
    for store in made:
        await store.close()
    if kind == "redis":
        client = Redis.from_url(REDIS_URL)
        keys = [k async for k in client.scan_iter(match=prefix + "*", count=1000)]
        if keys:
            await client.delete(*keys)
        await client.aclose()
    for c in clients:
        await c.aclose()


def new_ticket(player_id: str | None = None, *, game: str = "provinces", seats: int = 2,
               options: dict[str, Any] | None = None, rating: float = 0.0, created_at: float | None = None,
               bots_after_seconds: float | None = None) -> dict[str, Any]:
    options = options or {}
    return {"id": uuid.uuid4().hex, "player_id": player_id or uuid.uuid4().hex, "game": game, "seats": seats,
            "options": options, "pool": pool_key(game, seats, options), "rating": rating,
            "created_at": time.time() if created_at is None else created_at,
            "bots_after_seconds": bots_after_seconds}
