"""The JavaScript SDK (``clients/js``) against a real server: ``npm ci``, the checks that its
generated types and the web client's bundle are current and its build (``npm run check``: ``tsc``),
then ``node --test`` with the server's URL in ``BANNERFALL_URL`` — whole matches of every game, a
restart of the server in the middle of one, a dropped connection, a replaced socket. The node tests
restart the server through ``BANNERFALL_CONTROL_URL`` (``POST /restart``: this harness stops it
with SIGTERM, whose sockets close with 1012, and starts it again on the same database and port).

Skipped when node or npm is not installed; the npm registry (or npm's cache) must be reachable for
``npm ci``."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import ROOT, ServerProcess, make_db_url
from tests.timing import scaled

SDK = ROOT / "clients" / "js"
NODE = shutil.which("node")
NPM = shutil.which("npm")
pytestmark = pytest.mark.skipif(NODE is None or NPM is None, reason="node and npm are not installed")


def npm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    assert NPM is not None
    return subprocess.run([NPM, *args], cwd=SDK, capture_output=True, text=True, timeout=scaled(timeout),
                          check=False, env={**os.environ, "npm_config_fund": "false", "npm_config_audit": "false",
                                            "npm_config_update_notifier": "false"})


def install() -> None:
    """``npm ci``: the lockfile's versions, from npm's cache when it has them."""
    res = npm("ci", "--prefer-offline", "--no-progress")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def check_generated_files_are_current(tmp_path: Path) -> None:
    """``src/generated`` is what ``npm run gen`` makes of ``docs/schemas`` now, and
    ``app/web/js/sdk/bannerfall-client.js`` is the bundle of ``src`` (both regenerated in memory and
    compared); ``tsc`` builds ``dist/`` and a TypeScript consumer's file type-checks against it
    (``npm run check``). The check can
    fail: a schema with one more field makes it name the file it would change."""
    res = npm("run", "check")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    schemas = tmp_path / "schemas"
    shutil.copytree(ROOT / "docs" / "schemas", schemas)
    pong = json.loads((schemas / "server.pong.json").read_text())
    pong["properties"]["extra_field"] = {"type": "number"}
    (schemas / "server.pong.json").write_text(json.dumps(pong))
    assert NODE is not None
    res = subprocess.run([NODE, "scripts/gen-types.mjs", "--check"], cwd=SDK, capture_output=True, text=True,
                         timeout=scaled(120), check=False, env={**os.environ, "BANNERFALL_SCHEMAS": str(schemas)})
    assert res.returncode == 1 and "messages/server.pong.ts" in res.stderr, res.stdout + res.stderr


class _Control(BaseHTTPRequestHandler):
    server_process: ServerProcess
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        if self.path != "/restart":
            self.send_error(404)
            return
        try:
            with self.lock:
                self.server_process._end_group()  # SIGTERM: open sockets are closed with 1012
                self.server_process.start()
        except Exception as exc:  # the node test reports it
            body = f"restart failed: {exc}".encode()
            self.send_response(500)
        else:
            body = b"restarted"
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path) -> Iterator[tuple[ServerProcess, str]]:
    """A server on SQLite and the control the node tests restart it with."""
    url, _ = make_db_url("sqlite", tmp_path)
    srv = ServerProcess(url).start()
    handler = type("Control", (_Control,), {"server_process": srv})
    control = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=control.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv, f"http://127.0.0.1:{control.server_address[1]}"
    finally:
        control.shutdown()
        control.server_close()
        srv.stop()


@pytest.mark.timeout(900)
def test_the_sdk_is_current_and_its_node_tests_pass_against_a_real_server(served, tmp_path):
    """One test, so that one pytest worker alone runs ``npm ci`` in ``clients/js``."""
    srv, control = served
    install()
    check_generated_files_are_current(tmp_path)  # also builds dist/, which the node tests import
    assert NODE is not None
    tests = sorted(str(p.relative_to(SDK)) for p in (SDK / "test").glob("*.test.js"))
    assert tests, "no SDK tests found"
    command = [NODE, "--test", "--test-concurrency=1", "--test-timeout=120000", "--test-reporter=spec", *tests]
    res = subprocess.run(command, cwd=SDK, capture_output=True, text=True, timeout=scaled(300), check=False,
                         env={**os.environ, "BANNERFALL_URL": srv.url, "BANNERFALL_CONTROL_URL": control})
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-8000:] + "\n--- server log ---\n" + srv.logs()[-3000:]
    assert "# fail 0" in out or "ℹ fail 0" in out, out[-3000:]
