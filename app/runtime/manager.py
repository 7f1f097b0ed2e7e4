"""The node's match runtime: loads live matches (replaying their logs), routes deadlines to them,
creates matches from lobbies, and keeps bots playing.

Taking a running match (creation, load after claiming its lease, takeover) first raises its
fencing token ``matches.owner_epoch`` in its own committed transaction, and only then reads the
log; the runner writes with that epoch (see :mod:`app.runtime.logwriter`). A runner whose write
failed is dropped, and a background task rebuilds the match from its durable log with backoff until
it runs again here or on another node.

A match is replayed only by an engine of the rules version it started under
(``app.games.versions``). When this node has none, the rebuild decides instead of retrying
(``docs/decisions.md``, "Rules versions"): a running match of older rules is ended as
``aborted: rules changed`` (its abort record written under the new epoch, its sockets told, its
specials and ratings settled as for any aborted match); one of newer rules than installed here is
left running for a node that has them; an ended one is shown through a stand-in engine. A running
match whose log does not replay under its own version is ended the same way (``aborted: log does
not replay``)."""
from __future__ import annotations

import asyncio
import functools
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, cast

from app.db.repo import MatchInsertHook, Repository
from app.games import registry, versions
from app.games.base import SPECTATOR, IllegalAction, seed_commitment
from app.infra.timers import Timers
from app.runtime import wire
from app.runtime.history import EventHistory
from app.runtime.interfaces import Link, Ownership
from app.runtime.logwriter import LogWriter
from app.runtime.match import MatchRunner, Peer
from app.runtime.protocol import CLOSE_MOVED
from app.runtime.replay import ReplayMismatch, RulesUnavailable, engine_of, parsed_deadlines, replay
from app.runtime.rows import LogRow, MatchRow, SeatRow, log_rows, match_row
from app.runtime.step import start
from app.runtime.wire import encode
from app.storage import log_failure

log = logging.getLogger("bannerfall.runtime")

#: the abort reasons of a running match the rebuild cannot replay (``outcome.reason`` is
#: ``aborted: <reason>``; ``docs/protocol.md``, "A match the server cannot replay")
RULES_CHANGED = "rules changed"
LOG_DOES_NOT_REPLAY = "log does not replay"


def _both(first: MatchInsertHook | None, second: MatchInsertHook | None) -> MatchInsertHook | None:
    """One in-transaction hook running ``first`` then ``second`` (either may be None)."""
    if first is None or second is None:
        return first or second

    async def run(conn: Any, match: dict[str, Any]) -> None:
        await first(conn, match)
        await second(conn, match)
    return run

class MatchManager:
    """Every live match on this node, by id. Implements :class:`~app.runtime.interfaces.MatchHost`
    (for the cluster) and :class:`~app.runtime.interfaces.MatchDirectory` (for sockets and routes);
    reaches the cluster only through :class:`~app.runtime.interfaces.Ownership` (:meth:`bind`)."""

    FINISHED_CACHE = 64

    #: recovery backoff after a failed runner: first delay and cap, seconds
    RECOVERY_FIRST = 0.2
    RECOVERY_MAX = 5.0
    #: how long a remote abort waits for the owner's abort to be durable, seconds
    REMOTE_ABORT_WAIT = 10.0

    def __init__(self, repo: Repository, log_writer: LogWriter, timers: Timers, *,
                 on_match_started: Callable[[MatchRow], None] | None = None,
                 node_id: str = "local", ownership: Ownership | None = None,
                 spectator_patch_seconds: float = 0.0) -> None:
        #: how often at most spectators get a delta (``SPECTATOR_PATCH_SECONDS``; 0: every change)
        self.spectator_patch_seconds = spectator_patch_seconds
        #: who runs which match (the cluster); None: this node runs every match, no leases
        self.cluster: Ownership | None = ownership
        self.node_id = node_id
        self.repo = repo
        self.log_writer = log_writer
        self.timers = timers
        self.runners: dict[str, MatchRunner] = {}
        self._finished: OrderedDict[str, MatchRunner] = OrderedDict()
        #: match id -> [lock, users]; an entry lives only while someone loads the match
        self._loading: dict[str, list[Any]] = {}
        #: matches whose recovery task is running
        self._recovering: set[str] = set()
        #: running matches of newer rules than this node has, already said in the log (one line each)
        self._left_for_newer: set[str] = set()
        #: runners rebuilt after a failure (metrics, tests)
        self.recoveries = 0
        self._stopping = False
        self.on_match_started = on_match_started
        self.deadlines_fired = 0
        #: called with the lag in seconds of each deadline that applied defaults (metrics)
        self.on_deadline_lag: Callable[[float], None] | None = None
        self._tasks: set[asyncio.Task] = set()
        #: (the loop, the keyword arguments every runner made here shares): :meth:`_hooks`
        self._shared_hooks: tuple[asyncio.AbstractEventLoop, dict[str, Any]] | None = None
        #: called with a match's meta when it ends here, durably (the meta-game settles specials)
        self.on_match_ended: Callable[[MatchRow], None] | None = None
        #: awaited in the transaction that inserts a new match (``Repository.create_match`` /
        #: ``start_lobby_match``), with its connection and the row: what must commit with the match
        #: or not at all (the specials' lifetimes, ``WalletRepository.reserve_lifetimes``)
        self.on_match_insert: MatchInsertHook | None = None

    def bind(self, ownership: Ownership) -> None:
        """Set the cluster (made after the manager, since it calls back into it as a ``MatchHost``)."""
        self.cluster = ownership

    # ------------------------------------------------------------------ MatchHost / MatchDirectory
    def live(self, match_id: str) -> MatchRunner | None:
        """The runner of a match running on this node, or None."""
        return self.runners.get(match_id)

    def live_version(self, match_id: str) -> int | None:
        """The durable version of a match running on this node, else None (then the stored
        ``matches.version``, advanced by every log commit, is the durable version)."""
        runner = self.runners.get(match_id)
        return runner.durable_version if runner is not None else None

    def spectator_version(self, match_id: str) -> int | None:
        """The spectators' durable audience version of a match in memory on this node (running or
        recently ended), else None: what public REST may show (provinces.md 6.4)."""
        runner = self._cached(match_id)
        return runner.audience_version(SPECTATOR) if runner is not None else None

    async def running_match_ids(self) -> list[str]:
        return await self.repo.running_match_ids()

    async def node_alive(self, node: str) -> bool:
        """Whether ``node`` still runs (always, without a cluster). Raises RedisError."""
        return True if self.cluster is None else await self.cluster.node_alive(node)

    def open_link(self, conn: Peer, match_id: str, owner: str, since_version: int | None, *,
                  answer_seconds: float | None, retry_after: int) -> Link:
        """A socket here for a match that ``owner`` runs (only with a cluster: ``locate`` names an
        owner only then)."""
        assert self.cluster is not None, "a match runs on another node only with a cluster"
        return self.cluster.open_link(conn, match_id, owner, since_version, answer_seconds=answer_seconds,
                                      retry_after=retry_after)

    async def start(self) -> None:
        self.timers.set_callback(self._on_due)
        self.timers.set_owns(self.owns)
        await self.timers.start()
        for match_id in await self.repo.running_match_ids():
            try:
                await self.load(match_id)
            except Exception as exc:
                log_failure(log, exc, "could not recover match %s", match_id)

    def owns(self, match_id: str) -> bool:
        """Whether this node may fire the match's deadlines now: it runs the match and holds a
        lease that is valid on the monotonic clock."""
        if match_id not in self.runners:
            return False
        # one node (local timers drop what they may not fire): the runner itself re-arms a deadline
        # it refuses for want of a lease
        return self.cluster is None or not self.cluster.multi_node or self.cluster.holds(match_id)

    def _holds_lease(self, match_id: str) -> Callable[[], bool] | None:
        cluster = self.cluster
        if cluster is None:
            return None
        return functools.partial(cluster.holds, match_id)  # one object per match (a lambda: three)

    async def stop(self) -> None:
        self._stopping = True
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
        match = match_row(await self.repo.match(match_id))
        if match is None:
            return None, None
        if match["status"] == "running" and self.cluster is not None:
            owned, owner = await self.cluster.claim(match_id)
            if not owned:
                return None, owner
        return await self._load(match_id, owned=True), None

    async def load(self, match_id: str, *, owned: bool = False) -> MatchRunner | None:
        """The runner of ``match_id``: live ones from memory, others rebuilt from the log
        (running matches become live again with their deadlines re-armed). None if no such match,
        or if it is running and another node holds its lease (unless ``owned``: the caller holds it),
        or if it is running under newer rules than this node has (left, its lease released, for a
        node that has them: one warning line per match)."""
        try:
            return await self._load(match_id, owned=owned)
        except RulesUnavailable as exc:
            if match_id not in self._left_for_newer:
                self._left_for_newer.add(match_id)
                log.warning("match %s left running for a node with its rules: %s", match_id, exc)
            return None

    async def _load(self, match_id: str, *, owned: bool) -> MatchRunner | None:
        """:meth:`load`, raising :class:`RulesUnavailable` for a running match of newer rules than
        this node has (:meth:`locate` lets it through: a socket is told to try again)."""
        runner = self._cached(match_id)
        if runner is not None:
            return runner
        entry = self._loading.get(match_id)
        if entry is None:
            entry = self._loading[match_id] = [asyncio.Lock(), 0]
        entry[1] += 1
        try:
            async with entry[0]:
                return await self._load_locked(match_id, owned)
        finally:
            entry[1] -= 1
            if entry[1] == 0 and self._loading.get(match_id) is entry:
                del self._loading[match_id]

    async def _load_locked(self, match_id: str, owned: bool) -> MatchRunner | None:
        runner = self._cached(match_id)
        if runner is not None:
            return runner
        match = match_row(await self.repo.match(match_id))
        if match is None or match["game"] not in registry():
            return None
        epoch = None
        if match["status"] == "running":
            if self.cluster is not None and not owned:
                claimed, _owner = await self.cluster.claim(match_id)
                if not claimed:
                    return None
            try:
                try:
                    engine_of(match)
                except RulesUnavailable as exc:
                    if exc.newer:  # a node not upgraded yet: the match is left to one that is
                        raise
                # the fencing token, committed before the log is read: a stale owner can write no more
                epoch = await self.repo.take_match(match_id, self.node_id)
                if epoch is None:  # ended meanwhile
                    match = match_row(await self.repo.match(match_id))
                    if match is None:
                        return None
                    if self.cluster is not None:
                        self._spawn(self.cluster.release(match_id))
                runner, unplayable = await self._rebuild_or_stand_in(match, epoch=epoch)
            except BaseException:
                if self.cluster is not None:  # let any node (this one included) try again
                    self._spawn(self.cluster.release(match_id))
                raise
        else:
            runner, unplayable = await self._rebuild_or_stand_in(match)
        self._left_for_newer.discard(match_id)
        if match["status"] == "running":
            # (a log whose last record ended the match, its final update lost, replays as ended)
            self.runners[match_id] = runner
            for phase_id, due in runner.deadlines.items():
                if any(p.phase_id == phase_id for p in runner.prompts):
                    self._schedule(match_id, phase_id, due)
            if self.on_match_started:
                self.on_match_started(runner.meta)
            if unplayable is not None and runner.status == "running":
                self._end_unplayable(runner, unplayable)
        else:
            self._remember_finished(runner)
        return runner

    def _cached(self, match_id: str) -> MatchRunner | None:
        return self.runners.get(match_id) or self._finished.get(match_id)

    async def _rebuild_or_stand_in(self, match: MatchRow, *, epoch: int | None = None
                                   ) -> tuple[MatchRunner, tuple[str, str] | None]:
        """The match rebuilt from its durable log by the engine of its rules version, and None; or,
        when no engine here replays it, a runner over a stand-in engine (``versions.unavailable``:
        no prompts, a view saying why) at the log's last version, and (the reason a running one is
        aborted with: :data:`RULES_CHANGED` or :data:`LOG_DOES_NOT_REPLAY`, the sentence why)."""
        actions = log_rows(await self.repo.actions(match["id"]))
        try:
            return self._replayed(match, actions, epoch), None
        except RulesUnavailable as exc:
            return self._stand_in(match, actions, epoch, str(exc)), (RULES_CHANGED, str(exc))
        except ReplayMismatch as exc:
            log.error("match %s (%s rules version %s): its log does not replay: %s", match["id"], match["game"],
                      versions.match_rules_version(match), exc)
            message = ("this match's log does not replay under the rules it was started under "
                       f"({match['game']} rules version {versions.match_rules_version(match)}) on this server")
            return self._stand_in(match, actions, epoch, message), (LOG_DOES_NOT_REPLAY, message)

    def _stand_in(self, match: MatchRow, actions: list[LogRow], epoch: int | None, message: str) -> MatchRunner:
        """A runner over ``versions.unavailable`` at the log's last version: every audience's version
        is that version (never below one a client was sent: an audience's version never exceeds the
        match's), the open phases' deadlines kept only so that an abort cancels their timers."""
        game = versions.unavailable(match["game"], versions.match_rules_version(match), message)
        version = actions[-1]["seq"] if actions else 0
        last = (actions[-1]["deadlines"] if actions else match.get("deadlines")) or {}
        status = match["status"]
        snapshot = start(game, match["seat_count"], None, parsed_deadlines(last) if status == "running" else {},
                         status=status, version=version, versions=[version] * (match["seat_count"] + 1))
        return MatchRunner(
            match=match, game=game, snapshot=snapshot, log_writer=self.log_writer, epoch=epoch,
            holds_lease=self._holds_lease(match["id"]), **self._hooks(),
        )

    def _end_unplayable(self, runner: MatchRunner, why: tuple[str, str]) -> None:
        """End a running match no engine here replays: its abort record (``aborted: <reason>``) is
        written under this node's epoch; once durable its sockets get ``ended`` and the match is
        settled as any aborted match (:attr:`on_match_ended`). A failed write drops the runner and
        the recovery tries again, as for any record."""
        match_id = runner.match_id
        reason, message = why

        def done(exc: BaseException | None) -> None:
            if exc is None:
                log.warning("match %s aborted: %s (%s)", match_id, reason, message)

        try:
            runner.abort(reason, None, done)
        except IllegalAction as exc:  # the lease went meanwhile: the next owner decides the same
            log.warning("match %s not aborted here (%s): %s", match_id, exc.code, exc.message)

    def _replayed(self, match: MatchRow, actions: list[LogRow], epoch: int | None) -> MatchRunner:
        result = replay(match, actions, keep_events=MatchRunner.HISTORY)
        assert isinstance(result.history, EventHistory)
        return MatchRunner(
            match=match, game=result.game, snapshot=result.snapshot, log_writer=self.log_writer,
            history=result.history, client_seqs=result.client_seqs, epoch=epoch,
            holds_lease=self._holds_lease(match["id"]), **self._hooks(),
        )

    def _hooks(self) -> dict[str, Any]:
        """What every runner made here is given alike: the manager's callbacks (``schedule``,
        ``on_finished``, ``cancel``) and how it batches spectators (the loop's ``call_later``), as
        the same objects for every runner (a bound method is a new object at each attribute read:
        each one kept per live match is one more for the cyclic collector to walk)."""
        loop = asyncio.get_running_loop()
        hooks = self._shared_hooks
        if hooks is None or hooks[0] is not loop:
            hooks = self._shared_hooks = (loop, {
                "schedule": self._schedule, "on_finished": self._finished_cb, "cancel": self._cancel,
                "spectator_patch_seconds": self.spectator_patch_seconds, "call_later": loop.call_later})
        return hooks[1]

    async def snapshot(self, match_id: str) -> MatchRunner | None:
        """A match to read (admin): the live runner if here, else a read-only copy rebuilt from the
        durable log (a match running on another node is not taken over by reading it)."""
        runner = self._cached(match_id)
        if runner is not None:
            return runner
        match = match_row(await self.repo.match(match_id))
        if match is None or match["game"] not in registry():
            return None
        if match["status"] != "running":
            return await self.load(match_id)
        runner, _unplayable = await self._rebuild_or_stand_in(match)
        return runner

    async def abort(self, match_id: str, reason: str, by: str | None) -> MatchRunner | None:
        """Abort a running match wherever it runs; returns once the abort record is durable (the
        runner, or a read-only rebuild when another node ran it). None if there is no such match.
        Raises IllegalAction ``match_over`` if it is not running, ``storage_unavailable`` if the
        abort could not be written (the match then goes on, rebuilt from its log), for a
        remote owner ``abort_pending`` if its abort is not durable within ``REMOTE_ABORT_WAIT``, and
        ``rules_unavailable`` for a match of newer rules than this node has (a node that has them
        can abort it)."""
        try:
            runner, owner = await self.locate(match_id)
        except RulesUnavailable as missing:
            raise IllegalAction("rules_unavailable", f"{missing}; abort it on a node that has them") from None
        if runner is None and owner is None:
            return None
        if runner is None:
            assert self.cluster is not None and owner is not None
            self.cluster.send_abort(owner, match_id, reason, by)
            deadline = time.monotonic() + self.REMOTE_ABORT_WAIT
            delay = 0.02
            while time.monotonic() < deadline:
                match = match_row(await self.repo.match(match_id))
                if match is None:
                    return None
                if match["status"] != "running":
                    return await self.snapshot(match_id)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.25)
            raise IllegalAction("abort_pending", "the node running the match did not confirm the abort in time")
        done: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_done(exc: BaseException | None) -> None:
            if not done.done():
                done.set_result(exc)

        runner.abort(reason, by, on_done)
        exc = await done
        if exc is not None:
            raise IllegalAction("storage_unavailable", "the abort could not be saved; try again")
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
        if self.cluster is not None and runner.failure != "fenced":
            self._spawn(self.cluster.release(runner.match_id))
        if runner.failed:
            self.recover(runner.match_id)

    def recover(self, match_id: str) -> None:
        """Rebuild a dropped match from its durable log in the background, with backoff (0.2 s
        doubling to 5 s), until it runs here again, runs on another node, or is no longer running.
        Its deadlines are re-armed by the load. At most one task per match."""
        if match_id in self._recovering or self._stopping:
            return
        self._recovering.add(match_id)
        self._spawn(self._recover(match_id))

    async def _recover(self, match_id: str) -> None:
        delay = self.RECOVERY_FIRST
        try:
            while not self._stopping:
                await asyncio.sleep(delay)
                if match_id in self.runners:
                    return
                try:
                    match = match_row(await self.repo.match(match_id))
                    if match is None or match["status"] != "running":
                        return
                    runner, owner = await self.locate(match_id)
                    if runner is not None or owner is not None:
                        if runner is not None:
                            self.recoveries += 1
                            log.info("match %s rebuilt from its durable log at version %d",
                                     match_id, runner.durable_version)
                        return
                except Exception as exc:
                    log.warning("match %s not recovered yet (%s); retrying in %.1f s",
                                match_id, type(exc).__name__, delay)
                delay = min(delay * 2, self.RECOVERY_MAX)
        finally:
            self._recovering.discard(match_id)

    def lease_lost(self, match_id: str) -> None:
        """Another node may run this match now: drop it here and send its viewers away to reconnect."""
        runner = self.runners.pop(match_id, None)
        if runner is None:
            return
        runner.drop("moved")
        if self.cluster is None or not self.cluster.multi_node:
            self.recover(match_id)  # no other node will: take it back once the lease is free
        text = encode(wire.moved())
        for peer in list(runner.peers):
            peer.push(text)
            peer.close(CLOSE_MOVED, "the match moved; reconnect and resume")

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ deadlines
    def _schedule(self, match_id: str, phase_id: int, due_at: float) -> None:
        self.timers.schedule_now(match_id, phase_id, due_at)

    def _cancel(self, match_id: str, phase_id: int) -> None:
        """A phase ended before its deadline: drop its timer (a late firing would be ignored anyway)."""
        self.timers.cancel_now(match_id, phase_id)

    def _on_due(self, match_id: str, phase_id: int) -> None:
        runner = self.runners.get(match_id)
        if runner is None:
            return
        if phase_id not in runner.deadlines and phase_id not in runner.durable_phases:
            self._cancel(match_id, phase_id)  # the phase ended durably: its entry must not fire again
            return
        due = runner.deadlines.get(phase_id)
        applied = runner.deadline(phase_id)
        if applied:
            self.deadlines_fired += 1
            if due is not None and self.on_deadline_lag is not None:
                self.on_deadline_lag(max(0.0, time.time() - due))

    # ------------------------------------------------------------------ creating
    async def create_match(self, game_id: str, options: dict[str, Any], seats: list[SeatRow],
                           *, lobby_id: str | None = None, seed: bytes | None = None,
                           check_seats: Callable[[list[dict[str, Any]]], None] | None = None,
                           also: MatchInsertHook | None = None) -> MatchRunner:
        """Start a match: a fresh 32-byte seed (its SHA-256 public), the initial state, deadlines armed.
        ``seats``: by seat, ``{"player_id", "name", "bot"}``; with ``lobby_id`` they are read again
        under the lobby's lock (``Repository.start_lobby_match``). Raises LookupError
        (``LobbyRefused``) if the lobby is no longer open or has an empty seat, KeyError for an
        unknown game, or what :attr:`on_match_insert` raises (``LifetimeSpent``; nothing is
        created). ``check_seats(lobby_seats)`` runs under the lobby's lock and may refuse
        (``LobbyRefused``): the options were computed from the seats read before it. ``also(conn,
        match)`` runs in the transaction that inserts the match, after :attr:`on_match_insert`
        (a lobby start keeps its idempotency key there).

        The lease is taken before the match row exists, so no other node's takeover scan can take a
        match that is still being created."""
        game = registry()[game_id]
        seed = seed or secrets.token_bytes(32)
        opts = game.Options.model_validate(options)
        state = game.setup(len(seats), opts, seed)
        now = time.time()
        prompts = game.prompts(state)
        deadlines: dict[int, float] = {}
        for p in prompts:
            deadlines[p.phase_id] = max(deadlines.get(p.phase_id, 0.0), now + p.deadline_seconds)
        match: MatchRow = {
            "id": uuid.uuid4().hex, "game": game_id, "options": opts.model_dump(mode="json"),
            "seat_count": len(seats), "seats": seats, "seed": seed.hex(), "seed_hash": seed_commitment(seed),
            "status": "running", "lobby_id": lobby_id, "deadlines": {str(k): v for k, v in deadlines.items()},
            "outcome": None, "version": 0, "created_at": now, "ended_at": None,
            "owner_epoch": 1, "owner_node": self.node_id, "rules_version": game.info.rules_version,
        }
        if self.cluster is not None:
            owned, _owner = await self.cluster.claim(match["id"])
            if not owned:  # a fresh random id: only a broken lease store gets here
                raise RuntimeError(f"could not take the lease of new match {match['id']}")
        try:
            hook = _both(self.on_match_insert, also)
            if lobby_id is None:
                await self.repo.create_match(dict(match), also=hook)
            else:  # seats as read under the lobby's lock (only their count was needed above: it is fixed)
                base = match
                started = await self.repo.start_lobby_match(lobby_id, lambda locked: {**base, "seats": locked},
                                                            check_seats, also=hook, match_id=base["id"])
                match = cast(MatchRow, started)
        except BaseException:
            if self.cluster is not None:
                await self.cluster.release(match["id"])
            raise
        runner = MatchRunner(match=match, game=game, state=state, version=0, log_writer=self.log_writer,
                             deadlines=deadlines, epoch=1, holds_lease=self._holds_lease(match["id"]),
                             **self._hooks())
        self.runners[match["id"]] = runner
        for phase_id, due in deadlines.items():
            self._schedule(match["id"], phase_id, due)
        if self.on_match_started:
            self.on_match_started(match)
        return runner
