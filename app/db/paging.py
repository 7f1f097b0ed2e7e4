"""Opaque cursors for keyset paging (``?cursor=…&limit=…`` → ``{items, next_cursor}``).

A cursor is the sort key of the last item of a page, as base64url JSON with a kind tag, so a cursor
of one list is refused by another. Keyset paging (``WHERE key < last ORDER BY key``) is stable under
inserts: a row inserted while a client pages is either before the cursor (not seen) or after it
(seen once); no row is seen twice or skipped because of an insert.
"""
from __future__ import annotations

import base64
import json
from typing import Any

MAX_CURSOR_CHARS = 512


class BadCursor(ValueError):
    """A cursor that this server did not make for this list (code ``bad_cursor``)."""


def encode_cursor(kind: str, key: list[Any]) -> str:
    """``kind``: the list (``lobbies``, ``matches``, ``leaderboard:<game>`` …); ``key``: JSON values."""
    raw = json.dumps([kind, *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str, types: tuple[type, ...]) -> list[Any]:
    """The key of ``cursor``, checked against ``kind`` and the types of its parts (``float`` accepts
    ints). Raises :class:`BadCursor` on anything else."""
    if len(cursor) > MAX_CURSOR_CHARS:
        raise BadCursor("cursor too long")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadCursor("malformed cursor") from exc
    if not isinstance(value, list) or len(value) != len(types) + 1 or value[0] != kind:
        raise BadCursor("this cursor is not for this list")
    key = value[1:]
    for i, (part, typ) in enumerate(zip(key, types, strict=True)):
        if typ is float and isinstance(part, int) and not isinstance(part, bool):
            key[i] = float(part)
        elif not isinstance(part, typ) or isinstance(part, bool):
            raise BadCursor("malformed cursor")
    return key
