"""Loadouts (conquest.md 5) and the meta-game's configuration, as pure functions."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.config import Settings
from app.games.conquest import Options
from app.games.conquest.specials import DEFAULT_SPECIAL_COSTS, SPECIALS
from app.meta.loadouts import LoadoutError, bot_loadout, check_loadout, start_options


@pytest.mark.parametrize("game,loadout,owned,code", [
    ("conquest", ["laser"], {}, "unknown_special"),
    ("conquest", ["scout", "scout"], {"scout": 2}, "duplicate_special"),
    ("conquest", ["scout", "joker"], {"scout": 2}, "special_not_owned"),
    ("conquest", ["scout"], {"scout": 0}, "special_not_owned"),
    ("provinces", ["scout"], {"scout": 2}, "loadout_not_supported"),
])
def test_check_loadout_refuses(game, loadout, owned, code):
    with pytest.raises(LoadoutError) as e:
        check_loadout(game, loadout, owned)
    assert e.value.code == code


def test_check_loadout_accepts_owned_and_empty():
    assert check_loadout("conquest", ["joker", "scout"], {"scout": 1, "joker": 3}) == ["joker", "scout"]
    assert check_loadout("provinces", [], {}) == [] and check_loadout("conquest", None, {}) == []


def test_start_options_copy_loadouts_and_costs():
    seats = [{"seat": 0, "player_id": "a", "bot": None, "loadout": ["scout", "joker"]},
             {"seat": 1, "player_id": "b", "bot": None, "loadout": None},
             {"seat": 2, "player_id": "c", "bot": "smart", "loadout": None}]
    # joker ran out in another match since the lobby was joined: dropped, not refused
    options, loadouts = start_options("conquest", {"max_rounds": 3}, seats, {"a": {"scout": 1}},
                                      {"big_brother": 6})
    assert loadouts[0] == ["scout"] and loadouts[1] == []
    assert loadouts[2] == bot_loadout(2) and loadouts[2] and set(loadouts[2]) <= set(SPECIALS)
    assert options["loadouts"] == loadouts and options["max_rounds"] == 3
    assert options["special_costs"] == {**DEFAULT_SPECIAL_COSTS, "big_brother": 6}
    Options.model_validate(options)  # the engine accepts what the server writes
    assert start_options("warrior", {"x": 1}, seats, {}, {}) == ({"x": 1}, [[], [], []])


def test_bots_bring_the_engines_choice_deterministically():
    assert bot_loadout(1) == bot_loadout(1)
    assert all(len(bot_loadout(s)) <= 4 for s in range(4))


@pytest.mark.parametrize("env", [
    {"spin_strip": ["scout", "laser"]}, {"spin_strip": []},
    {"spin_paytable": {"4": 3}}, {"spin_paytable": {"3": 11}},
    {"special_costs": {"laser": 1}}, {"special_costs": {"scout": -1}}, {"spin_price": 0},
])
def test_bad_meta_configuration_is_refused_at_start(env):
    with pytest.raises(ValidationError):
        Settings(**env)


def test_configuration_from_the_environment(monkeypatch):
    monkeypatch.setenv("BANNERFALL_SPIN_PAYTABLE", '{"1": 1, "3": 7}')
    monkeypatch.setenv("BANNERFALL_SPECIAL_COSTS", '{"scout": 2}')
    monkeypatch.setenv("BANNERFALL_SPIN_PRICE", "35")
    s = Settings()
    assert s.spin_paytable == {"1": 1, "3": 7} and s.special_costs == {"scout": 2} and s.spin_price == 35
