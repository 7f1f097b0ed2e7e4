"""Counts behind the per-player caps (``app.api.limits``): open lobbies a player sits in, running
matches with bots a player hosts. Each query starts from a status index (open lobbies, running
matches are few), not from the ever-growing history."""
from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.tables import lobbies_t, matches_t, seats_t


async def open_lobbies_of(engine: AsyncEngine, player_id: str) -> int:
    """Open lobbies in which ``player_id`` holds a seat (a host always holds seat 0)."""
    query = (select(func.count(func.distinct(lobbies_t.c.id)))
             .select_from(lobbies_t.join(seats_t, seats_t.c.lobby_id == lobbies_t.c.id))
             .where(lobbies_t.c.status == "open", seats_t.c.player_id == player_id))
    async with engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one())


async def seated_in(engine: AsyncEngine, lobby_id: str, player_id: str) -> bool:
    """Whether ``player_id`` holds a seat in lobby ``lobby_id`` (a join of it is idempotent)."""
    query = (select(func.count()).select_from(seats_t)
             .where(seats_t.c.lobby_id == lobby_id, seats_t.c.player_id == player_id))
    async with engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one()) > 0


async def lobby_has_bots(engine: AsyncEngine, lobby_id: str) -> bool:
    query = select(func.count()).select_from(seats_t).where(seats_t.c.lobby_id == lobby_id, seats_t.c.bot.is_not(None))
    async with engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one()) > 0


async def running_bot_matches_hosted_by(engine: AsyncEngine, player_id: str) -> int:
    """Running matches with at least one bot seat whose lobby ``player_id`` hosted."""
    query = (select(matches_t.c.seats)
             .select_from(matches_t.join(lobbies_t, lobbies_t.c.id == matches_t.c.lobby_id))
             .where(matches_t.c.status == "running", lobbies_t.c.host_id == player_id))
    async with engine.connect() as conn:
        rows = (await conn.execute(query)).scalars().all()
    return sum(1 for seats in rows if any(s.get("bot") for s in seats or ()))
