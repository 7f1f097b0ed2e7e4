"""Players: guests get a bearer token (shown once, stored hashed)."""
from __future__ import annotations

import secrets
import uuid

from fastapi import APIRouter

from app.api.deps import PlayerDep, RepoDep, hash_token
from app.api.errors import responses
from app.api.routes.accounts import checked_name
from app.api.schemas import PlayerCreate, PlayerCreated, PlayerPublic

router = APIRouter(prefix="/players", tags=["players"])


@router.post("", response_model=PlayerCreated, status_code=201, responses=responses())
async def create_player(body: PlayerCreate, repo: RepoDep) -> PlayerCreated:
    """Make a guest player. The token in the answer is the only copy: the server keeps its hash.
    The name is checked (422 ``bad_name``, ``blank_name``, ``reserved_name``, ``name_too_long``:
    :mod:`app.api.names`) and stored NFKC-normalised."""
    name = checked_name(body.name)
    token = secrets.token_urlsafe(32)
    row = await repo.create_player(uuid.uuid4().hex, name, "player", hash_token(token))
    return PlayerCreated(player=PlayerPublic(**row), token=token)


@router.get("/me", response_model=PlayerPublic, responses=responses(401))
async def me(player: PlayerDep) -> PlayerPublic:
    return PlayerPublic(**player)
