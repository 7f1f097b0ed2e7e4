"""Fixtures shared by the runtime tests."""
from __future__ import annotations

import gc

import pytest


@pytest.fixture
def gc_state():
    """Gives the cyclic collector back as the test found it: enabled or not, thresholds, nothing
    frozen, no debug flags or saved garbage (for tests of the GC policy and of cyclic garbage)."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    yield
    gc.set_debug(0)
    gc.garbage.clear()
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    if enabled:
        gc.enable()
    else:
        gc.disable()
