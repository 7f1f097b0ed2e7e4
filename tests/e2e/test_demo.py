"""``bannerfall demo``: starts its own server, fills a lobby with bots, plays a whole match over real
WebSockets and prints the standings (exit code 0), for every game — in words, not debug output."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from app.games import registry
from tests.conftest import ROOT

UNITS = {"provinces": "province", "conquest": "table", "warrior": "point"}


@pytest.mark.parametrize("game,players,bot", [("provinces", 3, "smart"), ("conquest", 4, "smart"),
                                              ("warrior", 4, "smart"), ("provinces", 2, "random")])
def test_demo_plays_a_whole_match(game, players, bot, tmp_path):
    # the game's declared test options (Provinces: 3 rounds), as every suite plays: a random Provinces
    # match of the default 60 rounds ran past 240 s in CI, its length being the seed's
    options = json.dumps(dict(registry()[game].info.test_options or {}))
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "demo", "--game", game, "--players", str(players),
                             "--bot", bot, "--options", options], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        # within the suite's own timeout, so what the demo printed is shown; Ctrl-C lets it stop its server
        proc.send_signal(signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        pytest.fail(f"the demo did not end within 240 s; it printed: {stdout[-3000:]!r} {stderr[-3000:]!r}")
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    over = next(ln for ln in lines if ln.startswith("match over in"))
    assert not over.rstrip().endswith(":") and "None" not in over  # the reason, in words (Warrior too)
    standings = lines[lines.index("standings:") + 1:]
    assert len(standings) == players
    assert standings[0].strip().startswith("1st")
    for line in standings:
        assert re.search(rf"\b\d+ {UNITS[game]}s?$", line), line  # integers with their unit
        # names, not seat numbers: the server's bots are `<kind>-bot-<seat>`; the demo's own host,
        # a bot too, is `<kind> demo host` (`<kind>-bot-N` is a reserved name for people)
        assert (f"{bot}-bot-" in line or f"{bot} demo host" in line) and "seat" not in line
    progress = [ln for ln in lines if ln.strip().startswith("v")]
    assert len(progress) > 5  # progress was shown
    for debug in ("=None", "=True", "=False", "None", "{", "demo-host", "seat "):
        assert not any(debug in ln for ln in progress), (debug, [ln for ln in progress if debug in ln][:3])
    assert "demo-host" not in out.stdout
    assert list(tmp_path.iterdir()) == []  # the throwaway server left nothing behind
