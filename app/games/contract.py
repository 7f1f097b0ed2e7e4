"""Typed contracts of a game: the types a game declares for its actions, events and view
(``GameInfo.actions``, ``GameInfo.events``, ``GameInfo.view``) and the JSON Schemas made from them.

A declared type is a pydantic model or a frozen dataclass; an action or event type has a ``type``
field whose annotation is ``Literal["<its type>"]``. From them :func:`game_schemas` makes one JSON
Schema (draft 2020-12) each for a game's action, event and view, published by
``GET /api/v1/games/{id}/schema`` and written to ``docs/schemas/games/<id>/`` (``python -m
app.games.contract``). Pydantic makes the schemas (``TypeAdapter.json_schema``); :func:`strict_2020_12`
removes what is not JSON Schema (pydantic's OpenAPI ``discriminator``) so strict validators (ajv in
strict mode, ``jsonschema``) take them.

Nothing here imports FastAPI, SQL or Redis (the games import it).
"""
from __future__ import annotations

import json
import typing
from dataclasses import is_dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "DRAFT", "KNOWN_KEYWORDS", "Outcome", "Wire", "game_schemas", "main", "own_games", "schema_of", "strict_2020_12",
    "type_name", "unknown_keywords", "write_game_schemas",
]

#: the JSON Schema dialect of every schema Bannerfall publishes
DRAFT = "https://json-schema.org/draft/2020-12/schema"


class Wire(BaseModel):
    """Base of a game's wire types: frozen, and no field beyond the declared ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Outcome(Wire):
    """A finished match (``Outcome.to_wire``): ranks and scores keyed by seat as a string."""

    ranks: dict[str, int] = Field(description="seat -> 1-based rank (equal ranks: a draw between them)")
    scores: dict[str, float] = Field(description="seat -> the game's score")
    reason: str = Field(description="why the match ended")


def type_name(declared: Any) -> str:
    """The ``type`` an action or event type stands for: the one value of its ``type`` field's
    ``Literal``. Raises TypeError when it has none."""
    if isinstance(declared, type) and issubclass(declared, BaseModel):
        field = declared.model_fields.get("type")
        annotation = field.annotation if field is not None else None
    elif is_dataclass(declared):
        annotation = typing.get_type_hints(declared).get("type")
    else:
        raise TypeError(f"{declared!r} is neither a pydantic model nor a dataclass")
    if typing.get_origin(annotation) is Literal and len(typing.get_args(annotation)) == 1:
        value = typing.get_args(annotation)[0]
        if isinstance(value, str):
            return value
    raise TypeError(f"{getattr(declared, '__name__', declared)}: its 'type' field must be Literal['<name>']")


@cache
def _adapter(declared: Any) -> TypeAdapter[Any]:
    return TypeAdapter(declared)


def schema_of(declared: Any) -> dict[str, Any]:
    """The JSON Schema (2020-12, strict) of one declared type or union of them."""
    return strict_2020_12(_adapter(declared).json_schema(by_alias=True, mode="serialization"))


#: Every keyword of JSON Schema 2020-12 (core, applicator, unevaluated, validation, meta-data,
#: format-annotation, content): what strict validators accept; anything else is refused by ajv's
#: strict mode (``strictSchema``).
KNOWN_KEYWORDS = frozenset((
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items",
    "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties",
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired",
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
    "format", "contentEncoding", "contentMediaType", "contentSchema",
))
#: keywords whose value is a map of name -> schema (their keys are names, not keywords)
_SCHEMA_MAPS = ("$defs", "properties", "patternProperties", "dependentSchemas")
#: keywords whose value is a schema or a list of schemas
_SCHEMA_VALUES = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "prefixItems", "items", "contains",
                  "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
                  "contentSchema")


def _walk(schema: Any, visit: Any) -> None:
    if not isinstance(schema, dict):
        return
    visit(schema)
    for key in _SCHEMA_MAPS:
        for sub in (schema.get(key) or {}).values():
            _walk(sub, visit)
    for key in _SCHEMA_VALUES:
        value = schema.get(key)
        for sub in value if isinstance(value, list) else [value]:
            _walk(sub, visit)


def strict_2020_12(schema: dict[str, Any], *, draft: bool = True) -> dict[str, Any]:
    """``schema`` (as pydantic makes it) as strict JSON Schema 2020-12, changed in place and returned:
    OpenAPI's ``discriminator`` is dropped (the ``oneOf`` it sits on already picks the branch by its
    ``const``), ``format`` annotations are dropped (a strict validator refuses formats it does not
    know), and with ``draft`` the ``$schema`` line is set."""
    def visit(node: dict[str, Any]) -> None:
        node.pop("discriminator", None)
        node.pop("format", None)

    _walk(schema, visit)
    if draft:
        schema.pop("$schema", None)
        return {"$schema": DRAFT, **schema}
    return schema


def unknown_keywords(schema: dict[str, Any]) -> list[str]:
    """Keywords of ``schema`` (and every subschema) that are not JSON Schema 2020-12, as
    ``"path: keyword"`` lines: what ajv's strict mode would refuse. ``[]`` when there are none."""
    found: list[str] = []

    def visit(node: dict[str, Any]) -> None:
        for key in node:
            if key not in KNOWN_KEYWORDS:
                found.append(f"{node.get('title', '?')}: {key}")

    _walk(schema, visit)
    return found


def game_schemas(game: Any) -> dict[str, dict[str, Any]]:
    """``{"action": ..., "event": ..., "view": ...}``: one JSON Schema (2020-12) each, made from the
    types ``game.info`` declares. ``action`` (``event``) is the union of the declared action (event)
    types, told apart by ``type``; an undeclared part is ``{"$schema", "type": "object"}`` (any object).
    Raises TypeError when an action or event type has no ``Literal`` ``type`` (:func:`type_name`)."""
    info = game.info
    out: dict[str, dict[str, Any]] = {}
    for part, declared, title in (("action", info.actions, "actions"), ("event", info.events, "events")):
        for t in declared:
            type_name(t)
        if declared:
            union: Any = declared[0] if len(declared) == 1 else typing.Union[tuple(declared)]  # noqa: UP007
            schema = schema_of(union)
        else:
            schema = {"$schema": DRAFT, "type": "object"}
        schema["title"] = f"{info.title}: {part}"
        schema["description"] = (f"A {info.id} {part} (one of the game's {title}, told apart by 'type'); on the"
                                 " wire an event also carries 'v', the version it belongs to")
        out[part] = schema
    view = schema_of(info.view) if info.view is not None else {"$schema": DRAFT, "type": "object"}
    view["title"] = f"{info.title}: view"
    out["view"] = view
    return {part: {"$schema": DRAFT, **{k: v for k, v in s.items() if k != "$schema"}} for part, s in out.items()}


def write_game_schemas(games: dict[str, Any], folder: Path) -> list[Path]:
    """Write ``<folder>/<id>/{action,event,view}.json`` for every game; returns the files written."""
    written = []
    for game_id, game in games.items():
        target = folder / game_id
        target.mkdir(parents=True, exist_ok=True)
        for part, schema in game_schemas(game).items():
            path = target / f"{part}.json"
            path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
            written.append(path)
    return written


def own_games() -> dict[str, Any]:
    """The registered games that are Bannerfall's own (their packages are under ``app.games``): the
    ones whose schemas are in Bannerfall's ``docs/schemas/games/``."""
    from app.games import registry

    return {gid: g for gid, g in registry().items() if type(g).__module__.startswith("app.games.")}


def main(argv: list[str] | None = None) -> int:
    """``python -m app.games.contract [GAME_ID FOLDER]``: Bannerfall's own games into
    ``docs/schemas/games/``, or one registered game's schemas into ``FOLDER/<id>/`` (a game package
    keeps its own, e.g. ``schemas/``). Prints the files written; exit 2 for an unknown game."""
    import sys

    from app.games import registry

    args = sys.argv[1:] if argv is None else argv
    if args:
        if len(args) != 2 or args[0] not in registry():
            print(f"usage: python -m app.games.contract [GAME_ID FOLDER]; games: {', '.join(registry())}",
                  file=sys.stderr)
            return 2
        written = write_game_schemas({args[0]: registry()[args[0]]}, Path(args[1]))
    else:
        written = write_game_schemas(own_games(), Path(__file__).resolve().parents[2] / "docs" / "schemas" / "games")
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
