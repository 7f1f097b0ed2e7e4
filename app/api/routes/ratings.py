"""Leaderboards and profiles: ``GET /games/{id}/leaderboard`` (cursor-paged, by
ordinal, with the asking player's own rank) and ``GET /players/{id}`` (public fields, per-game
rating, wins and recent rated matches; never a token or a hash)."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request

from app.api.deps import PlayerDep, RepoDep
from app.api.errors import ApiError, not_found, responses
from app.api.schemas import (
    RATING_EXPLANATION,
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
from app.db.ratings import Rating, RatingRules, RatingsRepository, display_rating, ordinal
from app.games import registry

router = APIRouter(tags=["ratings"])

GameId = Annotated[Text, Path(max_length=32, description="a game id from GET /games")]
PlayerId = Annotated[Text, Path(max_length=64, description="a player id")]
Cursor = Annotated[Text | None, Query(max_length=512, description="next_cursor of the previous page")]
Limit = Annotated[int, Query(ge=1, le=1000, description="items per page (at most page_max)")]
#: recent matches a profile lists
RECENT = 10


async def get_ratings(request: Request) -> RatingsRepository:
    state = request.app.state
    if getattr(state, "ratings", None) is None:
        state.ratings = RatingsRepository(state.repo.engine, writer=state.repo.log_committer,
                                          rules=rating_rules(state.settings))
    return state.ratings


def rating_rules(settings: Any) -> RatingRules:
    """The :class:`RatingRules` of the settings (``RATING_REPEAT_*``, ``RATING_PROVISIONAL_MATCHES``)."""
    return RatingRules(repeat_limit=settings.rating_repeat_limit,
                       repeat_window_seconds=settings.rating_repeat_window_seconds,
                       provisional_matches=settings.rating_provisional_matches)


def explanation(ratings: RatingsRepository) -> str:
    n = ratings.rules.provisional_matches
    return RATING_EXPLANATION.format(n=int(n) if float(n).is_integer() else n)


def rating_public(ratings: RatingsRepository, r: Rating | dict[str, Any]) -> RatingPublic:
    """The public rating: exact mu, sigma, ordinal; the display value; provisional or not."""
    f = r if isinstance(r, dict) else r.__dict__
    return RatingPublic(mu=f["mu"], sigma=f["sigma"], ordinal=f["ordinal"], display=display_rating(f["ordinal"]),
                        matches=f["matches"], wins=f["wins"], weighted_matches=round(f["weighted_matches"], 6),
                        provisional=ratings.provisional(f))


RatingsDep = Annotated[RatingsRepository, Depends(get_ratings)]


def page_limit(request: Request, limit: int) -> int:
    return min(limit, request.app.state.settings.page_max)


def bad_cursor(exc: BadCursor) -> ApiError:
    return ApiError(422, "bad_cursor", str(exc))


def _row(ratings: RatingsRepository, r: dict[str, Any]) -> LeaderboardRow:
    return LeaderboardRow(rank=r["rank"], player=PlayerPublic(id=r["player_id"], name=r["name"], role=r["role"]),
                          username=r["username"], rating=rating_public(ratings, r))


@router.get("/games/{game_id}/leaderboard", response_model=LeaderboardPage, responses=responses(401, 404))
async def leaderboard(game_id: GameId, request: Request, player: PlayerDep, ratings: RatingsDep,
                      cursor: Cursor = None, limit: Limit = 50) -> LeaderboardPage:
    """Players rated in this game whose rating is not provisional, highest ordinal (mu - 3 sigma)
    first, ties by player id; ``me`` is the asking player's row with its rank (None if never rated
    here; its ``rank`` None while provisional). 404 ``unknown_game``; 422 ``bad_cursor``."""
    if game_id not in registry():
        raise ApiError(404, "unknown_game", f"no game {game_id!r}")
    try:
        page = await ratings.leaderboard(game_id, limit=page_limit(request, limit), cursor=cursor, me=player["id"])
    except BadCursor as exc:
        raise bad_cursor(exc) from None
    return LeaderboardPage(game=game_id, items=[_row(ratings, r) for r in page["items"]],
                           next_cursor=page["next_cursor"], me=_row(ratings, page["me"]) if page["me"] else None,
                           explanation=explanation(ratings), provisional_matches=ratings.rules.provisional_matches)


@router.get("/players/{player_id}", response_model=ProfilePublic, responses=responses(401, 404))
async def profile(player_id: PlayerId, _player: PlayerDep, repo: RepoDep, ratings: RatingsDep) -> ProfilePublic:
    """A player's public profile: name, username, role, per-game ratings (with wins) and its last
    rated matches, newest first. 404 ``not_found``."""
    p = await repo.player(player_id)
    if p is None:
        raise not_found("player")
    usernames = await AccountsRepository(repo.engine).usernames([player_id])
    recent = []
    for c in await ratings.recent_matches(player_id, RECENT):
        before = ordinal(c["mu_before"], c["sigma_before"])
        after = c["ordinal_after"]
        recent.append(RecentMatch(match_id=c["match_id"], game=c["game"], seat=c["seat"], rank=c["rank"],
                                  seats=c["seat_count"], ordinal_before=before, ordinal_after=after,
                                  display_before=display_rating(before), display_after=display_rating(after),
                                  weight=c["weight"], ended_at=c["ended_at"] or c["created_at"]))
    return ProfilePublic(player=PlayerPublic(**p), username=usernames.get(player_id), created_at=p["created_at"],
                         ratings={g: rating_public(ratings, r)
                                  for g, r in (await ratings.player_ratings(player_id)).items()},
                         recent_matches=recent, explanation=explanation(ratings))
