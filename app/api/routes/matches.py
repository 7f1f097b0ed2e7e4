"""Public match metadata: seats, status, the seed commitment (and the seed once ended)."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import PlayerDep, RepoDep
from app.api.errors import not_found
from app.api.schemas import MatchPublic, MatchSeat

router = APIRouter(prefix="/matches", tags=["matches"])


def match_public(m: dict[str, Any]) -> MatchPublic:
    ended = m["status"] != "running"
    return MatchPublic(
        id=m["id"], game=m["game"], status=m["status"], options=m["options"],
        seats=[MatchSeat(seat=i, player_id=s.get("player_id"), name=s.get("name", ""), bot=s.get("bot"))
               for i, s in enumerate(m["seats"])],
        seed_hash=m["seed_hash"], seed=m["seed"] if ended else None, outcome=m["outcome"],
        created_at=m["created_at"], ended_at=m["ended_at"], version=m.get("version"),
    )


@router.get("/{match_id}", response_model=MatchPublic)
async def get_match(match_id: str, repo: RepoDep, _player: PlayerDep) -> MatchPublic:
    m = await repo.match(match_id)
    if m is None:
        raise not_found("match")
    return match_public(m)


@router.get("", response_model=list[MatchPublic])
async def list_matches(repo: RepoDep, player: PlayerDep, status: str | None = None,
                       game: str | None = None) -> list[MatchPublic]:
    """Matches, newest first (public data only; filter by ``status`` and ``game``)."""
    return [match_public(m) for m in await repo.matches(status=status, game=game, limit=100)]
