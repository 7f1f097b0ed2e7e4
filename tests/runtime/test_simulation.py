"""A deterministic simulation of the runtime (Hypothesis stateful testing over the twins of
``tests/runtime/simulation.py``): actions, deadline expiries and faults — a failed or slow commit,
a lost lease, a paused owner resuming and writing, a dropped pub/sub message, a clock step — in any
order, and after every step the invariants of ``/work/shared/DESIGN.md``:

- the match's records are durable in sequence (1, 2, 3 … with no gap), each under the epoch the
  database held when it was written (no record under an old epoch);
- every deadline exactly once: no seat gets two defaults in one phase, and while nothing is being
  committed every open phase of the owner has its timer armed;
- every ack is durable: each ``ack`` a socket got names a record of the durable log and the
  seat's audience version after it;
- runner equals replay: the owner's durable snapshot is the snapshot the step derives from the
  durable log (versions and documents included), and every socket that holds its audience's
  version holds its document;
- no leak: an ended match has no timer left and no duplicate waiting, and a socket's document
  is the one its audience may see.

Examples: ``BANNERFALL_SIM_EXAMPLES`` (default 2000, the CI run; ``docs/runtime.md`` has the
nightly size), steps per example ``BANNERFALL_SIM_STEPS`` (default 25). A failure shrinks to a
short sequence of rules and is replayed with the seed pytest prints (``--hypothesis-seed=N``) or
the ``@reproduce_failure`` blob Hypothesis prints."""
from __future__ import annotations

import os
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from app.games import registry
from app.games.base import ADMIN, SPECTATOR
from app.runtime.history import EventHistory
from app.runtime.match import MatchRunner
from app.runtime.replay import parsed_deadlines
from app.runtime.step import Snapshot, apply_record, start
from app.testing.play import random_step
from tests.runtime.simulation import World

#: a long random run whose every line is reached by targeted tests too: not measured for coverage
#: (measured, it took twice as long; docs/decisions.md, "Coverage floor")
pytestmark = pytest.mark.no_cover
EXAMPLES = int(os.environ.get("BANNERFALL_SIM_EXAMPLES", "2000"))
STEPS = int(os.environ.get("BANNERFALL_SIM_STEPS", "25"))
#: every slot of a snapshot but the engine and the book (the same objects by construction)
COMPARED = [name for name in Snapshot.__slots__ if name not in ("game", "book", "state")]


class Reference:
    """The durable log followed record by record with the step alone (nothing of the runner): the
    snapshot after it, each seat's client seq -> audience version, and (phase, seat) of every
    default applied."""

    def __init__(self, world: World) -> None:
        game, match = world.game, world.match
        self.snapshot = start(game, match["seat_count"], world.initial_state, parsed_deadlines(match["deadlines"]))
        self.history = EventHistory(MatchRunner.HISTORY, len(self.snapshot.versions), (), self.snapshot.versions)
        self.acks: dict[tuple[int, int], int] = {}
        self.defaults: set[tuple[int, int]] = set()
        self.seen = 0

    def follow(self, world: World) -> None:
        for row in world.db.rows[self.seen:]:
            before = self.snapshot
            if row["kind"] == "deadline":
                seat = row["seat"]
                assert seat is not None
                phase = next(p.phase_id for p in before.prompts if p.seat == seat)
                assert (phase, seat) not in self.defaults, f"seat {seat} got two defaults in phase {phase}"
                self.defaults.add((phase, seat))
            self.snapshot, effects = apply_record(before, row, ())
            self.history.append(self.snapshot.version, effects.events, self.snapshot.versions)
            if row["client_seq"] is not None and row["seat"] is not None:
                self.acks[(row["seat"], row["client_seq"])] = self.snapshot.versions[row["seat"]]
            self.seen += 1


class RuntimeSimulation(RuleBasedStateMachine):
    world: World
    ref: Reference

    @initialize(game_id=st.sampled_from(sorted(registry())), more_seats=st.integers(0, 2),
                seed=st.binary(min_size=4, max_size=4))
    def setup(self, game_id: str, more_seats: int, seed: bytes) -> None:
        game = registry()[game_id]
        seats = min(game.info.min_seats + more_seats, game.info.max_seats)
        self.world = World(game, seats, seed * 8)
        self.ref = Reference(self.world)
        self.seq = 0
        self.world.attach(SPECTATOR, True)

    # ------------------------------------------------------------------ actions
    @rule(pick=st.integers(0, 2**32 - 1), with_version=st.sampled_from(["none", "current", "old"]))
    def act(self, pick: int, with_version: str) -> None:
        world = self.world
        runner = world.owner()
        if runner is None or runner.status != "running":
            return
        step = random_step(world.game, runner.state, world.seats, random.Random(pick))
        if step is None:
            return
        seat, action = step
        peer = world.peer_for(seat)
        if runner.seat_peers.get(seat) is not peer:
            world.resume(peer)
        self.seq += 1
        version = {"none": None, "current": runner.applied.versions[seat],
                   "old": max(0, runner.applied.versions[seat] - 3)}[with_version]
        runner.act(peer, self.seq, action, version)

    @rule()
    def resend_last_action(self) -> None:
        """The same ``act`` again (a client that resends after a reconnect): answered, not applied twice."""
        runner = self.world.owner()
        if runner is None or not self.world.db.rows:
            return
        last = self.world.db.rows[-1]
        if last["client_seq"] is None or last["seat"] is None:
            return
        before = runner.version
        peer = self.world.peer_for(last["seat"])
        runner.act(peer, last["client_seq"], last["action"])
        assert runner.version == before, "a duplicate client seq was applied again"

    @rule(roll=st.integers(0, 9))
    def abort(self, roll: int) -> None:
        runner = self.world.owner()
        if roll == 0 and runner is not None and runner.status == "running":
            runner.abort("simulation", "admin")

    # ------------------------------------------------------------------ the log
    @rule(n=st.integers(1, 4))
    def commit(self, n: int) -> None:
        self.world.writer.commit(n)

    @rule(n=st.integers(1, 3))
    def commit_fails(self, n: int) -> None:
        """The database stays down past the retries for the next ``n`` records."""
        self.world.writer.fail(n)

    # ------------------------------------------------------------------ time
    @rule()
    def deadlines_expire(self) -> None:
        world = self.world
        if world.timers.entries:
            world.clock.t = max(world.clock.t, min(world.timers.entries.values()))
        world.fire_due()

    @rule(step=st.sampled_from([-5.0, 0.5, 30.0, 900.0]))
    def clock_step(self, step: float) -> None:
        self.world.clock.t += step
        self.world.fire_due()

    # ------------------------------------------------------------------ ownership
    @rule()
    def lease_lost(self) -> None:
        """The owner pauses past its lease; the other node takes the match (a higher epoch)."""
        self.world.lose_lease()

    @precondition(lambda self: bool(self.world.paused))
    @rule(pick=st.integers(0, 2**32 - 1))
    def paused_owner_writes(self, pick: int) -> None:
        """The paused owner runs again before it knows: it applies an action or a deadline and
        hands the record to the log writer, which the database must refuse."""
        world = self.world
        runner = world.stale()
        if runner is None or runner.status != "running":
            return
        rng = random.Random(pick)
        if rng.random() < 0.5 and runner.prompts:
            phase = runner.prompts[0].phase_id
            world.clock.t = max(world.clock.t, runner.deadlines.get(phase, world.clock.t))
            runner.deadline(phase)
            return
        step = random_step(world.game, runner.state, world.seats, rng)
        if step is not None:
            self.seq += 1
            runner.act(world.peer_for(step[0]), self.seq, step[1])

    @precondition(lambda self: bool(self.world.paused))
    @rule()
    def paused_owner_wakes(self) -> None:
        self.world.wake()

    # ------------------------------------------------------------------ sockets
    @rule(index=st.integers(0, 7))
    def message_dropped(self, index: int) -> None:
        peers = self.world.peers
        peers[index % len(peers)].drop_next = True

    @rule(index=st.integers(0, 7))
    def socket_resumes(self, index: int) -> None:
        peers = self.world.peers
        self.world.resume(peers[index % len(peers)])

    # ------------------------------------------------------------------ invariants
    @invariant()
    def records_durable_in_sequence_under_the_current_epoch(self) -> None:
        db = self.world.db
        assert [r["seq"] for r in db.rows] == list(range(1, len(db.rows) + 1))
        assert db.written_under == sorted(db.written_under), "a record under an older epoch after a newer one"
        assert all(e <= db.epoch for e in db.written_under)

    @invariant()
    def runner_equals_replay(self) -> None:
        world = self.world
        self.ref.follow(world)  # also: no seat gets two defaults in one phase
        runner = world.owner()
        if runner is None or runner.durable.version != len(world.db.rows):
            return
        live, derived = runner.durable, self.ref.snapshot
        for name in COMPARED:  # the documents hold every audience's view of the state
            assert getattr(live, name) == getattr(derived, name), (name, getattr(live, name), getattr(derived, name))

    @invariant()
    def every_ack_is_durable(self) -> None:
        self.ref.follow(self.world)
        for peer in self.world.peers:
            for seq, version in peer.acks:
                assert self.ref.acks.get((peer.viewer, seq)) == version, (peer.viewer, seq, version)

    @invariant()
    def every_open_phase_has_its_deadline(self) -> None:
        world = self.world
        runner = world.owner()
        if runner is None or world.writer.pending or runner.durable.status != "running":
            return
        for phase in runner.durable.deadlines:
            assert ("sim", phase) in world.timers.entries, f"phase {phase} has no timer armed"

    @invariant()
    def sockets_hold_their_documents_and_nothing_leaks(self) -> None:
        world = self.world
        runner = world.owner()
        if runner is None:
            return
        for peer in world.peers:
            attached = runner.seat_peers.get(peer.viewer) is peer if peer.viewer >= 0 else peer in runner.spectators
            if attached and not peer.lost and peer.version == runner.audience_version(peer.viewer):
                assert peer.doc == runner.document(peer.viewer), f"viewer {peer.viewer} at v{peer.version}"
        if world.db.update is not None and not world.writer.pending:
            assert not world.timers.entries, f"timers left after the end: {world.timers.entries}"
            assert not runner._waiters, "a duplicate still waits after the end"

    def teardown(self) -> None:
        world = getattr(self, "world", None)
        if world is None:
            return
        world.writer.commit(len(world.writer.pending))
        self.ref.follow(world)
        runner = world.owner()
        if runner is not None and runner.durable.version == len(world.db.rows):
            # the events history the runner resumes sockets from, and the admin's view
            assert list(self.ref.history) == list(runner.history), "the events history differs"
            assert self.ref.history.floor == runner.history.floor
            assert world.game.view(runner.durable.state, ADMIN) == world.game.view(self.ref.snapshot.state, ADMIN)


def _settings(**extra: Any) -> settings:
    return settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], **extra)


RuntimeSimulation.TestCase.settings = _settings()
test_runtime_simulation = RuntimeSimulation.TestCase
