"""Record the playthroughs again: ``python -m tests.playthroughs.record [--game ID] [--same-rules]``.

Writes ``tests/playthroughs/<game>.json`` for every game of the registry (or one), and Conquest's
golden trace (``tests/games/conquest/golden/trace.json``), from their seeds. A playthrough that
changed while its game's ``GameInfo.rules_version`` did not is refused: a change of the rules, the
dealing or the RNG use must raise the version first, so that running and ended matches keep the
engine they were played under (``docs/operations.md``, "Deploying a rules change"). ``--same-rules``
records a change of the views or events alone (the wire, not what a log replays to), and is itself
refused when a recorded action is now refused or a prompt or the outcome of a step changed.
Exit 0 written (or unchanged), 1 refused, 2 an unknown game.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from tests.playthroughs import playthrough as pt


def _rules_part(match: dict[str, Any]) -> list[Any]:
    """What a log replays to, as far as a playthrough shows it without the views: the actions, and
    each step's prompts (seat, kind, phase, default) and outcome."""
    out = []
    prompts = None
    for step in match["steps"]:
        some = next(iter(step["documents"].values()), None)
        if some is not None:
            prompts = some["prompts"]
        out.append([step["seat"], step["action"], prompts, step["outcome"]])
    return out


def check(old: dict[str, Any] | None, new: dict[str, Any], same_rules: bool) -> str | None:
    """Why ``new`` may not replace ``old`` (None: it may)."""
    if old is None or old == new:
        return None
    game = new["game"]
    if old["rules_version"] != new["rules_version"]:
        return None  # the version was raised: record the new rules
    if not same_rules:
        return (f"{game}: the playthrough changed but the rules_version of {game} is still {new['rules_version']}. "
                f"If the rules, the dealing or a use of the RNG changed, raise GameInfo.rules_version (matches "
                f"started under {new['rules_version']} need its engine: docs/games/README.md, 'Changing the "
                f"rules') and record again; if only views or events changed, record with --same-rules")
    game_obj = next(g for g in pt.games() if g.info.id == game)
    full, digested = pt.cases(game_obj)
    match = old["matches"][0]
    actions = [(s["seat"], s["action"]) for s in match["steps"][1:]]
    try:
        replayed = pt.replay_full(game_obj, full, actions)
        for case, recorded in zip(digested, old["digests"], strict=False):
            pt.replay_digests(game_obj, case, [(s, a) for s, a in recorded["actions"]])
    except pt.Refused as exc:
        return f"{game}: --same-rules, but {exc}: that is a rules change (raise rules_version)"
    if _rules_part({"steps": replayed}) != _rules_part(match):
        return (f"{game}: --same-rules, but the prompts or an outcome of the recorded actions changed "
                "(raise rules_version)")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.playthroughs.record", description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", help="only this game (an id)")
    parser.add_argument("--same-rules", action="store_true",
                        help="the views or events changed, not the rules: keep the rules version")
    args = parser.parse_args(argv)
    games = pt.games()
    if args.game is not None:
        games = [g for g in games if g.info.id == args.game]
        if not games:
            print(f"no game {args.game!r}; the games: {', '.join(g.info.id for g in pt.games())}", file=sys.stderr)
            return 2
    refused = False
    for game in games:
        new = pt.record(game)
        old = pt.load(game.info.id)
        why = check(old, new, args.same_rules)
        if why is not None:
            print(why, file=sys.stderr)
            refused = True
            continue
        if old == new:
            print(f"{game.info.id}: unchanged (rules version {game.info.rules_version})")
            continue
        pt.path_of(game.info.id).write_text(pt.dumps(new))
        steps = len(new["matches"][0]["steps"]) + sum(len(d["steps"]) for d in new["digests"])
        print(f"{game.info.id}: wrote {pt.path_of(game.info.id).name} (rules version {game.info.rules_version}, "
              f"{steps} steps)")
    if args.game in (None, "conquest") and not refused:
        from tests.games.conquest import test_golden_trace

        test_golden_trace.write()
    return 1 if refused else 0


if __name__ == "__main__":
    raise SystemExit(main())
