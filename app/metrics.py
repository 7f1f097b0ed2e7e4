"""Prometheus metrics (prometheus-client), one registry per app so tests can run several apps."""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

from app import _native

#: upper bounds (seconds) of the latency histograms of the action path: fine below 10 ms, where
#: the ack target is (p99 action->ack <= 10 ms at half load)
LATENCY_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
                                      0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class LatencyBuckets:
    """A histogram cheap enough for every action (one ``bisect`` and two additions, ~0.3 µs where
    ``prometheus_client.Histogram.observe`` costs ~2.4 µs with its lock); exposed in Prometheus'
    histogram format by :class:`BucketsCollector`. ``observe(seconds)``; ``bounds``: upper bounds
    in seconds, ascending (``+Inf`` is added)."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding quantile ``q`` (0..1) of what was observed, in
        seconds (``inf`` past the last bound); None when nothing was."""
        n = sum(self.counts)
        if not n:
            return None
        rank, seen = q * n, 0
        for i, count in enumerate(self.counts):
            seen += count
            if seen >= rank and count:
                return self.bounds[i] if i < len(self.bounds) else float("inf")
        return float("inf")


class BucketsCollector(Collector):
    """Exposes the :class:`LatencyBuckets` ``source()`` returns (None: nothing yet) as the
    Prometheus histogram ``name``."""

    def __init__(self, name: str, documentation: str, source: Callable[[], LatencyBuckets | None]) -> None:
        self.name = name
        self.documentation = documentation
        self.source = source

    def collect(self) -> Iterator[HistogramMetricFamily]:
        found = self.source()
        family = HistogramMetricFamily(self.name, self.documentation)
        if found is not None:
            running, buckets = 0, []
            for bound, count in zip((*found.bounds, float("inf")), found.counts, strict=True):
                running += count
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
            family.add_metric([], buckets, found.total)
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        #: set by the app once its log writer exists (``LogWriter.stats``): the action-path histograms
        self.log_stats: object | None = None
        r = self.registry
        self.sockets = Gauge("bannerfall_sockets", "Connected match sockets", registry=r)
        self.matches_live = Gauge("bannerfall_matches_live", "Matches running on this node", registry=r)
        self.actions = Counter("bannerfall_actions_received", "act messages received", registry=r)
        self.log_records = Gauge("bannerfall_log_records_total", "Action log records committed", registry=r)
        self.log_commits = Gauge("bannerfall_log_commits_total", "Group commits of the action log", registry=r)
        self.deadlines = Gauge("bannerfall_deadlines_fired_total", "Deadlines that applied defaults", registry=r)
        self.log_failures = Gauge("bannerfall_log_failures_total",
                                  "Group commits in which some matches' records failed", registry=r)
        self.log_fenced = Gauge("bannerfall_log_fenced_total",
                                "Log records refused by the fencing check (stale owner or out of sequence)",
                                registry=r)
        self.log_dropped = Gauge("bannerfall_log_dropped_total",
                                 "Log records dropped because an earlier record of their match failed", registry=r)
        self.log_pending = Gauge("bannerfall_log_pending", "Log records queued, not yet committed", registry=r)
        self.storage_ok = Gauge("bannerfall_storage_ok", "1 unless the last log commit attempt failed", registry=r)
        self.recoveries = Gauge("bannerfall_match_recoveries_total",
                                "Matches rebuilt from their durable log after a failure on this node", registry=r)
        self.takeovers = Gauge("bannerfall_takeovers_total", "Matches taken over from another node", registry=r)
        self.lease_losses = Gauge("bannerfall_lease_losses_total", "Match leases this node lost, by reason: "
                                  "taken (a renewal found another holder or no key), expired (no renewal "
                                  "succeeded in time), stalled (the event loop stalled past LEASE_STALL_SECONDS)",
                                  ["reason"], registry=r)
        self.lease_renew_failures = Gauge("bannerfall_lease_renew_failures_total",
                                          "Lease renewal rounds that failed (Redis unreachable or too slow)",
                                          registry=r)
        self.lease_renew_seconds = Gauge("bannerfall_lease_renew_seconds",
                                         "Seconds the last successful lease renewal round took", registry=r)
        self.leases_held = Gauge("bannerfall_leases_held", "Match leases this node holds", registry=r)
        self.gc_pause = Histogram(
            "bannerfall_gc_pause_seconds", "Pauses of CPython's cyclic garbage collector, by generation collected "
            "(app/gcpolicy.py)", ["generation"],
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2), registry=r)
        self.gc_collected = Counter("bannerfall_gc_collected_objects", "Objects freed by the cyclic garbage collector",
                                    registry=r)
        self.gc_frozen = Gauge("bannerfall_gc_frozen_objects",
                               "Objects made at start-up that the collector no longer walks (gc.freeze; "
                               "app/gcpolicy.py)", registry=r)
        # set by app/gcpolicy.py, never counted when scraped: gc.get_freeze_count() walks the whole
        # frozen list (~23 ms for 2 M objects, holding the loop), and the benchmark reads /metrics
        # every 0.5 s (1 Dec 2026: 12 of 100 loop stalls over 40 ms were that count)
        self.compiled_hot_paths = Gauge("bannerfall_compiled_hot_paths",
                                        "1 when the compiled hot paths run, 0 when their .py sources do "
                                        "(app/_native.py; the start-up log says why)", registry=r)
        self.compiled_hot_paths.set_function(lambda: 1.0 if _native.STATUS == "compiled" else 0.0)
        self.deadline_lag = Histogram("bannerfall_deadline_lag_seconds", "Deadline firing lag",
                                      buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10), registry=r)
        self.errors = Counter("bannerfall_errors", "Errors sent to clients, by code", ["code"], registry=r)
        self.password_work = Counter("bannerfall_password_work", "Password operations run on the password pool "
                                     "(app/api/passwords.py), by op: hash, verify (argon2), strength (zxcvbn)",
                                     ["op"], registry=r)
        self.password_in_flight = Gauge("bannerfall_password_in_flight", "Password operations running or "
                                        "waiting for a worker of the password pool", registry=r)
        self.slow_disconnects = Counter("bannerfall_slow_disconnects", "Sockets closed for a full send queue",
                                        registry=r)
        self.links = Gauge("bannerfall_links", "Sockets here linked to a match on another node", registry=r)
        self.remote_peers = Gauge("bannerfall_remote_peers", "Sockets of other nodes attached to matches here",
                                  registry=r)
        self.socket_aborts = Counter("bannerfall_socket_aborts", "Sockets whose TCP connection was aborted "
                                     "because a close did not finish in time", registry=r)
        self.acts_unanswered = Counter("bannerfall_acts_unanswered", "Sockets closed (4503) because an act "
                                       "got no answer in time", registry=r)
        self.registry.register(BucketsCollector(
            "bannerfall_action_durable_seconds",
            "From an accepted action's log record being queued to its commit's callback, which sends "
            "the action's delta and ack (the server's part of action->ack after the rules)",
            lambda: getattr(self.log_stats, "durable", None)))
        self.registry.register(BucketsCollector(
            "bannerfall_log_commit_seconds", "Each group commit of the action log, start to end (retries included)",
            lambda: getattr(self.log_stats, "commit", None)))
