"""Runner equals replay: for every game, a live runner driven by the conformance suite's random play
(actions, deadline defaults, commits in batches, now and then an abort) holds, record for record,
the snapshot a replay of its log derives — versions and documents included — and the same events
history and dedupe cache. The one step (``app/runtime/step.py``) is what both call."""
from __future__ import annotations

import random
from typing import Any, cast

import pytest

from app.games import registry
from app.games.base import ADMIN, SPECTATOR
from app.parts import to_json
from app.runtime.history import EventHistory
from app.runtime.match import MatchRunner
from app.runtime.replay import replay
from app.runtime.rows import LogRow, MatchRow
from app.runtime.step import Snapshot
from app.runtime.wire import status_part
from app.testing.conformance import seat_counts
from app.testing.play import random_step
from tests.runtime.twins import Clock, FakePeer, make_runner

#: every slot of a snapshot but the engine and the book (the same objects by construction)
FIELDS = [name for name in Snapshot.__slots__ if name not in ("game", "book")]


def snapshot_problems(live: Snapshot, replayed: Snapshot) -> list[str]:
    """Where two snapshots differ (prompts compared as values, the state through every view)."""
    problems = [f"{name}: live {getattr(live, name)!r} != replay {getattr(replayed, name)!r}"
                for name in FIELDS if name != "state" and getattr(live, name) != getattr(replayed, name)]
    game = live.game
    seats = len(live.versions) - 1
    for viewer in (*range(seats), SPECTATOR, ADMIN):
        if game.view(live.state, viewer) != game.view(replayed.state, viewer):
            problems.append(f"state: viewer {viewer}'s view differs")
    return problems


def match_row(runner: MatchRunner, initial: dict[int, float]) -> MatchRow:
    return cast(MatchRow, {**runner.meta, "deadlines": {str(k): v for k, v in initial.items()}})


def drive(game: Any, seats: int, seed: int, *, steps: int = 400) -> tuple[MatchRunner, Any, dict[int, float], int]:
    """A runner played at random: acts (with and without ``version``), deadlines once due, commits
    of 1–3 records at once, an abort in one match of 8. Returns (runner, writer, initial deadlines,
    records compared along the way)."""
    rng = random.Random(seed)
    clock = Clock()
    options = dict(game.info.test_options)
    runner, writer, _scheduled, _finished = make_runner(game, seats, options, seed=b"%032d" % seed, clock=clock)
    initial = dict(runner.deadlines)
    peers = {s: FakePeer(s, deltas=rng.random() < 0.5) for s in range(seats)}
    for peer in peers.values():
        runner.attach(peer)
    runner.attach(FakePeer(SPECTATOR, deltas=True))
    abort_at = rng.randrange(5, 60) if rng.random() < 0.125 else None
    compared = 0
    for seq in range(1, steps):
        if runner.status != "running":
            break
        clock.t += rng.choice((0.5, 5.0, 60.0))
        roll = rng.random()
        if abort_at is not None and runner.version >= abort_at:
            runner.abort("test", "admin")
        elif roll < 0.15 and runner.prompts:
            phase = runner.prompts[0].phase_id
            clock.t = max(clock.t, runner.deadlines.get(phase, clock.t))
            runner.deadline(phase)
        else:
            step = random_step(game, runner.state, seats, rng)
            if step is None:
                break
            seat, action = step
            version = runner.applied.versions[seat] if rng.random() < 0.5 else None
            runner.act(peers[seat], seq, action, version)
        if len(writer.pending) >= rng.randint(1, 3) or runner.status != "running":
            writer.commit()
            if rng.random() < 0.2:  # the rebuild of this node, at this record
                result = replay(match_row(runner, initial), cast(list[LogRow], writer.rows),
                                keep_events=MatchRunner.HISTORY)
                problems = snapshot_problems(runner.durable, result.snapshot)
                assert not problems, (game.id, seed, runner.durable.version, problems)
                compared += 1
    writer.commit()
    return runner, writer, initial, compared


@pytest.mark.parametrize("game_id", list(registry()))
def test_the_live_runner_equals_the_replay_of_its_log(game_id):
    game = registry()[game_id]
    compared = 0
    ended = 0
    for seed, seats in enumerate(seat_counts(game) * 2):
        runner, writer, initial, along = drive(game, seats, seed)
        compared += along
        result = replay(match_row(runner, initial), cast(list[LogRow], writer.rows), keep_events=MatchRunner.HISTORY)
        assert runner.durable is runner.applied  # everything committed
        problems = snapshot_problems(runner.durable, result.snapshot)
        assert not problems, (game_id, seed, problems)
        # the documents as viewers get them, and the events history they resume from
        replayed = result.snapshot
        for viewer in (*range(seats), SPECTATOR):
            assert runner.document(viewer) == to_json(replayed.docs[runner.book.index(viewer)])
        admin = runner.book.document(replayed.state, ADMIN, status_part(replayed.status), replayed.prompts_part)
        assert runner.document(ADMIN) == to_json(admin)
        assert isinstance(result.history, EventHistory)
        assert list(result.history) == list(runner.history)
        assert result.history.floor == runner.history.floor
        for seat, seqs in result.client_seqs.items():
            for cseq, version in seqs.items():
                kept = runner._recent.get(seat, cseq)
                assert kept is None or kept == version, (seat, cseq)
        # the log's deadlines are the ones the step derives (``bannerfall verify`` checks it too)
        from app.runtime.replay import deadline_disagreements

        assert deadline_disagreements(match_row(runner, initial), cast(list[LogRow], writer.rows)) == []
        ended += runner.status != "running"
        compared += 1
    assert ended, f"{game_id}: no match ended: the random play never reached an end"
    assert compared
