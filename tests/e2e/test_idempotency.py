"""``Idempotency-Key`` on the requests that spend or grant (docs/protocol.md, "Idempotency keys";
IETF draft "The Idempotency-Key HTTP Header Field"): spins, admin grants, claims, lobby starts. A
repeat with the same key gets the first answer and spends nothing, also on another node of the same
database, also when the repeats race; the same key for another request is 422; a malformed key 400.
Real servers over real sockets: SQLite (one node), Postgres and Postgres + Redis (two nodes)."""
from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from app.client import RestClient
from tests.conftest import ServerProcess

API = "/api/v1"
QUICK = {"max_rounds": 1, "phase_seconds": 5, "decision_seconds": 5}


@pytest.fixture(scope="module")
def nodes(server, backend):
    """Two nodes of one database where it can be shared (Postgres with Redis: nodes without Redis
    claim their database alone, app/db/node_lock.py), else the one node twice."""
    if backend.kind != "postgres+redis":
        yield server, server
        return
    second = ServerProcess(backend.url, env=backend.env).start()
    try:
        yield server, second
    finally:
        second.stop()


async def _post(node, token: str, path: str, key: str | bytes | None, body=None) -> httpx.Response:
    headers = [(b"authorization", f"Bearer {token}".encode())]
    if key is not None:
        headers.append((b"idempotency-key", key if isinstance(key, bytes) else key.encode()))
    async with httpx.AsyncClient(base_url=node.url, timeout=30) as http:
        return await http.post(API + path, headers=headers, json=body)


async def _guest(node, name: str = "p") -> tuple[str, str]:
    async with RestClient(node.url) as c:
        out = await c.register(name)
        return out["player"]["id"], out["token"]


async def test_a_repeated_spin_is_one_spin_on_any_node_even_when_repeats_race(nodes):
    a, b = nodes
    pid, token = await _guest(a)
    async with RestClient(a.url, a.admin_token) as adm:
        await adm.admin_grant_crystals(pid, 100)
    key = str(uuid.uuid4())
    first = await _post(a, token, "/players/me/spins", f'"{key}"', {"client_seed": "x"})  # the draft's sf-string
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    again = await _post(b, token, "/players/me/spins", key, {"client_seed": "x"})  # the same key, unquoted
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    # ten repeats at once on both nodes of a new key: one spin, ten equal answers
    key2 = str(uuid.uuid4())
    racing = await asyncio.gather(*(_post(a if i % 2 else b, token, "/players/me/spins", key2, {"client_seed": "y"})
                                    for i in range(10)))
    assert {r.status_code for r in racing} == {201}
    assert len({r.json()["id"] for r in racing}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in racing) == 9
    async with RestClient(b.url, token) as me:
        assert (await me.inventory())["crystals"] == 100 - 2 * 20
        spins = [r for r in await me.ledger() if r["kind"] == "spin"]
        assert len(spins) == 2
        # without a key, two requests are two spins, as before
        await me.spin()
        await me.spin()
        assert (await me.inventory())["crystals"] == 100 - 4 * 20


async def test_the_same_key_for_another_request_is_refused_and_changes_nothing(nodes):
    a, b = nodes
    pid, token = await _guest(a)
    async with RestClient(a.url, a.admin_token) as adm:
        await adm.admin_grant_crystals(pid, 100)
    key = "k-" + uuid.uuid4().hex
    assert (await _post(a, token, "/players/me/spins", key, {"client_seed": "one"})).status_code == 201
    other = await _post(b, token, "/players/me/spins", key, {"client_seed": "two"})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    # a key is the player's own: another player's same key is a request of its own
    pid2, token2 = await _guest(b)
    async with RestClient(a.url, a.admin_token) as adm:
        await adm.admin_grant_crystals(pid2, 20)
    theirs = await _post(b, token2, "/players/me/spins", key, {"client_seed": "one"})
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs.headers
    for bad in ("", '""', "x" * 256, "caf\u00e9".encode(), '"a"b"', '"a\\b"', "tab\there"):
        res = await _post(a, token, "/players/me/spins", bad, {"client_seed": "one"})
        assert res.status_code == 400 and res.json()["code"] == "bad_idempotency_key", (bad, res.text)
    async with RestClient(a.url, token) as me:
        assert (await me.inventory())["crystals"] == 80


async def test_a_refused_spin_keeps_no_answer_so_its_key_may_be_sent_again(nodes):
    a, b = nodes
    pid, token = await _guest(a)
    key = uuid.uuid4().hex
    poor = await _post(a, token, "/players/me/spins", key, {"client_seed": ""})
    assert poor.status_code == 409 and poor.json()["code"] == "insufficient_crystals"
    async with RestClient(a.url, a.admin_token) as adm:
        await adm.admin_grant_crystals(pid, 20)
    paid = await _post(b, token, "/players/me/spins", key, {"client_seed": ""})
    assert paid.status_code == 201 and "Idempotent-Replayed" not in paid.headers


async def test_admin_grants_are_granted_once_per_key(nodes):
    a, b = nodes
    pid, _token = await _guest(a)
    key = uuid.uuid4().hex
    body = {"amount": 50, "reason": "order 17"}
    answers = await asyncio.gather(*(_post(n, a.admin_token, f"/admin/players/{pid}/crystals", key, body)
                                     for n in (a, b, a, b)))
    assert [r.status_code for r in answers] == [200] * 4
    assert {r.json()["balance"] for r in answers} == {50}
    special_key = uuid.uuid4().hex
    grant = {"special": "scout", "matches": 3, "reason": "gift"}
    first = await _post(a, a.admin_token, f"/admin/players/{pid}/specials", special_key, grant)
    again = await _post(b, a.admin_token, f"/admin/players/{pid}/specials", special_key, grant)
    assert first.json() == again.json() == {"player_id": pid, "asset": "scout", "balance": 3}
    assert again.headers["Idempotent-Replayed"] == "true"
    reused = await _post(b, a.admin_token, f"/admin/players/{pid}/specials", special_key, {**grant, "matches": 4})
    assert reused.status_code == 422 and reused.json()["code"] == "idempotency_key_reused"
    async with RestClient(b.url, a.admin_token) as adm:
        rows = (await adm.request("GET", f"/admin/players/{pid}/ledger"))["items"]
    assert [(r["asset"], r["kind"], r["delta"]) for r in rows] == [("scout", "grant", 3), ("crystals", "grant", 50)]


async def test_a_repeated_claim_gets_the_first_answer(nodes):
    a, b = nodes
    _pid, token = await _guest(a, "claimer")
    username = "idem" + uuid.uuid4().hex[:10]
    key = uuid.uuid4().hex
    body = {"username": username, "password": "a long passphrase for idem tests"}
    first = await _post(a, token, "/accounts/claim", key, body)
    assert first.status_code == 201, first.text
    again = await _post(b, token, "/accounts/claim", key, body)
    assert again.status_code == 201 and again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    plain = await _post(b, token, "/accounts/claim", None, body)  # without the key: the usual answer
    assert plain.status_code == 409 and plain.json()["code"] == "already_claimed"
    other = await _post(a, token, "/accounts/claim", key, {**body, "username": username + "x"})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"


async def test_repeats_of_a_claim_in_flight_together_get_the_first_answer(nodes):
    """Repeats sent at once to two nodes: whichever commits first, the others get its answer (not
    409 ``already_claimed``, which a repeat reading after the first commit would otherwise get)."""
    a, b = nodes
    _pid, token = await _guest(a, "claimer")
    username = "idem" + uuid.uuid4().hex[:10]
    key = uuid.uuid4().hex
    body = {"username": username, "password": "a long passphrase for idem tests"}
    answers = await asyncio.gather(*(_post(n, token, "/accounts/claim", key, body) for n in (a, b, a, b)))
    assert [r.status_code for r in answers] == [201] * 4, [r.text for r in answers]
    assert len({r.text for r in answers}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in answers) == 3


async def test_a_repeated_lobby_start_gets_the_started_lobby(nodes):
    a, b = nodes
    _pid, token = await _guest(a, "host")
    async with RestClient(a.url, token) as host:
        lobby = await host.create_lobby("conquest", 2, QUICK)
        await host.fill_bots(lobby["id"], "random")
    key = uuid.uuid4().hex
    answers = await asyncio.gather(*(_post(n, token, f"/lobbies/{lobby['id']}/start", key) for n in (a, b, a)))
    assert [r.status_code for r in answers] == [200] * 3, [r.text for r in answers]
    assert len({r.json()["match_id"] for r in answers}) == 1
    assert all(r.json()["status"] == "started" for r in answers)
    plain = await _post(b, token, f"/lobbies/{lobby['id']}/start", None)
    assert plain.status_code == 409 and plain.json()["code"] == "lobby_not_open"
    async with RestClient(a.url, a.admin_token) as adm:
        await adm.admin_abort(answers[0].json()["match_id"])
