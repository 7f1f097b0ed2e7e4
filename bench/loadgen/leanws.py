"""A WebSocket client for the Python load generators with as little per-message work as the protocol
allows: websockets' sans-I/O :class:`~websockets.client.ClientProtocol` (the same parser, masking,
handshake checks, ping answers and close handshake as its asyncio client) driven straight from an
``asyncio.Protocol``, so a received message is one callback (``on_message``) and a send is one
``transport.write``, with no task, future or queue per message.

Why: the Conquest and Warrior bot generators parse every message of every seat (the bots decide from
their views). Through websockets' asyncio connection (a reader task, an assembler, a future per
``recv``, a task per ``send``) they spent 60-85 % of the generator core at ~800 actions/s, and this
machine's two vCPUs slow each other down: the same server code runs ~35 % slower in-process while the
other vCPU is busy (measured, ``docs/benchmarks/server.md``). The reference rooms' Node generator keeps
its core ~30 % busy; a lean generator keeps the comparison fairer and the server the limit.
"""
from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.frames import Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

__all__ = ["LeanSocket", "connect"]


class LeanSocket(asyncio.Protocol):
    """One client WebSocket. ``recv()`` waits for the next message until ``on_message`` is set; from
    then on every text message is handed to ``on_message(text)`` as it is parsed, in order.
    ``on_close(exc)`` runs once when the connection ends (``None`` after a clean close)."""

    def __init__(self, uri: str, *, max_size: int, compression: bool) -> None:
        extensions = [ClientPerMessageDeflateFactory()] if compression else None
        self.protocol = ClientProtocol(parse_uri(uri), extensions=extensions, max_size=max_size)
        self.transport: Any = None
        self.on_message: Callable[[str], None] | None = None
        self.on_close: Callable[[BaseException | None], None] | None = None
        self._opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._inbox: deque[str] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._parts: list[bytes] = []
        self.closed = False
        self.close_exc: BaseException | None = None

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.protocol.send_request(self.protocol.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        protocol = self.protocol
        protocol.receive_data(data)
        for event in protocol.events_received():
            if isinstance(event, Response):
                if protocol.handshake_exc is not None:
                    self._fail(protocol.handshake_exc)
                elif not self._opened.done():
                    self._opened.set_result(None)
                continue
            opcode = event.opcode
            if opcode is Opcode.TEXT or opcode is Opcode.CONT:
                self._parts.append(event.data)
                if event.fin:
                    data_ = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
                    self._parts = []
                    self._deliver(data_.decode())
        self._flush()  # pongs, the close handshake's answer
        if protocol.close_expected() and self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        if exc is None and self.protocol.close_rcvd is None:
            exc = ConnectionResetError("the connection closed without a close frame")
        elif exc is None and self.protocol.close_rcvd is not None and self.protocol.close_rcvd.code not in (1000, 1001):
            exc = ConnectionClosed(self.protocol.close_rcvd, self.protocol.close_sent,
                                   self.protocol.close_rcvd_then_sent)
        self.close_exc = exc
        self._fail(exc or ConnectionResetError("closed"))
        if self.on_close is not None:
            callback, self.on_close = self.on_close, None
            callback(exc)

    # ------------------------------------------------------------------ the generator's side
    def _deliver(self, text: str) -> None:
        if self.on_message is not None and not self._inbox:
            self.on_message(text)
            return
        self._inbox.append(text)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, exc: BaseException) -> None:
        if not self._opened.done():
            self._opened.set_exception(exc)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def _flush(self) -> None:
        data = self.protocol.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(data))

    async def recv(self) -> str:
        """The next message (before ``on_message`` is set)."""
        while not self._inbox:
            if self.closed:
                raise self.close_exc or ConnectionResetError("closed")
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._inbox.popleft()

    def listen(self, on_message: Callable[[str], None], on_close: Callable[[BaseException | None], None]) -> None:
        """Hand every message (those already received first) to ``on_message``, in order."""
        self.on_message, self.on_close = on_message, on_close
        while self._inbox:
            on_message(self._inbox.popleft())
        if self.closed:
            self.on_close = None
            on_close(self.close_exc)

    def send(self, text: str) -> None:
        """Send one text message now (dropped once the connection is closing: its reader reports it)."""
        if self.closed or self.transport is None or self.transport.is_closing():
            return
        self.protocol.send_text(text.encode())
        self._flush()

    def close(self) -> None:
        """Start the close handshake (the server's answer closes the transport)."""
        if self.closed or self.transport is None or self.transport.is_closing():
            return
        try:
            self.protocol.send_close(1000)
        except Exception:  # noqa: BLE001 - already closing
            return
        self._flush()


async def connect(url: str, *, max_size: int, compression: bool, timeout: float,
                  local_host: str | None = None) -> LeanSocket:
    """Open ``url`` (``ws://host:port/path``) and finish the handshake within ``timeout`` seconds;
    ``local_host``: the socket's own address (e.g. ``127.0.0.2``; any free port), default the system's."""
    wsuri = parse_uri(url)
    loop = asyncio.get_running_loop()
    _, sock = await asyncio.wait_for(
        loop.create_connection(lambda: LeanSocket(url, max_size=max_size, compression=compression),
                               wsuri.host, wsuri.port,
                               local_addr=(local_host, 0) if local_host else None), timeout)
    await asyncio.wait_for(asyncio.shield(sock._opened), timeout)
    return sock
