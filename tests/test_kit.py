"""The author's kit: ``bannerfall new-game NAME`` makes a complete game package that, registered as
an installed distribution registers it, passes every suite of its own test module as made
(conformance, declarations, schemas, 20 matches over real sockets, a whole match on its board in
Chromium when there is one) and is lint-clean; bad names and existing folders are refused in one
line (exit 2), changing nothing."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT
from tests.games.game_entry_points import write_dist


def bannerfall(*args: str, cwd=None, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=cwd or ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, check=False)


def test_a_new_game_passes_every_suite_as_made(tmp_path):
    made = bannerfall("new-game", "high_card", "--into", str(tmp_path / "high_card"), "--title", "High card")
    assert made.returncode == 0, made.stderr
    package = tmp_path / "high_card"
    files = sorted(p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file())
    assert files == sorted([
        "README.md", "pyproject.toml", "tests/test_high_card.py",
        *(f"bannerfall_high_card/{name}" for name in (
            "__init__.py", "bots.py", "events.json", "game.py", "high_card.md", "rules.py", "state.py", "types.py",
            "view.py", "web/board.js", "web/board.css", "schemas/high_card/action.json",
            "schemas/high_card/event.json", "schemas/high_card/view.json")),
    ])
    project = (package / "pyproject.toml").read_text()
    assert '[project.entry-points."bannerfall.games"]\nhigh_card = "bannerfall_high_card:GAME"' in project
    text = "".join(p.read_text() for p in package.rglob("*") if p.suffix in (".py", ".md", ".json", ".js", ".toml"))
    assert not re.search(r"__(GAME_ID|GAME_TITLE|PACKAGE|CLASS)__", text)
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(package)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert lint.returncode == 0, lint.stdout
    # installed as pip would (a distribution with the entry point, on the path of this interpreter)
    write_dist(tmp_path, "high_card", "bannerfall_high_card:GAME")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(tmp_path), str(ROOT)])}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "tests"],
                         cwd=package, capture_output=True, text=True, timeout=900,
                         env=env, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    summary = run.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    assert passed >= 14 and "failed" not in summary, summary


def test_bad_names_and_existing_folders_are_refused_in_one_line(tmp_path):
    for name in ("Bad", "1game", "with-dash", "x" * 40, "a b"):
        res = bannerfall("new-game", name, "--into", str(tmp_path / "new"))
        assert res.returncode == 2 and res.stderr.startswith("bannerfall: ") and len(res.stderr.splitlines()) == 1, \
            (name, res.stderr)
    (tmp_path / "taken").mkdir()
    res = bannerfall("new-game", "fine", "--into", str(tmp_path / "taken"))
    assert res.returncode == 2 and "exists" in res.stderr
    res = bannerfall("new-game", "fine", "--into", str(tmp_path / "other"), "--title", 'say "hi"')
    assert res.returncode == 2 and "title" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
