"""Counts behind the per-player caps (``app.api.limits``): open lobbies a player sits in, running
matches with bots a player hosts. Each query starts from a status index (open lobbies, running
matches are few), not from the ever-growing history."""
from __future__ import annotations

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.tables import lobbies_t, matches_t, seats_t

#: built once (every create and join runs it): executions find the compiled form by its cache key
_OPEN_LOBBIES_OF = (select(func.count(func.distinct(lobbies_t.c.id)))
                    .select_from(lobbies_t.join(seats_t, seats_t.c.lobby_id == lobbies_t.c.id))
                    .where(lobbies_t.c.status == "open", seats_t.c.player_id == bindparam("p_player")))
_SEATED_IN = (select(func.count()).select_from(seats_t)
              .where(seats_t.c.lobby_id == bindparam("p_lobby"), seats_t.c.player_id == bindparam("p_player")))


async def open_lobbies_of(engine: AsyncEngine, player_id: str) -> int:
    """Open lobbies in which ``player_id`` holds a seat (a host always holds seat 0)."""
    async with engine.connect() as conn:
        return int((await conn.execute(_OPEN_LOBBIES_OF, {"p_player": player_id})).scalar_one())


async def seated_in(engine: AsyncEngine, lobby_id: str, player_id: str) -> bool:
    """Whether ``player_id`` holds a seat in lobby ``lobby_id`` (a join of it is idempotent)."""
    async with engine.connect() as conn:
        return int((await conn.execute(_SEATED_IN, {"p_lobby": lobby_id, "p_player": player_id})).scalar_one()) > 0


async def lobby_has_bots(engine: AsyncEngine, lobby_id: str) -> bool:
    query = select(func.count()).select_from(seats_t).where(seats_t.c.lobby_id == lobby_id, seats_t.c.bot.is_not(None))
    async with engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one()) > 0


async def running_bot_matches_hosted_by(engine: AsyncEngine, player_id: str) -> int:
    """Running matches with at least one bot seat whose lobby ``player_id`` hosted."""
    return (await running_bot_matches_by_host(engine, [player_id])).get(player_id, 0)


async def running_bot_matches_by_host(engine: AsyncEngine, player_ids: list[str]) -> dict[str, int]:
    """For each of ``player_ids`` that hosts any: its running matches with at least one bot seat
    (one query for all, from the running matches)."""
    if not player_ids:
        return {}
    query = (select(lobbies_t.c.host_id, matches_t.c.seats)
             .select_from(matches_t.join(lobbies_t, lobbies_t.c.id == matches_t.c.lobby_id))
             .where(matches_t.c.status == "running", lobbies_t.c.host_id.in_(player_ids)))
    async with engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    counts: dict[str, int] = {}
    for host, seats in rows:
        if any(s.get("bot") for s in seats or ()):
            counts[host] = counts.get(host, 0) + 1
    return counts


def has_bots(seats: list[dict]) -> bool:
    """Whether any of a lobby's ``seats`` (``{seat, player_id, bot, …}``) is a bot's."""
    return any(s.get("bot") for s in seats)
