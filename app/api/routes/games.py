"""The games this server hosts, with their lobby option schemas (JSON Schema)."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from app.api.errors import not_found, responses
from app.api.schemas import GameInfo, Text
from app.games import registry
from app.meta.loadouts import RESERVED_OPTIONS
from app.runtime.bots import BOT_KINDS, bot_class

router = APIRouter(prefix="/games", tags=["games"])


#: game id -> (the game, its GameInfo): a game's info never changes while the process runs, and
#: making it (``model_json_schema``) costs 0.3-0.5 ms and leaves 82 objects of cyclic garbage
#: (pydantic's schema generator refers to itself through its bound methods), so it is made once
_INFOS: dict[str, tuple[Any, GameInfo]] = {}


def game_info(game) -> GameInfo:
    """The :class:`GameInfo` of ``game`` (a registry entry), made once per game."""
    cached = _INFOS.get(game.id)
    if cached is not None and cached[0] is game:
        return cached[1]
    info = _make_info(game)
    _INFOS[game.id] = (game, info)
    return info


def _make_info(game) -> GameInfo:
    kinds = []
    for kind in BOT_KINDS:
        try:
            bot_class(game.id, kind)
            kinds.append(kind)
        except (KeyError, ImportError):
            pass
    schema = game.Options.model_json_schema()
    for key in RESERVED_OPTIONS:  # the server fills them at start: a lobby refuses them (reserved_option)
        if key in schema.get("properties", {}):
            schema["properties"][key]["readOnly"] = True
    return GameInfo(id=game.id, title=game.title, min_seats=game.min_seats, max_seats=game.max_seats,
                    options_schema=schema, bot_kinds=kinds)


@router.get("", response_model=list[GameInfo], responses=responses())
async def list_games() -> list[GameInfo]:
    return [game_info(g) for g in registry().values()]


@router.get("/{game_id}", response_model=GameInfo, responses=responses(404))
async def get_game(game_id: Annotated[Text, Path(max_length=32)]) -> GameInfo:
    game = registry().get(game_id)
    if game is None:
        raise not_found("game")
    return game_info(game)
