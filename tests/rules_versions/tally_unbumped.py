"""Tally with version 2's rules but still saying rules version 1: a rules change shipped without its
bump (what the recorded playthroughs exist to stop). A version-1 log with an ``add`` of 3 no longer
replays under it."""
from __future__ import annotations

from typing import ClassVar

from app.games.base import GameInfo
from tests.rules_versions.tally_v1 import TallyGame, TallyOptions


class TallyUnbumped(TallyGame):
    info: ClassVar[GameInfo] = GameInfo(
        id="tally", title="Tally", min_seats=2, max_seats=4, options=TallyOptions, phases=("turn",),
        action_types=frozenset(("add",)), rules_version=1,
    )
    MAX_ADD = 2
    WEIGHT = 2
    TARGET = 12


GAME = TallyUnbumped()
