"""Every message a real match sends validates against its published JSON Schema model; the game
parts (the view, every event, every action the seats sent) validate against the game's own
published schemas (``GET /games/{id}/schema``), for every registered game with its test options;
the schema files in ``docs/schemas/`` are current and strict JSON Schema 2020-12 (what ajv's strict
mode takes: no OpenAPI ``discriminator``, a ``$schema`` line)."""
from __future__ import annotations

import asyncio
import json

import orjson
import pytest
from pydantic import ValidationError

from app.api.messages import CLIENT, SERVER, validate_server_message, write_schemas
from app.client import RestClient
from app.client.socket import play
from app.games import registry
from app.games.contract import DRAFT, own_games, unknown_keywords, write_game_schemas
from app.runtime.bots import make_bot
from app.testing.contracts import SchemaCheck
from tests.conftest import ROOT
from tests.e2e.helpers import connect, start_match

SCHEMAS = ROOT / "docs" / "schemas"


def test_schema_files_are_current(tmp_path):
    written = [*write_schemas(tmp_path), *write_game_schemas(own_games(), tmp_path / "games")]
    for path in written:
        committed = SCHEMAS / path.relative_to(tmp_path)
        assert committed.exists(), f"{committed} missing: run python -m app.api.messages"
        assert json.loads(committed.read_text()) == json.loads(path.read_text()), path.name
    assert set(CLIENT) == {"hello", "act", "resume", "ping"}
    assert set(SERVER) == {"state", "delta", "ack", "error", "ended", "pong"}
    assert {p.parent.name for p in SCHEMAS.glob("games/*/*.json")} == set(own_games())


def test_every_schema_file_is_strict_json_schema_2020_12():
    from jsonschema import Draft202012Validator

    files = sorted(SCHEMAS.rglob("*.json"))
    assert len(files) >= 10 + 3 * len(own_games())
    for path in files:
        schema = json.loads(path.read_text())
        assert schema.get("$schema") == DRAFT, path
        Draft202012Validator.check_schema(schema)
        assert unknown_keywords(schema) == [], (path, unknown_keywords(schema))


def test_the_old_delta_schema_would_have_been_refused():
    """What ajv's strict mode refused in server.delta.json (OpenAPI's ``discriminator``) is caught here."""
    schema = json.loads((SCHEMAS / "server.delta.json").read_text())
    schema["properties"]["patch"]["items"]["discriminator"] = {"propertyName": "op"}
    assert [k for k in unknown_keywords(schema) if k.endswith(": discriminator")], unknown_keywords(schema)


async def test_the_game_schemas_are_served(server):
    async with RestClient(server.url) as client:
        for game_id, game in registry().items():
            info = await client.request("GET", f"/games/{game_id}")
            assert info["schema_url"] == f"/api/v1/games/{game_id}/schema"
            served = await client.request("GET", f"/games/{game_id}/schema")
            assert served["game"] == game_id
            assert {k: served[k] for k in ("action", "event", "view")} == SchemaCheck(game).schemas
        with pytest.raises(Exception) as missing:
            await client.request("GET", "/games/no_such_game/schema")
        assert getattr(missing.value, "status", None) == 404


def test_the_delta_and_hello_models_take_what_the_protocol_sends_and_refuse_the_rest():
    from app.api.messages import Hello

    good = {"type": "delta", "match_id": "m", "base": 3, "version": 5, "events": [{"v": 4, "type": "x", "n": 1}],
            "patch": [{"op": "add", "path": "/view/hand/-", "value": None},
                      {"op": "remove", "path": "/view/a~1b"}, {"op": "replace", "path": "", "value": {}}]}
    validate_server_message(good)
    for bad in ({"op": "move", "path": "/a", "from": "/b"}, {"op": "remove", "path": "/a", "value": 1},
                {"op": "add", "path": "/a"}, {"op": "replace", "value": 1}):
        with pytest.raises(ValidationError):
            validate_server_message(good | {"patch": [bad]})
    with pytest.raises(ValidationError):
        validate_server_message(good | {"extra": 1})
    assert Hello.model_validate({"type": "hello", "token": "t"}).deltas is True
    assert Hello.model_validate({"type": "hello", "token": "t", "deltas": False}).deltas is False
    with pytest.raises(ValidationError):
        Hello.model_validate({"type": "hello", "token": "t", "deltas": "no"})


@pytest.mark.parametrize("game", list(registry()))
async def test_real_traffic_matches_the_schemas(server, game):
    info = registry()[game].info
    schemas = SchemaCheck(registry()[game])
    seats = info.min_seats
    table = await start_match(server.url, game, seats, options=dict(info.test_options))
    seen: dict[str, int] = {}
    problems: list[str] = []
    sent: list[dict] = []

    def check(msg):
        validate_server_message(msg)
        seen[msg["type"]] = seen.get(msg["type"], 0) + 1
        if msg["type"] == "state":
            problems.extend(schemas.errors("view", msg["view"]))
        if msg["type"] in ("state", "delta"):
            for event in msg["events"]:
                problems.extend(schemas.errors("event", {k: v for k, v in event.items() if k != "v"}))

    def recorder(bot):
        def decide(view, prompt):
            action = bot.decide(view, prompt)
            if action is not None:
                sent.append(action)
            return action
        return decide

    socks = []
    firsts = []
    for c in table.players:
        s, first = await connect(server.url, table.match_id, c.token, record=True)
        socks.append(s)
        firsts.append(first)
    await socks[0].send({"type": "ping", "t": 5})
    await socks[0].send({"type": "nope"})
    kind = next(iter(info.bots))
    bots = [make_bot(game, kind, i) for i in range(seats)]
    await asyncio.wait_for(asyncio.gather(*(play(s, recorder(b), initial=f)
                                            for s, b, f in zip(socks, bots, firsts, strict=True))), 300)
    # the frames as they came off the wire (a delta included), not the client's synthesized states
    for s in socks:
        for _, raw in s.raw_received:
            check(orjson.loads(raw))
        # what a delta client holds after each delta is a view of the game's type too
        for msg in s.received:
            if msg["type"] == "state" and msg.get("via_delta"):
                problems.extend(schemas.errors("view", msg["view"]))
    for action in sent:
        problems.extend(schemas.errors("action", action))
    assert {"state", "ack", "ended", "pong", "error"} <= set(seen), (game, seen)
    assert sent and seen.get("delta"), (game, seen)
    assert problems == [], problems[:10]
    for s in socks:
        await s.close()
    await table.close()
