"""The fixture that "upgrades" this process's engine of the test game Tally."""
from __future__ import annotations

import pytest

from tests.rules_versions.serve import register, unregister


@pytest.fixture
def tally():
    """``tally(module)``: this process's Tally engine is ``tests.rules_versions.<module>`` from now
    on (an upgrade between two nodes); removed from the registry afterwards."""
    yield register
    unregister("tally")
