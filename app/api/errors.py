"""Errors as JSON ``{code, message}`` with a proper status code, for every route; the guard that
refuses text no database can store before any route sees it; the ``responses=`` documentation of
each route's error answers."""
from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.names import DISPLAY_MAX
from app.api.schemas import Error
from app.storage import storage_failure

log = logging.getLogger("bannerfall.api")


class ApiError(Exception):
    """A refusal answered as ``{code, message}`` with HTTP ``status``. A ``503`` always carries a
    ``Retry-After`` header (seconds): ``retry_after``, or :data:`STORAGE_UNAVAILABLE_RETRY_SECONDS`."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found")


#: what each documented error status means, for the OpenAPI document
_DESCRIPTIONS = {
    400: "Bad request",
    401: "`unauthorized`: missing or unknown bearer token",
    403: "`forbidden` (admins only), `not_host`, or `seated_admin` (an admin's view of a running match they sit in)",
    404: "`not_found` or `unknown_game`",
    409: "the lobby's state refuses it: `lobby_not_open`, `no_free_seat`, `not_seated`, `seats_empty`, "
         "`replay_mismatch`, `ticket_exists`, `ticket_claimed`, `ticket_matched`, `ticket_cancelled`, "
         "or the match's rules (`IllegalAction` codes)",
    422: "`invalid_request` (shape or type, with `details`), `invalid_text` (NUL or lone surrogate in a "
         "string), `invalid_options`, `bad_seat_count`, `bad_seat`, `unknown_bot`, `reserved_option`",
    410: "`ticket_lost`: the server lost this quick-play ticket (its queue was restarted); queue again",
    413: "`body_too_large`: the request body is over `MAX_BODY_BYTES`",
    429: "`rate_limited`, `too_many_lobbies` or `too_many_bot_matches`, with a `Retry-After` header (seconds)",
    503: "`storage_busy`: the database is overloaded (its write lock, a connection or a transaction "
         "not had in time); `storage_unavailable`: the database or Redis is out of reach (refused, reset, "
         "or no answer within `DATABASE_TIMEOUT_SECONDS` / `REDIS_TIMEOUT_SECONDS`). Both with a "
         "`Retry-After` header (seconds); the request's transaction was rolled back",
}

#: seconds a client is asked to wait after ``503 storage_busy``
STORAGE_BUSY_RETRY_SECONDS = 1
#: ... and after ``503 storage_unavailable`` (an outage: a restart takes seconds)
STORAGE_UNAVAILABLE_RETRY_SECONDS = 2
def responses(*statuses: int, unavailable: str | None = None) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: each status answered with the :class:`Error` model. 422, 413, 429
    and 503 are always included (every route validates its input, the body limit and the rate limits
    apply to every route, and any may find storage overloaded or out of reach). ``unavailable``:
    the route's own 503 codes, described before the storage ones."""
    out: dict[int | str, dict[str, Any]] = {
        s: {"model": Error, "description": _DESCRIPTIONS[s]} for s in sorted({*statuses, 413, 422, 429, 503})}
    if unavailable:
        out[503] = {"model": Error, "description": f"{unavailable}; {_DESCRIPTIONS[503]}"}
    return out


def _has_nul(scope: Scope) -> bool:
    if "\x00" in scope.get("path", ""):
        return True
    query: bytes = scope.get("query_string", b"")
    return b"\x00" in query or b"\x00" in unquote_to_bytes(query)


class TextGuard:
    """Outer ASGI layer for HTTP: a NUL (raw or ``%00``) anywhere in the path or the query string is
    answered ``422 invalid_text`` before routing, so no path or query parameter of any route (or the
    static pages) can carry one to the database or the file system. Sockets pass through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _has_nul(scope):
            body = json.dumps({"code": "invalid_text",
                               "message": "NUL characters (U+0000) are not allowed in the path or query"}).encode()
            await send({"type": "http.response.start", "status": 422,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def _data_error(exc: DBAPIError) -> bool:
    """Whether the database refused a value itself (SQLSTATE class 22, "data exception": NUL or bad
    encoding, numeric out of range), or the driver refused to encode it."""
    orig = exc.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None) or ""
    cause = getattr(orig, "__cause__", None)
    name = type(cause).__name__ if cause is not None else ""
    return str(state).startswith("22") or name == "DataError"


def storage_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is a storage failure answered with a 503 (:func:`storage_failure`)."""
    return storage_failure(exc) is not None


def storage_response(request: Request, exc: BaseException, code: str) -> JSONResponse:
    """``503 {code, message}`` with ``Retry-After`` for a storage failure (``code`` from
    :func:`storage_failure`), one warning line without a traceback, counted in
    ``bannerfall_errors_total{code}``."""
    drop_tracebacks(exc)  # answered (503), not a bug: no frames kept for the cyclic collector
    orig = getattr(exc, "orig", None) or exc
    log.warning("%s on %s %s: %s", "database busy" if code == "storage_busy" else "storage unavailable",
                request.method, request.url.path, type(orig).__name__)
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.errors.labels(code).inc()
    if code == "storage_busy":
        retry, message = STORAGE_BUSY_RETRY_SECONDS, "the database is busy"
    else:
        retry, message = STORAGE_UNAVAILABLE_RETRY_SECONDS, "storage (the database or Redis) is unavailable"
    return JSONResponse({"code": code, "message": f"{message}; try again in {retry} s"}, status_code=503,
                        headers={"Retry-After": str(retry)})


def drop_tracebacks(exc: BaseException) -> None:
    """Forget the tracebacks of ``exc`` and of the exceptions it was raised from or during
    (``__cause__``, ``__context__``), once it is answered.

    A traceback keeps the frames it went through, and a frame that still holds the exception in a
    local (``err = RequestValidationError(...); raise err``, as FastAPI does) makes a reference cycle:
    every refused request would otherwise leave its exception, tracebacks and frames to the cyclic
    collector (``docs/decisions.md``, "Garbage collection"). Only for exceptions answered as a
    4xx; a 500 keeps its traceback for the log."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        item.__traceback__ = None
        todo += (item.__cause__, item.__context__)


#: (field, pydantic error type) -> the code and sentence ``app.api.names.check_name`` gives the same
#: refusal, so a display name too long or empty gets one code whether the schema or the name check
#: finds it first
_NAME_CODES: dict[tuple[str, str], tuple[str, str]] = {
    ("name", "string_too_long"): ("name_too_long", f"names are at most {DISPLAY_MAX} characters"),
    ("name", "string_too_short"): ("blank_name", "names need at least one visible character"),
}


def install(app: FastAPI) -> None:
    app.add_middleware(TextGuard)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        drop_tracebacks(exc)
        retry = exc.retry_after
        if retry is None and exc.status == 503:
            retry = STORAGE_UNAVAILABLE_RETRY_SECONDS
        headers = None if retry is None else {"Retry-After": str(retry)}
        return JSONResponse({"code": exc.code, "message": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        drop_tracebacks(exc)
        errors = exc.errors()
        details = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in errors]
        first = details[0] if details else {"loc": [], "msg": "invalid request"}
        # our Text check, or pydantic's JSON parser refusing a lone surrogate escape ("\ud800")
        text = [d for d, e in zip(details, errors, strict=True) if e.get("type") in ("invalid_text", "string_unicode")]
        code = "invalid_text" if text else "invalid_request"
        shown = text[0] if text else first
        message = f"{'.'.join(map(str, shown['loc']))}: {shown['msg']}"
        if not text and errors:
            named = _NAME_CODES.get((str(errors[0].get("loc", ("",))[-1]), str(errors[0].get("type"))))
            if named is not None:  # a display name refused by its schema: the names' own codes (protocol.md)
                code, message = named
        return JSONResponse({"code": code, "message": message, "details": details}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        drop_tracebacks(exc)
        # 400: a body FastAPI could not read at all (not UTF-8 in its charset, nested past the JSON
        # parser's depth); malformed JSON itself is 422 invalid_request
        code = {400: "malformed_body", 404: "not_found", 405: "method_not_allowed", 401: "unauthorized",
                403: "forbidden"}.get(exc.status_code, "http_error")
        return JSONResponse({"code": code, "message": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(DBAPIError)
    async def _database(request: Request, exc: DBAPIError) -> JSONResponse:
        # A backstop: input is checked before it reaches the database; a value the database still
        # refuses is the client's (422), an overloaded database 503 (retry), anything else is ours
        # (500, logged without parameters).
        code = storage_failure(exc)
        if code is not None:
            return storage_response(request, exc, code)
        if _data_error(exc):
            log.warning("database refused a value on %s %s: %s", request.method, request.url.path,
                        type(exc.orig).__name__)
            return JSONResponse({"code": "invalid_value", "message": "a value cannot be stored"}, status_code=422)
        log.error("database error on %s %s: %s", request.method, request.url.path, type(exc.orig).__name__)
        return JSONResponse({"code": "internal_error", "message": "internal error"}, status_code=500)

    from redis.exceptions import RedisError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    async def _storage(request: Request, exc: Exception) -> JSONResponse:
        # no pooled connection in time, Postgres refused or did not answer (asyncpg raises OSError
        # and TimeoutError unwrapped), Redis down or hung: 503, not a 500 with a traceback
        return storage_response(request, exc, storage_failure(exc) or "storage_unavailable")

    for kind in (PoolTimeout, RedisError, OSError, TimeoutError):
        app.add_exception_handler(kind, _storage)

    @app.exception_handler(Exception)
    async def _internal(_request: Request, _exc: Exception) -> JSONResponse:
        return JSONResponse({"code": "internal_error", "message": "internal error"}, status_code=500)
