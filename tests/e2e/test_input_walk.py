"""Issue 9 item 10 and issue 13 item 13: every route of the OpenAPI document, walked on Postgres with
NUL characters, lone surrogates and integers past the storage limits in every path, query and body
input, answers a documented JSON ``{code, message}`` 4xx (never a 500, never plain text); request
bodies are strict; every route documents its error answers with the ``Error`` model."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import Backend, make_db_url

NUL = "ab\x00cd"
SURROGATE = "ab\ud800cd"
HUGE = [2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**64, 10**40]


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    url, pg = make_db_url("postgres", tmp_path_factory.mktemp("db"))
    yield Backend("postgres", url, {})
    pg.drop()


def _resolve(doc: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _kinds(doc: dict, schema: dict) -> set[str]:
    schema = _resolve(doc, schema)
    if "anyOf" in schema:
        return set().union(*(_kinds(doc, s) for s in schema["anyOf"]))
    if "enum" in schema or "const" in schema:
        return {"string"} if schema.get("type") == "string" else {"other"}
    return {schema.get("type", "other")}


def _operations(doc: dict) -> list[tuple[str, str, dict]]:
    return [(method.upper(), path, op) for path, ops in doc["paths"].items() if path.startswith("/api/v1")
            for method, op in ops.items()]


def _cases(doc: dict, path: str, op: dict) -> list[tuple[str, str, dict[str, str], Any]]:
    """(label, url, query, json body) with one bad input each."""
    params = op.get("parameters", [])
    path_params = [p["name"] for p in params if p["in"] == "path"]
    query_params = [p for p in params if p["in"] == "query"]
    base = {name: "nope" for name in path_params}

    def url(values: dict[str, str]) -> str:
        out = path
        for name, value in values.items():
            out = out.replace("{" + name + "}", quote(value, safe=""))
        return out

    body_schema: dict = {}
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    if content:
        body_schema = _resolve(doc, content["schema"])
        if "anyOf" in body_schema:  # an optional body
            body_schema = _resolve(doc, next(s for s in body_schema["anyOf"] if s.get("type") != "null"))
    fields = body_schema.get("properties", {})
    minimal: dict[str, Any] = {}
    for name in body_schema.get("required", []):
        kinds = _kinds(doc, fields[name])
        minimal[name] = 2 if "integer" in kinds else "provinces"

    cases: list[tuple[str, str, dict[str, str], Any]] = []
    for name in path_params:
        cases.append((f"path {name} NUL", url({**base, name: NUL}), {}, minimal if content else None))
    for p in query_params:
        kinds = _kinds(doc, p["schema"])
        if "string" in kinds:
            cases.append((f"query {p['name']} NUL", url(base), {p["name"]: NUL}, None))
        if "integer" in kinds:
            cases += [(f"query {p['name']}={n}", url(base), {p["name"]: str(n)}, None) for n in HUGE]
    for name, schema in fields.items():
        kinds = _kinds(doc, schema)
        if "string" in kinds:
            cases += [(f"body {name} NUL", url(base), {}, {**minimal, name: NUL}),
                      (f"body {name} surrogate", url(base), {}, {**minimal, name: SURROGATE})]
        if "integer" in kinds:
            cases += [(f"body {name}={n}", url(base), {}, {**minimal, name: n}) for n in HUGE]
            cases += [(f"body {name} as text", url(base), {}, {**minimal, name: "2"}),
                      (f"body {name} as float", url(base), {}, {**minimal, name: 2.0})]
        if "object" in kinds:
            cases += [(f"body {name} NUL key", url(base), {}, {**minimal, name: {NUL: 1}}),
                      (f"body {name} NUL value", url(base), {}, {**minimal, name: {"turn_seconds": NUL}}),
                      (f"body {name} huge value", url(base), {}, {**minimal, name: {"turn_seconds": 2**64}})]
    return cases


def _check(r: httpx.Response, op: dict, label: str) -> None:
    assert 400 <= r.status_code < 500, (label, r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), (label, r.text)
    out = r.json()
    assert isinstance(out["code"], str) and isinstance(out["message"], str), (label, out)
    assert str(r.status_code) in op["responses"], (label, r.status_code, "not documented")


def test_every_route_refuses_nul_surrogates_and_huge_integers_with_a_json_4xx(server):
    doc = httpx.get(server.url + "/openapi.json").json()
    walked = 0
    with httpx.Client(base_url=server.url, timeout=30,
                      headers={"Authorization": f"Bearer {server.admin_token}"}) as http:
        lobby = http.post("/api/v1/lobbies", json={"game": "provinces", "seats": 2}).json()
        for method, path, op in _operations(doc):
            for label, url, query, body in _cases(doc, path, op):
                # a real lobby id where one is needed, so bodies reach the route's own checks too
                url = url.replace("/lobbies/nope", f"/lobbies/{lobby['id']}")
                content = json.dumps(body).encode() if body is not None else None
                r = http.request(method, url, params=query, content=content,
                                 headers={"Content-Type": "application/json"} if content else {})
                _check(r, op, f"{method} {path}: {label}")
                walked += 1
    assert walked >= 60  # the walk reached every kind of input (70 cases today)


@pytest.mark.parametrize("name", [NUL, SURROGATE, "\x00"])
def test_unauthenticated_player_creation_with_bad_text_is_invalid_text(server, name):
    r = httpx.post(server.url + "/api/v1/players", content=json.dumps({"name": name}),
                   headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["code"] == "invalid_text", r.text


@pytest.mark.parametrize("path", ["/api/v1/lobbies/a%00b", "/api/v1/matches?game=%00", "/api/v1/games/x%00",
                                  "/index.html%00", "/api/v1/lobbies?game=a%00b&status=open"])
def test_nul_in_path_or_query_is_invalid_text(server, path):
    r = httpx.get(server.url + path, headers={"Authorization": f"Bearer {server.admin_token}"})
    assert r.status_code == 422 and r.json()["code"] == "invalid_text", r.text


@pytest.mark.parametrize("token", ["é" * 10, "x" * 257, "a b", "%00"])
def test_odd_bearer_tokens_are_401(server, token):
    r = httpx.get(server.url + "/api/v1/players/me", headers={"Authorization": f"Bearer {token}".encode("latin-1")})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized", r.text


def test_every_route_documents_its_errors_with_the_error_model(server):
    doc = httpx.get(server.url + "/openapi.json").json()
    for method, path, op in _operations(doc):
        errors = {s: r for s, r in op["responses"].items() if s.startswith("4")}
        assert "422" in errors, (method, path)
        for status, answer in errors.items():
            ref = answer["content"]["application/json"]["schema"]["$ref"]
            assert ref.endswith("/Error"), (method, path, status, ref)
        if path not in ("/api/v1/players", "/api/v1/version") and not path.startswith("/api/v1/games"):
            assert "401" in errors, (method, path)


async def test_database_refusals_are_recognised_as_client_data(server, backend):
    """The backstop behind the checks above: what Postgres (or asyncpg) refuses for a value (a NUL,
    an integer out of range) is told apart from other database errors, so it answers 422, not 500."""
    from sqlalchemy import select, text
    from sqlalchemy.exc import DBAPIError

    from app.api.errors import _data_error
    from app.db.database import make_engine
    from app.db.repo import lobbies_t, matches_t

    engine = make_engine(backend.url)
    try:
        refusals = [select(lobbies_t).where(lobbies_t.c.id == "a\x00b"),
                    select(matches_t).limit(10).offset(2**64),
                    select(matches_t).where(matches_t.c.version == 2**40)]
        for statement in refusals:
            with pytest.raises(DBAPIError) as e:
                async with engine.connect() as conn:
                    await conn.execute(statement)
            assert _data_error(e.value), repr(e.value.orig)
        with pytest.raises(DBAPIError) as e:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT * FROM no_such_table"))
        assert not _data_error(e.value)
    finally:
        await engine.dispose()
