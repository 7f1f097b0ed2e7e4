"""Counting specials' lifetimes once per finished match (conquest.md 5, seed §5.1.2).

A match is settled as soon as it ends on the node that ran it (:meth:`Settler.match_ended`, called
by the match manager), and by a sweep over ended-but-unsettled matches at start and every
``settle_sweep_seconds`` (what a crash, a lost task or another node left). Settling is idempotent in
the database (:meth:`app.db.wallet.WalletRepository.settle_match`), so both paths, several nodes and
restarts count each match exactly once. The same loop deletes idempotency keys past their
retention (:func:`app.db.idempotency.prune`).
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from app.db.idempotency import prune
from app.db.wallet import WalletRepository
from app.storage import log_failure

log = logging.getLogger("bannerfall.meta")


class Settler:
    def __init__(self, wallets: WalletRepository, *, sweep_seconds: float,
                 key_seconds: float = 86_400.0) -> None:
        self.wallets = wallets
        self.sweep_seconds = sweep_seconds
        #: idempotency keys older than this are deleted by each sweep (``IDEMPOTENCY_KEY_SECONDS``)
        self.key_seconds = key_seconds
        self._task: asyncio.Task | None = None
        self._pending: set[asyncio.Task] = set()
        self.settled = 0

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        for task in [self._task, *self._pending]:
            if task is not None:
                task.cancel()
        tasks = [t for t in (self._task, *self._pending) if t is not None]
        await asyncio.gather(*tasks, return_exceptions=True)  # cancelled: nothing to report

    def match_ended(self, match: Mapping[str, Any]) -> None:
        """A match ended on this node (its final record is durable): settle it now, in the background."""
        if match.get("game") != "conquest":
            return
        task = asyncio.get_running_loop().create_task(self._settle(dict(match)))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _settle(self, match: dict[str, Any]) -> None:
        try:
            if await self.wallets.settle_match(match) is not None:
                self.settled += 1
        except Exception as exc:  # the sweep will try again
            log_failure(log, exc, "settling match %s failed; the sweep will retry", match.get("id"))

    async def sweep(self) -> int:
        """Settle every ended, unsettled Conquest match. Returns how many were settled here."""
        count = 0
        while True:
            batch = await self.wallets.unsettled_matches()
            done = 0
            for match in batch:
                if await self.wallets.settle_match(match) is not None:
                    done += 1
            count += done
            if len(batch) < 200 or done == 0:
                self.settled += count
                return count

    async def _loop(self) -> None:
        while True:
            try:
                await self.sweep()
                await prune(self.wallets.engine, time.time() - self.key_seconds)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_failure(log, exc, "settlement sweep failed; retrying later")
            await asyncio.sleep(self.sweep_seconds)
