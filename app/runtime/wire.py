"""The wire: every message the server sends on a match socket is shaped here, and only here.

Protocol: ``docs/protocol.md`` (schemas in ``app/api/messages.py``). The runner decides *what*
happened and *who* may see it; this module decides *how it looks on the wire*. Per-viewer filtering
of the game state stays in ``Game.view`` and ``Event.visible_to`` (the game contract); this module
only assembles their results into messages and encodes them with orjson.

Issue 11 (deltas): a socket gets a full ``state`` (:func:`state_of`) after ``hello``/``resume``, then a
``delta`` (:func:`delta_message`) per change of its audience's document (``app/runtime/audience.py``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from app.games.base import ADMIN, Outcome, Prompt
from app.parts import dumps as parts_dumps

if TYPE_CHECKING:
    pass

# -- close codes (docs/protocol.md, "Close codes and bounded times") --------------------------------------
CLOSE_REPLACED = 4001
CLOSE_MATCH_GONE = 4004
CLOSE_SLOW = 4008
CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_HELLO_TIMEOUT = 4408
#: the match moved to another node / an ``act`` got no answer in time: reconnect, ``resume``, resend
CLOSE_MOVED = CLOSE_RESEND = 4503
#: RFC 6455 "Try Again Later": storage or the match's node unavailable right now
CLOSE_TRY_AGAIN = 1013
#: RFC 6455 "Internal Error": the match could not be saved
CLOSE_STORAGE = 1011
#: ``hello`` asked for a protocol version this server does not speak (HTTP's 426 Upgrade Required)
CLOSE_UNSUPPORTED_PROTOCOL = 4426

#: the match protocol's version this server speaks (``hello``'s ``protocol``; ``GET /api/v1/version``)
PROTOCOL_VERSION = 1
#: every protocol version a ``hello`` may ask for (absent: 1)
SUPPORTED_PROTOCOLS: tuple[int, ...] = (1,)

#: the server messages (``type``), as documented in docs/protocol.md
SERVER_TYPES = ("state", "delta", "ack", "error", "ended", "pong")


def encode(message: Mapping[str, Any]) -> str:
    """One wire message as JSON text. str-keyed dicts take orjson's fast path; a message with
    non-str keys (ints) is encoded with ``OPT_NON_STR_KEYS`` (about twice as slow)."""
    try:
        return orjson.dumps(message).decode()
    except TypeError:
        return orjson.dumps(message, option=orjson.OPT_NON_STR_KEYS).decode()


def error(code: str, message: str, *, seq: int | None = None, **extra: Any) -> dict[str, Any]:
    """An ``error`` message: ``code`` (docs/protocol.md lists every one), a sentence, the ``seq`` of
    the ``act`` it answers if any, and extra fields (``version``, ``retry_after``)."""
    out: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if seq is not None:
        out["seq"] = seq
    out.update(extra)
    return out


def ack(seq: int, version: int) -> dict[str, Any]:
    """The ``ack`` of a client ``act`` ``seq``, sent once the action is durable at ``version``."""
    return {"type": "ack", "seq": seq, "version": version}


def server_time(now: float) -> orjson.Fragment:
    """``server_time`` as encoded on the wire: epoch seconds (the clock of ``deadline_at``) with
    exactly three decimals, so its length never varies with what else the message holds."""
    return orjson.Fragment(b"%.3f" % now)


def pong(t: Any, now: float) -> dict[str, Any]:
    """The answer to ``ping``: the client's ``t`` echoed, and ``server_time`` (epoch seconds, the
    clock of ``deadline_at``) when it was sent."""
    return {"type": "pong", "t": t, "server_time": server_time(now)}


def moved() -> dict[str, Any]:
    """``match_moved``: another node runs the match now (sent before close 4503)."""
    return error("match_moved", "the match moved to another node; reconnect and resume")


def viewer_kind(viewer: int) -> str:
    """``seat`` for a seat number >= 0, else ``admin`` or ``spectator``."""
    return "seat" if viewer >= 0 else ("admin" if viewer == ADMIN else "spectator")


def public_prompts(prompts: Iterable[Prompt], deadlines: Mapping[int, float]) -> list[dict[str, Any]]:
    """The prompts as every viewer sees them (``PromptInfo``): who must decide what, by when
    (``deadline_at``: epoch seconds, or None)."""
    return [{"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "simultaneous": p.simultaneous,
             "submitted": p.submitted, "deadline_at": deadlines.get(p.phase_id)} for p in prompts]


def prompts_part(prompts: Iterable[Prompt], deadlines: Mapping[int, float]) -> tuple[bytes, ...]:
    """:func:`public_prompts`, each ``PromptInfo`` encoded (the prompts of an ``app.parts.Document``)."""
    dumps = parts_dumps  # kept in the snapshot: each in a bytes of its own size
    return tuple([dumps({"seat": p.seat, "kind": p.kind, "phase_id": p.phase_id, "simultaneous": p.simultaneous,
                         "submitted": p.submitted, "deadline_at": deadlines.get(p.phase_id)}) for p in prompts])


_STATUS = {status: parts_dumps(status) for status in ("running", "finished", "aborted")}


def status_part(status: str) -> bytes:
    """A match status encoded (the status of an ``app.parts.Document``)."""
    found = _STATUS.get(status)
    return found if found is not None else parts_dumps(status)


def state_of(*, match_id: str, game_id: str, version: int, viewer: int, doc: Mapping[str, Any],
             events: list[dict[str, Any]], now: float, events_complete: bool = True) -> dict[str, Any]:
    """A ``state`` message from an audience's document ``{"status", "prompts", "view"}`` at its
    audience ``version``: the viewer's whole view, the public prompts and the events since the last
    one it was sent (``events_complete=False`` when older events were no longer in memory: the
    client refreshes). ``now`` (epoch seconds, the clock of the prompts' ``deadline_at``) is sent as
    ``server_time``, so a client can count a deadline down on its own clock. ``doc``'s values may be
    ``orjson.Fragment`` (``app.parts.assemble``)."""
    msg = {
        "type": "state",
        "match_id": match_id,
        "game": game_id,
        "version": version,
        "status": doc["status"],
        "seat": viewer if viewer >= 0 else None,
        "viewer": viewer_kind(viewer),
        "prompts": doc["prompts"],
        "view": doc["view"],
        "events": events,
        "server_time": server_time(now),
    }
    if not events_complete:
        msg["events_complete"] = False
    return msg


def delta_message(*, match_id: str, base: int, version: int, patch: list[dict[str, Any]],
                  events: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``delta``: the RFC 6902 ``patch`` (``app/delta.py``) that turns the audience's document at
    version ``base`` into its document at ``version``, and the events it may see in ``(base, version]``."""
    return {"type": "delta", "match_id": match_id, "base": base, "version": version, "patch": patch,
            "events": events}


def ended_message(*, match_id: str, status: str, version: int, outcome: Outcome | None, seed: str,
                  seed_hash: str) -> dict[str, Any]:
    """``ended``: the final status and outcome, and the seed revealed (``sha256(seed) == seed_hash``)."""
    return {
        "type": "ended",
        "match_id": match_id,
        "status": status,
        "version": version,
        # an ended match always has an outcome; a row without one (never written by this server) reads
        # as the status alone, so the message keeps its schema (``outcome`` is never null)
        "outcome": outcome.to_wire() if outcome else {"ranks": {}, "scores": {}, "reason": status},
        "seed": seed,
        "seed_hash": seed_hash,
    }
