"""``bannerfall demo``: starts its own server, fills a lobby with bots, plays a whole match over real
WebSockets and prints the standings (exit code 0), for every game."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("game,players,bot", [("provinces", 3, "smart"), ("conquest", 4, "smart"),
                                              ("warrior", 4, "smart"), ("provinces", 2, "random")])
def test_demo_plays_a_whole_match(game, players, bot, tmp_path):
    out = subprocess.run([sys.executable, "-m", "app.cli", "demo", "--game", game, "--players", str(players),
                          "--bot", bot], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert any(l.startswith("match over after") for l in lines)
    standings = lines[lines.index("standings:") + 1:]
    assert len(standings) == players
    assert standings[0].strip().startswith("1. seat")
    assert sum(1 for l in lines if l.strip().startswith("v")) > 5  # progress was shown
