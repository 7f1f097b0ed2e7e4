"""Browser tests: Playwright driving Debian's Chromium headless against a real server process.

Playwright cannot download its own browser here, so the tests launch ``/usr/bin/chromium`` (CI
installs it in ``.ci/run``); without it, or without the ``playwright`` package, they are skipped.
Each module gets its own server on a free port with a SQLite database in a temporary folder.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from tests.conftest import ServerProcess

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

CHROMIUM = os.environ.get("BANNERFALL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# The committed screenshots (docs/screenshots/) are refreshed only when asked:
# BANNERFALL_UPDATE_SCREENSHOTS=1 pytest tests/browser. Otherwise the tests write to tests/artifacts/.
SCREENSHOTS = (Path(__file__).resolve().parents[2] / "docs" / "screenshots"
               if os.environ.get("BANNERFALL_UPDATE_SCREENSHOTS") else
               Path(__file__).resolve().parents[1] / "artifacts" / "screenshots")
VIEWPORT = {"width": 1400, "height": 900}


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    db = tmp_path_factory.mktemp("browserdb") / "bannerfall.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Pages:
    """Opens browser contexts (each one is a separate person: own storage, own token) and
    collects page errors, which fail the test."""

    def __init__(self, browser, server: ServerProcess) -> None:
        self.browser = browser
        self.server = server
        self.contexts = []
        self.errors: list[str] = []

    def new(self, path: str = "/"):
        ctx = self.browser.new_context(viewport=VIEWPORT)
        ctx.set_default_timeout(20_000)
        self.contexts.append(ctx)
        page = ctx.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.goto(self.server.url + path)
        return page

    def close(self) -> None:
        for ctx in self.contexts:
            ctx.close()


@pytest.fixture
def pages(browser, live_server):
    p = Pages(browser, live_server)
    yield p
    p.close()
    assert not p.errors, f"errors in the page: {p.errors}"


def sign_in(page, name: str) -> None:
    page.fill("#guest-name", name)
    page.click("#guest-go")
    page.wait_for_selector("#me-name")
    assert page.inner_text("#me-name") == name


def rest(server: ServerProcess, method: str, path: str, token: str | None = None, **kwargs):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = httpx.request(method, server.url + "/api/v1" + path, headers=headers, timeout=20, **kwargs)
    resp.raise_for_status()
    return resp.json()


def screenshot(page, name: str, *, full_page: bool = False) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), full_page=full_page)
    return path
