"""warrior.md section 1: the card set (data, loaded and validated)."""
from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from app.games.warrior import GAME, WarriorGame
from app.games.warrior.cards import (
    ATTACK,
    CREATURE,
    DEFAULT_PATH,
    SIEGE_ENGINE,
    WIZARD,
    CardSetError,
    load_card_set,
    parse_card_set,
)

CS = load_card_set()


def _race(name: str) -> int:
    return CS.race_index[name]


def test_1_1_six_races_in_three_enemy_pairs():
    assert set(CS.races) == {"dwarves", "goblins", "barbarians", "undead", "elves", "trolls"}
    pairs = {frozenset((CS.races[r], CS.races[CS.enemy[r]])) for r in range(6)}
    assert pairs == {frozenset(("dwarves", "goblins")), frozenset(("barbarians", "undead")),
                     frozenset(("elves", "trolls"))}


def test_1_2_ten_creatures_per_race_five_infantry_three_archers_two_knights():
    for r in range(6):
        mine = [c for c in CS.cards if c.kind == CREATURE and c.race == r]
        assert len(mine) == 10
        assert sum(c.infantry for c in mine) == 5
        assert sum(c.archer for c in mine) == 3
        assert sum(c.knight for c in mine) == 2
        assert all(c.symbol_total == 1 for c in mine)


def test_1_3_six_wizards_and_six_siege_engines():
    kinds = Counter(c.kind for c in CS.cards)
    assert kinds[WIZARD] == 6 and kinds[SIEGE_ENGINE] == 6
    assert len(CS.cards) == 90


def test_1_4_attack_cards_numbered_1_to_18_nation_and_mercenary():
    attacks = sorted((c for c in CS.cards if c.kind == ATTACK), key=lambda c: c.number)
    assert [c.number for c in attacks] == list(range(1, 19))
    for c in attacks:
        if c.number <= 4:
            assert (c.infantry, c.archer, c.knight, c.mercenaries) == (1, 0, 0, 0)
        elif c.number <= 8:
            assert (c.infantry, c.archer, c.knight, c.mercenaries) == (0, 1, 0, 0)
        elif c.number <= 12:
            assert (c.infantry, c.archer, c.knight, c.mercenaries) == (0, 0, 1, 0)
        elif c.number <= 15:
            assert c.mercenaries == 3 and c.symbol_total == 0
        else:
            assert c.mercenaries == 4 and c.symbol_total == 0


def test_1_5_card_set_is_data_another_set_loads():
    data = json.loads(DEFAULT_PATH.read_text())
    data["cards"][0]["count"] = 6  # six infantry per race
    game = WarriorGame(parse_card_set(data))
    assert len(game.card_set.cards) == 96
    s = game.setup(2, None, b"x" * 32)
    assert s.phase in ("keep", "place_wizards")


@pytest.mark.parametrize("mutate", [
    lambda d: d["races"][0].update(enemy="elves"),  # enemies not symmetric
    lambda d: d["cards"].append({"kind": "attack", "number": 3}),  # duplicate number
    lambda d: d["cards"].append({"kind": "dragon"}),
    lambda d: d["cards"][0].update(race="orcs"),
    lambda d: d["cards"][0].update(count=-1),
    lambda d: d["cards"][0].update(symbols={"infantry": "one"}),
    lambda d: d["cards"][17].update(symbols={"knight": 1}),  # card 13 (mercenary) with a symbol
    lambda d: d.update(cards=d["cards"][:1]),  # too few cards to deal 11 to four players
    lambda d: d.pop("races"),
])
def test_1_5_card_set_is_validated_at_load(mutate):
    data = copy.deepcopy(json.loads(DEFAULT_PATH.read_text()))
    mutate(data)
    with pytest.raises(CardSetError):
        parse_card_set(data)


def test_1_5_unreadable_card_file_is_a_card_set_error(tmp_path):
    bad = tmp_path / "cards.json"
    bad.write_text("{not json")
    with pytest.raises(CardSetError):
        load_card_set(bad)


def test_1_6_dice_are_six_sided():
    from app.games.base import Rng
    from app.games.warrior.dice import roll

    faces = Counter(roll(Rng(b"six"), 600))
    assert set(faces) == {1, 2, 3, 4, 5, 6}


def test_game_metadata():
    assert GAME.id == "warrior" and GAME.min_seats == 2 and GAME.max_seats == 4
    opts = GAME.Options()
    assert (opts.phase_seconds, opts.decision_seconds, opts.siege_seconds) == (60, 20, 10)
    schema = GAME.Options.model_json_schema()
    for name in ("phase_seconds", "decision_seconds", "siege_seconds"):
        assert "minimum" in schema["properties"][name] and "maximum" in schema["properties"][name]


def test_options_bounds_and_unknown_keys_are_rejected():
    from pydantic import ValidationError

    for bad in ({"phase_seconds": 1}, {"decision_seconds": 0}, {"siege_seconds": 10**6}, {"speed": 3}):
        with pytest.raises(ValidationError):
            GAME.Options(**bad)
    s = GAME.setup(2, {"phase_seconds": 30, "decision_seconds": 5, "siege_seconds": 3}, b"o" * 32)
    assert (s.timing.phase, s.timing.decision, s.timing.siege) == (30, 5, 3)
