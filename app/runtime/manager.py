"""The node's match runtime: loads live matches (replaying their logs), routes deadlines to them,
creates matches from lobbies, and keeps bots playing."""
from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable

from app.db.repo import Repository
from app.games import registry
from app.games.base import seed_commitment
from app.infra.timers import Timers
from app.runtime.logwriter import LogWriter
from app.runtime.match import MatchRunner
from app.runtime.replay import replay

log = logging.getLogger("bannerfall.runtime")


class MatchManager:
    """Every live match on this node, by id."""

    FINISHED_CACHE = 64

    def __init__(self, repo: Repository, log_writer: LogWriter, timers: Timers, *,
                 on_match_started: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.repo = repo
        self.log_writer = log_writer
        self.timers = timers
        self.runners: dict[str, MatchRunner] = {}
        self._finished: OrderedDict[str, MatchRunner] = OrderedDict()
        self._loading: dict[str, asyncio.Lock] = {}
        self.on_match_started = on_match_started
        self.deadlines_fired = 0
        self.deadline_lag: list[float] = []
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        self.timers.set_callback(self._on_due)
        await self.timers.start()
        for match_id in await self.repo.running_match_ids():
            try:
                await self.load(match_id)
            except Exception:
                log.exception("could not recover match %s", match_id)

    async def stop(self) -> None:
        await self.timers.stop()
        for task in list(self._tasks):
            task.cancel()

    # ------------------------------------------------------------------ loading
    async def load(self, match_id: str) -> MatchRunner | None:
        """The runner of ``match_id``: live ones from memory, others rebuilt from the log
        (running matches become live again with their deadlines re-armed). None if no such match."""
        runner = self.runners.get(match_id) or self._finished.get(match_id)
        if runner is not None:
            return runner
        lock = self._loading.setdefault(match_id, asyncio.Lock())
        async with lock:
            runner = self.runners.get(match_id) or self._finished.get(match_id)
            if runner is not None:
                return runner
            match = await self.repo.match(match_id)
            if match is None or match["game"] not in registry():
                return None
            actions = await self.repo.actions(match_id)
            result = replay(match, actions, keep_events=MatchRunner.HISTORY)
            deadlines = {int(k): float(v) for k, v in (result.last_deadlines or {}).items()}
            runner = MatchRunner(
                match=match, game=result.game, state=result.state, version=result.version,
                log_writer=self.log_writer, deadlines=deadlines, schedule=self._schedule,
                on_finished=self._finished_cb, history=result.history, client_seqs=result.client_seqs,
                status=match["status"],
            )
            if match["status"] == "running":
                if runner.outcome is not None:  # ended in memory but the final update was lost
                    runner.status = "finished"
                self.runners[match_id] = runner
                for phase_id, due in runner.deadlines.items():
                    if any(p.phase_id == phase_id for p in runner.prompts):
                        self._schedule(match_id, phase_id, due)
                if self.on_match_started:
                    self.on_match_started(runner.meta)
            else:
                self._remember_finished(runner)
            return runner

    def _remember_finished(self, runner: MatchRunner) -> None:
        self._finished[runner.match_id] = runner
        self._finished.move_to_end(runner.match_id)
        while len(self._finished) > self.FINISHED_CACHE:
            self._finished.popitem(last=False)

    def _finished_cb(self, runner: MatchRunner) -> None:
        self.runners.pop(runner.match_id, None)
        if not runner.failed:
            self._remember_finished(runner)

    # ------------------------------------------------------------------ deadlines
    def _schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        task = asyncio.get_running_loop().create_task(self.timers.schedule(match_id, phase_id, due_at))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_due(self, match_id: str, phase_id: int) -> None:
        runner = self.runners.get(match_id)
        if runner is None:
            return
        due = runner.deadlines.get(phase_id)
        applied = runner.deadline(phase_id)
        if applied:
            self.deadlines_fired += 1
            if due is not None:
                self.deadline_lag.append(max(0.0, time.time() - due))
                del self.deadline_lag[:-1000]

    # ------------------------------------------------------------------ creating
    async def create_match(self, game_id: str, options: dict[str, Any], seats: list[dict[str, Any]],
                           *, lobby_id: str | None = None, seed: bytes | None = None) -> MatchRunner:
        """Start a match: a fresh 32-byte seed (its SHA-256 public), the initial state, deadlines armed.
        ``seats``: by seat, ``{"player_id", "name", "bot"}``. Raises LookupError if the lobby was
        started meanwhile, KeyError for an unknown game."""
        game = registry()[game_id]
        seed = seed or secrets.token_bytes(32)
        opts = game.Options.model_validate(options)
        state = game.setup(len(seats), opts, seed)
        now = time.time()
        prompts = game.prompts(state)
        deadlines: dict[int, float] = {}
        for p in prompts:
            deadlines[p.phase_id] = max(deadlines.get(p.phase_id, 0.0), now + p.deadline_seconds)
        match = {
            "id": uuid.uuid4().hex, "game": game_id, "options": opts.model_dump(mode="json"),
            "seat_count": len(seats), "seats": seats, "seed": seed.hex(), "seed_hash": seed_commitment(seed),
            "status": "running", "lobby_id": lobby_id, "deadlines": {str(k): v for k, v in deadlines.items()},
            "outcome": None, "version": 0, "created_at": now, "ended_at": None,
        }
        await self.repo.create_match(match, lobby_id=lobby_id)
        runner = MatchRunner(match=match, game=game, state=state, version=0, log_writer=self.log_writer,
                             deadlines=deadlines, schedule=self._schedule, on_finished=self._finished_cb)
        self.runners[match["id"]] = runner
        for phase_id, due in deadlines.items():
            self._schedule(match["id"], phase_id, due)
        if self.on_match_started:
            self.on_match_started(match)
        return runner
