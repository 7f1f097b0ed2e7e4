"""Claims of docs/protocol.md, docs/operations.md and docs/infra.md made tests (issue 26 item 17):
every setting with its default, every error code the server can send, every Redis key a node
writes, and the version an ``ack`` carries."""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from app.client import ApiError, RestClient
from app.config import Settings
from tests.conftest import ROOT, ServerProcess
from tests.e2e.helpers import connect, recv_until, start_match

DOCS = ROOT / "docs"


def _doc(name: str) -> str:
    return (DOCS / name).read_text()


# --- operations.md: every setting, with its default ----------------------------------------------

def _settings_rows() -> dict[str, str]:
    """``NAME -> default cell`` of every table row of operations.md that starts with a setting name."""
    rows: dict[str, str] = {}
    for m in re.finditer(r"^\| `([A-Z0-9_]+)`(?:, `([A-Z0-9_]+)`)? \| ([^|]*) \|", _doc("operations.md"), re.M):
        defaults = [d.strip() for d in m.group(3).split(",")] if m.group(2) else [m.group(3).strip()]
        for name, default in zip(filter(None, (m.group(1), m.group(2))), defaults, strict=False):
            rows[name] = default
    return rows


def _shown(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_every_setting_is_in_operations_md_with_its_default():
    rows = _settings_rows()
    for name, field in Settings.model_fields.items():
        key = name.upper()
        assert key in rows, f"setting BANNERFALL_{key} is not in docs/operations.md's tables"
        cell = rows[key]
        default = field.get_default(call_default_factory=True)
        if default is None or not isinstance(default, (str, int, float)):
            continue  # "unset", "hostname + random", JSON values described in words
        assert f"`{_shown(default)}`" in cell or f"`{default}`" in cell, (key, cell, default)
    for key in rows:
        assert key.lower() in Settings.model_fields or key == "PURE_PYTHON", f"{key} is documented but no setting"


# --- protocol.md: every error code the server sends ------------------------------------------------

def _codes(pattern: str, where: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in where.rglob("*.py"):
        for m in re.finditer(pattern, path.read_text()):
            found.setdefault(m.group(1), str(path.relative_to(ROOT)))
    return found


def test_every_rest_and_socket_error_code_is_in_protocol_md():
    protocol = _doc("protocol.md")
    rest = _codes(r'ApiError\(\s*\d{3}\s*,\s*"([a-z_]+)"', ROOT / "app")
    socket = _codes(r'\berror\(\s*"([a-z_]+)"', ROOT / "app")
    runtime = _codes(r'IllegalAction\(\s*"([a-z_]+)"', ROOT / "app" / "runtime")   # answered over REST too
    assert rest and socket
    missing = {c: w for c, w in {**rest, **socket, **runtime}.items() if f"`{c}`" not in protocol}
    assert not missing, f"error codes the server sends but docs/protocol.md does not list: {missing}"


# --- infra.md: nothing but the documented keys is written to Redis ----------------------------------

def _key_patterns(prefix: str) -> list[re.Pattern[str]]:
    """The key and channel patterns of infra.md's "Redis key layout" table, as regular expressions
    (``{prefix}`` the prefix, any other lowercase ``{name}`` one or more characters)."""
    text = _doc("infra.md")
    table = text[text.index("## Redis key layout"):text.index("## Claim semantics")]
    patterns = []
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split(" | ")[0]
        for raw in re.findall(r"`([^`]+)`", first_cell):
            parts = re.split(r"(\{[a-z_]+\})", raw)
            regex = "".join(re.escape(prefix) if p == "{prefix}" else ".+?" if re.fullmatch(r"\{[a-z_]+\}", p)
                            else re.escape(p) for p in parts)
            patterns.append(re.compile(regex + r"\Z"))
    assert len(patterns) >= 10, patterns
    return patterns


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_production_node_writes_only_the_redis_keys_infra_md_lists(postgres_server, redis_env, tmp_path):
    import redis.asyncio as aioredis

    from tests.conftest import PostgresDatabase

    db = PostgresDatabase()
    url = await asyncio.to_thread(db.create)
    prefix = redis_env["BANNERFALL_REDIS_PREFIX"]
    # every limit on, loopback not exempt: the limiter writes its keys
    srv = ServerProcess(url, env={**redis_env, "BANNERFALL_RATE_LIMIT_PLAYER": "20/second;600/minute",
                                  "BANNERFALL_RATE_LIMIT_EXEMPT": ""})
    client = aioredis.Redis.from_url(redis_env["BANNERFALL_REDIS_URL"])
    try:
        await asyncio.to_thread(srv.start)
        table = await start_match(srv.url, "provinces", 2, options={"turn_seconds": 600})
        sock, state = await connect(srv.url, table.match_id, table.players[0].token)
        async with RestClient(srv.url, table.players[1].token) as other:
            await other.queue("warrior", 3, {})                       # quick play: a waiting ticket
            await other.create_party("provinces", 3)                 # a party, its code, its member link
        async with RestClient(srv.url) as stranger:
            with pytest.raises(ApiError) as refused:                 # a refused sign-in: its counters
                await stranger.request("POST", "/accounts/sign-in",
                                       json={"username": "nobody-here", "password": "wrong password"})
            assert refused.value.code == "bad_credentials"
        keys = sorted([k.decode() async for k in client.scan_iter(match=prefix + "*")])
        channels = sorted(c.decode() for c in await client.pubsub_channels(prefix + "*"))
        await sock.close()
        await table.close()
    finally:
        await asyncio.to_thread(srv.stop)
        await client.aclose()
        await asyncio.to_thread(db.drop)
    patterns = _key_patterns(prefix)
    kinds = {k[len(prefix):].split(":")[0] for k in keys}
    assert {"deadlines", "lease", "limits", "mm"} <= kinds, keys   # the scenario reached every kind
    assert any(k.startswith(prefix + "mm:party:") for k in keys), keys
    undocumented = [k for k in keys + channels if not any(p.match(k) for p in patterns)]
    assert not undocumented, f"Redis keys or channels docs/infra.md does not list: {undocumented}"


# --- protocol.md: an ack's version is the seat's audience version -----------------------------------

async def test_an_acks_version_is_the_seats_version_not_the_matchs(server):
    """Seat 0 sets its dealing (private: seat 1 sees nothing) and ends its turn; seat 1 ends its
    turn: seat 1's ack carries seat 1's version (2), while the match has applied 3 actions."""
    table = await start_match(server.url, "provinces", 2, options={"turn_seconds": 600})
    socks = {}
    try:
        for seat in (0, 1):
            socks[seat] = await connect(server.url, table.match_id, table.players[seat].token)
        first = socks[0][1]["prompts"][0]["seat"]
        second = 1 - first
        sock, st = socks[first]
        await sock.send({"type": "act", "seq": 1, "action": {"type": "set_dealing", "mode": "randomly"},
                         "version": st["version"]})
        ack = await recv_until(sock, lambda m: m["type"] in ("ack", "error"))
        assert ack["type"] == "ack", ack
        await sock.send({"type": "act", "seq": 2, "action": {"type": "end_turn"}, "version": ack["version"]})
        ack = await recv_until(sock, lambda m: m["type"] in ("ack", "error"))
        assert ack["type"] == "ack" and ack["version"] == 2, ack
        other, other_state = socks[second]
        seen = await recv_until(other, lambda m: m["type"] in ("state", "delta") and m["version"] >= 1)
        assert seen["version"] == 1                                  # the private action moved nothing here
        await other.send({"type": "act", "seq": 1, "action": {"type": "end_turn"}, "version": seen["version"]})
        ack = await recv_until(other, lambda m: m["type"] == "ack")
        assert ack["version"] == 2                                  # the seat's version ...
        async with RestClient(server.url, server.admin_token) as admin:
            log = await admin.admin_log(table.match_id)
        assert len(log["actions"]) == 3                             # ... not the match's action count
    finally:
        for s, _ in socks.values():
            await s.close()
        await table.close()
