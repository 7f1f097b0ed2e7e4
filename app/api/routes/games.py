"""The games this server hosts (every game of the registry, as its package declares it): their
lobby option schemas, flags and bots (``GET /games``), the JSON Schemas of their wire shapes
(``GET /games/{id}/schema``); and, outside the API, each game's web board files
(``/games/{id}/web/...``) and the event wording of every game (``/events.json``)."""
from __future__ import annotations

import mimetypes
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import FileResponse, JSONResponse

from app.api.errors import not_found, responses
from app.api.schemas import GameInfo, GameSchema, Text
from app.games import declared_file, registry
from app.games.contract import game_schemas
from app.meta.loadouts import RESERVED_OPTIONS

router = APIRouter(prefix="/games", tags=["games"])
#: static files of the games, served beside the web client (not under /api/v1)
web_router = APIRouter(tags=["web"])

#: the suffixes a game's web folder may serve, with their media types
WEB_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png",
             ".json": "application/json"}

#: game id -> (the game, its GameInfo): a game's info never changes while the process runs, and
#: making it (``model_json_schema``) costs 0.3-0.5 ms and leaves 82 objects of cyclic garbage
#: (pydantic's schema generator refers to itself through its bound methods), so it is made once
_INFOS: dict[str, tuple[Any, GameInfo]] = {}
_SCHEMAS: dict[str, tuple[Any, GameSchema]] = {}


def board_url(game) -> str | None:
    """Where the web client loads ``game``'s board module from, or None when it declares none."""
    if game.info.board is None:
        return None
    return f"/games/{game.id}/web/{_web_name(game.info.board)}"


def _web_name(board: str) -> str:
    """The board module's path inside its web folder (the folder of the module is what is served)."""
    return board.replace("\\", "/").rsplit("/", 1)[-1]


def game_info(game) -> GameInfo:
    """The :class:`GameInfo` of ``game`` (a registry entry), made once per game."""
    cached = _INFOS.get(game.id)
    if cached is not None and cached[0] is game:
        return cached[1]
    info = _make_info(game)
    _INFOS[game.id] = (game, info)
    return info


def _make_info(game) -> GameInfo:
    declared = game.info
    schema = game.Options.model_json_schema()
    for key in RESERVED_OPTIONS:  # the server fills them at start: a lobby refuses them (reserved_option)
        if key in schema.get("properties", {}):
            schema["properties"][key]["readOnly"] = True
    return GameInfo(id=game.id, title=game.title, min_seats=game.min_seats, max_seats=game.max_seats,
                    options_schema=schema, bot_kinds=list(declared.bots), phases=list(declared.phases),
                    action_types=sorted(declared.action_types), hidden_information=declared.hidden_information,
                    simultaneous_moves=declared.simultaneous_moves, chance=sorted(declared.chance),
                    max_actions=declared.max_actions, board=board_url(game),
                    schema_url=f"/api/v1/games/{game.id}/schema", rules_version=declared.rules_version)


@router.get("", response_model=list[GameInfo], responses=responses())
async def list_games() -> list[GameInfo]:
    return [game_info(g) for g in registry().values()]


@router.get("/{game_id}", response_model=GameInfo, responses=responses(404))
async def get_game(game_id: Annotated[Text, Path(max_length=32)]) -> GameInfo:
    game = registry().get(game_id)
    if game is None:
        raise not_found("game")
    return game_info(game)


@router.get("/{game_id}/schema", response_model=GameSchema, responses=responses(404))
async def get_game_schema(game_id: Annotated[Text, Path(max_length=32)]) -> GameSchema:
    """The JSON Schemas (draft 2020-12) of the game's actions, events and view, made from the types its
    package declares (the same as ``docs/schemas/games/<id>/``). 404 ``not_found`` for an unknown game."""
    game = registry().get(game_id)
    if game is None:
        raise not_found("game")
    cached = _SCHEMAS.get(game.id)
    if cached is None or cached[0] is not game:
        cached = _SCHEMAS[game.id] = (game, GameSchema(game=game.id, **game_schemas(game)))
    return cached[1]


@web_router.get("/games/{game_id}/web/{file_path:path}", include_in_schema=False)
async def game_web_file(game_id: str, file_path: str) -> FileResponse:
    """A file of a game's web folder (the folder of its ``info.board`` module and below it): its
    board module and what that imports. 404 ``not_found`` for an unknown game, a game without a
    board, a path outside the folder, a hidden name or a suffix not in :data:`WEB_TYPES`."""
    game = registry().get(game_id)
    board = declared_file(game, game.info.board) if game is not None else None
    if board is None:
        raise not_found("file")
    folder = board.parent
    target = (folder / file_path).resolve()
    suffix = target.suffix.lower()
    if (folder not in target.parents or suffix not in WEB_TYPES or not target.is_file()
            or any(part.startswith(".") for part in target.relative_to(folder).parts)):
        raise not_found("file")
    return FileResponse(target, media_type=WEB_TYPES.get(suffix) or mimetypes.guess_type(target.name)[0],
                        headers={"Cache-Control": "no-cache"})


@web_router.get("/events.json", include_in_schema=False)
async def event_wording() -> JSONResponse:
    """The event wording of the web client and the CLI: the template language's ``_doc`` and
    ``default``, and every registered game's wording under its id (``app.client.wording.wording``)."""
    from app.client.wording import wording

    return JSONResponse(wording(), headers={"Cache-Control": "no-cache"})
