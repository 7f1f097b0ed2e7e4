"""Tally, rules version 2 (the upgrade; version 1's engine is not kept): N is 1..2, each point of N
adds 2, and 12 wins. A version-1 log with an ``add`` of 3 is refused by these rules; one without is
accepted but reaches other totals: either way it must not be replayed by them."""
from __future__ import annotations

from typing import ClassVar

from app.games.base import GameInfo
from tests.rules_versions.tally_v1 import TallyGame, TallyOptions


class TallyGameV2(TallyGame):
    info: ClassVar[GameInfo] = GameInfo(
        id="tally", title="Tally", min_seats=2, max_seats=4, options=TallyOptions, phases=("turn",),
        action_types=frozenset(("add",)), rules_version=2,
    )
    MAX_ADD = 2
    WEIGHT = 2
    TARGET = 12


GAME = TallyGameV2()
