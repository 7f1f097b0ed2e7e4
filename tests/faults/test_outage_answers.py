"""Every route answers a documented code in bounded time during each outage, and changes nothing
half-way; ``/readyz`` tells the truth within a second; an act on the owner's socket is answered once
the commit retries are spent; quick-play tickets lost with Redis are reported as lost.

One node in production mode on a private Postgres and a private redis-server, with short storage
timeouts (``DATABASE_TIMEOUT_SECONDS`` 2, ``REDIS_TIMEOUT_SECONDS`` 1) so the sweeps are quick; the
bound asserted is the one ``docs/operations.md`` ("Outages") gives for those settings.

The routes are enumerated from the app itself (its OpenAPI document and its socket routes), so a
route added later is swept too; its path parameters are filled with a world made before the outage
(a player with an account, a spin, an open lobby, a running match, a waiting ticket) and its body is
made from its request schema.
"""
from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import websockets

from app.client.socket import ws_url
from tests.faults.conftest import node_log_tail

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(300)]

DB_TIMEOUT = 2.0
REDIS_TIMEOUT = 1.0
#: docs/operations.md, "Outages": a request is answered within about 2 x DATABASE_TIMEOUT_SECONDS
#: + 2 s while Postgres hangs, REDIS_TIMEOUT_SECONDS (+ the rate limits' 1 s) while Redis hangs;
#: plus slack for a loaded 2-core machine answering every route at once
BOUND = 2 * DB_TIMEOUT + 2 + 2 * REDIS_TIMEOUT + 4.0
NODE_ENV = {"BANNERFALL_DATABASE_TIMEOUT_SECONDS": str(DB_TIMEOUT),
            "BANNERFALL_REDIS_TIMEOUT_SECONDS": str(REDIS_TIMEOUT),
            "BANNERFALL_SOCKET_SETUP_SECONDS": "3", "BANNERFALL_COMMIT_RETRY_SECONDS": "4"}
#: the socket's documented answers to a hello during an outage (docs/protocol.md)
SOCKET_ERRORS = {"storage_unavailable", "match_unavailable", "match_moved"}
SOCKET_CLOSES = {1000, 1011, 1013, 4503}


@dataclass
class World:
    """What the sweep's paths and bodies refer to, made while every engine is up."""

    url: str
    admin: str
    player: dict[str, Any]          # {"id", "token"}: plays, queues, spins, hosts the lobbies
    account: dict[str, Any]         # {"id", "token", "username", "password", "token_id"}: /accounts routes
    lobby_id: str                   # open, host + a bot: startable
    match_id: str                   # running, the player seated
    ticket_id: str                  # the player's, waiting
    spin_id: str
    party_id: str                   # the account's party (it leads it)
    party_code: str
    guest_name: str = field(default_factory=lambda: f"Sweeper {uuid.uuid4().hex[:6]}")

    def token_for(self, path: str) -> str:
        if path.startswith("/api/v1/admin/"):
            return self.admin
        if path.startswith("/api/v1/accounts") or path.startswith("/api/v1/parties"):
            return self.account["token"]
        return self.player["token"]

    def path_value(self, name: str) -> str:
        return {"lobby_id": self.lobby_id, "match_id": self.match_id, "ticket_id": self.ticket_id,
                "player_id": self.player["id"], "spin_id": self.spin_id, "token_id": self.account["token_id"],
                "game_id": "provinces", "party_id": self.party_id}[name]

    def known(self, prop: str) -> Any:
        return {"name": self.guest_name, "game": "provinces", "seats": 2, "options": {},
                "username": self.account["username"], "password": self.account["password"],
                "amount": 5, "reason": "outage sweep", "kind": "random", "count": 1, "special": "shield",
                "matches": 1, "loadout": [], "label": "sweep", "client_seed": "sweep",
                "bots_after_seconds": None, "seat": None, "code": self.party_code}.get(prop, _MISSING)


_MISSING = object()


async def _call(client: httpx.AsyncClient, method: str, path: str, token: str | None = None,
                body: Any = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = await client.request(method, path, headers=headers, json=body)
    assert resp.status_code < 300, f"{method} {path}: {resp.status_code} {resp.text[:300]}"
    return resp


async def make_world(url: str, admin: str) -> World:
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        player = (await _call(c, "POST", "/api/v1/players", body={"name": "Sweep Player"})).json()
        token = player["token"]
        me = {"id": player["player"]["id"], "token": token}
        account = (await _call(c, "POST", "/api/v1/players", body={"name": "Sweep Account"})).json()
        username, password = f"sweep{secrets.token_hex(4)}", "Outage-" + secrets.token_urlsafe(12)
        await _call(c, "POST", "/api/v1/accounts/claim", account["token"], {"username": username, "password": password})
        signed = (await _call(c, "POST", "/api/v1/accounts/sign-in", None,
                              {"username": username, "password": password, "label": "sweep"})).json()
        tokens = (await _call(c, "GET", "/api/v1/accounts/tokens", account["token"])).json()
        items = tokens["items"] if isinstance(tokens, dict) else tokens
        acc = {"id": account["player"]["id"], "token": account["token"], "username": username,
               "password": password, "token_id": items[-1]["id"], "signed_in": signed}
        await _call(c, "POST", f"/api/v1/admin/players/{me['id']}/crystals", admin,
                    {"amount": 100, "reason": "outage sweep"})
        spin = (await _call(c, "POST", "/api/v1/players/me/spins", token, {"client_seed": "w"})).json()
        spin_id = spin.get("id") or spin["spin"]["id"]
        lobby = (await _call(c, "POST", "/api/v1/lobbies", token, {"game": "provinces", "seats": 2})).json()
        await _call(c, "POST", f"/api/v1/lobbies/{lobby['id']}/bots", token, {"kind": "random"})
        played = (await _call(c, "POST", "/api/v1/lobbies", token, {"game": "provinces", "seats": 2})).json()
        await _call(c, "POST", f"/api/v1/lobbies/{played['id']}/bots", token, {"kind": "random"})
        started = (await _call(c, "POST", f"/api/v1/lobbies/{played['id']}/start", token)).json()
        ticket = (await _call(c, "POST", "/api/v1/matchmaking/tickets", token,
                              {"game": "provinces", "seats": 2})).json()
        party = (await _call(c, "POST", "/api/v1/parties", account["token"], {"game": "provinces", "seats": 2})).json()
    return World(url, admin, me, acc, lobby["id"], started["match_id"], ticket["id"], spin_id, party["id"],
                 party["invite_code"])


# ---------------------------------------------------------------------------------------------- bodies
def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = spec["components"]["schemas"][name]
    return schema


def example(schema: dict[str, Any], spec: dict[str, Any], world: World, prop: str = "") -> Any:
    """A value for ``schema`` that its route should accept: the world's value for a known property
    name, else one made from the schema's type and bounds."""
    if prop:
        value = world.known(prop)
        if value is not _MISSING:
            return value
    schema = _resolve(schema, spec)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return example(options[0], spec, world) if options else None
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: example(sub, spec, world, name) for name, sub in props.items()
                if name in schema.get("required", []) or world.known(name) is not _MISSING}
    if kind == "array":
        return []
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return "x" * max(1, int(schema.get("minLength", 1)))


@dataclass
class Route:
    method: str
    template: str
    documented: dict[str, str]      # status -> description
    body: Any = None
    socket: bool = False

    @property
    def label(self) -> str:
        return f"{self.method} {self.template}"


def enumerate_routes(spec: dict[str, Any], socket_paths: list[str], world: World) -> list[Route]:
    """Every HTTP route of the OpenAPI document (with a body made from its schema) and every socket
    route of the app."""
    routes = []
    for template, ops in spec["paths"].items():
        for method, op in ops.items():
            body = None
            request_body = op.get("requestBody")
            if request_body:
                body = example(request_body["content"]["application/json"]["schema"], spec, world)
            routes.append(Route(method.upper(), template, {k: v.get("description", "")
                                                           for k, v in op["responses"].items()}, body))
    routes += [Route("WS", path, {}, socket=True) for path in socket_paths]
    return routes


def fill(template: str, world: World) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: world.path_value(m.group(1)), template)


# ---------------------------------------------------------------------------------------------- answers
@dataclass
class Answer:
    route: Route
    seconds: float
    status: int | None = None
    code: str | None = None
    retry_after: str | None = None
    socket: list[Any] = field(default_factory=list)
    problem: str | None = None


async def ask(client: httpx.AsyncClient, route: Route, world: World) -> Answer:
    started = time.monotonic()
    path = fill(route.template, world)
    if route.socket:
        return await _ask_socket(route, path, world, started)
    headers = {"Authorization": f"Bearer {world.token_for(path)}"}
    try:
        resp = await client.request(route.method, path, headers=headers,
                                    json=route.body if route.body is not None else None, timeout=BOUND + 30)
    except httpx.HTTPError as exc:
        return Answer(route, time.monotonic() - started, problem=f"no HTTP answer: {type(exc).__name__}")
    code = None
    if resp.headers.get("content-type", "").startswith("application/json"):
        with_code = resp.json()
        code = with_code.get("code") if isinstance(with_code, dict) else None
    return Answer(route, time.monotonic() - started, resp.status_code, code, resp.headers.get("retry-after"))


async def _ask_socket(route: Route, path: str, world: World, started: float) -> Answer:
    got: list[Any] = []
    url = ws_url(world.url, world.match_id).split("/ws/")[0] + path
    try:
        async with websockets.connect(url, open_timeout=BOUND, ping_interval=None) as ws:
            await ws.send(json.dumps({"type": "hello", "token": world.player["token"]}))
            try:
                async with asyncio.timeout(BOUND + 10):
                    async for raw in ws:
                        msg = json.loads(raw)
                        got.append(msg.get("type") if msg.get("type") != "error" else f"error {msg.get('code')}")
                        if msg.get("type") in ("state", "delta"):
                            break
            except TimeoutError:
                return Answer(route, time.monotonic() - started, socket=got, problem="socket: no answer")
            except websockets.ConnectionClosed:
                pass
            got.append(ws.close_code)
    except (OSError, websockets.WebSocketException) as exc:
        got.append(f"connect failed: {type(exc).__name__}")
    return Answer(route, time.monotonic() - started, socket=got)


def problems(answers: list[Answer]) -> list[str]:
    """Every answer that is not a documented code within the bound."""
    bad = []
    for a in answers:
        where = f"{a.route.label}"
        if a.problem:
            bad.append(f"{where}: {a.problem} after {a.seconds:.1f}s")
            continue
        if a.seconds > BOUND:
            bad.append(f"{where}: answered after {a.seconds:.1f}s (bound {BOUND:.0f}s)")
        if a.route.socket:
            first = a.socket[0] if a.socket else None
            ok = first in ("state", "delta") or (
                isinstance(first, str) and first.startswith("error ") and first[6:] in SOCKET_ERRORS
                and a.socket[-1] in SOCKET_CLOSES)
            if not ok:
                bad.append(f"{where}: socket answered {a.socket}")
            continue
        assert a.status is not None
        if str(a.status) not in a.route.documented:
            bad.append(f"{where}: {a.status} {a.code} is not documented for it ({sorted(a.route.documented)})")
        elif a.status == 503 and a.route.template.startswith("/api/"):
            codes = set(re.findall(r"`(\w+)`", a.route.documented["503"]))
            if a.code not in codes:
                bad.append(f"{where}: 503 {a.code} is not one of its documented 503 codes {sorted(codes)}")
            if not (a.retry_after or "").isdigit():
                bad.append(f"{where}: 503 {a.code} without a Retry-After header")
    return bad


async def sweep(world: World, routes: list[Route]) -> list[Answer]:
    """Every route at once (the storage's pool and timeouts must bound each answer however many
    wait), readiness last (its own bound is checked apart)."""
    async with httpx.AsyncClient(base_url=world.url, timeout=BOUND + 30) as client:
        return list(await asyncio.gather(*(ask(client, r, world) for r in routes)))


async def wait_ready(url: str, within: float) -> None:
    end = time.monotonic() + within
    last = None
    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        while time.monotonic() < end:
            try:
                resp = await client.get("/readyz")
                if resp.status_code == 200:
                    return
                last = resp.json()
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            await asyncio.sleep(0.2)
    raise AssertionError(f"not ready {within} s after the outage ended: {last}")


async def readiness_during(url: str, failing: str) -> list[float]:
    """Three ``/readyz`` during the outage: each 503 within 1 s, naming ``failing``."""
    took = []
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        for _ in range(3):
            t = time.monotonic()
            resp = await client.get("/readyz")
            took.append(time.monotonic() - t)
            body = resp.json()
            assert resp.status_code == 503 and body["status"] == "unavailable", body
            assert body["checks"][failing] != "ok", body
    return took


def socket_paths() -> list[str]:
    """The app's socket routes (walking included routers: FastAPI keeps them apart until routed)."""
    from fastapi.routing import APIWebSocketRoute
    from starlette.routing import WebSocketRoute

    from app.config import Settings
    from app.main import create_app

    found: list[str] = []

    def walk(routes: list[Any], prefix: str) -> None:
        for route in routes:
            inner = getattr(route, "original_router", None)
            if inner is not None:
                walk(inner.routes, prefix + (route.include_context.prefix or ""))
            elif isinstance(route, (APIWebSocketRoute, WebSocketRoute)):
                found.append(prefix + route.path)

    walk(create_app(Settings(database_url="sqlite+aiosqlite:///:memory:")).routes, "")
    return found


async def count_named(db_url: str, name: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(db_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        return int(await conn.fetchval("SELECT count(*) FROM players WHERE name = $1", name))
    finally:
        await conn.close()


async def table_counts(db_url: str) -> dict[str, int]:
    import asyncpg

    conn = await asyncpg.connect(db_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        tables = ("players", "lobbies", "lobby_seats", "wallets", "owned_specials", "ledger", "spins",
                  "player_tokens", "accounts")
        return {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in tables}
    finally:
        await conn.close()


# ---------------------------------------------------------------------------------------------- outages
OUTAGES = ["postgres_down", "postgres_hung", "redis_down", "redis_hung"]


async def _begin(outage: str, pg, redis) -> None:
    if outage == "postgres_down":
        await pg.astop()
    elif outage == "postgres_hung":
        pg.pause()
    elif outage == "redis_down":
        await redis.akill()
    else:
        redis.pause()


async def _end(outage: str, pg, redis) -> None:
    if outage == "postgres_down":
        await pg.astart()
    elif outage == "postgres_hung":
        pg.resume()
    elif outage == "redis_down":
        await redis.astart()  # empty: no persistence
    else:
        redis.resume()


@pytest.mark.parametrize("outage", OUTAGES)
async def test_every_route_answers_a_documented_code_in_bounded_time(nodes, private_pg, private_redis, outage):
    """During each outage every route (REST and socket) answers within the bound with a status its
    OpenAPI entry documents — a 503 only with one of its documented codes and a ``Retry-After`` —
    never a 500; ``/readyz`` says 503 within 1 s naming what failed; afterwards the node is ready
    again and the routes that answered 503 changed nothing: the guest, the started lobby, the ticket
    were not made."""
    node = nodes.start("node-1", **NODE_ENV)
    world = await make_world(node.url, node.admin_token)
    spec = httpx.get(node.url + "/openapi.json", timeout=10).json()
    routes = enumerate_routes(spec, socket_paths(), world)
    assert {"POST /api/v1/players", "POST /api/v1/lobbies/{lobby_id}/start", "POST /api/v1/matchmaking/tickets",
            "GET /api/v1/matchmaking/tickets/{ticket_id}", "WS /ws/matches/{match_id}"} <= {r.label for r in routes}
    # the ticket long-poll, as the players used it
    routes.append(Route("GET", "/api/v1/matchmaking/tickets/{ticket_id}?wait=10",
                        next(r.documented for r in routes if r.label == "GET /api/v1/matchmaking/tickets/{ticket_id}")))
    before = await table_counts(private_pg.url)
    await _begin(outage, private_pg, private_redis)
    try:
        answers = await sweep(world, routes)
        ready_took = await readiness_during(node.url, "database" if outage.startswith("postgres") else "redis")
    finally:
        await _end(outage, private_pg, private_redis)
    bad = problems(answers)
    summary = "\n".join(f"  {a.route.label}: {a.status or a.socket} {a.code or ''} {a.seconds:.1f}s" for a in answers)
    assert not bad, f"{outage}:\n" + "\n".join(bad) + f"\nall answers:\n{summary}\n{node_log_tail(node, lines=40)}"
    assert max(ready_took) < 1.0, f"/readyz took {ready_took} during {outage}"
    assert "Traceback" not in node.logs(), node_log_tail(node, lines=60)
    await wait_ready(node.url, 30)
    # nothing half-way: what answered 503 made nothing
    by_label = {a.route.label: a for a in answers}
    async with httpx.AsyncClient(base_url=node.url, timeout=10) as client:
        start = by_label["POST /api/v1/lobbies/{lobby_id}/start"]
        lobby = (await client.get(f"/api/v1/lobbies/{world.lobby_id}",
                                  headers={"Authorization": f"Bearer {world.player['token']}"})).json()
        if start.status == 503:  # (a leave of the sweep may have closed it meanwhile)
            assert lobby["status"] != "started" and lobby["match_id"] is None, lobby
        guest = by_label["POST /api/v1/players"]
        made = await count_named(private_pg.url, world.guest_name)
        assert made == (1 if guest.status == 201 else 0), (guest.status, made)
        if outage.startswith("redis"):
            # quick play during a Redis outage: 503, not 500; the ticket made before it is readable
            # again (Redis hung) or reported lost (Redis restarted empty), never "not found"
            ticket = await client.get(f"/api/v1/matchmaking/tickets/{world.ticket_id}",
                                      headers={"Authorization": f"Bearer {world.player['token']}"})
            want = 200 if outage == "redis_hung" else 410
            assert ticket.status_code == want, (ticket.status_code, ticket.text)
    if outage.startswith("postgres"):
        # Postgres was away the whole sweep: nothing of any route is in it
        assert await table_counts(private_pg.url) == before


async def test_an_act_is_answered_once_the_commit_retries_are_spent_while_postgres_hangs(nodes, private_pg):
    """Postgres hung (SIGSTOP): a seat of match A sends its orders, a seat of match B half a second
    later (B's record queues behind A's hanging commit). Each gets ``storage_unavailable`` and
    close 1011 within ``COMMIT_RETRY_SECONDS`` of its send (+ the last attempt's 0.5 s and slack),
    as docs/protocol.md promises: before, the attempt that hung was given the whole retry window,
    and the record queued behind it waited for that and a window of its own (~21.7 s with the
    defaults)."""
    from tests.e2e.helpers import start_match
    from tests.faults.conftest import join

    retry = 4.0
    node = nodes.start("node-1", **{**NODE_ENV, "BANNERFALL_COMMIT_RETRY_SECONDS": str(retry)})
    tables = [await start_match(node.url, "conquest", 2, options={"phase_seconds": 180}) for _ in range(2)]
    socks = []
    try:
        for table in tables:
            sock, state = await join(node.url, table.match_id, table.players[0].token, label=table.match_id[:8])
            socks.append((sock, state["version"]))
        private_pg.pause()
        try:
            sent = []
            for sock, version in socks:
                await sock.act(1, {"type": "orders", "attack": []}, version)
                sent.append(time.monotonic())
                await asyncio.sleep(0.5)
            answers = await asyncio.gather(*(sock.answer(1, timeout=retry * 4) for sock, _ in socks))
            for sock, _ in socks:
                if not sock.closed:
                    await sock.wait(lambda m: False, timeout=5)
            took = [(s.closed_at or time.monotonic()) - t for (s, _), t in zip(socks, sent, strict=True)]
        finally:
            private_pg.resume()
        for (sock, _), (kind, msg) in zip(socks, answers, strict=True):
            assert kind in ("error", "closed"), f"{sock.label}: {kind} {msg}"
            if kind == "error":
                assert msg["code"] == "storage_unavailable", msg
            assert sock.close_code == 1011, f"{sock.label}: closed {sock.close_code}"
        assert max(took) <= retry + 0.5 + 2.0, f"answers (to the close) took {took} s; bound {retry} s + 0.5 s"
    finally:
        for sock, _ in socks:
            await sock.close()
        for table in tables:
            await table.close()


def _losses(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics", timeout=10).text
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'^bannerfall_lease_losses_total\{reason="(\w+)"\} (\S+)$', text, re.M)}


async def test_a_pause_shorter_than_the_lease_margin_loses_nothing_a_longer_one_is_counted(nodes, private_pg,
                                                                                          private_redis):
    """A node (default 2 s lease, renewed every 0.5 s) stopped by SIGSTOP for 1 s keeps every
    lease; stopped for 3.5 s (past the lease: a stopped process renews nothing, its thread
    neither) it loses them, and ``/metrics`` counts them (``bannerfall_lease_losses_total``)."""
    from tests.e2e.helpers import start_match
    from tests.faults.conftest import lease_owner, pause, resume

    node = nodes.start("node-1")
    tables = [await start_match(node.url, "provinces", 1, bots=1) for _ in range(3)]
    try:
        assert _losses(node.url) == {"taken": 0, "expired": 0, "stalled": 0}
        pause(node)
        try:
            await asyncio.sleep(1.0)
        finally:
            resume(node)
        await asyncio.sleep(1.0)  # a few renewal rounds: a loss would be counted by now
        assert _losses(node.url) == {"taken": 0, "expired": 0, "stalled": 0}, node_log_tail(node)
        for t in tables:
            assert "node-1" in await lease_owner(private_redis.url, private_pg.url, t.match_id)
        pause(node)
        try:
            await asyncio.sleep(3.5)
        finally:
            resume(node)
        end = time.monotonic() + 15
        while sum(_losses(node.url).values()) < len(tables):
            assert time.monotonic() < end, f"losses not counted: {_losses(node.url)}\n{node_log_tail(node)}"
            await asyncio.sleep(0.2)
        assert _losses(node.url)["expired"] >= 1
    finally:
        for t in tables:
            await t.close()
