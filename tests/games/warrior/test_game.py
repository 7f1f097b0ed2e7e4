"""The Warrior ``Game`` object: the card set is read on first use, not at import."""
from __future__ import annotations

import subprocess
import sys


def test_card_set_is_read_on_first_use_not_at_import():
    code = (
        "import app.games.warrior as w\n"
        "assert 'card_set' not in w.GAME.__dict__\n"
        "w.GAME.setup(2, None, b'x' * 32)\n"
        "first = w.GAME.__dict__['card_set']\n"
        "w.GAME.setup(3, None, b'y' * 32)\n"
        "assert w.GAME.card_set is first\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
