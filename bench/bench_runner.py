"""The runtime's CPU per action in-process (issue 11): ``python bench/bench_runner.py``.

What a node does for one accepted action besides the network and the database: ``MatchRunner.act``
(checks, ``Game.apply``, prompts and deadlines, the audiences' documents and patches, the event
history) and, once the record is "durable", the broadcast (each audience's ``delta`` encoded once,
pushed to its socket) and the ``ack``. The sockets are twins that only count bytes; the log writer
is a twin that makes each round's records durable at once, as one group commit would.

1. for each game, plays ``--matches`` seeded matches of 4 seats with random legal actions (the
   conformance tests' ``random_step``: prompted seats mostly) and records each ``(seat, action)``;
2. replays them through fresh runners, ``--matches`` at once, one action per match per round (as the
   benchmark's closed loop does), every seat with a socket that takes deltas; ``--repeat`` times,
   and prints the best CPU µs per action (``time.process_time``).

``--tree DIR`` runs another checkout the same way, alternating, for an A/B in one run (as
``bench_audiences.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from typing import Any, cast

HERE = os.path.dirname(os.path.abspath(__file__))


def use_tree(tree: str) -> None:
    """Import ``app`` (and ``tests``) from ``tree``, not from the checkout of the venv's editable install."""
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
    sys.path.insert(0, tree)


class CountingPeer:
    """A socket twin: counts what it is sent."""

    def __init__(self, viewer: int) -> None:
        self.viewer = viewer
        self.player_id = f"p{viewer}"
        self.sent_version = 0
        self.deltas = True
        self.bytes = 0
        self.messages = 0
        self.errors = 0

    def push(self, text: str) -> None:
        self.bytes += len(text)
        self.messages += 1
        if text.startswith('{"type":"error"'):
            self.errors += 1

    def close(self, code: int, reason: str) -> None:
        pass


class RoundWriter:
    """A log writer twin: records wait for :meth:`commit` (one group commit per round)."""

    def __init__(self) -> None:
        self.pending: list[Any] = []

    def submit(self, stream: Any, row: Any, match_update: Any, on_durable: Any) -> None:
        self.pending.append(on_durable)

    def commit(self) -> None:
        batch, self.pending = self.pending, []
        for callback in batch:
            callback(None)


def scripts(game: Any, matches: int, limit: int) -> list[tuple[bytes, list[tuple[int, dict[str, Any]]]]]:
    """``matches`` seeded random plays: (seed, [(seat, action)]) of at most ``limit`` actions."""
    from tests.games.test_conformance import random_step

    out = []
    for i in range(matches):
        seed = b"runner-%s-%d" % (game.info.id.encode(), i)
        rng = random.Random(seed)
        state = game.setup(4, None, seed)
        steps = []
        while game.outcome(state) is None and len(steps) < limit:
            step = random_step(game, state, 4, rng, verify=False)
            if step is None:
                break
            state, _ = game.apply(state, *step)
            steps.append(step)
        out.append((seed, steps))
    return out


def measure(games: list[str], matches: int, limit: int, repeat: int) -> dict[str, dict[str, float]]:
    use_tree(os.getcwd())
    from app.games import registry
    from app.runtime.match import MatchRunner
    from app.runtime.rows import MatchRow

    out: dict[str, dict[str, float]] = {}
    for game_id in games:
        game = registry()[game_id]
        plays = scripts(game, matches, limit)
        best = float("inf")
        actions = sent = errors = 0
        for _ in range(repeat):
            writer = RoundWriter()
            runners = []
            for seed, steps in plays:
                state = game.setup(4, None, seed)
                match = {"id": seed.decode(), "game": game_id, "seed": seed.hex(), "seed_hash": "h",
                         "seat_count": 4, "options": {},
                         "seats": [{"player_id": f"p{i}", "name": f"p{i}", "bot": None} for i in range(4)]}
                runner = MatchRunner(match=cast(MatchRow, match), game=game, state=state, version=0,
                                     deadlines={}, log_writer=cast(Any, writer), schedule=lambda m, p, d: None,
                                     on_finished=lambda r: None, now=lambda: 1_000_000.0)
                peers = [CountingPeer(seat) for seat in range(4)]
                for peer in peers:
                    runner.attach(peer, from_hello=True)
                runners.append((runner, peers, steps))
            actions = 0
            before = sum(p.bytes for _, peers, _ in runners for p in peers)  # the states of the hellos
            start = time.process_time()
            for k in range(max(len(s) for _, s in plays)):
                for runner, peers, steps in runners:
                    if k < len(steps):
                        seat, action = steps[k]
                        runner.act(peers[seat], k, action)
                        actions += 1
                writer.commit()
            best = min(best, time.process_time() - start)
            sent = sum(p.bytes for _, peers, _ in runners for p in peers) - before
            errors = sum(p.errors for _, peers, _ in runners for p in peers)
        out[game_id] = {"us_per_action": best / actions * 1e6, "actions": actions,
                        "bytes_per_action": sent / actions, "errors": errors}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="provinces,warrior,conquest")
    parser.add_argument("--matches", type=int, default=50)
    parser.add_argument("--actions", type=int, default=200, help="actions per match at most")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--json", action="store_true", help="(internal) one JSON line")
    args = parser.parse_args()
    games = [g for g in args.games.split(",") if g]
    if args.json:
        print(json.dumps(measure(games, args.matches, args.actions, args.repeat)))
        return
    trees = [os.path.dirname(HERE), *[os.path.abspath(t) for t in args.tree]]
    results: dict[str, list[dict[str, dict[str, float]]]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            cmd = [sys.executable, os.path.abspath(__file__), "--json", "--games", args.games, "--matches",
                   str(args.matches), "--actions", str(args.actions), "--repeat", str(args.repeat)]
            done = subprocess.run(cmd, cwd=tree, check=True, capture_output=True, text=True)
            results[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()[0]:.2f}; best CPU µs per action, {args.matches} matches of 4 seats at once")
    print(f"{'tree':<40} {'game':<10} {'actions':>8} {'errors':>7} {'µs/action':>10} {'bytes/action':>13}")
    for tree, runs in results.items():
        for game_id in games:
            us = min(r[game_id]["us_per_action"] for r in runs)
            print(f"{tree:<40} {game_id:<10} {runs[0][game_id]['actions']:>8.0f} {runs[0][game_id]['errors']:>7.0f} {us:>10.1f} "
                  f"{runs[0][game_id]['bytes_per_action']:>13.0f}")


if __name__ == "__main__":
    main()
