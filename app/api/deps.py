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


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_repo(request: Request) -> Repository:
    return request.app.state.repo


def get_manager(request: Request) -> MatchManager:
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


async def admin_player(player: Annotated[dict[str, Any], Depends(current_player)]) -> dict[str, Any]:
    if player["role"] != "admin":
        raise ApiError(403, "forbidden", "admins only")
    return player


SettingsDep = Annotated[Settings, Depends(get_settings)]
RepoDep = Annotated[Repository, Depends(get_repo)]
ManagerDep = Annotated[MatchManager, Depends(get_manager)]
PlayerDep = Annotated[dict[str, Any], Depends(current_player)]
AdminDep = Annotated[dict[str, Any], Depends(admin_player)]
