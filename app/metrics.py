"""Prometheus metrics (prometheus-client), one registry per app so tests can run several apps."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app import _native


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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
        self.gc_pause = Histogram("bannerfall_gc_pause_seconds", "Full cyclic garbage collections (app/gcpolicy.py)",
                                  buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2), registry=r)
        self.gc_collected = Counter("bannerfall_gc_collected_objects", "Objects freed by the cyclic garbage collector",
                                    registry=r)
        self.gc_frozen = Gauge("bannerfall_gc_frozen_objects",
                               "Objects the collector no longer walks (gc.freeze; app/gcpolicy.py), counted at "
                               "start-up and after each deep collection", registry=r)
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
        self.slow_disconnects = Counter("bannerfall_slow_disconnects", "Sockets closed for a full send queue",
                                        registry=r)
        self.links = Gauge("bannerfall_links", "Sockets here linked to a match on another node", registry=r)
        self.remote_peers = Gauge("bannerfall_remote_peers", "Sockets of other nodes attached to matches here",
                                  registry=r)
        self.socket_aborts = Counter("bannerfall_socket_aborts", "Sockets whose TCP connection was aborted "
                                     "because a close did not finish in time", registry=r)
        self.acts_unanswered = Counter("bannerfall_acts_unanswered", "Sockets closed (4503) because an act "
                                       "got no answer in time", registry=r)
