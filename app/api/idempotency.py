"""The ``Idempotency-Key`` request header on the routes that spend or grant (docs/protocol.md,
"Idempotency keys"; IETF draft "The Idempotency-Key HTTP Header Field").

The header's value is a Structured Field string (``"8e03978e-40d5-43e8"``, as the draft writes
it) or, as most clients send it, the same characters unquoted; 1-255 printable ASCII characters.
A route turns it into an :class:`~app.db.idempotency.Idempotency` (the asking player, the key,
the request's fingerprint) and hands it to the repository method that spends or grants, which keeps
the first answer in the same transaction (:mod:`app.db.idempotency`). A repeat gets that answer with
the header ``Idempotent-Replayed: true``; the same key for another request is 422
``idempotency_key_reused``; a malformed key is 400 ``bad_idempotency_key``. Nothing changes then.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import Header, Request, Response

from app.api.errors import ApiError
from app.db.idempotency import Idempotency, IdempotencyKeyReused, fingerprint

#: longest key accepted (characters)
MAX_KEY_LENGTH = 255

IdempotencyKeyHeader = Annotated[str | None, Header(
    alias="Idempotency-Key",
    description="makes the request safe to repeat: a repeat with the same key gets the first answer and "
                "changes nothing (docs/protocol.md, \"Idempotency keys\"); 1-255 printable ASCII characters, "
                "quoted or not")]

#: the answer header of a repeat
REPLAYED_HEADER = "Idempotent-Replayed"


def parse_key(value: str | None) -> str | None:
    """The key of an ``Idempotency-Key`` header value: an sf-string (quotes, ``\\"`` and ``\\\\``
    escapes) or the bare characters; None when there is no header. Raises ApiError 400
    ``bad_idempotency_key``."""
    if value is None:
        return None
    text = value.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        out, i, inner = [], 0, text[1:-1]
        while i < len(inner):
            ch = inner[i]
            if ch == "\\":
                if i + 1 >= len(inner) or inner[i + 1] not in '"\\':
                    raise _bad("a backslash in a quoted key escapes only \" and \\")
                out.append(inner[i + 1])
                i += 2
                continue
            if ch == '"':
                raise _bad("a quote inside a quoted key must be escaped")
            out.append(ch)
            i += 1
        key = "".join(out)
    else:
        key = text
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise _bad(f"the key must have 1-{MAX_KEY_LENGTH} characters")
    if not all(" " <= ch <= "~" for ch in key):
        raise _bad("the key must be printable ASCII")
    return key


def _bad(message: str) -> ApiError:
    return ApiError(400, "bad_idempotency_key", f"Idempotency-Key: {message}")


def idempotency(request: Request, player_id: str, header: str | None, body: Any) -> Idempotency | None:
    """The request's :class:`Idempotency` (None without the header): ``body`` is the request's
    validated body as JSON data (what the fingerprint covers with the method and path)."""
    key = parse_key(header)
    if key is None:
        return None
    return Idempotency(player_id, key, fingerprint(request.method, request.url.path, body),
                       request.app.state.settings.idempotency_key_seconds)


@contextmanager
def refusing_reuse() -> Iterator[None]:
    """Turn :class:`IdempotencyKeyReused` into 422 ``idempotency_key_reused`` (nothing changed)."""
    try:
        yield
    except IdempotencyKeyReused as exc:
        raise ApiError(422, "idempotency_key_reused",
                       f"{exc}: a key may be used for one request only (same method, path and body)") from None


def mark(response: Response, idem: Idempotency | None) -> None:
    """Say ``Idempotent-Replayed: true`` on an answer that is the stored first one."""
    if idem is not None and idem.replayed:
        response.headers[REPLAYED_HEADER] = "true"
