"""Provinces as if its rules version were raised to 2 without keeping version 1 (the rules
themselves unchanged): the matches started under version 1 are then ones this "installation"
cannot replay. Used by the browser test of what players see."""
from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from app.games.base import GameInfo
from app.games.provinces.game import ProvincesGame


class ProvincesV2(ProvincesGame):
    info: ClassVar[GameInfo] = replace(ProvincesGame.info, rules_version=2)


GAME = ProvincesV2()
