"""uvicorn's ``websockets-sansio`` protocol, keeping less for each socket (``bannerfall serve`` uses it).

Behaviour is uvicorn's own (this subclass changes no method's logic); three things every open socket
kept for its whole life are made smaller (``docs/benchmarks/server.md``, "Memory"):

- the inbox of received ASGI events: uvicorn makes an ``asyncio.Queue`` (four deques and an
  ``Event``, ~3.3 KB); :class:`Inbox` is a list and one waiting future, made only while the app waits;
- the ``writable`` flag: an ``asyncio.Event`` (a deque of waiters, ~0.8 KB); :class:`Flag` makes a
  future only while a sender waits for the client to read;
- the handshake's request and response (their headers parsed by websockets, ~3.5 KB): uvicorn keeps
  both after the handshake, when nothing reads them again; they are dropped once it is done.
"""
from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["Flag", "Inbox", "LeanWebSocketsProtocol"]


class Inbox:
    """The part of ``asyncio.Queue`` uvicorn uses (unbounded): ``put_nowait``, ``get``, ``empty``.
    Items come out in order; getters are served in the order they started waiting; a getter
    cancelled after it was woken passes the wake-up on, as ``asyncio.Queue`` does."""

    __slots__ = ("_getters", "_items")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._getters: list[asyncio.Future[None]] | None = None

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        self._wake_one()

    def _wake_one(self) -> None:
        getters = self._getters
        while getters:
            getter = getters.pop(0)
            if not getter.done():
                getter.set_result(None)
                break
        if not getters:
            self._getters = None

    async def get(self) -> Any:
        while not self._items:
            getter = asyncio.get_running_loop().create_future()
            if self._getters is None:
                self._getters = []
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()
                if self._getters is not None and getter in self._getters:
                    self._getters.remove(getter)
                    if not self._getters:
                        self._getters = None
                if self._items and not getter.cancelled():
                    self._wake_one()  # it was woken for an item it will not take: pass it on
                raise
        return self._items.pop(0)


class Flag:
    """The part of ``asyncio.Event`` uvicorn (and ``app.api.ws``) uses: ``set``, ``clear``,
    ``is_set`` and ``wait``; a set wakes every waiter."""

    __slots__ = ("_value", "_waiters")

    def __init__(self) -> None:
        self._value = False
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if self._value:
            return
        self._value = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(True)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> bool:
        if self._value:
            return True
        waiter = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            return await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)
                if not self._waiters:
                    self._waiters = None


class LeanWebSocketsProtocol(WebSocketsSansIOProtocol):
    """``WebSocketsSansIOProtocol`` with :class:`Inbox`, :class:`Flag`, and the handshake's
    request and response dropped once the handshake is over (uvicorn reads them only during it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue = Inbox()  # type: ignore[assignment]
        writable = Flag()
        writable.set()
        self.writable = writable  # type: ignore[assignment]

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        self.request = None  # type: ignore[assignment]
        if self.handshake_complete:  # refused by websockets: the response is sent already
            self.response = None  # type: ignore[assignment]

    async def send(self, message: Any) -> None:
        await super().send(message)
        if self.handshake_complete and getattr(self, "response", None) is not None:
            self.response = None  # type: ignore[assignment]
