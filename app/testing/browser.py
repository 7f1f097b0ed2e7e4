"""Browser helpers for a game's board tests: Playwright (sync API) driving a headless Chromium
against a :class:`app.testing.server.LocalServer`.

``chromium()`` finds the browser (``BANNERFALL_CHROMIUM``, ``chromium`` on the PATH, or
``/usr/bin/chromium``; Debian: ``apt-get install chromium``); :func:`bot_match` starts a match of one
person against the game's bots over REST; :func:`open_match` opens it in a page as that person;
:func:`board_shown` says whether the game's own board module drew the match (not the raw-view
fallback); :func:`state` is the last ``state`` the page holds (``window.__bannerfall.state``).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import httpx

__all__ = ["ARGS", "board_shown", "bot_match", "chromium", "open_match", "state", "wait_until"]

#: what Chromium needs to run headless in a container
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str | None:
    """The Chromium to launch, or None when there is none."""
    found = os.environ.get("BANNERFALL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return found if Path(found).exists() else None


def _api(url: str, method: str, path: str, token: str | None = None, **kwargs: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = httpx.request(method, url + "/api/v1" + path, headers=headers, timeout=20, **kwargs)
    answer.raise_for_status()
    return answer.json()


def bot_match(url: str, game_id: str, seats: int, *, options: dict[str, Any] | None = None,
              bot: str | None = None, name: str = "ann") -> dict[str, Any]:
    """A started match: a new player ``name`` in seat 0, the other seats the game's ``bot`` kind
    (default its first). Returns ``{"token", "player", "match_id"}``."""
    me = _api(url, "POST", "/players", json={"name": name})
    token = me["token"]
    lobby = _api(url, "POST", "/lobbies", token, json={"game": game_id, "seats": seats, "options": options or {}})
    if bot is None:
        bot = _api(url, "GET", f"/games/{game_id}")["bot_kinds"][0]
    _api(url, "POST", f"/lobbies/{lobby['id']}/bots", token, json={"kind": bot})
    started = _api(url, "POST", f"/lobbies/{lobby['id']}/start", token)
    return {"token": token, "player": me["player"], "match_id": started["match_id"]}


def open_match(page: Any, url: str, match: dict[str, Any]) -> None:
    """Open ``match`` (from :func:`bot_match`) in ``page`` as its player, and wait for its first state."""
    page.goto(url + "/")
    saved = json.dumps({"token": match["token"], "player": match["player"]})
    page.evaluate(f"localStorage.setItem('bannerfall.player', {json.dumps(saved)})")
    page.goto(f"{url}/#/match/{match['match_id']}")
    wait_until(page, "window.__bannerfall && window.__bannerfall.state")


def wait_until(page: Any, expression: str, timeout: float = 20.0) -> Any:
    """Poll ``page.evaluate(expression)`` until it is truthy (the server's Content-Security-Policy
    forbids the ``eval`` that Playwright's ``wait_for_function`` needs); returns its value. Raises
    TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true within {timeout} s: {expression}")
        page.wait_for_timeout(50)


def state(page: Any) -> dict[str, Any]:
    """The last ``state`` message the page received."""
    return page.evaluate("window.__bannerfall.state")


def board_shown(page: Any) -> bool:
    """Whether the board area holds the game's own board (something drawn, and not the raw view
    that a game without a board module gets)."""
    return bool(page.evaluate("(() => { const b = document.querySelector('#board');"
                              " return b && b.children.length > 0 && !b.querySelector('pre.raw-view'); })()"))
