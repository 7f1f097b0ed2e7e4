"""``app.games.versions``: which engine plays a rules version, and the declarations it trusts."""
from __future__ import annotations

import importlib
import sys
import types
from dataclasses import replace

import pytest

from app.games import registry, versions
from app.runtime.replay import RulesUnavailable, engine_of


@pytest.mark.parametrize("game", list(registry().values()), ids=list(registry()))
def test_every_game_declares_a_version_and_every_kept_engine_plays_its_own(game):
    assert isinstance(game.info.rules_version, int) and game.info.rules_version >= 1
    for version, module in game.info.earlier_rules.items():
        assert version < game.info.rules_version
        kept = importlib.import_module(module).GAME
        assert kept.info.id == game.info.id and kept.info.rules_version == version
        assert versions.engine(game.info.id, version) is kept
    assert versions.available_versions(game.info.id)[-1] == game.info.rules_version


def test_the_engine_of_each_version(tally):
    tally("tally_v2_keeps_v1")
    v1 = importlib.import_module("tests.rules_versions.tally_v1").GAME
    assert versions.engine("tally", 2) is registry()["tally"]
    assert versions.engine("tally", None) is registry()["tally"]
    assert versions.engine("tally", 1) is v1
    assert versions.engine("tally", 3) is None and versions.engine("nope", 1) is None
    assert versions.available_versions("tally") == [1, 2] and versions.available_versions("nope") == []
    assert versions.match_rules_version({"game": "tally"}) == 2  # a row without one: the current
    assert versions.match_rules_version({"game": "tally", "rules_version": 1}) == 1
    assert engine_of({"game": "tally", "rules_version": 1}) is v1  # type: ignore[typeddict-item]
    with pytest.raises(RulesUnavailable) as caught:
        engine_of({"game": "tally", "rules_version": 5})  # type: ignore[typeddict-item]
    assert caught.value.newer and "tally rules version 5" in str(caught.value)


def test_a_kept_engine_that_is_missing_or_plays_another_version_counts_as_absent(tally, monkeypatch):
    tally("tally_v2")
    current = registry()["tally"]
    liar = types.ModuleType("tests.rules_versions._liar")
    liar.GAME = current  # type: ignore[attr-defined]  # says version 2, declared as version 1
    monkeypatch.setitem(sys.modules, "tests.rules_versions._liar", liar)
    info = replace(current.info, earlier_rules={1: "tests.rules_versions._liar", 0: "tests.rules_versions.nowhere"})
    monkeypatch.setattr(type(current), "info", info)
    versions._earlier.cache_clear()
    assert versions.engine("tally", 1) is None and versions.engine("tally", 0) is None
    assert versions.available_versions("tally") == [2]
    with pytest.raises(RulesUnavailable) as caught:
        engine_of({"game": "tally", "rules_version": 1})  # type: ignore[typeddict-item]
    assert not caught.value.newer and caught.value.available == [2]
    versions._earlier.cache_clear()


def test_the_stand_in_refuses_every_action_and_says_why(tally):
    tally("tally_v2")
    stand_in = versions.unavailable("tally", 1, "why")
    assert stand_in.info is registry()["tally"].info and stand_in.id == "tally"
    assert stand_in.prompts(None) == [] and stand_in.outcome(None) is None and stand_in.legal_actions(None, 0) == []
    view = {"unavailable": {"code": "rules_unavailable", "rules_version": 1, "message": "why"}}
    assert stand_in.views(None, [0, 1, -1]) == [view] * 3 and stand_in.view(None, -2) == view
    from app.games.base import IllegalAction

    with pytest.raises(IllegalAction) as refused:
        stand_in.apply(None, 0, {"type": "add", "n": 1})
    assert refused.value.code == "rules_unavailable" and not stand_in.can_act(None, 0, {"type": "add", "n": 1})
