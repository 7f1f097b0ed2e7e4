"""The action path's latency histograms (``app.metrics.LatencyBuckets``): what they count, and how
``/metrics`` exposes them (Prometheus histogram format, cumulative buckets)."""
from __future__ import annotations

from prometheus_client import generate_latest

from app.metrics import LatencyBuckets, Metrics
from app.runtime.logwriter import LogWriterStats


def test_buckets_count_each_observation_once_at_its_upper_bound():
    b = LatencyBuckets((0.001, 0.01, 0.1))
    for seconds in (0.0005, 0.001, 0.002, 0.05, 3.0):
        b.observe(seconds)
    assert b.counts == [2, 1, 1, 1]  # <= 1 ms (bound included), <= 10 ms, <= 100 ms, +Inf
    assert abs(b.total - 3.0535) < 1e-9
    assert b.quantile(0.4) == 0.001 and b.quantile(0.6) == 0.01 and b.quantile(0.99) == float("inf")
    assert LatencyBuckets().quantile(0.5) is None


def test_the_log_writers_histograms_are_exported_cumulatively():
    metrics = Metrics()
    text = generate_latest(metrics.registry).decode()
    assert "bannerfall_action_durable_seconds" in text and "bannerfall_action_durable_seconds_count" not in text
    stats = LogWriterStats()
    metrics.log_stats = stats
    for ms in (0.3, 1.5, 1.5, 40.0):
        stats.durable.observe(ms / 1000)
    stats.commit.observe(0.004)
    get = metrics.registry.get_sample_value
    assert get("bannerfall_action_durable_seconds_bucket", {"le": "0.0005"}) == 1
    assert get("bannerfall_action_durable_seconds_bucket", {"le": "0.002"}) == 3
    assert get("bannerfall_action_durable_seconds_bucket", {"le": "0.05"}) == 4
    assert get("bannerfall_action_durable_seconds_bucket", {"le": "+Inf"}) == 4
    assert get("bannerfall_action_durable_seconds_count") == 4
    assert abs(get("bannerfall_action_durable_seconds_sum") - 0.0433) < 1e-9
    assert get("bannerfall_log_commit_seconds_bucket", {"le": "0.003"}) == 0
    assert get("bannerfall_log_commit_seconds_bucket", {"le": "0.005"}) == 1
