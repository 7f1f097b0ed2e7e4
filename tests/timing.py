"""How long a test waits for an event: deadlines that scale with the machine's load.

A test waits on an event (a message, a line, a port answering), never a fixed time; the deadline is
only its bound against a hang. On a loaded machine (the suite beside other work: load average 15-21
on 2 cores was seen) everything takes several times longer, so every deadline of the harness is
``scaled(seconds)``: the nominal time times :func:`time_scale`.

``time_scale()`` is ``BANNERFALL_TEST_TIME_SCALE`` when set (a number ≥ 1), else measured when
asked: the 1-minute load average per CPU core, at least 1 and at most :data:`MAX_MEASURED_SCALE`.
It is asked when a wait starts, so a wait started under load gets the longer bound. The bounds
that a test asserts about the server (e.g. "an act is answered within 16 s") are not scaled by
this: they are the server's promises, not the harness's patience.
"""
from __future__ import annotations

import os

#: the largest measured scale (a loaded machine makes waits ~longer, not forever)
MAX_MEASURED_SCALE = 8.0


def time_scale() -> float:
    """The factor every harness deadline is multiplied by (≥ 1)."""
    forced = os.environ.get("BANNERFALL_TEST_TIME_SCALE", "").strip()
    if forced:
        try:
            return max(1.0, float(forced))
        except ValueError:
            raise ValueError(f"BANNERFALL_TEST_TIME_SCALE={forced!r} is not a number") from None
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return 1.0
    return max(1.0, min(MAX_MEASURED_SCALE, load / (os.cpu_count() or 1)))


def scaled(seconds: float) -> float:
    """``seconds`` times :func:`time_scale` (the deadline of a wait started now)."""
    return seconds * time_scale()
