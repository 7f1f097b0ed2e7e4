"""uvicorn's protocols as ``bannerfall serve`` runs them (:func:`server_protocols`): keeping less for
each socket, and making no cyclic garbage.

:class:`LeanWebSocketsProtocol` is uvicorn's ``websockets-sansio`` protocol. Behaviour is uvicorn's
own (this subclass changes no method's logic); three things every open socket kept for its whole
life are made smaller (``docs/benchmarks/server.md``, "Memory"):

- the inbox of received ASGI events: uvicorn makes an ``asyncio.Queue`` (four deques and an
  ``Event``, ~3.3 KB); :class:`Inbox` is a list and one waiting future, made only while the app waits;
- the ``writable`` flag: an ``asyncio.Event`` (a deque of waiters, ~0.8 KB); :class:`Flag` makes a
  future only while a sender waits for the client to read;
- the handshake's request and response (their headers parsed by websockets, ~3.5 KB): uvicorn keeps
  both after the handshake, when nothing reads them again; they are dropped once it is done.

:class:`LeanHttpToolsProtocol` is uvicorn's ``httptools`` protocol, which lets go of its parser once
the connection is upgraded to a WebSocket: the parser holds the protocol's bound methods, and uvicorn
breaks that reference cycle only in ``connection_lost``, which an upgraded connection never calls on
it. Without this every socket left ~45 objects (the HTTP protocol, its parser, flow control, ~4.5 KB)
to the cyclic collector (``docs/decisions.md``, "Garbage collection").

Both rely on uvicorn internals (attribute names, not only the ASGI interface), as does the socket
fast path of ``app.api.ws``. ``pyproject.toml`` bounds uvicorn to the line they were written for,
and :func:`internals_problem` checks at start-up that the names are still there: if not,
:func:`server_protocols` falls back to uvicorn's stock protocols with a warning, and ``app.api.ws``
sends through uvicorn's ``send`` (slower, and more memory per socket, but correct).
"""
from __future__ import annotations

import asyncio
import functools
import importlib
import logging
from typing import TYPE_CHECKING, Any

log = logging.getLogger("bannerfall.api")

if TYPE_CHECKING:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
else:
    def _optional(module: str, name: str) -> type:
        """``module.name``, or a stand-in class when uvicorn (or httptools) lacks it: the subclasses
        below are then never handed to uvicorn (:func:`server_protocols`)."""
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return type(f"Missing{name}", (asyncio.Protocol,), {"__init__": lambda self, *a, **kw: None})

    HttpToolsProtocol = _optional("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol")
    WebSocketsSansIOProtocol = _optional("uvicorn.protocols.websockets.websockets_sansio_impl",
                                         "WebSocketsSansIOProtocol")

__all__ = ["Flag", "Inbox", "LeanHttpToolsProtocol", "LeanWebSocketsProtocol", "internals_problem",
           "server_protocols"]

#: What this module and ``app.api.ws`` use of uvicorn's and websockets' internals:
#: (module, class, method -> attribute names its code must still assign or read)
INTERNALS: tuple[tuple[str, str, dict[str, tuple[str, ...]]], ...] = (
    ("uvicorn.protocols.websockets.websockets_sansio_impl", "WebSocketsSansIOProtocol", {
        "__init__": ("queue", "writable", "handshake_complete", "close_sent", "disconnected", "initial_response",
                     "conn"),
        "connection_made": ("transport",),
        "handle_connect": ("request", "response"),
        "send": ("handshake_complete",),
    }),
    ("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol", {
        "__init__": ("parser",),
        "handle_websocket_upgrade": ("set_protocol",),
    }),
    ("websockets.protocol", "Protocol", {
        "__init__": ("state", "extensions", "writes", "expect_continuation_frame", "debug"),
        "send_text": (),
        "data_to_send": (),
    }),
)


@functools.cache
def internals_problem() -> str | None:
    """None when every name in :data:`INTERNALS` is still where this code expects it (checked in
    the functions' compiled code: ``co_names``), else one line saying what is missing."""
    for module_name, class_name, methods in INTERNALS:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            return f"{module_name}.{class_name} is missing ({type(exc).__name__})"
        for method, names in methods.items():
            code = getattr(getattr(cls, method, None), "__code__", None)
            if code is None:
                return f"{module_name}.{class_name}.{method} is missing"
            missing = [name for name in names if name not in code.co_names]
            if missing:
                return f"{module_name}.{class_name}.{method} no longer uses {', '.join(missing)}"
    return None


def server_protocols() -> tuple[Any, Any]:
    """``(http, ws)`` for ``uvicorn.Config``: :class:`LeanHttpToolsProtocol` and
    :class:`LeanWebSocketsProtocol`, or, when :func:`internals_problem` finds uvicorn changed,
    uvicorn's stock choices (``"auto"``, and ``"websockets-sansio"`` when it still exists) after a
    warning."""
    problem = internals_problem()
    if problem is None:
        return LeanHttpToolsProtocol, LeanWebSocketsProtocol
    import uvicorn

    log.warning("uvicorn %s: %s; serving with uvicorn's stock protocols (more memory per socket, cyclic "
                "garbage per socket, no socket fast path). pyproject.toml names the uvicorn line this "
                "server was written for.", uvicorn.__version__, problem)
    try:
        importlib.import_module("uvicorn.protocols.websockets.websockets_sansio_impl")
        ws = "websockets-sansio"
    except ImportError:
        ws = "auto"
    return "auto", ws


class LeanHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that drops its parser once the connection is a WebSocket (see the
    module's docstring): the parser and the protocol refer to each other, and an upgraded
    connection's HTTP protocol never gets the ``connection_lost`` where uvicorn breaks that."""

    def handle_websocket_upgrade(self) -> None:
        super().handle_websocket_upgrade()
        self.parser = None  # type: ignore[assignment]


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
