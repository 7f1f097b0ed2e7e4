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
from app.runtime.wire import encode, error

log = logging.getLogger("bannerfall.runtime")


class MatchManager:
    """Every live match on this node, by id."""

    FINISHED_CACHE = 64

    def __init__(self, repo: Repository, log_writer: LogWriter, timers: Timers, *,
                 on_match_started: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.cluster = None  # set by the app: app.runtime.cluster.Cluster
        self.repo = repo
        self.log_writer = log_writer
        self.timers = timers
        self.runners: dict[str, MatchRunner] = {}
        self._finished: OrderedDict[str, MatchRunner] = OrderedDict()
        self._loading: dict[str, asyncio.Lock] = {}
        self.on_match_started = on_match_started
        self.deadlines_fired = 0
        #: called with the lag in seconds of each deadline that applied defaults (metrics)
        self.on_deadline_lag: Callable[[float], None] | None = None
        self._tasks: set[asyncio.Task] = set()
        #: called with a match's meta when it ends here, durably (the meta-game settles specials)
        self.on_match_ended: Callable[[dict[str, Any]], None] | None = None

    async def start(self) -> None:
        self.timers.set_callback(self._on_due)
        set_owns = getattr(self.timers, "set_owns", None)
        if set_owns is not None:
            set_owns(lambda match_id: match_id in self.runners)
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
    async def locate(self, match_id: str) -> tuple[MatchRunner | None, str | None]:
        """Where a match runs: ``(runner, None)`` if on this node (taking it over when its lease is
        free), ``(None, owner_node)`` if another node runs it, ``(None, None)`` if no such match."""
        runner = self._cached(match_id)
        if runner is not None:
            return runner, None
        match = await self.repo.match(match_id)
        if match is None:
            return None, None
        if match["status"] == "running" and self.cluster is not None:
            owned, owner = await self.cluster.claim(match_id)
            if not owned:
                return None, owner
        return await self.load(match_id, owned=True), None

    async def load(self, match_id: str, *, owned: bool = False) -> MatchRunner | None:
        """The runner of ``match_id``: live ones from memory, others rebuilt from the log
        (running matches become live again with their deadlines re-armed). None if no such match,
        or if it is running and another node holds its lease (unless ``owned``: the caller holds it)."""
        runner = self._cached(match_id)
        if runner is not None:
            return runner
        lock = self._loading.setdefault(match_id, asyncio.Lock())
        async with lock:
            runner = self._cached(match_id)
            if runner is not None:
                return runner
            match = await self.repo.match(match_id)
            if match is None or match["game"] not in registry():
                return None
            if match["status"] == "running" and self.cluster is not None and not owned:
                claimed, _owner = await self.cluster.claim(match_id)
                if not claimed:
                    return None
            runner = await self._rebuild(match)
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

    def _cached(self, match_id: str) -> MatchRunner | None:
        return self.runners.get(match_id) or self._finished.get(match_id)

    async def _rebuild(self, match: dict[str, Any]) -> MatchRunner:
        actions = await self.repo.actions(match["id"])
        result = replay(match, actions, keep_events=MatchRunner.HISTORY)
        deadlines = {int(k): float(v) for k, v in (result.last_deadlines or {}).items()}
        return MatchRunner(
            match=match, game=result.game, state=result.state, version=result.version,
            log_writer=self.log_writer, deadlines=deadlines, schedule=self._schedule,
            on_finished=self._finished_cb, history=result.history, client_seqs=result.client_seqs,
            status=match["status"], cancel=self._cancel,
        )

    async def snapshot(self, match_id: str) -> MatchRunner | None:
        """A match to read (admin): the live runner if here, else a read-only copy rebuilt from the
        durable log (a match running on another node is not taken over by reading it)."""
        runner = self._cached(match_id)
        if runner is not None:
            return runner
        match = await self.repo.match(match_id)
        if match is None or match["game"] not in registry():
            return None
        if match["status"] != "running":
            return await self.load(match_id)
        return await self._rebuild(match)

    async def abort(self, match_id: str, reason: str, by: str | None) -> MatchRunner | None:
        """Abort a running match wherever it runs. Raises IllegalAction ``match_over`` if it is not running."""
        runner, owner = await self.locate(match_id)
        if runner is None and owner is None:
            return None
        if runner is None:
            self.cluster.send(owner, {"k": "abort", "m": match_id, "reason": reason, "by": by})
            return await self.snapshot(match_id)
        runner.abort(reason, by)
        return runner

    def _remember_finished(self, runner: MatchRunner) -> None:
        self._finished[runner.match_id] = runner
        self._finished.move_to_end(runner.match_id)
        while len(self._finished) > self.FINISHED_CACHE:
            self._finished.popitem(last=False)

    def _finished_cb(self, runner: MatchRunner) -> None:
        if self.runners.get(runner.match_id) is runner:
            del self.runners[runner.match_id]
        if not runner.failed:
            self._remember_finished(runner)
            if self.on_match_ended is not None:
                self.on_match_ended(runner.meta)
        if self.cluster is not None:
            self._spawn(self.cluster.release(runner.match_id))

    def lease_lost(self, match_id: str) -> None:
        """Another node may run this match now: drop it here and send its viewers away to reconnect."""
        runner = self.runners.pop(match_id, None)
        if runner is None:
            return
        runner.failed = True
        from app.runtime.cluster import CLOSE_MOVED

        text = encode(error("match_moved", "the match moved to another node; reconnect and resume"))
        for peer in list(runner.peers):
            peer.push(text)
            peer.close(CLOSE_MOVED, "the match moved; reconnect and resume")

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ socket messages
    def dispatch(self, runner: MatchRunner, peer, msg: dict[str, Any]) -> None:
        """One parsed message from a viewer's socket (local or on another node)."""
        kind = msg.get("type")
        if kind == "act":
            runner.act(peer, msg.get("seq"), msg.get("action"), msg.get("version"))
        elif kind == "resume":
            since = msg.get("since_version")
            if not isinstance(since, int) or isinstance(since, bool) or since < 0:
                peer.push(encode(error("bad_version", "resume needs 'since_version': a version number")))
                return
            runner.attach(peer, since_version=since)
        elif kind == "ping":
            peer.push(encode({"type": "pong", "t": msg.get("t")}))
        elif kind == "hello":
            peer.push(encode(error("already_authenticated", "hello was already received")))
        else:
            peer.push(encode(error("unknown_message_type", f"unknown message type {kind!r}")))

    # ------------------------------------------------------------------ deadlines
    def _schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        now = getattr(self.timers, "schedule_now", None)
        if now is not None:
            now(match_id, phase_id, due_at)
        else:
            self._spawn(self.timers.schedule(match_id, phase_id, due_at))

    def _cancel(self, match_id: str, phase_id: int) -> None:
        """A phase ended before its deadline: drop its timer (a late firing would be ignored anyway)."""
        now = getattr(self.timers, "cancel_now", None)
        if now is not None:
            now(match_id, phase_id)
        else:
            self._spawn(self.timers.cancel(match_id, phase_id))

    def _on_due(self, match_id: str, phase_id: int) -> None:
        runner = self.runners.get(match_id)
        if runner is None:
            return
        due = runner.deadlines.get(phase_id)
        applied = runner.deadline(phase_id)
        if applied:
            self.deadlines_fired += 1
            if due is not None and self.on_deadline_lag is not None:
                self.on_deadline_lag(max(0.0, time.time() - due))

    # ------------------------------------------------------------------ creating
    async def create_match(self, game_id: str, options: dict[str, Any], seats: list[dict[str, Any]],
                           *, lobby_id: str | None = None, seed: bytes | None = None) -> MatchRunner:
        """Start a match: a fresh 32-byte seed (its SHA-256 public), the initial state, deadlines armed.
        ``seats``: by seat, ``{"player_id", "name", "bot"}``; with ``lobby_id`` they are read again
        under the lobby's lock (``Repository.start_lobby_match``). Raises LookupError
        (``LobbyRefused``) if the lobby is no longer open or has an empty seat, KeyError for an
        unknown game."""
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
        if lobby_id is None:
            await self.repo.create_match(match)
        else:  # seats as read under the lobby's lock (only their count was needed above: it is fixed)
            base = match
            match = await self.repo.start_lobby_match(lobby_id, lambda locked: {**base, "seats": locked})
        if self.cluster is not None:
            await self.cluster.claim(match["id"])
        runner = MatchRunner(match=match, game=game, state=state, version=0, log_writer=self.log_writer,
                             deadlines=deadlines, schedule=self._schedule, on_finished=self._finished_cb,
                             cancel=self._cancel)
        self.runners[match["id"]] = runner
        for phase_id, due in deadlines.items():
            self._schedule(match["id"], phase_id, due)
        if self.on_match_started:
            self.on_match_started(match)
        return runner
