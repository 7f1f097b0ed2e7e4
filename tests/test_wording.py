"""Event wording: one source for the web client's event log and the CLI (``app/web/events.json``'s
template language and default, and each game's own wording file, merged: ``/events.json``). The JS
interpreter (``app/web/js/wording.js``, run under node) and the Python one (``app/client/wording.py``)
must give the same line for every recorded event of every game."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from app.client.wording import WORDING_FILE, describe, reason_text, score_text, wording
from tests.conftest import ROOT

EVENTS_FILE = ROOT / "tests" / "fixtures" / "wording_events.json"
EVENTS = json.loads(EVENTS_FILE.read_text())
NAMES = ["Ann", "Bob", "Cy"]


def _python_lines() -> list:
    out = []
    for game, events in EVENTS.items():
        for ev in events:
            line = describe(game, ev, NAMES.__getitem__)
            out.append(None if line is None else
                       {"text": line.text, "kind": line.kind, "seat": line.seat, "private": line.private,
                        "known": line.known})
    return out


def test_every_recorded_event_reads_as_words():
    for game, events in EVENTS.items():
        for ev in events:
            line = describe(game, ev, NAMES.__getitem__)
            assert line is not None and line.text
            for debug in ("None", "True", "False", "=", "{", "}", "_", ".0 ", "<"):
                assert debug not in line.text, (game, ev["type"], line.text)
            # seats appear by name, never by number
            assert "seat " not in line.text


def test_final_scores_and_reasons_in_words():
    assert score_text("conquest", 11.0) == "11 tables"
    assert score_text("provinces", 1) == "1 province"
    assert score_text("warrior", 41) == "41 points"
    assert reason_text("warrior", "three_rounds_played") == "three rounds were played"
    assert reason_text("provinces", "aborted: by an admin") == "aborted: by an admin"
    assert describe("warrior", {"type": "match_over", "scores": {"0": 3, "1": 5}}, NAMES.__getitem__).text == \
        "Match over after three rounds: Ann 3 points, Bob 5 points"


def test_unknown_event_falls_back_to_its_type_in_words():
    line = describe("provinces", {"type": "something_new", "seat": 1}, NAMES.__getitem__)
    assert line is not None and line.text == "something new" and line.kind == "minor" and not line.known


def test_every_recorded_event_type_has_its_own_wording():
    for game, events in EVENTS.items():
        for ev in events:
            assert describe(game, ev, NAMES.__getitem__).known, (game, ev["type"])


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_web_client_and_cli_word_events_the_same(tmp_path):
    module = tmp_path / "wording.mjs"
    module.write_text((ROOT / "app" / "web" / "js" / "wording.js").read_text())
    served = tmp_path / "events.json"
    served.write_text(json.dumps(wording()))  # what /events.json serves
    script = f"""
import {{ setWording, describeEvent }} from {json.dumps(str(module))};
import fs from "fs";
setWording(JSON.parse(fs.readFileSync({json.dumps(str(served))}, "utf8")));
const events = JSON.parse(fs.readFileSync({json.dumps(str(EVENTS_FILE))}, "utf8"));
const names = {json.dumps(NAMES)};
const out = [];
for (const list of Object.values(events)) for (const ev of list)
  out.push(describeEvent(Object.keys(events).find((g) => events[g] === list), ev, (s) => names[s]));
console.log(JSON.stringify(out));
"""
    res = subprocess.run(["node", "--input-type=module", "-e", script], check=False, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == _python_lines()


def test_the_wording_of_every_registered_game_is_served_to_the_web_client(tmp_path):
    """``/events.json`` is the template language's file with every registered game's own wording
    under its id (read from the game's package), the same as the CLI reads."""
    import httpx

    from app.games import registry
    from tests.conftest import ServerProcess

    base = json.loads(WORDING_FILE.read_text())
    assert set(base) == {"_doc", "default"}  # no game's words in the client's file
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}").start()
    try:
        served = httpx.get(srv.url + "/events.json", timeout=10).json()
    finally:
        srv.stop()
    assert served == wording() and set(served) == {"_doc", "default", *registry()}
    assert all(served[g]["events"] for g in registry())
