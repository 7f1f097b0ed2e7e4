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
from tests.timing import scaled

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
    collects page errors and Content-Security-Policy violations, which fail the test."""

    def __init__(self, browser, server: ServerProcess) -> None:
        self.browser = browser
        self.server = server
        self.contexts: list = []
        self.errors: list[str] = []

    def new(self, path: str = "/", *, viewport: dict | None = None):
        ctx = self.browser.new_context(viewport=viewport or VIEWPORT)
        ctx.set_default_timeout(scaled(20) * 1000)  # a loaded machine waits longer (tests/timing.py)
        self.contexts.append(ctx)
        page = ctx.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("console", lambda m: self.errors.append(m.text) if "Content Security Policy" in m.text else None)
        page.wait_for_function = _polling_wait(page)  # the server's CSP forbids the eval Playwright's needs
        page.goto(self.server.url + path)
        return page

    def close(self) -> None:
        for ctx in self.contexts:
            ctx.close()


def _polling_wait(page):
    """``page.wait_for_function(expression)`` that works under the server's Content-Security-Policy:
    Playwright's own compiles its predicate with ``new Function`` in the page, which a CSP without
    ``'unsafe-eval'`` refuses; this polls ``page.evaluate(expression)`` instead (same timeout)."""
    import time

    def wait_for_function(expression: str, *, timeout: float | None = None, **_ignored):
        deadline = time.monotonic() + (scaled(20_000) if timeout is None else timeout) / 1000
        while True:
            value = page.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise sync_api.TimeoutError(f"wait_for_function timed out: {expression}")
            page.wait_for_timeout(50)

    return wait_for_function


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
