"""``make_matchmaking``: the node's matchmaking service from its settings and backends."""
from __future__ import annotations

from typing import Any

from app.api.deps import hash_token
from app.matchmaking.matcher import Window
from app.matchmaking.service import (
    MatchmakingConfig,
    MatchmakingService,
    bot_player_factory,
)
from app.matchmaking.store import LocalTicketStore, RedisTicketStore, TicketStore


def make_matchmaking(settings: Any, backends: Any, repo: Any, manager: Any) -> MatchmakingService:
    """Redis tickets when the node runs on Redis (``backends.mode == "redis"``, sharing its client and
    key prefix), else in-process tickets. Start it with ``await service.start()``, stop with ``stop()``."""
    store: TicketStore
    if backends.mode == "redis":
        store = RedisTicketStore(backends.redis, settings.redis_url, settings.redis_prefix,
                                 ticket_ttl=settings.matchmaking_ticket_ttl_seconds)
    else:
        store = LocalTicketStore()
    config = MatchmakingConfig(
        window=Window(settings.matchmaking_window_base, settings.matchmaking_window_widen,
                      settings.matchmaking_window_max),
        tick_seconds=settings.matchmaking_tick_seconds, claim_seconds=settings.matchmaking_claim_seconds,
        bot_kind=settings.matchmaking_bot_kind, special_costs=dict(settings.special_costs))
    return MatchmakingService(store, repo, manager.create_match, config,
                              make_bot=bot_player_factory(settings.matchmaking_bot_kind, hash_token))
