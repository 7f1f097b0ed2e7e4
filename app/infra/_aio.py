"""Task helpers for the backends' background loops.

On Python 3.11, ``asyncio.wait_for`` (used inside redis-py) returns the result and drops a
cancellation that arrives just as the awaited operation completes (CPython gh-86296, fixed in
3.12). A loop that awaits Redis can therefore miss ``Task.cancel()``; so every loop here also checks
a stop flag and :func:`cancel_requested`, and :func:`cancel_and_wait` cancels until the task ends.
"""
from __future__ import annotations

import asyncio


def cancel_requested() -> bool:
    """Whether the current task was asked to cancel (even if the CancelledError got lost)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def cancel_and_wait(task: asyncio.Task | None, retry_every: float = 0.2) -> None:
    """Cancel ``task`` and wait until it has ended, cancelling again if a cancellation was lost.
    The task's own exception (if any) is not raised."""
    if task is None:
        return
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=retry_every)
    if not task.cancelled():
        task.exception()  # mark retrieved
