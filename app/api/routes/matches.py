"""Public match metadata: seats, status, the seed commitment (and the seed once ended)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query

from app.api.deps import ManagerDep, PlayerDep, RepoDep, SettingsDep
from app.api.errors import ApiError, not_found, responses
from app.api.schemas import MatchPage, MatchPublic, MatchSeat, Text
from app.db.paging import BadCursor
from app.games.versions import match_rules_version
from app.runtime.interfaces import MatchDirectory

router = APIRouter(prefix="/matches", tags=["matches"])

MatchId = Annotated[Text, Path(max_length=64, description="a match id")]


def match_public(m: Mapping[str, Any]) -> MatchPublic:
    ended = m["status"] != "running"
    return MatchPublic(
        id=m["id"], game=m["game"], status=m["status"], options=m["options"],
        seats=[MatchSeat(seat=i, player_id=s.get("player_id"), name=s.get("name", ""), bot=s.get("bot"))
               for i, s in enumerate(m["seats"])],
        seed_hash=m["seed_hash"], seed=m["seed"] if ended else None, outcome=m["outcome"],
        created_at=m["created_at"], ended_at=m["ended_at"], version=m.get("version"),
        rules_version=match_rules_version(m),
    )


def with_live_version(matches: MatchDirectory, out: MatchPublic) -> MatchPublic:
    """The version players and spectators may know: the spectators' audience version when the match
    is in memory on this node, else null. Never the match's own action count (``matches.version``),
    which would count private actions (provinces.md 6.4); admins see that one (``/admin/matches``)."""
    out.version = matches.spectator_version(out.id)
    return out


@router.get("/{match_id}", response_model=MatchPublic, responses=responses(401, 404))
async def get_match(match_id: MatchId, repo: RepoDep, manager: ManagerDep, _player: PlayerDep) -> MatchPublic:
    m = await repo.match(match_id)
    if m is None:
        raise not_found("match")
    return with_live_version(manager, match_public(m))


@router.get("", response_model=MatchPage, responses=responses(401))
async def list_matches(repo: RepoDep, manager: ManagerDep, player: PlayerDep, settings: SettingsDep,
                       status: Literal["running", "finished", "aborted"] | None = None,
                       game: Annotated[Text | None, Query(max_length=32)] = None,
                       cursor: Annotated[Text | None, Query(max_length=512)] = None,
                       limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> MatchPage:
    """A page of matches, newest first (public data only; filter by ``status`` and ``game``):
    ``{items, next_cursor}``. 422 ``bad_cursor``."""
    try:
        rows, next_cursor = await repo.matches_page(status, game, min(limit, settings.page_max), cursor)
    except BadCursor as exc:
        raise ApiError(422, "bad_cursor", str(exc)) from None
    return MatchPage(items=[with_live_version(manager, match_public(m)) for m in rows], next_cursor=next_cursor)
