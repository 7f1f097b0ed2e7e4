"""Activation costs are 0-10 mana (seed §5.1.4): a configured cost outside that range is refused
when the server starts, in one line, and a match's options refuse it too."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from app.config import Settings
from app.games.conquest import SPECIALS, Options
from app.games.conquest.specials import MAX_SPECIAL_COST
from tests.conftest import ROOT, free_port


def test_the_bound_is_the_seeds():
    assert MAX_SPECIAL_COST == 10


@pytest.mark.parametrize("special", SPECIALS)
@pytest.mark.parametrize("cost", [-1, 11, 50, 100, 10_000])
def test_every_special_refuses_a_cost_outside_0_10(special, cost):
    with pytest.raises(ValidationError) as err:
        Settings(special_costs={special: cost})
    assert f"{special} costs {cost} mana" in str(err.value) and "0-10" in str(err.value)
    with pytest.raises(ValidationError):
        Options.model_validate({"special_costs": {special: cost}})


@pytest.mark.parametrize("special", SPECIALS)
@pytest.mark.parametrize("cost", [0, 1, 10])
def test_costs_0_to_10_are_accepted(special, cost):
    assert Settings(special_costs={special: cost}).special_costs == {special: cost}
    assert Options.model_validate({"special_costs": {special: cost}}).special_costs == {special: cost}


@pytest.mark.parametrize("costs, words", [
    ('{"joker": 50}', "joker costs 50 mana; an activation costs 0-10 mana"),
    ('{"scout": 1, "big_brother": 11}', "big_brother costs 11 mana"),
    ('{"scout": -3}', "scout costs -3 mana"),
    ('{"laser": 1}', "'laser' is not a special id"),
])
def test_serve_refuses_a_bad_cost_in_one_line_before_anything_starts(tmp_path, costs, words):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANNERFALL_")}
    db = tmp_path / "x.db"
    env.update(PYTHONPATH=str(ROOT), BANNERFALL_SPECIAL_COSTS=costs, BANNERFALL_PORT=str(free_port()),
               BANNERFALL_DATABASE_URL=f"sqlite+aiosqlite:///{db}")
    res = subprocess.run([sys.executable, "-m", "app.cli", "serve"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60, check=False)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("bannerfall: bad setting BANNERFALL_SPECIAL_COSTS: ") and words in lines[0]
    assert "Value error" not in lines[0] and "Traceback" not in res.stderr
    assert not db.exists()  # refused before the database is touched
