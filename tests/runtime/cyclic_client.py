"""The client of ``tests/runtime/test_cyclic_garbage.py``, run in its own process so that only the
server's garbage is counted: ``python -m tests.runtime.cyclic_client URL ADMIN_TOKEN ROUNDS``.

It plays one round (a warm-up: every code path compiled, cached, imported), prints ``ready`` and
waits for a line on stdin; then plays ``ROUNDS`` rounds, prints ``done <requests> <sockets>`` and
waits for another line before it exits. A round is what clients do: two players registered, their
profile, the games, a lobby made, listed, read, joined, left and joined again, started, the match
read, listed, read by the admin (list, match, log), inventory and ledger, a matchmaking ticket
made, read and cancelled, refusals (404, 401 twice, 422 twice), health checks; then both players'
sockets (each a new connection upgraded to a WebSocket): hello, a few actions, close."""
from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx

from app.client.socket import MatchSocket, play
from app.runtime.bots import make_bot

ACTIONS = 6  # per match, both seats together


async def _play_a_little(url: str, match_id: str, tokens: list[str]) -> None:
    """Both seats connect and play until ``ACTIONS`` actions of the match are acknowledged, then close."""
    enough = asyncio.Event()
    acks = 0

    def count(msg: dict[str, Any]) -> None:
        nonlocal acks
        if msg.get("type") == "ack":
            acks += 1
            if acks >= ACTIONS:
                enough.set()

    socks = [MatchSocket(url, match_id, token) for token in tokens]
    for sock in socks:
        await sock.connect()
    players = [asyncio.create_task(play(sock, make_bot("provinces", "random", seed).decide, on_message=count))
               for seed, sock in enumerate(socks)]
    try:
        await asyncio.wait_for(enough.wait(), 30)
    finally:
        for task in players:
            task.cancel()
        await asyncio.gather(*players, return_exceptions=True)
        for sock in socks:
            await sock.close()


async def _round(http: httpx.AsyncClient, url: str, admin: str, counts: list[int]) -> None:
    async def call(method: str, path: str, token: str | None = None, body: Any = None, ok: bool = True,
                   content: bytes | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if content is not None:
            headers["Content-Type"] = "application/json"
        resp = await http.request(method, path, headers=headers, json=body, content=content)
        counts[0] += 1
        if ok and resp.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:200]}")
        return resp.json() if resp.content else None

    api = "/api/v1"
    p1 = await call("POST", f"{api}/players", body={"name": "cyc-a"})
    p2 = await call("POST", f"{api}/players", body={"name": "cyc-b"})
    t1, t2 = p1["token"], p2["token"]
    await call("GET", f"{api}/players/me", t1)
    await call("GET", f"{api}/games", t1)
    await call("GET", f"{api}/games/provinces", t1)
    lobby = await call("POST", f"{api}/lobbies", t1, {"game": "provinces", "seats": 2, "options": {}})
    await call("GET", f"{api}/lobbies", t1)
    await call("GET", f"{api}/lobbies/{lobby['id']}", t2)
    await call("POST", f"{api}/lobbies/{lobby['id']}/join", t2, {"seat": None})
    await call("POST", f"{api}/lobbies/{lobby['id']}/leave", t2)
    await call("POST", f"{api}/lobbies/{lobby['id']}/join", t2, {"seat": None})
    match_id = (await call("POST", f"{api}/lobbies/{lobby['id']}/start", t1))["match_id"]
    await call("GET", f"{api}/matches/{match_id}", t1)
    await call("GET", f"{api}/matches", t1)
    await call("GET", f"{api}/admin/matches", admin)
    await call("GET", f"{api}/admin/matches/{match_id}", admin)
    await call("GET", f"{api}/admin/matches/{match_id}/log", admin)
    await call("GET", f"{api}/players/me/inventory", t1)
    await call("GET", f"{api}/players/me/ledger", t1)
    p3 = await call("POST", f"{api}/players", body={"name": "cyc-c"})
    queue = {"game": "provinces", "seats": 2, "options": {}}
    ticket = await call("POST", f"{api}/matchmaking/tickets", p3["token"], queue)
    await call("GET", f"{api}/matchmaking/tickets/{ticket['id']}", p3["token"])
    await call("DELETE", f"{api}/matchmaking/tickets/{ticket['id']}", p3["token"])
    await call("GET", f"{api}/lobbies/{lobby['id']}/nothing", t1, ok=False)  # 404
    await call("GET", f"{api}/players/me", ok=False)  # 401, no token
    await call("GET", f"{api}/players/me", "not-a-token", ok=False)  # 401
    await call("POST", f"{api}/lobbies", t1, {"game": 5}, ok=False)  # 422
    await call("POST", f"{api}/lobbies", t1, content=b"{", ok=False)  # 422, malformed JSON
    await call("GET", "/healthz")
    await call("GET", "/readyz")
    await _play_a_little(url, match_id, [t1, t2])
    counts[1] += 2


async def main(url: str, admin: str, rounds: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        counts = [0, 0]
        await _round(http, url, admin, counts)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        counts = [0, 0]
        for _ in range(rounds):
            await _round(http, url, admin, counts)
        print(f"done {counts[0]} {counts[1]}", flush=True)
        await asyncio.to_thread(sys.stdin.readline)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
