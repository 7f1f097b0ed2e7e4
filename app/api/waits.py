"""Bounds on requests that wait (long-polls of tickets, parties and rematch offers): each waits at
most ``MAX_WAIT`` seconds, and one player holds at most ``MAX_LONG_POLLS_PER_PLAYER`` of them open
at once on a node; one more is refused at once with 429 ``too_many_long_polls`` (``Retry-After``),
before it waits or reads anything (docs/protocol.md, "Long-polls")."""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import Request

from app.api.limits import LimitExceeded

#: the longest any long-poll waits, seconds
MAX_WAIT = 30.0
#: what a refused long-poll is told to wait, seconds
RETRY_SECONDS = 1


class LongPolls:
    """Long-polls open on this node, by player (no ``await`` between the check and the count, so
    parallel requests never pass the cap)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: dict[str, int] = {}

    def count(self) -> int:
        return sum(self.open.values())

    @contextlib.asynccontextmanager
    async def slot(self, player_id: str) -> AsyncIterator[None]:
        """Hold one of the player's long-poll slots for the block; raises :class:`LimitExceeded`
        429 ``too_many_long_polls`` when all are taken."""
        held = self.open.get(player_id, 0)
        if held >= self.cap:
            raise LimitExceeded(429, "too_many_long_polls",
                                f"you have {self.cap} requests waiting already: let one answer first",
                                RETRY_SECONDS)
        self.open[player_id] = held + 1
        try:
            yield
        finally:
            left = self.open.get(player_id, 1) - 1
            if left > 0:
                self.open[player_id] = left
            else:
                self.open.pop(player_id, None)


def long_polls(request: Request) -> LongPolls:
    """The node's :class:`LongPolls` (made at first use from ``MAX_LONG_POLLS_PER_PLAYER``)."""
    state = request.app.state
    polls = getattr(state, "long_polls", None)
    if polls is None:
        polls = state.long_polls = LongPolls(state.settings.max_long_polls_per_player)
    return polls


def wait_slot(request: Request, player_id: str, wait: float) -> contextlib.AbstractAsyncContextManager[None]:
    """A long-poll slot when the request waits (``wait`` > 0), else nothing to hold."""
    if wait <= 0:
        return contextlib.nullcontext()
    return long_polls(request).slot(player_id)
