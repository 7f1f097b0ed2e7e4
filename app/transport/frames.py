"""RFC 6455 framing for the server side of a match socket, after the opening handshake.

:class:`FrameReader` turns the bytes a client sends into whole messages and control frames;
:func:`frame` and :func:`close_frame` make the frames the server sends. No extension is ever
negotiated on this path (``permessage-deflate`` sockets are served by the ASGI transport:
``app/transport/asgi.py``), so every reserved bit must be 0.

What the reader enforces (RFC 6455 section 5, 7.4), each a :class:`ProtocolViolation` carrying the
close code the server answers with:

- every client frame is masked (5.1; 1002); reserved bits are 0 (5.2; 1002); the opcode is known
  (5.2; 1002);
- control frames (close, ping, pong) are at most 125 bytes and never fragmented (5.5; 1002); they may
  come between the fragments of a message;
- a continuation frame only continues a message, and a new text or binary frame never starts while
  one is unfinished (5.4; 1002);
- a message over ``max_size`` bytes is refused as soon as its length is known, before its payload is
  read (1009);
- a text message is UTF-8 (8.1; 1007), checked once it is whole;
- a close frame's payload is empty, or a valid code and a UTF-8 reason (5.5.1, 7.4; 1002 / 1007).

The reader keeps one ``bytearray`` of unread bytes and, while a fragmented message arrives, one of
its payload: no generator and no per-frame object survives a call (the collector has nothing to walk
for an idle socket).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

try:  # websockets' C helper (the library is a dependency); the same function in Python otherwise
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets without its compiled speedups
    from websockets.utils import apply_mask

__all__ = ["OP_BINARY", "OP_CLOSE", "OP_CONT", "OP_PING", "OP_PONG", "OP_TEXT", "FrameReader", "FrameReading",
           "ProtocolViolation",
           "close_frame", "frame", "parse_close"]

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0, 1, 2, 8, 9, 10
_KNOWN = frozenset((OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG))

#: close codes a peer may send (RFC 6455 7.4.1 and the IANA registry; 3000-4999 for applications)
_VALID_CLOSE = frozenset((1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014))


class ProtocolViolation(Exception):
    """The client broke RFC 6455: the server closes with ``code`` (1002 protocol error, 1007 invalid
    data, 1009 message too big) and ``reason``."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class FrameReading:
    """Whole client messages out of the bytes of one connection (the method; its state lives in the
    object: :class:`FrameReader`, or a socket that is a reader itself, ``app.transport.fast``).

    :meth:`feed` takes the bytes received and returns ``(opcode, payload)`` for every message
    (``OP_TEXT`` with a ``str``, ``OP_BINARY`` with ``bytes``) and control frame (``OP_CLOSE``,
    ``OP_PING``, ``OP_PONG`` with ``bytes``) completed by them, in order; an incomplete frame waits
    for more bytes. Raises :class:`ProtocolViolation`; after that the reader must not be fed again."""

    if TYPE_CHECKING:  # the state's slots are the subclass's (a mixin's own would clash with other bases')
        __slots__: tuple[str, ...] = ("_opcode", "_partial", "_unread", "max_size")
    else:
        __slots__ = ()

    max_size: int
    _unread: bytearray
    _partial: bytearray | None
    _opcode: int

    def reset_reader(self, max_size: int) -> None:
        """Start reading frames: ``max_size`` is the largest message accepted, in bytes (after unmasking)."""
        self.max_size = max_size
        self._unread = bytearray()
        #: the payload so far of a fragmented message (None: no message is unfinished)
        self._partial = None
        self._opcode = 0

    def feed(self, data: bytes) -> list[tuple[int, str | bytes]]:
        buffer = self._unread
        buffer += data
        out: list[tuple[int, str | bytes]] = []
        pos = 0
        size = len(buffer)
        while size - pos >= 2:
            first, second = buffer[pos], buffer[pos + 1]
            if first & 0x70:
                raise ProtocolViolation(1002, "reserved bits set without an extension")
            opcode = first & 0x0F
            if opcode not in _KNOWN:
                raise ProtocolViolation(1002, f"unknown opcode {opcode}")
            if not second & 0x80:
                raise ProtocolViolation(1002, "client frames must be masked")
            fin = first & 0x80
            length = second & 0x7F
            head = pos + 2
            if length == 126:
                if size - pos < 4:
                    break
                length = (buffer[head] << 8) | buffer[head + 1]
                head += 2
            elif length == 127:
                if size - pos < 10:
                    break
                length = int.from_bytes(buffer[head:head + 8], "big")
                if length >> 63:
                    raise ProtocolViolation(1002, "payload length over 2**63")
                head += 8
            if opcode >= OP_CLOSE:
                if not fin:
                    raise ProtocolViolation(1002, "fragmented control frame")
                if length > 125:
                    raise ProtocolViolation(1002, "control frame over 125 bytes")
            else:
                started = self._partial
                if opcode == OP_CONT:
                    if started is None:
                        raise ProtocolViolation(1002, "continuation frame without a message to continue")
                    if len(started) + length > self.max_size:
                        raise ProtocolViolation(1009, f"message over {self.max_size} bytes")
                else:
                    if started is not None:
                        raise ProtocolViolation(1002, "new message before the last one was finished")
                    if length > self.max_size:
                        raise ProtocolViolation(1009, f"message over {self.max_size} bytes")
            end = head + 4 + length
            if end > size:
                break
            payload = apply_mask(bytes(buffer[head + 4:end]), bytes(buffer[head:head + 4])) if length else b""
            pos = end
            if opcode >= OP_CLOSE:
                out.append((opcode, payload))
                continue
            if opcode != OP_CONT:
                self._opcode = opcode
                if fin:
                    out.append(_message(opcode, payload))
                    continue
                self._partial = bytearray(payload)
                continue
            started = self._partial
            assert started is not None
            started += payload
            if fin:
                self._partial = None
                out.append(_message(self._opcode, bytes(started)))
        if pos:
            del buffer[:pos]
        return out


class FrameReader(FrameReading):
    """A :class:`FrameReading` of its own (``max_size``: the largest message accepted, in bytes)."""

    __slots__ = ("_opcode", "_partial", "_unread", "max_size")

    def __init__(self, max_size: int) -> None:
        self.reset_reader(max_size)


def _message(opcode: int, payload: bytes) -> tuple[int, str | bytes]:
    if opcode == OP_BINARY:
        return opcode, payload
    try:
        return opcode, payload.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolViolation(1007, "text message is not UTF-8") from None


def parse_close(payload: bytes) -> tuple[int | None, str]:
    """The code (None: none given) and reason of a received close frame. Raises
    :class:`ProtocolViolation` for a one-byte payload, a code a peer may not send, or a reason
    that is not UTF-8 (RFC 6455 5.5.1, 7.4)."""
    if not payload:
        return None, ""
    if len(payload) == 1:
        raise ProtocolViolation(1002, "close frame with a one-byte payload")
    code = (payload[0] << 8) | payload[1]
    if code not in _VALID_CLOSE and not 3000 <= code <= 4999:
        raise ProtocolViolation(1002, f"close code {code} may not be sent")
    try:
        reason = payload[2:].decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolViolation(1007, "close reason is not UTF-8") from None
    return code, reason


def frame(opcode: int, payload: bytes) -> bytes:
    """One unmasked, unfragmented server frame (FIN set, no extension): 2, 4 or 10 bytes of header
    and the payload (RFC 6455 5.2)."""
    n = len(payload)
    if n < 126:
        return bytes((0x80 | opcode, n)) + payload
    if n < 65536:
        return struct.pack("!BBH", 0x80 | opcode, 126, n) + payload
    return struct.pack("!BBQ", 0x80 | opcode, 127, n) + payload


def close_frame(code: int, reason: str = "") -> bytes:
    """The server's close frame with ``code`` and ``reason`` (cut to the 123 bytes a control frame
    leaves for it, at a character boundary)."""
    data = reason.encode("utf-8")
    if len(data) > 123:
        data = data[:123].decode("utf-8", "ignore").encode("utf-8")
    return frame(OP_CLOSE, struct.pack("!H", code) + data)
