"""The leak test over real sockets, for every registered game (``app.testing.leak``): 150 seeded bot
matches per game (``BANNERFALL_LEAK_MATCHES``; a longer run: set it higher) with its declared
``test_options``; every frame each socket received is checked against the card ids hidden from
that seat (or spectator) at the version it was built at —
the game's ``hidden_tokens`` and the oracle's set (the admin view's card ids missing from the
viewer's view), which must agree at every version; a game with hidden information must hide
something in every match; the first matches' frames are validated against the game's JSON Schemas.
Zero problems allowed.

A game installed next to Bannerfall is leak-tested here by default (it is in the registry). Hold'em
Conquest also runs with specials (conquest.md 5). And a deliberately leaky game, installed only for
one server, shows the suite catches a forgotten hand.
"""
from __future__ import annotations

import os

import pytest

from app.client import RestClient
from app.games import registry
from app.testing import leak
from tests.conftest import ROOT, ServerProcess
from tests.games.game_entry_points import installed_game

#: long random runs whose every line is reached by targeted tests too; measured, they doubled their
#: own time for lines that prove nothing by being executed (docs/decisions.md, "Coverage floor")
pytestmark = pytest.mark.no_cover
#: 150 per game keeps CI near its time budget (docs/decisions.md, "Coverage floor"); the floors scale with it
MATCHES_PER_GAME = int(os.environ.get("BANNERFALL_LEAK_MATCHES", "150"))
CONCURRENCY = 12
#: every registered game, by its own id, with its declared test options; plus Conquest with specials
CONFIGS = [*registry(), "conquest-specials"]


def _loadout(index: int, seat: int) -> list[str]:
    """Four specials for a seat: a rotating window over the table, so every special is brought."""
    from app.games.conquest.specials import SPECIALS

    start = (index * 5 + seat * 4) % len(SPECIALS)
    return [SPECIALS[(start + k) % len(SPECIALS)] for k in range(4)]


async def _grant_specials(index: int, players: list[RestClient], admin: RestClient) -> dict[int, list[str] | None]:
    """Conquest with specials: every seat is granted four specials and brings them."""
    loadouts: dict[int, list[str] | None] = {}
    for seat, client in enumerate(players):
        loadouts[seat] = _loadout(index, seat)
        me = await client.me()
        for special in loadouts[seat] or []:
            await admin.admin_grant_special(me["id"], special, 3)
    return loadouts


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("config", CONFIGS)
async def test_no_hidden_card_reaches_any_socket(config, tmp_path):
    specials = config == "conquest-specials"
    game_id = "conquest" if specials else config
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'leak.db'}",
                        env={"BANNERFALL_RUN_BOTS": "false"}).start()
    try:
        report = await leak.run_matches(srv.url, srv.admin_token, game_id,
                                        matches=MATCHES_PER_GAME // (2 if specials else 1), concurrency=CONCURRENCY,
                                        seat_setup=_grant_specials if specials else None)
    finally:
        srv.stop()
    assert report.problems == [], report.problems[:20]
    assert report.matches == MATCHES_PER_GAME // (2 if specials else 1)
    assert report.frames > report.matches * 10
    # how often a bot gets to replace its submission, or to send a special without a prompt, depends
    # on timing (the other seats' answers race with it), so only a floor well below a quiet run's
    # share is asked: the path must be exercised in many matches, not in a fixed share of them
    if registry()[game_id].info.simultaneous_moves:  # the bots replaced submissions in simultaneous phases
        assert report.replaced >= max(1, report.matches // 10), f"only {report.replaced} replacements"
    if specials:
        used = sum(1 for log in report.logs for row in log if (row.get("action") or {}).get("type") == "special")
        assert used >= report.matches, f"only {used} specials activated in {report.matches} matches"
        assert report.unprompted >= max(1, report.matches // 10), \
            f"only {report.unprompted} specials sent without a prompt in {report.matches} matches"



LEAKY = '''"""A game that forgets a hand: Tricks whose hidden_tokens leaves out seat 1's hand (its views
still hide it), registered as its own game. Installed only by tests/e2e/test_leak.py."""
import dataclasses

from bannerfall_tricks.game import TricksGame


class ForgetfulTricks(TricksGame):
    info = dataclasses.replace(TricksGame.info, id="leaky_tricks", title="Leaky tricks")

    def hidden_tokens(self, state, viewer):
        return super().hidden_tokens(state, viewer) - {card.token for card in state.hands[1]}


GAME = ForgetfulTricks()
'''


async def test_the_socket_suite_catches_a_game_that_forgets_a_hand(tmp_path):
    """The example game (examples/tricks) with one hand missing from ``hidden_tokens``, installed as
    its own distribution for one server (and this process): the suite reports the forgotten cards
    at every version of every match, and the unbroken game on the same server passes."""
    if "tricks" not in registry():
        pytest.fail("examples/tricks is not installed: pip install -e examples/tricks (.ci/run does)", pytrace=False)
    tricks_game = type(registry()["tricks"])

    package = tmp_path / "leaky_tricks"
    package.mkdir()
    (package / "__init__.py").write_text(LEAKY)
    env = {"BANNERFALL_RUN_BOTS": "false", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    with installed_game(tmp_path, "leaky_tricks", "leaky_tricks:GAME"):
        assert "leaky_tricks" in registry() and isinstance(registry()["leaky_tricks"], tricks_game)
        srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'leaky.db'}", env=env).start()
        try:
            broken = await leak.run_matches(srv.url, srv.admin_token, "leaky_tricks", matches=4, concurrency=4,
                                            schemas=0)
            sound = await leak.run_matches(srv.url, srv.admin_token, "tricks", matches=4, concurrency=4,
                                           schemas=0)
        finally:
            srv.stop()
    forgotten = [p for p in broken.problems if "missing from the viewer's view but not in hidden_tokens" in p]
    assert broken.matches == 4 and len(forgotten) >= 4, broken.problems[:5]
    assert all("viewer 0" in p or "viewer -1" in p for p in forgotten)  # seat 1 itself sees its hand
    assert sound.problems == [], sound.problems[:5]
