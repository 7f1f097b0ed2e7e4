"""``GET /readyz``: whether this node can serve, answered within a bounded time.

Each probe (the database's ``SELECT 1``, Redis's ``PING``) runs in a task of its own, all at once,
and is waited for at most :data:`PROBE_SECONDS`: a probe that has not answered by then reports
``timeout`` and is left to finish in the background (the database's and Redis's own timeouts bound
it), and the next request waits on that same probe instead of starting another, so a hung engine
never piles probes up. The log writer's recent commit failures are reported too: a database that
answers ``SELECT 1`` but cannot commit (a full disk, a read-only file) is not ready.

The answer (``docs/operations.md``, "Observing")::

    200 | 503 {"status": "ok" | "unavailable",
                "checks": {"database": "ok" | "timeout" | "<error class>",
                           "redis": ...,                        # production mode only
                           "log_writer": "ok" | "failing"},
                "seconds": {"database": 0.002, "redis": 0.001},   # probes that answered
                "log_writer": {"failures_last_minute": 0, "last_failure_seconds_ago": null,
                               "pending": 0}}
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from sqlalchemy import text

#: how long ``/readyz`` waits for each probe, seconds (they run at once: the answer comes within it)
PROBE_SECONDS = 0.5
#: a failed commit attempt younger than this (seconds), with no successful one after it, makes the
#: node not ready
FAILING_COMMIT_SECONDS = 30.0


class Readiness:
    """The node's readiness probes. ``app_state``: the app's ``state`` (``repo``, ``backends``,
    ``log_writer``)."""

    def __init__(self, app_state: Any) -> None:
        self.state = app_state
        self._inflight: dict[str, asyncio.Task] = {}
        self._started: dict[str, float] = {}

    async def _database(self) -> None:
        async with self.state.repo.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def _redis(self) -> None:
        await self.state.backends.ping()

    def _probe(self, name: str, probe: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task:
        task = self._inflight.get(name)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(probe(), name=f"readyz-{name}")
            task.add_done_callback(_retrieve)
            self._inflight[name] = task
            self._started[name] = time.monotonic()
        return task

    async def check(self) -> tuple[bool, dict[str, Any]]:
        """(ready, the answer's body). Returns within :data:`PROBE_SECONDS` (plus scheduling)."""
        probes: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {"database": self._database}
        if self.state.backends.mode == "redis":
            probes["redis"] = self._redis
        tasks = {name: self._probe(name, probe) for name, probe in probes.items()}
        await asyncio.wait(tasks.values(), timeout=PROBE_SECONDS)
        checks: dict[str, str] = {}
        seconds: dict[str, float] = {}
        for name, task in tasks.items():
            if not task.done():
                checks[name] = "timeout"
            elif task.cancelled():
                checks[name] = "cancelled"
            elif task.exception() is not None:
                checks[name] = type(task.exception()).__name__
            else:
                checks[name] = "ok"
                seconds[name] = round(time.monotonic() - self._started[name], 4)
        writer = self.state.log_writer
        checks["log_writer"] = "failing" if writer.failing(FAILING_COMMIT_SECONDS) else "ok"
        last = writer.last_failure_at
        ok = all(v == "ok" for v in checks.values())
        return ok, {"status": "ok" if ok else "unavailable", "checks": checks, "seconds": seconds,
                    "log_writer": {"failures_last_minute": writer.recent_failures(60.0),
                                   "last_failure_seconds_ago": None if last is None
                                   else round(time.monotonic() - last, 3),
                                   "pending": writer.pending}}


def _retrieve(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # reported by ``check`` (or by nobody, if it answered after the wait)
