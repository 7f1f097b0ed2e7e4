"""Leaderboards and profiles (issue 14 item 4): ``GET /games/{id}/leaderboard`` (cursor-paged, by
ordinal, with the asking player's own rank) and ``GET /players/{id}`` (public fields, per-game
rating, wins and recent rated matches; never a token or a hash)."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request

from app.api.deps import PlayerDep, RepoDep
from app.api.errors import ApiError, not_found, responses
from app.api.schemas import (
    LeaderboardPage,
    LeaderboardRow,
    PlayerPublic,
    ProfilePublic,
    RatingPublic,
    RecentMatch,
    Text,
)
from app.db.accounts import AccountsRepository
from app.db.paging import BadCursor
from app.db.ratings import RatingsRepository, ordinal
from app.games import registry

router = APIRouter(tags=["ratings"])

GameId = Annotated[Text, Path(max_length=32, description="a game id from GET /games")]
PlayerId = Annotated[Text, Path(max_length=64, description="a player id")]
Cursor = Annotated[Text | None, Query(max_length=512, description="next_cursor of the previous page")]
Limit = Annotated[int, Query(ge=1, le=1000, description="items per page (at most page_max)")]
#: recent matches a profile lists
RECENT = 10


def get_ratings(request: Request) -> RatingsRepository:
    state = request.app.state
    if getattr(state, "ratings", None) is None:
        state.ratings = RatingsRepository(state.repo.engine, writer=state.repo.log_committer)
    return state.ratings


RatingsDep = Annotated[RatingsRepository, Depends(get_ratings)]


def page_limit(request: Request, limit: int) -> int:
    return min(limit, request.app.state.settings.page_max)


def bad_cursor(exc: BadCursor) -> ApiError:
    return ApiError(422, "bad_cursor", str(exc))


def _row(r: dict[str, Any]) -> LeaderboardRow:
    return LeaderboardRow(rank=r["rank"], player=PlayerPublic(id=r["player_id"], name=r["name"], role=r["role"]),
                          username=r["username"],
                          rating=RatingPublic(mu=r["mu"], sigma=r["sigma"], ordinal=r["ordinal"],
                                              matches=r["matches"], wins=r["wins"]))


@router.get("/games/{game_id}/leaderboard", response_model=LeaderboardPage, responses=responses(401, 404))
async def leaderboard(game_id: GameId, request: Request, player: PlayerDep, ratings: RatingsDep,
                      cursor: Cursor = None, limit: Limit = 50) -> LeaderboardPage:
    """Players rated in this game, highest ordinal (mu - 3 sigma) first, ties by player id; ``me`` is
    the asking player's row with its rank (None if never rated here). 404 ``unknown_game``;
    422 ``bad_cursor``."""
    if game_id not in registry():
        raise ApiError(404, "unknown_game", f"no game {game_id!r}")
    try:
        page = await ratings.leaderboard(game_id, limit=page_limit(request, limit), cursor=cursor, me=player["id"])
    except BadCursor as exc:
        raise bad_cursor(exc) from None
    return LeaderboardPage(game=game_id, items=[_row(r) for r in page["items"]], next_cursor=page["next_cursor"],
                           me=_row(page["me"]) if page["me"] else None)


@router.get("/players/{player_id}", response_model=ProfilePublic, responses=responses(401, 404))
async def profile(player_id: PlayerId, _player: PlayerDep, repo: RepoDep, ratings: RatingsDep) -> ProfilePublic:
    """A player's public profile: name, username, role, per-game ratings (with wins) and its last
    rated matches, newest first. 404 ``not_found``."""
    p = await repo.player(player_id)
    if p is None:
        raise not_found("player")
    usernames = await AccountsRepository(repo.engine).usernames([player_id])
    recent = [RecentMatch(match_id=c["match_id"], game=c["game"], seat=c["seat"], rank=c["rank"],
                          seats=c["seat_count"], ordinal_before=ordinal(c["mu_before"], c["sigma_before"]),
                          ordinal_after=c["ordinal_after"], ended_at=c["ended_at"] or c["created_at"])
              for c in await ratings.recent_matches(player_id, RECENT)]
    return ProfilePublic(player=PlayerPublic(**p), username=usernames.get(player_id), created_at=p["created_at"],
                         ratings={g: RatingPublic(**r.__dict__)
                                  for g, r in (await ratings.player_ratings(player_id)).items()},
                         recent_matches=recent)
