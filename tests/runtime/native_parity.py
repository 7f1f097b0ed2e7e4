"""Seeded matches through the runtime, every message to every viewer digested: run once on the ``.py``
sources and once on the compiled modules (``app/_native.py``), the digests must be equal.

``python -m tests.runtime.native_parity`` prints one JSON line: ``{"status": app._native.STATUS,
"compiled": [modules loaded from a C extension], "digests": {case: sha256}, "records": {case: n}}``.
:func:`digests` is the same measurement in-process (``tests/runtime/test_native.py`` runs both).

Each case plays a seeded match of random legal actions (the conformance tests' ``random_step``) through
a :class:`~app.runtime.match.MatchRunner` whose records are durable at once; a socket twin per seat
(deltas), one taking full states, a spectator and an admin record every text they are pushed, and
now and then a seat socket re-attaches with a ``since_version`` a few versions back (``resume``: the
event history). The digest covers every text each socket got, in order, and every audience's version after
every record: the views, the diffs, the encoding and the history, byte for byte.
"""
from __future__ import annotations

import hashlib
import json
import random
from typing import Any, cast

#: (case name, game id, seats, options) — Conquest with every special in both loadouts too
CASES: tuple[tuple[str, str, int, dict[str, Any] | None], ...] = (
    ("provinces-3", "provinces", 3, None),
    ("provinces-4", "provinces", 4, None),
    ("conquest-4", "conquest", 4, None),
    ("conquest-specials-2", "conquest", 2, {"specials": True}),
    ("warrior-3", "warrior", 3, None),
    ("warrior-4", "warrior", 4, None),
)


class _Peer:
    """A socket twin: what it was sent, in order (the order between sockets is not the protocol's)."""

    def __init__(self, viewer: int, deltas: bool, peers: list[_Peer]) -> None:
        self.viewer = viewer
        self.player_id: str | None = f"p{viewer}"
        self.sent_version = 0
        self.deltas = deltas
        self.log = hashlib.sha256(b"%d %d" % (viewer, deltas))
        peers.append(self)

    def push(self, text: str) -> None:
        self.log.update(text.encode())
        self.log.update(b"\n")

    def close(self, code: int, reason: str) -> None:
        self.log.update(b"close %d\n" % code)


class _Writer:
    """Every record is durable as soon as it is submitted (a commit of one)."""

    def submit(self, stream: Any, row: Any, match_update: Any, on_durable: Any) -> None:
        on_durable(None)


def _options(game: Any, seats: int, options: dict[str, Any] | None) -> dict[str, Any] | None:
    if options and options.get("specials"):
        from app.games.conquest.specials import SPECIALS

        return {"loadouts": [list(SPECIALS) for _ in range(seats)]}
    return options


def play_case(name: str, game_id: str, seats: int, options: dict[str, Any] | None, seed: int,
              limit: int) -> tuple[str, int]:
    """One seeded match of at most ``limit`` records: (sha256 of everything sent, records)."""
    from app.games import registry
    from app.games.base import ADMIN, SPECTATOR
    from app.runtime.match import MatchRunner
    from tests.games.test_conformance import random_step

    game = registry()[game_id]
    match_seed = b"native-%s-%d" % (name.encode(), seed)
    state = game.setup(seats, _options(game, seats, options), match_seed)
    meta = {"id": name, "game": game_id, "seed": match_seed.hex(), "seed_hash": "h", "seat_count": seats,
            "options": {}, "seats": [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(seats)]}
    runner = MatchRunner(match=cast(Any, meta), game=game, state=state, version=0, deadlines={},
                         log_writer=cast(Any, _Writer()), schedule=lambda m, p, d: None,
                         on_finished=lambda r: None, now=lambda: 1_000_000.0)
    log = hashlib.sha256()  # the audiences' versions after every record
    every: list[_Peer] = []  # every socket twin, in the order they were made
    peers = [_Peer(seat, True, every) for seat in range(seats)]
    for peer in peers:
        runner.attach(peer, from_hello=True)
    for extra in (_Peer(SPECTATOR, True, every), _Peer(ADMIN, True, every)):
        runner.attach(extra, from_hello=True)
    full = _Peer(0, False, every)  # seat 0 again, taking full states (replaces the first socket)
    runner.attach(full, from_hello=True)
    peers[0] = full
    rng = random.Random(match_seed)
    records = 0
    for k in range(limit):
        if game.outcome(runner.state) is not None:
            break
        step = random_step(game, runner.state, seats, rng, verify=False)
        if step is None:
            break
        seat, action = step
        runner.act(peers[seat], k, action)
        records = runner.version
        log.update(json.dumps(runner.applied.versions).encode())
        if k % 37 == 36:  # a socket comes back a few versions back: the events it missed, from the history
            back = _Peer(seat, seat != 0, every)
            runner.attach(back, since_version=max(0, peers[seat].sent_version - 3))
            peers[seat] = back
    for peer in every:
        log.update(peer.log.digest())
    return log.hexdigest(), records


def digests(seeds: int = 3, limit: int = 400) -> dict[str, Any]:
    """``{"digests": {case-seed: sha256}, "records": {case-seed: records}, "cyclic": {type: count}}``
    for every case of :data:`CASES`; ``cyclic``: the objects left in reference cycles by all the
    matches (the collector is off while they play; a closure compiled by mypyc is such a cycle)."""
    import collections
    import gc

    out: dict[str, Any] = {"digests": {}, "records": {}}
    for name, game_id, seats, options in CASES:  # warm-up: imports and lazily made caches are cyclic
        play_case(name, game_id, seats, options, seeds, 30)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage, to be named
    try:
        for name, game_id, seats, options in CASES:
            for seed in range(seeds):
                digest, records = play_case(name, game_id, seats, options, seed, limit)
                out["digests"][f"{name}-{seed}"] = digest
                out["records"][f"{name}-{seed}"] = records
        gc.collect()
        out["cyclic"] = dict(collections.Counter(
            f"{getattr(type(o), '__module__', '?')}.{type(o).__qualname__}" for o in gc.garbage))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return out


def main() -> None:
    import sys

    import app._native as native

    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    result = digests(seeds, limit)
    loaded = [name for name in native.COMPILED if native.compiled(sys.modules.get(name))]
    print(json.dumps({"status": native.install(), "compiled": loaded, **result}))


if __name__ == "__main__":
    main()
