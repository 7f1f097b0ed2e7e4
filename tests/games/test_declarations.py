"""What each registered game declares is what it brings, and what the server uses.

- The event wording (its ``GameInfo.wording`` file, merged into ``/events.json``) and its doc's
  events table (``docs/games/<id>.md``, or the file its ``GameInfo.doc`` names) name exactly the
  declared event types; the wording reads only fields those types have.
- Every rule code the game raises is in its doc.
- Nothing outside the game packages lists the games: the web client, the bot catalogue, the
  compiled modules and the CLI take them from the registry (``GameInfo``).
- ``setup.py`` compiles exactly the modules Bannerfall's games declare compiled.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from app import _native
from app.client.wording import game_wording, wording
from app.games import declared_file, game_dir, registry
from app.testing.contracts import doc_event_types, doc_problems, wording_problems
from tests.conftest import ROOT

GAMES = list(registry())


def doc_of(game) -> Path:
    """The game's doc: the file it declares, else Bannerfall's ``docs/games/<id>.md``."""
    return declared_file(game, game.info.doc) or ROOT / "docs" / "games" / f"{game.info.id}.md"


@pytest.mark.parametrize("game_id", GAMES)
def test_the_wording_names_exactly_the_declared_events(game_id):
    game = registry()[game_id]
    assert wording_problems(game, game_wording(game)) == []
    assert wording()[game_id] == game_wording(game)  # what /events.json serves under the id


@pytest.mark.parametrize("game_id", GAMES)
def test_the_docs_events_table_names_exactly_the_declared_events(game_id):
    game = registry()[game_id]
    assert doc_problems(game, doc_of(game)) == []


@pytest.mark.parametrize("game_id", GAMES)
def test_every_rule_code_is_in_its_games_doc(game_id):
    game = registry()[game_id]
    doc = doc_of(game).read_text() + (ROOT / "docs" / "protocol.md").read_text()
    codes = {}
    for path in game_dir(game).rglob("*.py"):
        for m in re.finditer(r'IllegalAction\(\s*"([a-z_]+)"', path.read_text()):
            codes.setdefault(m.group(1), path.name)
    missing = {c: w for c, w in codes.items() if f"`{c}`" not in doc}
    assert not missing, f"rule codes of {game_id} missing from {doc_of(game).name}: {missing}"


def test_the_checks_find_what_is_wrong():
    """A wording or a doc that drifted from the declarations is reported (what the tests above rely on)."""
    game = registry()["provinces"]
    words = game_wording(game)
    drifted = {**words, "events": {**words["events"], "invented": {"text": "x"}}}
    drifted["events"].pop("moved")
    drifted["events"]["battle"] = {"text": "{attacker|name} won {loot}"}
    problems = wording_problems(game, drifted)
    assert any("'moved' has no wording" in p for p in problems)
    assert any("'invented', which is not a declared event type" in p for p in problems)
    assert any("reads ['attacker', 'loot']" in p for p in problems)
    text = doc_of(game).read_text().replace("| `moved` |", "| `shifted` |")
    assert doc_event_types(text) >= {"shifted"} and "moved" not in doc_event_types(text)


def test_nothing_outside_the_games_lists_them():
    """The places that used to list the games (the web client's board map, the compiled modules, the
    CLI's help) take them from the registry; so must any new code: outside the game packages a game
    id appears only as a rule reference (``provinces.md 6.4``) or in the files of a game-specific
    feature (Hold'em Conquest's meta-game, the CLI's default game and its demo grant)."""
    ids = sorted(set(GAMES) | {"provinces", "conquest", "warrior"})
    named = re.compile(r"\b(%s)\b(?!\.md)" % "|".join(map(re.escape, ids)))
    features = {
        "app/meta", "app/db/wallet.py", "app/api/routes/inventory.py", "app/api/routes/lobbies.py",
        "app/api/meta_schemas.py", "app/config.py", "app/cli.py", "app/web/js/inventory.js", "app/web/js/lobby.js",
        "app/web/admin/admin.js", "app/web/admin/grants.js", "app/web/js/wording.js", "app/client/wording.py",
    }
    listing = []
    for path in [*ROOT.glob("app/**/*.py"), *ROOT.glob("app/web/**/*.js"), *ROOT.glob("app/web/**/*.json"),
                 *ROOT.glob("app/web/**/*.html")]:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("app/games/") or any(rel == f or rel.startswith(f + "/") for f in features):
            continue
        listing += [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
                    if named.search(line)]
    assert listing == [], listing
    cli = (ROOT / "app" / "cli.py").read_text()
    assert "provinces | conquest | warrior" not in cli and "random | smart" not in cli


def test_setup_compiles_exactly_what_the_games_declare():
    own = [g for g in registry().values() if type(g).__module__.startswith("app.games.")]
    declared = [m for g in own for m in g.info.compiled]
    assert declared and sorted(_native.declared_games_compiled(ROOT)) == sorted(declared)
    if (ROOT / "app" / _native.MANIFEST).exists():  # an install that compiled: what it compiled
        assert set(_native.COMPILED) == set(_native.CORE) | set(declared)
