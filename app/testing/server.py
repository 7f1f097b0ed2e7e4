"""A throwaway Bannerfall server for a game's tests: ``bannerfall serve`` in its own process, on a
free port, with a SQLite database and its log in a temporary folder, and an admin token.

It runs the same Python as the test (``sys.executable``), so every game installed there is in its
registry. Stopped at the end of the ``with`` block whatever happens::

    with LocalServer() as server:
        report = asyncio.run(leak.run_matches(server.url, server.admin_token, "mygame", matches=20))
"""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

__all__ = ["LocalServer"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """``bannerfall serve`` on ``127.0.0.1:<free port>``; ``url``, ``admin_token``, ``log`` (its
    output so far). ``env``: extra ``BANNERFALL_*`` settings (docs/operations.md). Raises
    RuntimeError (with the end of the log) when it does not answer ``/healthz`` within
    ``start_timeout`` seconds."""

    def __init__(self, *, env: dict[str, str] | None = None, start_timeout: float = 60.0) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_token = "Adm-" + secrets.token_urlsafe(30)
        self._dir = tempfile.TemporaryDirectory(prefix="bannerfall-game-test-")
        self.folder = Path(self._dir.name)
        self._env = env or {}
        self._timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def log(self) -> str:
        path = self.folder / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self) -> LocalServer:
        env = {**os.environ, "BANNERFALL_PORT": str(self.port), "BANNERFALL_HOST": "127.0.0.1",
               "BANNERFALL_DATABASE_URL": f"sqlite+aiosqlite:///{self.folder / 'bannerfall.db'}",
               "BANNERFALL_ADMIN_TOKEN": self.admin_token, "BANNERFALL_LOG_LEVEL": "warning",
               # one machine plays many matches: the per-player caps and rate limits are off
               "BANNERFALL_MAX_LOBBIES_PER_PLAYER": "0", "BANNERFALL_MAX_BOT_MATCHES_PER_PLAYER": "0",
               "BANNERFALL_MAX_SOCKETS_PER_PLAYER": "0", "BANNERFALL_RATE_LIMIT_PLAYER": "",
               "BANNERFALL_SOCKET_MESSAGES_PER_SECOND": "0", **self._env}
        env.pop("BANNERFALL_REDIS_URL", None)
        self._log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server writes until stopped
        self.proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve"], env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True, cwd=self.folder)
        deadline = time.monotonic() + self._timeout
        try:
            with httpx.Client(timeout=1.0) as client:
                while True:
                    if self.proc.poll() is not None:
                        raise RuntimeError(f"the server exited {self.proc.returncode}: {self.log[-3000:]}")
                    try:
                        if client.get(self.url + "/healthz").status_code == 200:
                            return self
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the server did not start within {self._timeout:.0f} s: {self.log[-3000:]}")
                    time.sleep(0.1)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """End the server's process group (SIGTERM, then SIGKILL after 15 s) and remove its folder."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(15)
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None
        self._dir.cleanup()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *_exc: Any) -> None:
        self.stop()
