"""Deadline timers. A timer names ``(match_id, phase_id)`` and an absolute due time (epoch seconds).

Firing is at-least-once and may be late; the match runtime ignores a deadline whose phase has
already ended, so a duplicate or stale firing is harmless.

Two implementations: :class:`LocalTimers` (here, embedded mode) and
:class:`app.infra.redis_timers.RedisTimers` (production mode: a shared sorted set whose due entries
are claimed atomically, so exactly one node fires each). See ``docs/infra.md``.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable, Protocol

DueCallback = Callable[[str, int], None]
#: ``owns(match_id) -> bool``: whether this node runs the match (see ``set_owns``)
OwnsFilter = Callable[[str], bool]


class Timers(Protocol):
    def set_callback(self, on_due: DueCallback) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        """Arrange ``on_due(match_id, phase_id)`` at ``due_at`` (epoch seconds) or soon after."""

    async def cancel(self, match_id: str, phase_id: int) -> None: ...

    def schedule_now(self, match_id: str, phase_id: int, due_at: float) -> None:
        """:meth:`schedule` without a coroutine, from the event loop's thread (the runtime's hot path:
        a record's deadlines are armed from its commit callback). Never raises; a backend that writes
        elsewhere queues the write."""

    def cancel_now(self, match_id: str, phase_id: int) -> None:
        """:meth:`cancel` without a coroutine, as :meth:`schedule_now`."""

    def set_owns(self, owns: OwnsFilter | None) -> None:
        """Only fire deadlines of matches for which ``owns(match_id)`` is true (None: all)."""


class LocalTimers:
    """In-process timers on the event loop (embedded mode)."""

    def __init__(self, *, owns: OwnsFilter | None = None) -> None:
        self._on_due: DueCallback | None = None
        self._owns = owns
        self._handles: dict[tuple[str, int], asyncio.TimerHandle] = {}

    def set_callback(self, on_due: DueCallback) -> None:
        self._on_due = on_due

    def set_owns(self, owns: OwnsFilter | None) -> None:
        """In one process there is no other node to leave a deadline to: a due deadline of a match
        that ``owns`` rejects is dropped without calling back (the runtime would ignore it anyway)."""
        self._owns = owns

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    async def schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        self.schedule_now(match_id, phase_id, due_at)

    def schedule_now(self, match_id: str, phase_id: int, due_at: float) -> None:
        """:meth:`schedule` without a coroutine (the runtime calls this on the hot path)."""
        key = (match_id, phase_id)
        old = self._handles.pop(key, None)
        if old:
            old.cancel()
        delay = max(0.0, due_at - time.time())
        self._handles[key] = asyncio.get_running_loop().call_later(delay, self._fire, key)

    async def cancel(self, match_id: str, phase_id: int) -> None:
        self.cancel_now(match_id, phase_id)

    def cancel_now(self, match_id: str, phase_id: int) -> None:
        handle = self._handles.pop((match_id, phase_id), None)
        if handle:
            handle.cancel()

    def _fire(self, key: tuple[str, int]) -> None:
        self._handles.pop(key, None)
        if self._owns is not None and not self._owns(key[0]):
            return
        if self._on_due:
            self._on_due(*key)
