"""REST client (httpx). Every method raises :class:`ApiError` with the server's ``code`` on failure."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message



def _idem(key: str | None) -> dict[str, str]:
    """The ``Idempotency-Key`` header for ``key`` (docs/protocol.md, "Idempotency keys"), or none."""
    return {} if key is None else {"Idempotency-Key": key}

class RestClient:
    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """``transport``: e.g. ``httpx.ASGITransport(app)`` to talk to an app in this process (tests)."""
        self.base_url = base_url.rstrip("/")
        self.token = token
        # plain http needs no CA bundle (loading it costs ~0.1 s per client)
        verify = True if self.base_url.startswith("https://") else False
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, verify=verify, transport=transport)

    async def __aenter__(self) -> "RestClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = kwargs.pop("headers", {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        resp = await self._http.request(method, "/api/v1" + path, headers=headers, **kwargs)
        if resp.status_code >= 400:
            try:
                body = resp.json()
                raise ApiError(resp.status_code, body.get("code", "error"), body.get("message", resp.text))
            except ValueError:
                raise ApiError(resp.status_code, "error", resp.text) from None
        if resp.status_code == 204 or not resp.content:
            return None
        return resp.json()

    # players
    async def register(self, name: str = "guest") -> dict[str, Any]:
        """Create a guest player; keeps and returns its token (``{"player": {...}, "token": str}``)."""
        out = await self.request("POST", "/players", json={"name": name})
        self.token = out["token"]
        return out

    async def me(self) -> dict[str, Any]:
        return await self.request("GET", "/players/me")

    # games and lobbies
    async def games(self) -> list[dict[str, Any]]:
        return await self.request("GET", "/games")

    async def create_lobby(self, game: str, seats: int, options: dict[str, Any] | None = None,
                           loadout: list[str] | None = None, rated: bool | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"game": game, "seats": seats, "options": options or {}}
        if loadout is not None:
            body["loadout"] = loadout
        if rated is not None:
            body["rated"] = rated
        return await self.request("POST", "/lobbies", json=body)

    async def lobbies(self, game: str | None = None) -> list[dict[str, Any]]:
        """The first page of open lobbies (newest first); :meth:`lobbies_page` for the others."""
        return (await self.lobbies_page(game=game))["items"]

    async def lobbies_page(self, game: str | None = None, status: str | None = None, cursor: str | None = None,
                           limit: int | None = None) -> dict[str, Any]:
        """``{items, next_cursor}``: one page of ``GET /lobbies``."""
        params = {k: v for k, v in (("game", game), ("status", status), ("cursor", cursor), ("limit", limit))
                  if v is not None}
        return await self.request("GET", "/lobbies", params=params or None)

    async def lobby(self, lobby_id: str, wait: float = 0, state: str | None = None) -> dict[str, Any]:
        """The lobby; with ``wait`` (seconds, at most 30) and ``state`` (from the last answer) a
        long-poll that answers when the lobby changes (a seat, bots, the start, the close)."""
        if not wait or state is None:
            return await self.request("GET", f"/lobbies/{lobby_id}")
        return await self.request("GET", f"/lobbies/{lobby_id}", params={"wait": wait, "state": state},
                                  timeout=wait + 10)

    async def wait_for_start(self, lobby_id: str, timeout: float = 60.0, step: float = 25.0) -> dict[str, Any]:
        """Long-poll the lobby until it is no longer open (``started``: ``match_id`` names the match;
        or ``closed``) or ``timeout`` seconds pass; the lobby."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        lobby = await self.lobby(lobby_id)
        while lobby["status"] == "open" and loop.time() < end:
            lobby = await self.lobby(lobby_id, wait=max(0.1, min(step, end - loop.time())), state=lobby["state"])
        return lobby

    async def version(self) -> dict[str, Any]:
        """``GET /api/v1/version``: ``{server, protocol, protocols}``."""
        return await self.request("GET", "/version")

    async def join(self, lobby_id: str, seat: int | None = None, loadout: list[str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"seat": seat}
        if loadout is not None:
            body["loadout"] = loadout
        return await self.request("POST", f"/lobbies/{lobby_id}/join", json=body)

    async def leave(self, lobby_id: str) -> dict[str, Any]:
        return await self.request("POST", f"/lobbies/{lobby_id}/leave")

    async def fill_bots(self, lobby_id: str, kind: str = "random") -> dict[str, Any]:
        return await self.request("POST", f"/lobbies/{lobby_id}/bots", json={"kind": kind})

    async def start(self, lobby_id: str) -> dict[str, Any]:
        return await self.request("POST", f"/lobbies/{lobby_id}/start")

    # -- quick play (docs/protocol.md, "Quick play")
    async def queue(self, game: str, seats: int, options: dict[str, Any] | None = None,
                    bots_after_seconds: float | None = None) -> dict[str, Any]:
        """A matchmaking ticket (``status`` ``waiting``); 409 ``ticket_exists`` if one is live."""
        body: dict[str, Any] = {"game": game, "seats": seats, "options": options or {}}
        if bots_after_seconds is not None:
            body["bots_after_seconds"] = bots_after_seconds
        return await self.request("POST", "/matchmaking/tickets", json=body)

    async def ticket(self, ticket_id: str, wait: float = 0) -> dict[str, Any]:
        """The ticket; with ``wait`` (seconds, at most 30) a long-poll that answers once it is
        matched or cancelled, or at the timeout."""
        if not wait:
            return await self.request("GET", f"/matchmaking/tickets/{ticket_id}")
        return await self.request("GET", f"/matchmaking/tickets/{ticket_id}", params={"wait": wait},
                                  timeout=wait + 10)

    async def cancel_ticket(self, ticket_id: str) -> dict[str, Any]:
        return await self.request("DELETE", f"/matchmaking/tickets/{ticket_id}")

    # -- accounts, parties, rematches (docs/protocol.md, "Accounts", "Parties", "Rematch")
    async def claim(self, username: str, password: str) -> dict[str, Any]:
        """Make this guest an account (``POST /accounts/claim``)."""
        return await self.request("POST", "/accounts/claim", json={"username": username, "password": password})

    async def create_party(self, game: str, seats: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.request("POST", "/parties", json={"game": game, "seats": seats, "options": options or {}})

    async def join_party(self, code: str) -> dict[str, Any]:
        return await self.request("POST", "/parties/join", json={"code": code})

    async def party(self, party_id: str, wait: float = 0, state: str | None = None) -> dict[str, Any]:
        """The party; with ``wait`` and ``state`` a long-poll that answers when it changes."""
        if not wait or state is None:
            return await self.request("GET", f"/parties/{party_id}")
        return await self.request("GET", f"/parties/{party_id}", params={"wait": wait, "state": state},
                                  timeout=wait + 10)

    async def queue_party(self, party_id: str, bots_after_seconds: float | None = None) -> dict[str, Any]:
        return await self.request("POST", f"/parties/{party_id}/queue",
                                  json={"bots_after_seconds": bots_after_seconds})

    async def cancel_party_queue(self, party_id: str) -> dict[str, Any]:
        return await self.request("DELETE", f"/parties/{party_id}/queue")

    async def leave_party(self, party_id: str) -> dict[str, Any]:
        return await self.request("POST", f"/parties/{party_id}/leave")

    async def rematch(self, match_id: str, wait: float = 0, state: str | None = None) -> dict[str, Any]:
        """The rematch offer of an ended match; with ``wait`` and ``state`` a long-poll."""
        if not wait or state is None:
            return await self.request("GET", f"/matches/{match_id}/rematch")
        return await self.request("GET", f"/matches/{match_id}/rematch", params={"wait": wait, "state": state},
                                  timeout=wait + 10)

    async def agree_rematch(self, match_id: str) -> dict[str, Any]:
        return await self.request("POST", f"/matches/{match_id}/rematch")

    async def decline_rematch(self, match_id: str) -> dict[str, Any]:
        return await self.request("DELETE", f"/matches/{match_id}/rematch")

    async def wait_for_match(self, ticket_id: str, timeout: float = 60.0, step: float = 25.0) -> dict[str, Any]:
        """Long-poll until the ticket is matched or cancelled (or ``timeout`` seconds pass); the ticket."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        ticket = await self.ticket(ticket_id)
        while ticket["status"] in ("waiting", "claimed") and loop.time() < end:
            ticket = await self.ticket(ticket_id, wait=max(0.1, min(step, end - loop.time())))
        return ticket

    # matches
    async def match(self, match_id: str) -> dict[str, Any]:
        return await self.request("GET", f"/matches/{match_id}")

    # admin
    async def admin_matches(self, status: str | None = None, game: str | None = None) -> list[dict[str, Any]]:
        """The first page (newest first) of ``GET /admin/matches``."""
        params = {k: v for k, v in (("status", status), ("game", game)) if v}
        return (await self.request("GET", "/admin/matches", params=params))["items"]

    async def admin_match(self, match_id: str) -> dict[str, Any]:
        return await self.request("GET", f"/admin/matches/{match_id}")

    async def admin_log(self, match_id: str) -> dict[str, Any]:
        return await self.request("GET", f"/admin/matches/{match_id}/log")

    async def admin_abort(self, match_id: str, reason: str = "aborted by an admin") -> dict[str, Any]:
        return await self.request("POST", f"/admin/matches/{match_id}/abort", json={"reason": reason})

    # the meta-game (conquest.md 5)
    async def inventory(self) -> dict[str, Any]:
        return await self.request("GET", "/players/me/inventory")

    async def ledger(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` rows of your ledger (the first page of ``{items, next_cursor}``)."""
        return (await self.request("GET", "/players/me/ledger", params={"limit": limit}))["items"]

    async def next_spin(self) -> dict[str, Any]:
        return await self.request("GET", "/players/me/spins/next")

    async def spin(self, client_seed: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
        """A paid spin; ``idempotency_key``: send it again with the same key to be sure of one spin."""
        return await self.request("POST", "/players/me/spins", json={"client_seed": client_seed},
                                  headers=_idem(idempotency_key))

    async def verify_spin(self, spin_id: str) -> dict[str, Any]:
        return await self.request("GET", f"/spins/{spin_id}/verify")

    async def set_loadout(self, lobby_id: str, loadout: list[str]) -> dict[str, Any]:
        return await self.request("PUT", f"/lobbies/{lobby_id}/loadout", json={"loadout": loadout})

    async def admin_grant_crystals(self, player_id: str, amount: int, reason: str = "test",
                                   idempotency_key: str | None = None) -> dict[str, Any]:
        return await self.request("POST", f"/admin/players/{player_id}/crystals",
                                  json={"amount": amount, "reason": reason}, headers=_idem(idempotency_key))

    async def admin_grant_special(self, player_id: str, special: str, matches: int,
                                  reason: str = "test", idempotency_key: str | None = None) -> dict[str, Any]:
        return await self.request("POST", f"/admin/players/{player_id}/specials",
                                  json={"special": special, "matches": matches, "reason": reason},
                                  headers=_idem(idempotency_key))
