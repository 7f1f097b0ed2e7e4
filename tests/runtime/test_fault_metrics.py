"""The fault metrics are exported by a real ``bannerfall serve`` (embedded mode)."""
from __future__ import annotations

import re

import httpx

from tests.conftest import ServerProcess


def test_fault_metrics_are_exported(tmp_path):
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'bf.db'}").start()
    try:
        text = httpx.get(srv.url + "/metrics", timeout=10).text
    finally:
        srv.stop()
    assert re.search(r"^bannerfall_storage_ok 1(\.0)?$", text, re.M)
    for name in ("bannerfall_log_pending", "bannerfall_log_failures_total", "bannerfall_log_fenced_total",
                 "bannerfall_log_dropped_total", "bannerfall_match_recoveries_total", "bannerfall_takeovers_total"):
        assert re.search(rf"^{name} 0(\.0)?$", text, re.M), name
    for reason in ("taken", "expired", "stalled"):  # lease losses, by reason (docs/operations.md)
        assert re.search(rf'^bannerfall_lease_losses_total{{reason="{reason}"}} 0(\.0)?$', text, re.M), reason
    assert re.search(r"^bannerfall_lease_renew_failures_total 0(\.0)?$", text, re.M)
    # the action path's histograms are there before any action (counts 0)
    for name in ("bannerfall_action_durable_seconds_count", "bannerfall_log_commit_seconds_count"):
        assert re.search(rf"^{name} 0(\.0)?$", text, re.M), name
