"""Which protocols ``bannerfall serve`` hands uvicorn (:func:`server_protocols`), and the check that
uvicorn still has what they rely on (:func:`internals_problem`).

- HTTP: :class:`LeanHttpToolsProtocol`, uvicorn's ``httptools`` protocol that lets go of its parser
  once the connection is upgraded to a WebSocket (the parser holds the protocol's bound methods, and
  uvicorn breaks that reference cycle only in ``connection_lost``, which an upgraded connection never
  calls on it: without this every socket left ~45 objects to the cyclic collector).
- WebSocket: the lean transport (``app.transport.fast.protocol_for``), or uvicorn's own
  ``websockets-sansio`` protocol serving the ASGI transport (``app/transport/asgi.py``).

What uvicorn must still do for these (:data:`INTERNALS`): construct the WebSocket protocol with the
keywords ``config``, ``server_state``, ``app_state`` and hand it the connection
(``connection_made``, ``data_received`` with the request, ``set_protocol``), keep connections in
``server_state.connections`` and call ``shutdown()`` on each when stopping; its HTTP protocol keeps
its parser in ``parser``. When a newer uvicorn changed any of that, the server says so in one
warning line and serves with uvicorn's stock protocols and the ASGI transport
(``tests/runtime/test_uvicorn_upgrade.py`` checks the newest uvicorn of the package index).
"""
from __future__ import annotations

import functools
import importlib
import logging
from typing import TYPE_CHECKING, Any

log = logging.getLogger("bannerfall.api")

if TYPE_CHECKING:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
else:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools not installed: uvicorn's h11 protocol, which keeps no parser cycle
        import asyncio

        HttpToolsProtocol = type("MissingHttpToolsProtocol", (asyncio.Protocol,), {})

__all__ = ["INTERNALS", "LeanHttpToolsProtocol", "internals_problem", "server_protocols", "transport_choice"]

#: (module, class, method -> names its code must still use) of uvicorn
INTERNALS: tuple[tuple[str, str, dict[str, tuple[str, ...]]], ...] = (
    ("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol", {
        "__init__": ("parser", "ws_protocol_class"),
        "handle_websocket_upgrade": ("ws_protocol_class", "connection_made", "data_received", "set_protocol",
                                     "config", "server_state", "app_state"),
    }),
    ("uvicorn.server", "Server", {
        "shutdown": ("connections", "shutdown"),
    }),
)


@functools.cache
def internals_problem() -> str | None:
    """None when every name in :data:`INTERNALS` is still where this code expects it (checked in
    the functions' compiled code: ``co_names`` and ``co_varnames``), else one line saying what is missing."""
    for module_name, class_name, methods in INTERNALS:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            return f"{module_name}.{class_name} is missing ({type(exc).__name__})"
        for method, names in methods.items():
            code = getattr(getattr(cls, method, None), "__code__", None)
            if code is None:
                return f"{module_name}.{class_name}.{method} is missing"
            used = set(code.co_names) | set(code.co_varnames) | {c for c in code.co_consts if isinstance(c, str)}
            for const in code.co_consts:  # keyword names of calls live in tuples of constants
                if isinstance(const, tuple):
                    used.update(c for c in const if isinstance(c, str))
            missing = [name for name in names if name not in used]
            if missing:
                return f"{module_name}.{class_name}.{method} no longer uses {', '.join(missing)}"
    return None


def transport_choice(settings: Any) -> tuple[str, str | None]:
    """``("lean" | "asgi", why not lean or None)`` for ``settings.socket_transport``: ``auto`` is lean
    unless compression is on or :func:`internals_problem` finds uvicorn changed; ``lean`` asked for
    with either gives asgi too, with the reason."""
    asked = getattr(settings, "socket_transport", "auto")
    if asked == "asgi":
        return "asgi", None
    if settings.ws_compression:
        return "asgi", "permessage-deflate (BANNERFALL_WS_COMPRESSION) is served by the ASGI transport"
    problem = internals_problem()
    if problem is not None:
        return "asgi", problem
    return "lean", None


def server_protocols(app: Any, settings: Any) -> tuple[Any, Any]:
    """``(http, ws)`` for ``uvicorn.Config`` serving ``app``: see the module. Logs one warning line
    when uvicorn's internals changed (and one info line when compression keeps the ASGI transport)."""
    transport, why = transport_choice(settings)
    problem = internals_problem()
    if problem is not None:
        import uvicorn

        log.warning("uvicorn %s: %s; serving with uvicorn's stock protocols and the ASGI socket transport "
                    "(more memory and CPU per socket). pyproject.toml names the uvicorn line this server was "
                    "written for.", uvicorn.__version__, problem)
        return "auto", _stock_ws()
    if transport == "asgi":
        if why:
            log.info("match sockets: ASGI transport (%s)", why)
        return LeanHttpToolsProtocol, _stock_ws()
    from app.transport.fast import protocol_for

    return LeanHttpToolsProtocol, protocol_for(app)


def _stock_ws() -> str:
    try:
        importlib.import_module("uvicorn.protocols.websockets.websockets_sansio_impl")
        return "websockets-sansio"
    except ImportError:
        return "auto"


class LeanHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that drops its parser once the connection is a WebSocket (see the
    module's docstring)."""

    def handle_websocket_upgrade(self) -> None:
        super().handle_websocket_upgrade()
        self.parser = None  # type: ignore[assignment]
