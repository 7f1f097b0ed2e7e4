"""Rating finished matches, exactly once, the way specials are settled
(:mod:`app.meta.settlement`): at once on the node where the match ended (:meth:`Rater.match_ended`,
called from the match manager's ``on_match_ended`` hook), and by a sweep over ended-but-unrated
matches at start and every ``rating_sweep_seconds`` (what a crash, a lost task or another node
left). :meth:`app.db.ratings.RatingsRepository.rate_match` is idempotent in the database, so both
paths, several nodes, replays and restarts rate each match once.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from app.db.ratings import RatingsRepository
from app.storage import log_failure

log = logging.getLogger("bannerfall.ratings")


class Rater:
    def __init__(self, ratings: RatingsRepository, *, sweep_seconds: float) -> None:
        self.ratings = ratings
        self.sweep_seconds = sweep_seconds
        self._task: asyncio.Task | None = None
        self._pending: set[asyncio.Task] = set()
        #: matches whose ratings this node changed
        self.rated = 0

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._pending) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def match_ended(self, match: Mapping[str, Any]) -> None:
        """A match ended on this node (its final record is durable): rate it now, in the background."""
        task = asyncio.get_running_loop().create_task(self._rate(dict(match)))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _rate(self, match: dict[str, Any]) -> None:
        try:
            if await self.ratings.rate_match(match):
                self.rated += 1
        except Exception as exc:  # the sweep will try again
            log_failure(log, exc, "rating match %s failed; the sweep will retry", match.get("id"))

    async def sweep(self) -> int:
        """Rate every ended, unrated match. Returns how many were marked here."""
        count = 0
        while True:
            batch = await self.ratings.unrated_matches()
            done = 0
            for match in batch:
                result = await self.ratings.rate_match(match)
                if result is not None:
                    done += 1
                    self.rated += 1 if result else 0
            count += done
            if len(batch) < 200 or done == 0:
                return count

    async def _loop(self) -> None:
        while True:
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_failure(log, exc, "rating sweep failed; retrying later")
            await asyncio.sleep(self.sweep_seconds)
