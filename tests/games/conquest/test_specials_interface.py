"""The Options interface with the meta-game (section 5): loadouts and special_costs."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.games.conquest import (
    DEFAULT_SPECIAL_COSTS,
    GAME,
    SPECIAL_DESCRIPTIONS,
    SPECIALS,
    Options,
)


def test_5_specials_table_ids_costs_and_descriptions() -> None:
    assert SPECIALS == (
        "shield", "scout", "loyalty", "spy", "corruption", "big_brother", "read_hand", "hound",
        "joker", "double_hand", "double_set", "double_income", "full_double_income", "insurance",
        "free_fold",
    )
    assert set(DEFAULT_SPECIAL_COSTS) == set(SPECIALS) == set(SPECIAL_DESCRIPTIONS)
    assert DEFAULT_SPECIAL_COSTS["big_brother"] == 8 and DEFAULT_SPECIAL_COSTS["scout"] == 1
    assert DEFAULT_SPECIAL_COSTS["full_double_income"] == 10 and DEFAULT_SPECIAL_COSTS["hound"] == 2
    assert all("\n" not in line and line for line in SPECIAL_DESCRIPTIONS.values())


def test_5_options_default_to_no_specials() -> None:
    opts = Options()
    assert opts.loadouts == [] and opts.special_costs == {}


def test_5_options_accept_loadouts_and_cost_overrides_and_round_trip() -> None:
    opts = Options(loadouts=[["scout", "joker"], [], ["shield"]], special_costs={"scout": 2, "joker": 0})
    again = Options.model_validate(opts.model_dump(mode="json"))
    assert again == opts
    assert again.loadouts[0] == ["scout", "joker"] and again.special_costs["scout"] == 2


@pytest.mark.parametrize("loadouts", [
    [["scout", "scoutt"]],            # unknown id
    [["scout", "scout"]],             # duplicate
    [[], [], [], [], []],             # more lists than seats can exist
    [["scout"], "joker"],             # not a list of lists
    [[1]],                            # not a string
])
def test_5_options_reject_bad_loadouts(loadouts: object) -> None:
    with pytest.raises(ValidationError):
        Options.model_validate({"loadouts": loadouts})


@pytest.mark.parametrize("costs", [{"nope": 1}, {"scout": -1}, {"scout": 10_000}, {"scout": True}, {"scout": "1"}])
def test_5_options_reject_bad_special_costs(costs: object) -> None:
    with pytest.raises(ValidationError):
        Options.model_validate({"special_costs": costs})


def test_5_setup_rejects_loadouts_for_more_seats_than_the_match_has() -> None:
    with pytest.raises(ValueError):
        GAME.setup(2, {"loadouts": [[], [], ["scout"]]}, b"seed")
    GAME.setup(3, {"loadouts": [[], [], ["scout"]]}, b"seed")  # fine


def test_5_options_stay_frozen_and_forbid_extra_fields() -> None:
    with pytest.raises(ValidationError):
        Options.model_validate({"loadout": [["scout"]]})
    opts = Options()
    with pytest.raises(ValidationError):
        opts.loadouts = [["scout"]]  # type: ignore[misc]


def test_5_server_filled_options_are_marked_read_only_in_the_published_schema() -> None:
    props = GAME.Options.model_json_schema()["properties"]
    assert props["loadouts"]["readOnly"] is True and props["special_costs"]["readOnly"] is True
    assert not props["starting_mana"].get("readOnly")
