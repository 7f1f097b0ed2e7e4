"""``make_matchmaking``: the node's matchmaking service from its settings and backends."""
from __future__ import annotations

import functools
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from app.api.deps import hash_token
from app.matchmaking.matcher import Window
from app.matchmaking.parties import LocalParties, RedisParties
from app.matchmaking.service import (
    MatchmakingConfig,
    MatchmakingService,
    bot_player_factory,
)
from app.matchmaking.store import TicketStore


def make_matchmaking(settings: Any, backends: Any, repo: Any, manager: Any,
                     registry: CollectorRegistry | None = None) -> MatchmakingService:
    """Redis tickets (and parties, rematch offers) when the node runs on Redis (``backends.mode ==
    "redis"``, sharing its client and key prefix), else in-process ones. Start it with ``await
    service.start()``, stop with ``stop()``."""
    store: TicketStore
    if backends.mode == "redis":
        store = RedisParties(backends.redis, settings.redis_url, settings.redis_prefix,
                             ticket_ttl=settings.matchmaking_ticket_ttl_seconds, party_ttl=settings.party_ttl_seconds)
    else:
        store = LocalParties(ticket_ttl=settings.matchmaking_ticket_ttl_seconds,
                             party_ttl=settings.party_ttl_seconds)
    config = MatchmakingConfig(
        window=Window(settings.matchmaking_window_base, settings.matchmaking_window_widen,
                      settings.matchmaking_window_max),
        tick_seconds=settings.matchmaking_tick_seconds, claim_seconds=settings.matchmaking_claim_seconds,
        bot_kind=settings.matchmaking_bot_kind, special_costs=dict(settings.special_costs),
        max_bot_matches_per_player=settings.max_bot_matches_per_player,
        parallel=1 if settings.is_sqlite else 8)  # SQLite has one writer: no point racing it
    service = MatchmakingService(store, repo, manager.create_match, config,
                                 make_bot=bot_player_factory(settings.matchmaking_bot_kind, hash_token))
    if registry is not None:
        for name, text in (("formed", "Quick-play matches this node formed"),
                           ("claims_lost", "Quick-play claims this node lost to another node"),
                           ("fenced", "Quick-play claims of this node fenced off after their deadline"),
                           ("settled", "Expired quick-play claims this node settled")):
            gauge = Gauge(f"bannerfall_matchmaking_{name}_total", text, registry=registry)
            gauge.set_function(functools.partial(getattr, service, name))
        polls = Gauge("bannerfall_matchmaking_long_polls", "Quick-play long-polls waiting on this node now",
                      registry=registry)
        polls.set_function(store.waiters)
    return service
