"""Server safety that is not a limit: the admin token policy, security headers on every HTTP
answer, and the API docs (Swagger UI, ReDoc) served from a package instead of a CDN.

Rules: ``docs/operations.md`` ("Admin token", "Security headers").
"""
from __future__ import annotations

import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

#: Same bound as the bearer-token check in ``app.api.deps.player_for_token``: a longer token can
#: never sign in, so a longer admin token is refused at start.
MAX_TOKEN_CHARS = 256
MIN_ADMIN_TOKEN_CHARS = 24
MIN_ADMIN_TOKEN_DISTINCT = 8
_CLASSES = (string.ascii_lowercase, string.ascii_uppercase, string.digits)
TOKEN_HINT = "make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


class AdminTokenRefused(SystemExit):
    """The configured admin token is refused: the server does not start. A ``SystemExit`` whose
    message is one line, so a process that starts the app prints that line (no traceback) and exits 1;
    ``bannerfall serve`` turns it into its own one line and exit 2 (a wrong setting: ``app.cli.EXIT_RULE``)."""


def admin_token_problem(token: str) -> str | None:
    """Why ``token`` is not acceptable as ``BANNERFALL_ADMIN_TOKEN``, or None when it is.

    Accepted: 24 to 256 printable ASCII characters without spaces, of at least two kinds (lowercase,
    uppercase, digits, other) and at least 8 different characters — e.g. ``secrets.token_urlsafe(32)``
    or ``openssl rand -hex 32``.
    """
    if len(token) < MIN_ADMIN_TOKEN_CHARS:
        return f"it is {len(token)} characters long, at least {MIN_ADMIN_TOKEN_CHARS} are needed"
    if len(token) > MAX_TOKEN_CHARS:
        return f"it is {len(token)} characters long, at most {MAX_TOKEN_CHARS} can sign in"
    if any(not 33 <= ord(c) <= 126 for c in token):
        return "only printable ASCII characters without spaces can be sent in an Authorization header"
    kinds = sum(1 for chars in _CLASSES if any(c in chars for c in token))
    kinds += any(c not in string.ascii_letters + string.digits for c in token)
    if kinds < 2:
        return "it uses one kind of character only (mix letters, digits or symbols)"
    if len(set(token)) < MIN_ADMIN_TOKEN_DISTINCT:
        return f"it has {len(set(token))} different characters, at least {MIN_ADMIN_TOKEN_DISTINCT} are needed"
    return None


def check_admin_token(token: str | None) -> None:
    """Raise :class:`AdminTokenRefused` (one line) when the configured admin token is weak.
    ``None`` or empty: no admin is configured (every earlier admin is revoked at start)."""
    if not token:
        return
    problem = admin_token_problem(token)
    if problem is not None:
        raise AdminTokenRefused(f"bannerfall: BANNERFALL_ADMIN_TOKEN refused: {problem}; {TOKEN_HINT}")


# -- the admin view of a match the admin plays in -------------------------------------------

CLOSE_FORBIDDEN = 4403


def seated_admin_problem(meta: Mapping[str, Any], player: Mapping[str, Any]) -> str | None:
    """Why ``player`` may not open the admin view of the match ``meta``, or None.

    Rule (``docs/decisions.md``): an admin who holds a seat in a running match may not see that
    match's admin view, log or replay until it ends (they would see every hidden card of the match
    they play); they play or watch it like anyone else. ``meta``: the match row (``seats`` as
    ``[{"player_id", ...}]``, ``status``)."""
    if meta.get("status", "running") != "running":
        return None
    if any(s.get("player_id") == player["id"] for s in meta.get("seats") or ()):
        return "you hold a seat in this match: its admin view opens when it ends"
    return None


def refuse_seated_admin(meta: Mapping[str, Any], player: Mapping[str, Any]) -> None:
    """Raise ``ApiError(403, "seated_admin")`` when :func:`seated_admin_problem` finds one."""
    from app.api.errors import ApiError

    problem = seated_admin_problem(meta, player)
    if problem is not None:
        raise ApiError(403, "seated_admin", problem)


# -- security headers -------------------------------------------------------------------------

#: The play client and admin console are plain ES modules with external style sheets: nothing inline.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
#: Swagger UI and ReDoc set inline styles (ReDoc through styled-components) and ReDoc runs a worker
#: from a blob: URL; their scripts are still only this origin's files.
DOCS_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "connect-src 'self'; font-src 'self' data:; worker-src 'self' blob:; object-src 'none'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
BASE_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
DOCS_PATHS = ("/docs", "/redoc")


class SecurityHeadersMiddleware:
    """Adds CSP, ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``, ``Referrer-Policy``
    and ``Cross-Origin-Opener-Policy`` to every HTTP answer (pages, API, errors made by middleware).
    WebSocket traffic passes untouched."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        csp = DOCS_CSP if path in DOCS_PATHS else CSP
        extra = [*BASE_HEADERS, (b"content-security-policy", csp.encode())]

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                headers = list(message.get("headers", []))
                headers.extend((k, v) for k, v in extra if k not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


# -- API docs from a package ------------------------------------------------------------------

def _offline_assets() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


_SWAGGER_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Bannerfall API — Swagger UI</title>
<link rel="icon" href="favicon.svg"><link rel="stylesheet" href="docs-assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="docs-assets/swagger-ui-bundle.js"></script><script src="docs-assets/swagger-init.js"></script>
</body></html>"""
_REDOC_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Bannerfall API — ReDoc</title>
<link rel="icon" href="favicon.svg"></head>
<body><div id="redoc"></div>
<script src="docs-assets/redoc.standalone.js"></script><script src="docs-assets/redoc-init.js"></script>
</body></html>"""
_SWAGGER_INIT = """window.ui = SwaggerUIBundle({
  url: "openapi.json", dom_id: "#swagger-ui", deepLinking: true, layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  showExtensions: true, showCommonExtensions: true,
});
"""
_REDOC_INIT = 'Redoc.init("openapi.json", {}, document.getElementById("redoc"));\n'


def install_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) with every script and style sheet served by this
    server from the ``fastapi-offline`` package's copies under ``/docs-assets/``; no inline script
    (the pages work under the CSP above, and without internet). Create the app with
    ``docs_url=None, redoc_url=None``."""
    vendor = _offline_assets()
    files = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css",
             "redoc.standalone.js": "text/javascript"}
    inline = {"swagger-init.js": _SWAGGER_INIT, "redoc-init.js": _REDOC_INIT}

    @app.get("/docs", include_in_schema=False)
    async def swagger_page() -> HTMLResponse:
        return HTMLResponse(_SWAGGER_PAGE)

    @app.get("/redoc", include_in_schema=False)
    async def redoc_page() -> HTMLResponse:
        return HTMLResponse(_REDOC_PAGE)

    @app.get("/docs-assets/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Any:
        if name in inline:
            return Response(inline[name], media_type="text/javascript",
                            headers={"cache-control": "public, max-age=3600"})
        if name in files:
            return FileResponse(vendor / name, media_type=files[name],
                                headers={"cache-control": "public, max-age=86400"})
        return JSONResponse({"code": "not_found", "message": "no such file"}, status_code=404)
