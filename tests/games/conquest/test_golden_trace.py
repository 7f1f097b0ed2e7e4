"""Golden trace: seeded bot matches replayed step by step must produce, byte for byte, the same
actions, events, prompts, views (every seat, a spectator, the admin), hidden token sets, outcome
and answers to a fixed set of probe actions as when the golden file was recorded.

It guards the engine's optimisations: a faster ``apply`` or ``view`` must not change anything a
client, a replay or a log could observe. Each step's JSON is hashed with sha256 and the golden file
(``golden/trace.json``) stores the digests per match, so a failure names the first step that
differs (the first 16 hex digits of each digest are kept: a small file, and a chance of 2**-64
that a changed step goes unnoticed). Regenerate it only for an intended behaviour change, with
every game's playthrough (``tests/playthroughs/``; a rules change also raises the rules version):

    python -m tests.playthroughs.record
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator

from app.games.base import ADMIN, SPECTATOR, IllegalAction
from app.games.conquest import GAME
from app.games.conquest.bots import RandomBot, SensibleBot

GOLDEN = Path(__file__).parent / "golden" / "trace.json"

#: Short matches for a few seeds so that every ending (tables to win, last standing, max rounds)
#: and low-mana play (technical folds) is covered.
_OPTIONS = {
    3: {"max_rounds": 6},
    7: {"starting_mana": 3},
    11: {"tables_to_win": 4},
    16: {"starting_mana": 4, "max_rounds": 10},
}


def cases() -> list[tuple[str, int, dict[str, Any] | None, list[Any]]]:
    """20 matches: (name, seats, options, bots). Seats 2, 3, 4 in turn; random, sensible and
    mixed bots."""
    out = []
    for n in range(20):
        seats = 2 + n % 3
        mix = n % 3 if n < 9 else (n // 3) % 3
        bots = []
        for k in range(seats):
            sensible = mix == 1 or (mix == 2 and k % 2 == 1)
            bots.append(SensibleBot(100 * n + k, samples=20) if sensible else RandomBot(100 * n + k))
        out.append((f"golden-{n}", seats, _OPTIONS.get(n), bots))
    return out


def _json(value: Any) -> str:
    # key order is part of the wire bytes: no sort_keys
    return json.dumps(value, separators=(",", ":"))


def _wire_prompt(prompt) -> dict[str, Any]:
    return {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
            "submitted": prompt.submitted, "simultaneous": prompt.simultaneous}


def _probes(state) -> list[tuple[int, Any]]:
    """Actions tried (and thrown away) at every step: mostly illegal, some legal."""
    size = state.board.size
    lands = list(range(size))
    probes: list[tuple[int, Any]] = []
    for seat in range(state.seats):
        probes += [
            (seat, {"type": "orders", "attack": [0]}),
            (seat, {"type": "orders", "attack": [size - 1, 1]}),
            (seat, {"type": "defend", "lands": lands[:2]}),
            (seat, {"type": "defend", "lands": []}),
            (seat, {"type": "assign", "hands": {}}),
            (seat, {"type": "decide", "folds": lands[:size // 2]}),
            (seat, {"type": "decide", "folds": []}),
        ]
    probes += [(state.seats, {"type": "orders", "attack": []}), (0, {"type": "bogus"})]
    return probes


def _step(state, seat: int | None, action: Any, events) -> str:
    viewers = list(range(state.seats)) + [SPECTATOR, ADMIN]
    probe_results: list[list] = []
    for probe_seat, probe in _probes(state):
        try:
            _, probe_events = GAME.apply(state, probe_seat, probe)
        except IllegalAction as exc:
            probe_results.append(["illegal", exc.code, exc.message])
        else:
            probe_results.append(["ok", [[e.to_wire(), sorted(e.audience or ())] for e in probe_events]])
    outcome = GAME.outcome(state)
    record = {
        "seat": seat,
        "action": action,
        "events": [[e.to_wire(), None if e.audience is None else sorted(e.audience)] for e in events],
        "prompts": [[p.seat, p.kind, p.phase_id, p.deadline_seconds, p.default_action, p.simultaneous,
                     p.submitted] for p in GAME.prompts(state)],
        "views": {str(v): GAME.view(state, v) for v in viewers},
        "hidden": {str(v): sorted(GAME.hidden_tokens(state, v)) for v in viewers},
        "outcome": None if outcome is None else outcome.to_wire(),
        "probes": probe_results,
    }
    return _json(record)


def trace(seats: int, options: dict[str, Any] | None, seed: bytes, bots: list[Any]) -> Iterator[str]:
    """The JSON of every step of one bot match: the state after setup, then after each action."""
    state = GAME.setup(seats, options, seed)
    yield _step(state, None, None, [])
    while GAME.outcome(state) is None:
        prompt = next(p for p in GAME.prompts(state) if not p.submitted)
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), _wire_prompt(prompt))
        state, events = GAME.apply(state, prompt.seat, action)
        yield _step(state, prompt.seat, action, events)


def digest(step: str) -> str:
    return hashlib.sha256(step.encode()).hexdigest()[:16]


def digests() -> dict[str, list[str]]:
    return {name: [digest(step) for step in trace(seats, options, name.encode(), bots)]
            for name, seats, options, bots in cases()}


def test_golden_trace_is_unchanged():
    golden = json.loads(GOLDEN.read_text())
    for name, seats, options, bots in cases():
        expected = golden[name]
        steps = 0
        for n, step in enumerate(trace(seats, options, name.encode(), bots)):
            assert n < len(expected), f"{name}: the match runs longer than recorded ({len(expected)} steps)"
            assert digest(step) == expected[n], f"{name}: step {n} differs from the golden trace:\n{step[:2000]}"
            steps += 1
        assert steps == len(expected), f"{name}: the match ends after {steps} steps, not {len(expected)}"


def write() -> None:
    """Record the golden file again (also done by ``python -m tests.playthroughs.record``)."""
    GOLDEN.parent.mkdir(exist_ok=True)
    data = digests()
    GOLDEN.write_text("{\n" + ",\n".join(f"  {json.dumps(name)}: {json.dumps(values)}"
                                          for name, values in data.items()) + "\n}\n")
    print(f"wrote {GOLDEN}: {sum(map(len, data.values()))} steps in {len(data)} matches")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.games.conquest.test_golden_trace --write")
    write()
