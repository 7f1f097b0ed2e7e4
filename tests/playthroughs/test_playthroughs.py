"""Every game's recorded playthrough replays to what was recorded (``tests/playthroughs/<game>.json``):
each viewer's full documents and events at every step of the full match, and each step's digest of
the digested ones, from the recorded seeds and actions.

A failure names the first step, viewer and place that differ. It is fixed one of two ways:
- the rules, the dealing or a use of the RNG changed: raise the game's ``GameInfo.rules_version``
  (the matches started under the old one need its engine: ``docs/games/README.md``, "Changing the
  rules") and record again, ``python -m tests.playthroughs.record``;
- only views or events changed (the wire, not what a log replays to):
  ``python -m tests.playthroughs.record --same-rules``.
"""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.playthroughs import playthrough as pt
from tests.playthroughs.record import check

GAMES = pt.games()
IDS = [g.info.id for g in GAMES]


def first_difference(recorded: Any, now: Any, path: str = "") -> str | None:
    """Where ``now`` first differs from ``recorded`` (a JSON path and both values), or None."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in list(recorded) + [k for k in now if k not in recorded]:
            if key not in now:
                return f"{path}/{key}: recorded {json.dumps(recorded[key])[:300]}, now missing"
            if key not in recorded:
                return f"{path}/{key}: not recorded, now {json.dumps(now[key])[:300]}"
            found = first_difference(recorded[key], now[key], f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(now, list):
        for i, (a, b) in enumerate(zip(recorded, now, strict=False)):
            found = first_difference(a, b, f"{path}/{i}")
            if found:
                return found
        if len(recorded) != len(now):
            return f"{path}: {len(recorded)} items recorded, {len(now)} now"
        return None
    if recorded != now or type(recorded) is not type(now):
        return f"{path}: recorded {json.dumps(recorded)[:300]}, now {json.dumps(now)[:300]}"
    return None


def _fix(game) -> str:
    return (f"\nIf {game.info.id}'s rules, dealing or RNG use changed: raise its GameInfo.rules_version (now "
            f"{game.info.rules_version}) and run `{pt.COMMAND}`; if only views or events changed: "
            f"`{pt.COMMAND} --same-rules`.")


def _recorded(game) -> dict[str, Any]:
    recorded = pt.load(game.info.id)
    assert recorded is not None, f"no playthrough for {game.info.id}: run `{pt.COMMAND}`"
    return recorded


@pytest.mark.parametrize("game", GAMES, ids=IDS)
def test_the_playthrough_is_recorded_under_the_games_rules_version(game):
    recorded = _recorded(game)
    assert recorded["game"] == game.info.id
    assert recorded["rules_version"] == game.info.rules_version, (
        f"{game.info.id}'s playthrough was recorded under rules version {recorded['rules_version']}, the game is "
        f"at {game.info.rules_version}: run `{pt.COMMAND}`")
    assert pt.dumps(recorded) == pt.path_of(game.info.id).read_text(), f"edited by hand? run `{pt.COMMAND}`"


@pytest.mark.parametrize("game", GAMES, ids=IDS)
def test_the_full_match_replays_to_every_recorded_document_and_event(game):
    recorded = _recorded(game)
    full, _digested = pt.cases(game)
    match = recorded["matches"][0]
    assert (match["name"], match["seats"], match["options"]) == (full.name, full.seats, full.options)
    steps = match["steps"]
    try:
        now = pt.replay_full(game, full, [(s["seat"], s["action"]) for s in steps[1:]])
    except pt.Refused as exc:
        pytest.fail(f"{exc}{_fix(game)}", pytrace=False)
    for n, (then, step) in enumerate(zip(steps, now, strict=True)):
        where = first_difference(then, step)
        assert where is None, f"{full.name}: step {n} differs at {where}{_fix(game)}"
    assert now[-1]["outcome"] is not None, "the recorded match ends"


@pytest.mark.parametrize("game", GAMES, ids=IDS)
def test_the_digested_matches_replay_to_every_recorded_step(game):
    recorded = _recorded(game)
    _full, digested = pt.cases(game)
    assert [(d["name"], d["seats"], d["options"]) for d in recorded["digests"]] == [
        (c.name, c.seats, c.options) for c in digested], f"the cases changed: run `{pt.COMMAND}`"
    for case, then in zip(digested, recorded["digests"], strict=True):
        try:
            now = pt.replay_digests(game, case, [(s, a) for s, a in then["actions"]])
        except pt.Refused as exc:
            pytest.fail(f"{exc}{_fix(game)}", pytrace=False)
        assert len(now) == len(then["steps"]), f"{case.name}: {len(now)} steps now, {len(then['steps'])} recorded"
        for n, (a, b) in enumerate(zip(then["steps"], now, strict=True)):
            assert a == b, f"{case.name}: step {n} differs from its recording{_fix(game)}"


# -- the recorder's refusals (on a copy of a real playthrough, changed as a rules change would) ------

def _changed_view(recorded: dict[str, Any]) -> dict[str, Any]:
    new = json.loads(json.dumps(recorded))
    new["matches"][0]["steps"][1]["documents"].setdefault("admin", {"view": {}})["view"]["extra"] = 1
    return new


def test_the_recorder_refuses_a_changed_playthrough_under_the_same_rules_version():
    game = GAMES[0]
    recorded = _recorded(game)
    changed = _changed_view(recorded)
    why = check(recorded, changed, same_rules=False)
    assert why is not None and "raise GameInfo.rules_version" in why
    assert check(recorded, {**changed, "rules_version": recorded["rules_version"] + 1}, same_rules=False) is None
    assert check(recorded, recorded, same_rules=False) is None


def test_same_rules_is_refused_when_a_recorded_action_no_longer_replays():
    game = next(g for g in GAMES if g.info.id == "provinces")
    recorded = _recorded(game)
    # the recording as an engine with other rules would have made it: its first action is not one
    # these rules accept, so a re-recording may not keep the version
    tampered = json.loads(json.dumps(recorded))
    tampered["matches"][0]["steps"][1]["action"] = {"type": "no_such_action"}
    why = check(tampered, pt.record(game), same_rules=True)
    assert why is not None and "rules change" in why
    assert check(recorded, _changed_view(recorded), same_rules=True) is None  # views alone: allowed
