"""Encoding of server messages (orjson) and the error codes the runtime itself raises."""
from __future__ import annotations

from typing import Any

import orjson


def encode(message: dict[str, Any]) -> str:
    """One wire message as JSON text. str-keyed dicts take orjson's fast path; a message with
    non-str keys (ints) is encoded with ``OPT_NON_STR_KEYS`` (about twice as slow)."""
    try:
        return orjson.dumps(message).decode()
    except TypeError:
        return orjson.dumps(message, option=orjson.OPT_NON_STR_KEYS).decode()


def error(code: str, message: str, *, seq: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if seq is not None:
        out["seq"] = seq
    out.update(extra)
    return out
