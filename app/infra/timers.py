"""Deadline timers. A timer names ``(match_id, phase_id)`` and an absolute due time (epoch seconds).

Firing is at-least-once and may be late; the match runtime ignores a deadline whose phase has
already ended, so a duplicate or stale firing is harmless.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable, Protocol

DueCallback = Callable[[str, int], None]


class Timers(Protocol):
    def set_callback(self, on_due: DueCallback) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        """Arrange ``on_due(match_id, phase_id)`` at ``due_at`` (epoch seconds) or soon after."""

    async def cancel(self, match_id: str, phase_id: int) -> None: ...


class LocalTimers:
    """In-process timers on the event loop (embedded mode)."""

    def __init__(self) -> None:
        self._on_due: DueCallback | None = None
        self._handles: dict[tuple[str, int], asyncio.TimerHandle] = {}

    def set_callback(self, on_due: DueCallback) -> None:
        self._on_due = on_due

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    async def schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        key = (match_id, phase_id)
        old = self._handles.pop(key, None)
        if old:
            old.cancel()
        delay = max(0.0, due_at - time.time())
        self._handles[key] = asyncio.get_running_loop().call_later(delay, self._fire, key)

    async def cancel(self, match_id: str, phase_id: int) -> None:
        handle = self._handles.pop((match_id, phase_id), None)
        if handle:
            handle.cancel()

    def _fire(self, key: tuple[str, int]) -> None:
        self._handles.pop(key, None)
        if self._on_due:
            self._on_due(*key)
