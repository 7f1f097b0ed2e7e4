"""The socket transports' interface (``app/transport/__init__.py``): both implementations are
runtime :class:`~app.runtime.match.Peer` s (the attributes and the two methods, with their
signatures; statically too: mypy checks :func:`_static`), the hub's ``corked`` is a
:class:`~app.transport.Batches`, and ``app/runtime`` uses nothing of the transports: it imports no
module of ``app.transport`` and names none of the lean socket's own methods."""
from __future__ import annotations

import ast
import inspect
from contextlib import AbstractContextManager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast, get_type_hints

import pytest

from app.runtime.match import Peer
from app.transport import Batches, SocketHub
from app.transport.asgi import Connection
from app.transport.fast import FastSocket
from tests.conftest import ROOT


def _static(fast: FastSocket, asgi: Connection, hub: SocketHub) -> tuple[Peer, Peer, Batches]:
    """Never called: mypy checks that both sockets are Peers and that ``corked`` is a Batches."""
    return fast, asgi, hub.corked


def _lean() -> FastSocket:
    return FastSocket(config=None, server_state=SimpleNamespace(connections=set()), app=SimpleNamespace())


def _asgi() -> Connection:
    return Connection(cast(Any, SimpleNamespace(scope={})), 8)


@pytest.mark.parametrize("make", [_lean, _asgi], ids=["lean", "asgi"])
def test_both_sockets_are_peers(make):
    sock = make()
    for name, kind in get_type_hints(Peer).items():
        assert hasattr(sock, name), f"{type(sock).__name__} has no {name}"
        value = getattr(sock, name)
        if kind is bool:
            assert isinstance(value, bool), (name, value)
        elif kind is int:
            assert isinstance(value, int) and not isinstance(value, bool), (name, value)
    for method in ("push", "close"):
        want = [p.name for p in inspect.signature(getattr(Peer, method)).parameters.values()][1:]
        have = [p.name for p in inspect.signature(getattr(sock, method)).parameters.values()]
        assert have == want, (type(sock).__name__, method, have)


def test_corked_is_a_batch_of_writes_that_holds_frames_until_it_ends():
    hub = SocketHub()
    written: list[list[bytes]] = []

    class Sock:
        def write_frames(self, frames: list[bytes]) -> None:
            written.append(frames)

    sock = Sock()
    batch: Batches = hub.corked
    with batch() as entered:
        assert entered is None
        with batch():  # nested: the outermost one writes
            assert hub.hold(sock, b"a")
        assert hub.hold(sock, b"b") and written == []
    assert written == [[b"a", b"b"]]
    assert not hub.hold(sock, b"c")  # outside a batch: written at once by the socket
    assert isinstance(hub.corked(), AbstractContextManager)


def _runtime_modules() -> list[Path]:
    return sorted((ROOT / "app" / "runtime").rglob("*.py"))


def test_the_runtime_imports_nothing_of_the_transports():
    offenders: list[str] = []
    for path in _runtime_modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[Any] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names
                          if n == "app.transport" or n.startswith("app.transport.")]
    assert not offenders, offenders
    assert len(_runtime_modules()) > 10  # the walk found the runtime


#: what the transports have beyond the interface: the lean socket's frame writes and keepalive, the
#: hub's frame cache and batch slots, the ASGI connection's act timers
TRANSPORT_ONLY = ("write_frames", "text_frame", "hold", "keepalive", "sweep", "reset_reader", "reset_budget",
                  "expect_answer", "close_code", "handshake")


def test_the_runtime_calls_nothing_of_the_transports_beyond_the_interface():
    for name in TRANSPORT_ONLY:
        assert hasattr(FastSocket, name) or hasattr(SocketHub, name) or hasattr(Connection, name), name
    used: dict[str, str] = {}
    for path in _runtime_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in TRANSPORT_ONLY:
                used[node.attr] = f"{path.relative_to(ROOT)}:{node.lineno}"
    assert not used, used
