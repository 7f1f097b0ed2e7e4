"""Dependencies: the node's services from ``app.state`` and the player asking (bearer token)."""
from __future__ import annotations

import hashlib
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.api.errors import ApiError
from app.config import Settings
from app.db.repo import Repository
from app.runtime.manager import MatchManager

bearer = HTTPBearer(auto_error=False, description="The token from POST /api/v1/players")


def hash_token(token: str) -> str:
    """Tokens are stored only as their SHA-256 (they are 256-bit random, so no salt or KDF is needed)."""
    return hashlib.sha256(token.encode()).hexdigest()


# The dependencies that only read ``app.state`` are ``async def``: FastAPI runs a plain ``def``
# dependency in its thread pool, a thread hand-off each (a join needed four of them).
async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_repo(request: Request) -> Repository:
    return request.app.state.repo


async def get_manager(request: Request) -> MatchManager:
    return request.app.state.manager


async def player_for_token(repo: Repository, token: str | None) -> dict[str, Any] | None:
    if not token or len(token) > 256:
        return None
    return await repo.player_by_token_hash(hash_token(token))


async def current_player(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> dict[str, Any]:
    if creds is None:
        raise ApiError(401, "unauthorized", "missing bearer token")
    player = await player_for_token(request.app.state.repo, creds.credentials)
    if player is None:
        raise ApiError(401, "unauthorized", "unknown token")
    return player


#: what an admin route answers on a server started without ``BANNERFALL_ADMIN_TOKEN`` (then no
#: player is an admin: docs/operations.md, "Admin token"), so the console can say how to get one
NO_ADMIN_MESSAGE = ("this server has no admin token: start it with BANNERFALL_ADMIN_TOKEN set to a secret of 24 "
                    "or more characters (e.g. the output of: python3 -c 'import secrets; "
                    "print(secrets.token_urlsafe(32))'), then sign in with that token (docs/operations.md, "
                    "'Admin token')")


async def admin_player(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> dict[str, Any]:
    """The admin asking. 401 ``unauthorized`` (no or an unknown token), 403 ``forbidden`` (not an
    admin); on a server without an admin token both say so and how to set one (:data:`NO_ADMIN_MESSAGE`)."""
    configured = bool(request.app.state.settings.admin_token)
    try:
        player = await current_player(request, creds)
    except ApiError as exc:
        if not configured:
            raise ApiError(exc.status, exc.code, NO_ADMIN_MESSAGE) from None
        raise
    if player["role"] != "admin":
        raise ApiError(403, "forbidden", "admins only" if configured else NO_ADMIN_MESSAGE)
    return player


SettingsDep = Annotated[Settings, Depends(get_settings)]
RepoDep = Annotated[Repository, Depends(get_repo)]
ManagerDep = Annotated[MatchManager, Depends(get_manager)]
PlayerDep = Annotated[dict[str, Any], Depends(current_player)]
AdminDep = Annotated[dict[str, Any], Depends(admin_player)]
