"""Issue 13 item 3 in a real browser: the play client, the admin console, Swagger UI and ReDoc
work under the server's Content-Security-Policy, and the API docs need nothing but this server
(every request to another origin is blocked here and must not be needed)."""
from __future__ import annotations

from urllib.parse import urlparse

from tests.browser.conftest import VIEWPORT, sign_in


def _open(browser, server, path):
    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.set_default_timeout(20_000)
    origin = urlparse(server.url).netloc
    foreign: list[str] = []

    def route(r):
        if urlparse(r.request.url).netloc == origin or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            foreign.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    console: list[str] = []
    errors: list[str] = []
    page.on("console", lambda m: console.append(m.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url + path)
    return ctx, page, foreign, console, errors


#: ReDoc's sidebar always tries its maker's logo from their CDN; the CSP blocks it (that is the point)
#: and ReDoc hides the image when it fails. Nothing else may be blocked.
EXPECTED_BLOCKS = ("https://cdn.redoc.ly/redoc/logo-mini.svg",)


def _csp_violations(console: list[str]) -> list[str]:
    return [m for m in console if ("Content Security Policy" in m or "Refused to" in m)
            and not any(url in m for url in EXPECTED_BLOCKS)]


def test_api_docs_render_offline_under_the_csp(browser, live_server):
    for path, selector in (("/docs", ".swagger-ui .info .title"), ("/redoc", "h1")):
        ctx, page, foreign, console, errors = _open(browser, live_server, path)
        try:
            page.wait_for_selector(f"{selector}:has-text('Bannerfall')")
            if path == "/docs":
                page.wait_for_selector(".opblock-tag:has-text('lobbies')")
            else:
                page.wait_for_selector("text=lobbies")
            assert not foreign, foreign
            assert not errors, errors
            assert not _csp_violations(console), console
        finally:
            ctx.close()


def test_play_client_and_admin_console_run_under_the_csp(browser, live_server):
    ctx, page, foreign, console, errors = _open(browser, live_server, "/")
    try:
        sign_in(page, "csp")
        page.wait_for_selector("#create-lobby")
        page.wait_for_load_state("networkidle")
        assert not errors and not foreign, (errors, foreign)
        assert not _csp_violations(console), console
    finally:
        ctx.close()
    ctx, page, foreign, console, errors = _open(browser, live_server, "/admin/")
    try:
        page.wait_for_selector("input")
        page.wait_for_load_state("networkidle")
        assert not errors and not foreign, (errors, foreign)
        assert not _csp_violations(console), console
    finally:
        ctx.close()
