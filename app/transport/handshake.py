"""The server side of the WebSocket opening handshake (RFC 6455 4.2) for the lean transport.

uvicorn's HTTP protocol has already parsed the request (httptools or h11) and hands the WebSocket
protocol that request written out again, in one piece: ``METHOD target HTTP/1.1``, the header lines,
an empty line. :func:`parse_request` reads it back; :func:`check` applies the rules of RFC 6455
4.2.1 and gives the answer: ``101`` with ``Sec-WebSocket-Accept`` (``websockets.utils.accept_key``),
or the refusal (400, 426 with ``Sec-WebSocket-Version: 13``). No extension and no subprotocol is
ever selected. Plain functions and tuples: nothing outlives the handshake.
"""
from __future__ import annotations

import base64
import binascii

from websockets.utils import accept_key

__all__ = ["Handshake", "HandshakeError", "MAX_REQUEST_BYTES", "check", "parse_request", "refusal", "switching"]

#: a request longer than this is refused (uvicorn's parser bounds headers well below it)
MAX_REQUEST_BYTES = 65536


class HandshakeError(Exception):
    """The request cannot open a WebSocket: answer ``status`` with ``body`` (and ``headers``)."""

    def __init__(self, status: int, body: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(body)
        self.status = status
        self.body = body
        self.headers = headers


class Handshake:
    """A parsed upgrade request: ``method``, ``target`` (path and query, as sent), ``headers``
    (``(name lower-cased, value)`` pairs as ``bytes``, in order)."""

    __slots__ = ("headers", "method", "target")

    def __init__(self, method: str, target: str, headers: list[tuple[bytes, bytes]]) -> None:
        self.method = method
        self.target = target
        self.headers = headers

    def get(self, name: bytes) -> list[str]:
        """Every value of header ``name`` (lower case), decoded as ISO-8859-1 (RFC 9110 5.5)."""
        return [v.decode("latin-1") for k, v in self.headers if k == name]


def parse_request(data: bytes) -> Handshake | None:
    """The request in ``data`` (None while its empty line has not come). Raises
    :class:`HandshakeError` 400 for what is not an HTTP/1.1 request, or one over
    :data:`MAX_REQUEST_BYTES`."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        if len(data) > MAX_REQUEST_BYTES:
            raise HandshakeError(400, "request too large")
        return None
    lines = data[:end].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or parts[2] != b"HTTP/1.1":
        raise HandshakeError(400, "not an HTTP/1.1 request")
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise HandshakeError(400, "malformed header line")
        headers.append((name.lower(), value.strip()))
    return Handshake(parts[0].decode("latin-1"), parts[1].decode("latin-1"), headers)


def _tokens(values: list[str]) -> set[str]:
    return {token.strip().lower() for value in values for token in value.split(",") if token.strip()}


def check(request: Handshake) -> str:
    """The ``Sec-WebSocket-Accept`` value for a valid upgrade request (RFC 6455 4.2.1): ``GET``,
    ``Host``, ``Upgrade: websocket``, ``Connection: upgrade``, a ``Sec-WebSocket-Key`` of 16 bytes
    in base64, ``Sec-WebSocket-Version: 13``. Raises :class:`HandshakeError` 400 (426 for another
    version, with the version this server speaks)."""
    if request.method != "GET":
        raise HandshakeError(400, "a WebSocket opens with GET")
    if not request.get(b"host"):
        raise HandshakeError(400, "missing Host header")
    if "websocket" not in _tokens(request.get(b"upgrade")):
        raise HandshakeError(400, "missing Upgrade: websocket")
    if "upgrade" not in _tokens(request.get(b"connection")):
        raise HandshakeError(400, "missing Connection: upgrade")
    versions = request.get(b"sec-websocket-version")
    if versions != ["13"]:
        raise HandshakeError(426, "unsupported WebSocket version", (("Sec-WebSocket-Version", "13"),))
    keys = request.get(b"sec-websocket-key")
    if len(keys) != 1:
        raise HandshakeError(400, "missing Sec-WebSocket-Key")
    try:
        raw = base64.b64decode(keys[0], validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise HandshakeError(400, "invalid Sec-WebSocket-Key")
    return accept_key(keys[0])


_REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 426: "Upgrade Required"}


def switching(accept: str) -> bytes:
    """The ``101 Switching Protocols`` answer."""
    return (f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode("latin-1")


def refusal(status: int, body: str, headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    """An HTTP answer refusing the upgrade (the connection is closed after it)."""
    data = (body if body.endswith("\n") else body + "\n").encode()
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", "Content-Type: text/plain; charset=utf-8",
            f"Content-Length: {len(data)}", "Connection: close", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data
