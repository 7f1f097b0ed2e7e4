"""In-memory twins for runtime unit tests: a log writer that commits when told, peers that record."""
from __future__ import annotations

import json
from typing import Any, Callable, cast

from app.runtime.logwriter import LogWriter
from app.runtime.match import MatchRunner
from app.runtime.rows import MatchRow


class FakeLogWriter:
    """Holds submitted records until :meth:`commit` (or :meth:`fail`) is called, like a slow database."""

    def __init__(self) -> None:
        self.pending: list[tuple[dict, dict | None, Callable]] = []
        self.rows: list[dict] = []
        self.updates: list[dict] = []

    def submit(self, stream, row, match_update, on_durable) -> None:
        self.pending.append((row, match_update, on_durable))

    def commit(self) -> int:
        batch, self.pending = self.pending, []
        for row, upd, _cb in batch:
            self.rows.append(row)
            if upd:
                self.updates.append(upd)
        for _row, _upd, cb in batch:
            cb(None)
        return len(batch)

    def fail(self, exc: BaseException) -> None:
        batch, self.pending = self.pending, []
        for _row, _upd, cb in batch:
            cb(exc)


class FakePeer:
    def __init__(self, viewer: int, player_id: str | None = None, *, deltas: bool = False) -> None:
        self.viewer = viewer
        self.player_id = player_id
        self.sent_version = 0
        #: full states by default (runner tests read views); ``deltas=True`` as a socket's default
        self.deltas = deltas
        self.messages: list[dict[str, Any]] = []
        self.closed: tuple[int, str] | None = None

    def push(self, text: str) -> None:
        self.messages.append(json.loads(text))

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == kind]


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def make_runner(game, seats: int, options: dict | None = None, seed: bytes = b"s" * 32, *, clock: Clock | None = None,
                state=None):
    """A MatchRunner over the in-memory twins; returns (runner, log_writer, scheduled, finished).
    ``state``: a position to start from (a test position; by default the game's setup)."""
    if state is None:
        state = game.setup(seats, game.Options.model_validate(options or {}), seed)
    writer = FakeLogWriter()
    scheduled: list[tuple[str, int, float]] = []
    finished: list[MatchRunner] = []
    clock = clock or Clock()
    match = {"id": "m1", "game": game.id, "seed": seed.hex(), "seed_hash": "h", "seat_count": seats,
             "seats": [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(seats)],
             "options": options or {}}
    deadlines = {}
    for p in game.prompts(state):
        deadlines[p.phase_id] = clock() + p.deadline_seconds
    runner = MatchRunner(match=cast(MatchRow, match), game=game, state=state, version=0, deadlines=deadlines,
                         log_writer=cast(LogWriter, writer),  # the in-memory twin, duck-typed
                         schedule=lambda m, ph, due: scheduled.append((m, ph, due)),
                         on_finished=finished.append, now=clock)
    return runner, writer, scheduled, finished
