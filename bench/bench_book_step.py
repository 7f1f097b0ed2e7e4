"""One audience-book step in-process: ``python bench/bench_book_step.py``.

``AudienceBook.step`` is what a node does per accepted record for the audiences' documents: every
audience's view parts (``Game.view_parts``), its new document and its patch. This plays
``--matches`` seeded random matches of 4 seats per game (``app.testing.play.random_step``), keeps
their states, then steps a fresh book through them ``--repeat`` times in two ways, alternating:

- **shortcut**: as the runtime does (``app.parts.revise``, given the documents' shapes);
- **whole**: the same steps given no shapes (``document`` + ``diff`` of the whole document, what a
  step without them does);

and the game's ``view_parts`` for the same states alone. Prints the best CPU µs per step
(``time.process_time``). Every audience's patch is made (``wanted`` None), as for seats with delta
sockets. Run the compiled install (``pip install -e .``) to measure what a node runs.
"""
from __future__ import annotations

import argparse
import os
import random
import time
from typing import Any

from app.games import registry
from app.runtime.audience import AudienceBook
from app.runtime.wire import prompts_part, status_part
from app.testing.play import random_step


def record(game: Any, matches: int, steps: int) -> list[tuple[Any, list[tuple[Any, Any, tuple[bytes, ...]]]]]:
    """``matches`` seeded random matches of 4 seats: each its first state and ``(state, events, prompts
    part)`` after each of up to ``steps`` actions."""
    out = []
    for m in range(matches):
        rng = random.Random(m)
        state = first = game.setup(4, None, b"book-step-%d" % m)
        played = []
        for _ in range(steps):
            if game.outcome(state) is not None:
                break
            step = random_step(game, state, 4, rng, None)
            if step is None:
                break
            state, events = game.apply(state, *step)
            played.append((state, events, prompts_part(game.prompts(state), {})))
        out.append((first, played))
    return out


def book_steps(game: Any, recorded: list[Any], shortcut: bool) -> float:
    """CPU µs per book step over ``recorded``."""
    status = status_part("running")
    started, count = time.process_time(), 0
    for first, played in recorded:
        book = AudienceBook(game, 4, first, status, prompts_part(game.prompts(first), {}))
        versions, docs, shapes = book.hand_over()
        for state, events, part in played:
            versions, docs, _, shapes = book.step(versions, docs, state, status, part, events, None,
                                                  shapes if shortcut else ())
            count += 1
    return (time.process_time() - started) / max(1, count) * 1e6


def views_alone(game: Any, recorded: list[Any]) -> float:
    """CPU µs per ``view_parts`` call for the 5 audiences over ``recorded``."""
    keys = (0, 1, 2, 3, -1)
    started, count = time.process_time(), 0
    for _first, played in recorded:
        for state, _events, _part in played:
            game.view_parts(state, keys)
            count += 1
    return (time.process_time() - started) / max(1, count) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", default="provinces,conquest,warrior")
    ap.add_argument("--matches", type=int, default=6)
    ap.add_argument("--steps", type=int, default=300, help="actions per match at most")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    games = registry()
    print(f"load average {os.getloadavg()[0]:.2f}; best CPU µs per book step (5 audiences), "
          f"{args.matches} matches of 4 seats, best of {args.repeat}")
    print(f"{'game':<10} {'steps':>6} {'shortcut':>9} {'whole':>7} {'view_parts alone':>17}")
    for gid in args.games.split(","):
        game = games[gid]
        recorded = record(game, args.matches, args.steps)
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.repeat):
            for shortcut in (True, False):
                best[shortcut] = min(best[shortcut], book_steps(game, recorded, shortcut))
        alone = min(views_alone(game, recorded) for _ in range(args.repeat))
        steps = sum(len(p) for _, p in recorded)
        print(f"{gid:<10} {steps:>6} {best[True]:>9.1f} {best[False]:>7.1f} {alone:>17.1f}", flush=True)


if __name__ == "__main__":
    main()
