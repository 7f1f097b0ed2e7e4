"""Admin: list matches, read any match's full state (hidden cards marked) and log, step a replay, abort."""
from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Path, Query

from app.api.deps import AdminDep, ManagerDep, RepoDep, SettingsDep
from app.api.errors import ApiError, not_found, responses
from app.api.routes.matches import match_public
from app.api.schemas import AbortRequest, AdminLog, AdminMatchState, AdminReplay, MatchPage, MatchPublic, Text
from app.api.security import refuse_seated_admin
from app.db.paging import BadCursor
from app.games.base import ADMIN, IllegalAction
from app.runtime.replay import ReplayMismatch, RulesUnavailable, replay
from app.runtime.rows import LogRow, MatchRow

router = APIRouter(prefix="/admin", tags=["admin"])

MatchId = Annotated[Text, Path(max_length=64, description="a match id")]
#: the largest offset or version asked for (Postgres INTEGER range; no log is that long)
MAX_INT = 2**31 - 1


@router.get("/matches", response_model=MatchPage, responses=responses(401, 403))
async def list_matches(repo: RepoDep, manager: ManagerDep, _admin: AdminDep, settings: SettingsDep,
                       status: Annotated[Text | None, Query(max_length=16)] = None,
                       game: Annotated[Text | None, Query(max_length=32)] = None,
                       cursor: Annotated[Text | None, Query(max_length=512)] = None,
                       limit: int = Query(100, ge=1, le=1000)) -> MatchPage:
    """A page of every match, newest first, with seeds of ended ones: ``{items, next_cursor}``.
    422 ``bad_cursor``."""
    try:
        rows, next_cursor = await repo.matches_page(status, game, min(limit, settings.page_max), cursor)
    except BadCursor as exc:
        raise ApiError(422, "bad_cursor", str(exc)) from None
    out = [match_public(m) for m in rows]
    for m, row in zip(out, rows, strict=True):
        m.seed = row["seed"] if row["status"] != "running" else None
        live = manager.live_version(row["id"])  # else the stored version, even while running
        if live is not None:
            m.version = live
    return MatchPage(items=out, next_cursor=next_cursor)


@router.get("/matches/{match_id}", response_model=AdminMatchState, responses=responses(401, 403, 404))
async def match_state(match_id: MatchId, manager: ManagerDep, admin: AdminDep) -> AdminMatchState:
    """The full state as the admin view (every hidden card present and marked ``"hidden": true``),
    the pending prompts with their deadlines, and the seed (admins may see it; it stays secret from players).
    403 ``seated_admin`` while the asking admin holds a seat in the running match."""
    runner = await manager.snapshot(match_id)
    if runner is None:
        raise not_found("match")
    refuse_seated_admin(runner.meta, admin)
    msg = runner.current_state(ADMIN)
    hidden = runner.game.hidden_tokens
    return AdminMatchState.model_validate(
        {**msg, "match": match_public(runner.meta), "seed": runner.meta["seed"],
         "hidden_from": {str(s): sorted(hidden(runner.state, s)) for s in range(runner.meta["seat_count"])}})


@router.get("/matches/{match_id}/log", response_model=AdminLog, responses=responses(401, 403, 404))
async def match_log(match_id: MatchId, repo: RepoDep, admin: AdminDep) -> AdminLog:
    """The action log, and the deadlines the match started with (what a replay needs to derive the
    audience versions, ``app/runtime/audience.py``). 403 ``seated_admin`` while the asking admin
    holds a seat in the running match."""
    m = await repo.match(match_id)
    if m is None:
        raise not_found("match")
    refuse_seated_admin(m, admin)
    return AdminLog.model_validate({"match_id": match_id, "initial_deadlines": m.get("deadlines") or {},
                                    "actions": await repo.actions(match_id)})


@router.get("/matches/{match_id}/replay", response_model=AdminReplay, responses=responses(401, 403, 404, 409))
async def match_replay(match_id: MatchId, repo: RepoDep, admin: AdminDep,
                       version: int = Query(0, ge=0, le=MAX_INT)) -> AdminReplay:
    """The admin view of the match as it was at ``version`` (0 = the deal), with that step's events.
    403 ``seated_admin`` while the asking admin holds a seat in the running match."""
    m = await repo.match(match_id)
    if m is None:
        raise not_found("match")
    refuse_seated_admin(m, admin)
    actions = await repo.actions(match_id)
    try:
        result = replay(cast(MatchRow, m), cast(list[LogRow], actions), until=version, keep_events=1,
                        audiences=False)
    except RulesUnavailable as exc:
        raise ApiError(409, "rules_unavailable", str(exc)) from None
    except ReplayMismatch as exc:
        raise ApiError(409, "replay_mismatch", str(exc)) from None
    events = [{**e.to_wire(), "audience": None if e.audience is None else sorted(e.audience)}
              for ver, evs, _audiences in result.history if ver == result.version for e in evs]
    return AdminReplay.model_validate({"match_id": match_id, "version": result.version, "last_version": len(actions),
                                       "action": actions[result.version - 1] if result.version else None,
                                       "view": result.game.view(result.state, ADMIN), "events": events})


@router.post("/matches/{match_id}/abort", response_model=MatchPublic,
             responses=responses(401, 403, 404, 409, unavailable="`abort_pending`: the match's node has not made "
                                 "the abort durable in time; `match_moved`: the match changed node while aborting"))
async def abort(match_id: MatchId, manager: ManagerDep, admin: AdminDep,
                body: AbortRequest | None = None) -> MatchPublic:
    reason = (body or AbortRequest()).reason
    try:
        runner = await manager.abort(match_id, reason, admin["id"])
    except IllegalAction as exc:  # answered once the abort is durable (or it failed)
        status = 503 if exc.code in ("storage_unavailable", "abort_pending", "match_moved") else 409
        raise ApiError(status, exc.code, exc.message) from None
    if runner is None:
        raise not_found("match")
    # the durable state: the abort record is committed before manager.abort returns (local owner:
    # runner.meta was updated by the durable callback; remote owner: rebuilt from the database)
    return match_public(runner.meta)
