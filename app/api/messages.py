"""The match socket's messages as pydantic models: the JSON Schemas in ``docs/schemas/`` are
generated from these (``python -m app.api.messages``, which also writes the schemas of Bannerfall's
own games under ``docs/schemas/games/``) and tests validate real traffic against them. The server
builds its messages directly (orjson on plain dicts) for speed; these models describe them. The
files are strict JSON Schema 2020-12 (``app.games.contract.strict_2020_12``: a ``$schema`` line, no
OpenAPI ``discriminator``), which strict validators such as ajv take."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.games.contract import strict_2020_12


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- client -> server -------------------------------------------------------------------------
class Hello(_Msg):
    """First message on a socket."""
    type: Literal["hello"]
    token: str = Field(description="the bearer token from POST /api/v1/players")
    as_: Literal["spectator", "admin"] | None = Field(None, alias="as")
    since_version: int | None = Field(None, ge=0, description="send the events missed since this version")
    deltas: bool = Field(True, strict=True, description="true (default): a full state first, then a delta per "
                                                     "change; false: a full state per change")
    protocol: int | None = Field(None, strict=True, description="the protocol version the client speaks (absent "
                                 "or null: 1); the server speaks 1 (GET /api/v1/version lists its versions); "
                                 "another: error unsupported_protocol, close 4426")


class Act(_Msg):
    """An action for your seat; answered by exactly one ack or error with the same seq."""
    type: Literal["act"]
    seq: int = Field(ge=0, description="your own number for this action (fresh per action, need not increase); "
                                       "a repeat is answered with the first answer, never re-applied")
    action: dict[str, Any] = Field(description="the game action: {'type': ..., ...} (see docs/games/)")
    version: int | None = Field(None, ge=0, description="the state.version you decided on")


class Resume(_Msg):
    type: Literal["resume"]
    since_version: int = Field(ge=0)


class Ping(_Msg):
    type: Literal["ping"]
    t: Any = None


# -- server -> client -------------------------------------------------------------------------
class PromptInfo(_Msg):
    seat: int
    kind: str
    phase_id: int
    simultaneous: bool
    submitted: bool
    deadline_at: float | None = Field(description="epoch seconds")


class Event(BaseModel):
    model_config = ConfigDict(extra="allow")
    v: int = Field(description="the version this event belongs to")
    type: str


class State(_Msg):
    """Your whole view of the match, after every change, with the events since the last one."""
    type: Literal["state"]
    match_id: str
    game: str
    version: int
    status: Literal["running", "finished", "aborted"]
    seat: int | None
    viewer: Literal["seat", "spectator", "admin"]
    prompts: list[PromptInfo]
    view: dict[str, Any]
    events: list[Event]
    server_time: float = Field(description="epoch seconds when the server sent this message, on the clock of "
                               "deadline_at (three decimals): a client's offset is server_time - its own clock")
    events_complete: Literal[False] | None = None


class AddOp(_Msg):
    op: Literal["add"]
    path: str = Field(description="JSON Pointer (RFC 6901: ~0 is ~, ~1 is /); a last token '-' appends to a list")
    value: Any


class RemoveOp(_Msg):
    op: Literal["remove"]
    path: str = Field(description="JSON Pointer (RFC 6901)")


class ReplaceOp(_Msg):
    op: Literal["replace"]
    path: str = Field(description="JSON Pointer (RFC 6901); '' is the whole document")
    value: Any


PatchOp = Annotated[AddOp | RemoveOp | ReplaceOp, Field(discriminator="op")]


class Delta(_Msg):
    """What changed for your audience since your last state or delta (docs/protocol.md "Deltas,
    audiences and versions"): ``patch`` (RFC 6902, applied in order) turns the document
    ``{"status", "prompts", "view"}`` held at version ``base`` into the one at ``version``."""
    type: Literal["delta"]
    match_id: str
    base: int = Field(ge=0, description="the version the patch applies to; not the one you hold: send resume")
    version: int = Field(ge=1, description="your audience's version after it (> base)")
    patch: list[PatchOp]
    events: list[Event] = Field(description="the events of the versions after base, redacted for you")


class Ack(_Msg):
    type: Literal["ack"]
    seq: int
    version: int


class Error(_Msg):
    type: Literal["error"]
    code: str
    message: str
    seq: int | None = None
    version: int | None = None


class OutcomeInfo(_Msg):
    ranks: dict[str, int]
    scores: dict[str, float]
    reason: str


class Ended(_Msg):
    type: Literal["ended"]
    match_id: str
    status: Literal["finished", "aborted"]
    version: int
    outcome: OutcomeInfo
    seed: str = Field(description="hex; sha256(seed) == seed_hash")
    seed_hash: str


class Pong(_Msg):
    type: Literal["pong"]
    t: Any = None
    server_time: float = Field(description="epoch seconds when the server answered, on the clock of deadline_at")


CLIENT: dict[str, type[BaseModel]] = {"hello": Hello, "act": Act, "resume": Resume, "ping": Ping}
SERVER: dict[str, type[BaseModel]] = {"state": State, "delta": Delta, "ack": Ack, "error": Error, "ended": Ended,
                                      "pong": Pong}


def validate_server_message(message: dict[str, Any]) -> BaseModel:
    """Validate one server message against its schema (raises pydantic.ValidationError or KeyError)."""
    return SERVER[message["type"]].model_validate(message)


def message_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema (2020-12, strict) of one message model."""
    return strict_2020_12(model.model_json_schema(by_alias=True))


def write_schemas(folder: Path) -> list[Path]:
    """Write ``<folder>/{client,server}.<type>.json`` for every message; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for direction, models in (("client", CLIENT), ("server", SERVER)):
        for name, model in models.items():
            path = folder / f"{direction}.{name}.json"
            path.write_text(json.dumps(message_schema(model), indent=2, sort_keys=True) + "\n")
            written.append(path)
    return written


if __name__ == "__main__":  # python -m app.api.messages
    from app.games.contract import own_games, write_game_schemas

    folder = Path(__file__).resolve().parents[2] / "docs" / "schemas"
    for p in [*write_schemas(folder), *write_game_schemas(own_games(), folder / "games")]:
        print(p)
