"""The client side of the match protocol, in one place: decode a frame, validate a message, route it.

Every client message goes through here, whatever carries it: a socket on this node
(``app/transport/``), a socket on another node (its messages arrive over pub/sub, ``app/runtime/cluster.py``)
or an in-process bot (``app/runtime/bots.py``). So every seat gets the same validation and the same
answers (docs/protocol.md). Routing hands a valid ``act`` to the match's single writer
(:meth:`app.runtime.match.MatchRunner.act`), which applies the rules checks (match over, seat,
duplicate, stale version, prompt, ``Game.apply``).

Close codes (docs/protocol.md, "Close codes and bounded times") are defined in ``wire`` (they are
part of what the server sends) and importable from here.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

import orjson

# the close codes too: callers of the protocol find them here
from app.runtime.wire import (
    CLOSE_BAD_REQUEST,
    CLOSE_FORBIDDEN,
    CLOSE_HELLO_TIMEOUT,
    CLOSE_MATCH_GONE,
    CLOSE_MOVED,
    CLOSE_NOT_FOUND,
    CLOSE_REPLACED,
    CLOSE_RESEND,
    CLOSE_SLOW,
    CLOSE_STORAGE,
    CLOSE_TRY_AGAIN,
    CLOSE_UNAUTHORIZED,
    CLOSE_UNSUPPORTED_PROTOCOL,
    PROTOCOL_VERSION,
    SUPPORTED_PROTOCOLS,
    encode,
    error,
    pong,
)

if TYPE_CHECKING:
    from app.runtime.match import MatchRunner, Peer

__all__ = ["CLOSE_BAD_REQUEST", "CLOSE_FORBIDDEN", "CLOSE_HELLO_TIMEOUT", "CLOSE_MATCH_GONE", "CLOSE_MOVED",
           "CLOSE_NOT_FOUND", "CLOSE_REPLACED", "CLOSE_RESEND", "CLOSE_SLOW", "CLOSE_STORAGE", "CLOSE_TRY_AGAIN",
           "CLOSE_UNAUTHORIZED", "CLOSE_UNSUPPORTED_PROTOCOL", "Hello", "ProtocolError", "check_message", "decode",
           "decode_text", "parse_hello", "route"]

#: the client messages (``type``)
CLIENT_TYPES = ("hello", "act", "resume", "ping")


class ProtocolError(Exception):
    """A client message refused: ``code`` and a sentence for the ``error`` message; ``close`` the
    close code when the socket must be closed (before ``hello`` is accepted), else None."""

    def __init__(self, code: str, message: str, close: int | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.message = message
        self.close = close


# -- frames -----------------------------------------------------------------------------------
def has_nul(value: Any) -> bool:
    """Whether a parsed JSON value holds a NUL character in any string (key or value)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_nul(v) for v in value)
    return False


def utf8_size_over(text: str | bytes, limit: int) -> bool:
    """Whether ``text`` is longer than ``limit`` bytes once UTF-8 encoded (without encoding short texts)."""
    if isinstance(text, bytes) or len(text) > limit:
        return len(text) > limit
    if len(text) * 4 <= limit:
        return False
    return len(text.encode("utf-8", "surrogatepass")) > limit


#: the answer to a binary frame (``malformed_message``; before ``hello``: ``hello_required``)
BINARY_FRAME = "send JSON in text frames"

#: the deepest a client message may nest arrays and objects (``{"action": {"hands": {"7": [...]}}}``
#: is 4): orjson reads up to 1024 levels but writes at most 254, so a deeper value could be neither
#: logged nor echoed (a ``ping``'s ``t``)
MAX_DEPTH = 32

_DECODE_ERRORS = {
    "message_too_large": "messages are limited to {limit} bytes (UTF-8)",
    "malformed_json": "the message is not valid JSON",
    "invalid_text": "text may not contain NUL (\\u0000) characters; nothing changed",
}


def nested_over(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests arrays and objects more than ``limit`` deep (the value
    itself is level 1); iterative, so any depth the parser took is safe."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        members: Any
        if isinstance(node, dict):
            members = node.values()
        elif isinstance(node, list):
            members = node
        else:
            continue
        if depth > limit:
            return True
        for member in members:
            if isinstance(member, (dict, list)):
                stack.append((member, depth + 1))
    return False


def decode(frame: Mapping[str, Any], limit: int) -> Any:
    """A received ASGI text frame as a JSON value. Raises :class:`ProtocolError` ``malformed_message``
    for a binary frame (JSON travels in text frames; docs/protocol.md "Rules a client can rely on") or
    a value nested more than :data:`MAX_DEPTH` deep, ``message_too_large`` (over ``limit`` bytes of
    UTF-8), ``malformed_json`` or ``invalid_text`` (NUL)."""
    raw = frame.get("text")
    if raw is None:
        raise ProtocolError("malformed_message", BINARY_FRAME)
    return decode_text(raw, limit)


def decode_text(raw: str | bytes, limit: int) -> Any:
    """A received text message as a JSON value; raises :class:`ProtocolError` as :func:`decode`
    does for a text frame."""
    problem = None
    if utf8_size_over(raw, limit):
        problem = "message_too_large"
    else:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            problem = "malformed_json"
        else:
            # at least MAX_DEPTH + 1 opening brackets before any walk: almost every message has few
            opening = raw.count("[") + raw.count("{") if isinstance(raw, str) else MAX_DEPTH + 1
            if opening > MAX_DEPTH and nested_over(value, MAX_DEPTH):
                raise ProtocolError("malformed_message", f"a message may nest arrays and objects at most "
                                                         f"{MAX_DEPTH} deep")
            if "\\u0000" in raw and has_nul(value):
                problem = "invalid_text"
    if problem is not None:
        raise ProtocolError(problem, _DECODE_ERRORS[problem].format(limit=limit))
    return value


def _is_count(value: Any) -> TypeGuard[int]:
    """An integer >= 0 (JSON ``true``/``false`` are not numbers here)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# -- hello ------------------------------------------------------------------------------------
#: the fields each client message may carry (docs/schemas/client.*.json: ``additionalProperties: false``)
FIELDS: dict[str, frozenset[str]] = {
    "hello": frozenset(("type", "token", "as", "since_version", "deltas", "protocol")),
    "act": frozenset(("type", "seq", "action", "version")),
    "resume": frozenset(("type", "since_version")),
    "ping": frozenset(("type", "t")),
}

_HELLO_REQUIRED = "the first message must be {\"type\":\"hello\",\"token\":...}"


@dataclass(frozen=True)
class Hello:
    """The first message on a socket: who connects (``token``), as what (``as_``: None for your
    seat, ``"spectator"`` or ``"admin"``), from which version (``since_version``, None: no events
    missed), whether later changes come as ``delta`` messages (``deltas``, default True) or as a
    full ``state`` each (False), and the protocol version the client speaks (``protocol``, one of
    :data:`SUPPORTED_PROTOCOLS`; absent: 1)."""

    token: str
    as_: str | None = None
    since_version: int | None = None
    deltas: bool = True
    protocol: int = PROTOCOL_VERSION


def _unknown_fields(value: dict[str, Any], kind: str) -> list[str]:
    """The keys of ``value`` that a ``kind`` message may not carry, sorted (keys are JSON strings)."""
    allowed = FIELDS[kind]
    return sorted(str(k) for k in value if k not in allowed)


def parse_hello(value: Any) -> Hello:
    """Validate the first message (docs/protocol.md "hello" and "Rules a client can rely on").

    Raises :class:`ProtocolError` with close 4401: ``hello_required`` when ``value`` is not a
    ``{"type":"hello",...}`` object (nor a text frame at all); ``bad_hello`` for a field the schema
    does not list, a ``token`` that is missing, null or not a string, ``as`` other than
    ``"spectator"``/``"admin"``, a ``since_version`` that is not an integer >= 0, ``deltas``
    other than true/false, or a ``protocol`` that is not an integer; ``unsupported_protocol`` with
    close 4426 for an integer ``protocol`` not in :data:`SUPPORTED_PROTOCOLS`."""
    if not isinstance(value, dict) or value.get("type") != "hello":
        raise ProtocolError("hello_required", _HELLO_REQUIRED, CLOSE_UNAUTHORIZED)
    extra = _unknown_fields(value, "hello")
    if extra:
        raise ProtocolError("bad_hello", f"hello does not take {', '.join(map(repr, extra))}; its fields are "
                                         "type, token, as, since_version, deltas, protocol", CLOSE_UNAUTHORIZED)
    token = value.get("token")
    if not isinstance(token, str):
        raise ProtocolError("bad_hello", "hello needs 'token': a string (your bearer token)", CLOSE_UNAUTHORIZED)
    since = value.get("since_version")
    if value.get("as") not in (None, "spectator", "admin"):
        raise ProtocolError("bad_hello", "'as' must be \"spectator\" or \"admin\" (or left out)", CLOSE_UNAUTHORIZED)
    if since is not None and not _is_count(since):
        raise ProtocolError("bad_hello", "'since_version' must be a version number (an integer >= 0)",
                            CLOSE_UNAUTHORIZED)
    deltas = value.get("deltas", True)
    if not isinstance(deltas, bool):
        raise ProtocolError("bad_hello", "'deltas' must be true or false", CLOSE_UNAUTHORIZED)
    protocol = value.get("protocol")
    if protocol is None:  # absent (or null): the first version
        protocol = 1
    if not isinstance(protocol, int) or isinstance(protocol, bool):
        raise ProtocolError("bad_hello", "'protocol' must be an integer (the protocol version you speak)",
                            CLOSE_UNAUTHORIZED)
    if protocol not in SUPPORTED_PROTOCOLS:
        raise ProtocolError("unsupported_protocol", f"this server speaks protocol version "
                            f"{', '.join(map(str, SUPPORTED_PROTOCOLS))}, not {protocol}",
                            CLOSE_UNSUPPORTED_PROTOCOL)
    return Hello(token=token, as_=value.get("as"), since_version=since, deltas=deltas, protocol=protocol)


# -- after hello ------------------------------------------------------------------------------
def check_message(value: Any) -> dict[str, Any]:
    """A decoded message after ``hello`` must be a JSON object. Raises :class:`ProtocolError`
    ``malformed_message``."""
    if not isinstance(value, dict):
        raise ProtocolError("malformed_message", "a message must be a JSON object")
    return value


#: the answer to a message whose ``type`` is missing or not a string
TYPE_REQUIRED = "a message needs a string 'type': one of hello, act, resume, ping"


def route(runner: MatchRunner, peer: Peer, msg: Mapping[str, Any]) -> None:
    """One message from a viewer (after ``hello``), validated and handed on; every answer is pushed
    to ``peer`` and a refused message changes nothing (docs/protocol.md "Rules a client can rely on").

    - ``type`` missing or not a string, or not a client type: ``unknown_message_type``.
    - a field its schema does not list (``act``, ``resume``, ``ping``): ``malformed_message``
      (an ``act``'s ``seq`` echoed when it is an integer).
    - ``act``: ``seq`` an integer in [0, 2**62) (else ``bad_seq``), ``version`` (optional) an
      integer >= 0 (else ``bad_version``); then :meth:`MatchRunner.act`, which judges the rest.
    - ``resume``: ``since_version`` an integer >= 0 (else ``bad_version``); then the full state
      again with the missed events.
    - ``ping``: ``pong`` with its ``t``. ``hello`` again: ``already_authenticated``."""
    kind = msg.get("type")
    if not isinstance(kind, str):
        peer.push(encode(error("unknown_message_type", TYPE_REQUIRED)))
        return
    allowed = FIELDS.get(kind)
    if allowed is None:
        peer.push(encode(error("unknown_message_type", f"unknown message type {kind!r}; the client messages "
                                                       "are hello, act, resume, ping")))
        return
    if kind != "hello" and not allowed.issuperset(msg):
        extra = ", ".join(map(repr, _unknown_fields(dict(msg), kind)))
        seq = msg.get("seq") if kind == "act" else None
        peer.push(encode(error("malformed_message", f"{kind} does not take {extra}; its fields are "
                                                    f"{', '.join(sorted(allowed))}",
                               seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None)))
        return
    if kind == "act":
        seq = msg.get("seq")
        if not _is_count(seq) or seq >= 2**62:
            peer.push(encode(error("bad_seq", "act needs an integer 'seq' >= 0")))
            return
        version = msg.get("version")
        if version is not None and not _is_count(version):
            peer.push(encode(error("bad_version", "'version' must be a version the server sent: "
                                                  "an integer >= 0", seq=seq)))
            return
        runner.act(peer, seq, msg.get("action"), version)
    elif kind == "resume":
        since = msg.get("since_version")
        if not _is_count(since):
            peer.push(encode(error("bad_version", "resume needs 'since_version': a version number")))
            return
        runner.attach(peer, since_version=since)
    elif kind == "ping":
        peer.push(encode(pong(msg.get("t"), runner.now())))
    else:  # hello
        peer.push(encode(error("already_authenticated", "hello was already received")))
