"""Queries behind parties and rematches: who of some players sits in a running match, whether a
lobby is rated, and the lobby of a rematch (its seats as in the ended match) in one transaction."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.tables import in_list, lobbies_t, matches_t, players_t, seats_t

#: built once (``app.db.tables.in_list``): players of ``ids`` seated in a running match
_SEATED_RUNNING = (select(seats_t.c.player_id, matches_t.c.id)
                   .select_from(seats_t.join(lobbies_t, lobbies_t.c.id == seats_t.c.lobby_id)
                                .join(matches_t, matches_t.c.id == lobbies_t.c.match_id))
                   .where(matches_t.c.status == "running", in_list(seats_t.c.player_id, "ids")))


async def running_matches_of(engine: AsyncEngine, player_ids: Iterable[str]) -> dict[str, str]:
    """``{player_id: match_id}`` for those of ``player_ids`` seated in a running match (every match
    is started from a lobby, quick play's too, so its seats are the lobby's)."""
    ids = list(dict.fromkeys(player_ids))
    if not ids:
        return {}
    async with engine.connect() as conn:
        return {r.player_id: r.id for r in (await conn.execute(_SEATED_RUNNING, {"ids": ids})).all()}


async def lobby_rated(engine: AsyncEngine, lobby_id: str | None) -> bool:
    """Whether lobby ``lobby_id`` is rated (False for no lobby)."""
    if not lobby_id:
        return False
    async with engine.connect() as conn:
        return bool((await conn.execute(select(lobbies_t.c.rated).where(lobbies_t.c.id == lobby_id))).scalar())


async def create_lobby_with_seats(engine: AsyncEngine, lobby: dict[str, Any], seats: Sequence[dict[str, Any]],
                                  bots: Sequence[dict[str, Any]]) -> None:
    """Insert an open lobby with every seat taken as given (``seats``: by seat, ``{player_id, bot}``)
    and the ``bots``' player rows, in one transaction. Raises ``IntegrityError`` if a lobby with its
    id exists (a rematch's lobby id is derived from the ended match, so it is made once)."""
    async with engine.begin() as conn:
        await conn.execute(insert(lobbies_t), lobby)
        if bots:
            await conn.execute(insert(players_t), list(bots))
        await conn.execute(insert(seats_t), [
            {"lobby_id": lobby["id"], "seat": i, "player_id": s["player_id"], "bot": s.get("bot"), "loadout": None}
            for i, s in enumerate(seats)])
