"""Tally, rules version 2 (as :mod:`tests.rules_versions.tally_v2`), keeping version 1's engine
importable for the matches started under it (``GameInfo.earlier_rules``)."""
from __future__ import annotations

from typing import ClassVar

from app.games.base import GameInfo
from tests.rules_versions.tally_v1 import TallyOptions
from tests.rules_versions.tally_v2 import TallyGameV2


class TallyGameV2KeepsV1(TallyGameV2):
    info: ClassVar[GameInfo] = GameInfo(
        id="tally", title="Tally", min_seats=2, max_seats=4, options=TallyOptions, phases=("turn",),
        action_types=frozenset(("add",)), rules_version=2, earlier_rules={1: "tests.rules_versions.tally_v1"},
    )


GAME = TallyGameV2KeepsV1()
