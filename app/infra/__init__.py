"""Backends behind small interfaces: deadline timers, pub/sub fan-out, match leases.

Each has an in-process implementation (embedded mode, one node) and a Redis one (production mode,
chosen by ``BANNERFALL_REDIS_URL``).
"""
