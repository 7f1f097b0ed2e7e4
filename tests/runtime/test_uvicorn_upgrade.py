"""Safe uvicorn upgrades (``app/transport/servers.py``): the lean socket transport relies on a few
uvicorn internals (:data:`~app.transport.servers.INTERNALS`), checked when the server starts.

- the installed uvicorn has them, and the lean transport is chosen;
- a moved internal is named in one line, and the server then serves its sockets with uvicorn's
  stock protocols and the ASGI transport, saying so in exactly one warning line (in-process, and a
  real ``bannerfall serve`` on a uvicorn whose upgrade method was rewritten:
  ``tests/runtime/moved_uvicorn.py``);
- the newest uvicorn of the package index still has them: it is installed in a throwaway folder
  put in front of the project's packages, checked, and a real server on it serves a socket on the
  lean transport. Skipped in one line only when the package index cannot be reached.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.transport import servers
from tests.conftest import ROOT, ServerProcess
from tests.e2e.helpers import connect, recv_until, start_match

#: the start-up warning when uvicorn's internals moved (``server_protocols``)
FALLBACK_LINE = "serving with uvicorn's stock protocols and the ASGI socket transport"


@pytest.fixture
def fresh_check():
    """``internals_problem`` is cached for the process: measured anew inside the test, and again after."""
    servers.internals_problem.cache_clear()
    yield
    servers.internals_problem.cache_clear()


def _settings(**kw) -> SimpleNamespace:
    return SimpleNamespace(**{"socket_transport": "auto", "ws_compression": False, **kw})


def test_the_installed_uvicorn_has_what_the_lean_transport_uses(fresh_check):
    assert servers.internals_problem() is None
    assert servers.transport_choice(_settings()) == ("lean", None)
    http, ws = servers.server_protocols(SimpleNamespace(), _settings())
    assert http is servers.LeanHttpToolsProtocol and callable(ws) and not isinstance(ws, str)


def _rewrite_upgrade(monkeypatch) -> None:
    """The upgrade method rewritten (same behaviour, other code), as tests/runtime/moved_uvicorn.py does."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    original = HttpToolsProtocol.handle_websocket_upgrade

    def rewritten(self) -> None:
        original(self)

    monkeypatch.setattr(HttpToolsProtocol, "handle_websocket_upgrade", rewritten)


def test_a_moved_internal_is_named_in_one_line(fresh_check, monkeypatch):
    _rewrite_upgrade(monkeypatch)
    problem = servers.internals_problem()
    assert problem is not None and "\n" not in problem
    assert problem.startswith("uvicorn.protocols.http.httptools_impl.HttpToolsProtocol.handle_websocket_upgrade "
                              "no longer uses ws_protocol_class, connection_made, data_received, set_protocol")
    monkeypatch.undo()
    servers.internals_problem.cache_clear()
    monkeypatch.setattr(servers, "INTERNALS", (("uvicorn.protocols.gone", "Protocol", {}),))
    assert servers.internals_problem() == "uvicorn.protocols.gone.Protocol is missing (ModuleNotFoundError)"


@pytest.mark.parametrize("asked", ["auto", "lean"])
def test_moved_internals_give_the_stock_protocols_with_one_warning_line(fresh_check, monkeypatch, caplog, asked):
    """Whether the settings say ``auto`` or ``lean``, a moved internal gives uvicorn's stock HTTP
    protocol and its websockets-sansio protocol (the ASGI transport), with one warning line naming
    the uvicorn version and what moved."""
    import uvicorn

    _rewrite_upgrade(monkeypatch)
    settings = _settings(socket_transport=asked)
    with caplog.at_level(logging.INFO, logger="bannerfall.api"):
        http, ws = servers.server_protocols(SimpleNamespace(), settings)
    assert (http, ws) == ("auto", "websockets-sansio")
    transport, why = servers.transport_choice(settings)
    assert transport == "asgi" and why is not None and "set_protocol" in why
    lines = [r for r in caplog.records if r.name == "bannerfall.api"]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    message = lines[0].getMessage()
    assert "\n" not in message and message.startswith(f"uvicorn {uvicorn.__version__}: ") and FALLBACK_LINE in message
    # the config bannerfall serve runs loads: uvicorn's own classes for both protocols
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    from app.cli import uvicorn_config

    config = uvicorn_config(_asgi_stub, SimpleNamespace(host="127.0.0.1", port=0, log_level="warning",
                                                        heartbeat_seconds=20.0, **vars(settings)))
    config.load()
    assert config.ws_protocol_class is WebSocketsSansIOProtocol
    assert not issubclass(config.http_protocol_class, servers.LeanHttpToolsProtocol)


async def _asgi_stub(scope, receive, send) -> None:  # pragma: no cover - never called
    raise AssertionError("not served")


# ------------------------------------------------------------------------------------ real servers
def _upgrade_answer(port: int, match_id: str) -> bytes:
    """The head of the server's answer to a WebSocket upgrade of a match socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        key = base64.b64encode(os.urandom(16)).decode()
        raw.sendall((f"GET /ws/matches/{match_id} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = raw.recv(4096)
            if not chunk:
                break
            head += chunk
    return head.partition(b"\r\n\r\n")[0]


def served_by(port: int, match_id: str) -> str:
    """Which transport answered a socket's handshake: the lean one answers ``101`` with exactly
    ``Upgrade``, ``Connection`` and ``Sec-WebSocket-Accept`` (``app/transport/handshake.py``);
    uvicorn's own protocol adds its headers (``server``, ``date``)."""
    head = _upgrade_answer(port, match_id)
    assert head.startswith(b"HTTP/1.1 101"), head
    names = {line.split(b":", 1)[0].strip().lower() for line in head.split(b"\r\n")[1:]}
    return "lean" if names == {b"upgrade", b"connection", b"sec-websocket-accept"} else "asgi"


async def _a_socket_works(url: str, port: int) -> str:
    """A match, a socket that says hello and gets its state and a pong; returns :func:`served_by`."""
    table = await start_match(url, "provinces", 2, options={"turn_seconds": 600})
    try:
        sock, state = await connect(url, table.match_id, table.players[0].token)
        assert state["type"] == "state" and state["seat"] == 0
        await sock.send({"type": "ping", "t": 5})
        assert (await recv_until(sock, lambda m: m["type"] == "pong"))["t"] == 5
        await sock.close()
        return await asyncio.to_thread(served_by, port, table.match_id)
    finally:
        await table.close()


def _uvicorn_lines(logs: str) -> list[str]:
    return [line for line in logs.splitlines() if " WARNING " in line and "uvicorn" in line]


async def test_a_server_whose_uvicorn_moved_serves_sockets_on_the_asgi_transport_with_one_warning(tmp_path):
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'moved.db'}", module="tests.runtime.moved_uvicorn")
    try:
        srv.start()
        assert await _a_socket_works(srv.url, srv.port) == "asgi"
        lines = _uvicorn_lines(srv.logs())
        assert len(lines) == 1 and FALLBACK_LINE in lines[0], srv.logs()[-3000:]
        assert "handle_websocket_upgrade no longer uses" in lines[0]
    finally:
        srv.stop()


async def test_an_unchanged_uvicorn_serves_sockets_on_the_lean_transport_without_warning(tmp_path):
    """The check above could pass on a server that always says ``asgi``: the same check on the
    installed uvicorn finds the lean transport."""
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'lean.db'}")
    try:
        srv.start()
        assert await _a_socket_works(srv.url, srv.port) == "lean"
        assert _uvicorn_lines(srv.logs()) == []
    finally:
        srv.stop()


# ------------------------------------------------------------------------------------ the newest uvicorn
def _pip(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args],
                          capture_output=True, text=True, timeout=timeout)


def _newest_uvicorn() -> str:
    """The newest uvicorn release of the package index pip is set up with; skips this test (one
    line) when the index cannot be reached."""
    try:
        found = _pip("index", "versions", "uvicorn", timeout=120)
    except subprocess.TimeoutExpired:
        pytest.skip("the package index did not answer within 120 s (pip index versions uvicorn): "
                    "the newest uvicorn cannot be checked")
    version = re.search(r"^uvicorn \(([^)]+)\)", found.stdout, re.M)
    if found.returncode != 0 or version is None:
        last = (found.stderr.strip().splitlines() or ["no answer"])[-1]
        pytest.skip(f"the package index cannot be reached (pip index versions uvicorn: {last}): "
                    "the newest uvicorn cannot be checked")
    return version.group(1)


@pytest.mark.registry
@pytest.mark.timeout(600)
async def test_the_newest_uvicorn_of_the_package_index_still_has_what_the_lean_transport_uses(tmp_path):
    """uvicorn's newest release and the newest ``httptools`` (with what they need) are installed
    into a throwaway folder (pip's downloads cached in this test's own temporary folder), put in
    front of the project's packages: the internals check must find everything, and a real server on
    them must serve a socket on the lean transport without a warning. When this fails, the fast path
    must be brought up to that uvicorn (``app/transport/fast.py``, ``servers.INTERNALS``); until
    then servers on it fall back to the ASGI transport, as the tests above show."""
    version = await asyncio.to_thread(_newest_uvicorn)
    target, cache = tmp_path / "site", tmp_path / "pip-cache"
    started = time.monotonic()
    installed = await asyncio.to_thread(_pip, "install", "--quiet", "--target", str(target), "--cache-dir",
                                        str(cache), f"uvicorn=={version}", "httptools", timeout=480)
    assert installed.returncode == 0, f"installing uvicorn {version} failed:\n{installed.stderr[-3000:]}"
    path = os.pathsep.join([str(target), str(ROOT)])
    probe = subprocess.run(
        [sys.executable, "-c", "import json, uvicorn; from app.transport.servers import internals_problem; "
                               "print(json.dumps([uvicorn.__version__, uvicorn.__file__, internals_problem()]))"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": path})
    assert probe.returncode == 0, probe.stderr[-3000:]
    seen, where, problem = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen == version and Path(where).is_relative_to(target), (seen, where)
    assert problem is None, (
        f"uvicorn {version}, the newest on the package index, moved what the lean socket transport relies on: "
        f"{problem}. Servers on it fall back to the ASGI transport (one warning line at start); bring "
        "app/transport/fast.py and servers.INTERNALS up to it, and keep pyproject.toml's uvicorn bound below "
        f"{version} until then (docs/decisions.md, 'uvicorn upgrades').")
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'newest.db'}",
                        env={"PYTHONPATH": path, "BANNERFALL_SOCKET_TRANSPORT": "lean"})
    try:
        srv.start()
        assert await _a_socket_works(srv.url, srv.port) == "lean", srv.logs()[-3000:]
        assert _uvicorn_lines(srv.logs()) == [], srv.logs()[-3000:]
    finally:
        srv.stop()
    print(f"uvicorn {version}: the lean transport's internals are there ({time.monotonic() - started:.0f} s)")
