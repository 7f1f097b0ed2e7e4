"""``create_app(settings)``: the FastAPI app; its lifespan owns every engine, client and task."""
from __future__ import annotations

import functools
import logging
import os
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Awaitable, Callable

from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import generate_latest

from app import _native
from app.api import errors
from app.api import limits as api_limits
from app.api.deps import hash_token
from app.api.routes import accounts, admin, games, inventory, lobbies, matches, matchmaking, parties, players
from app.api.routes import ratings as rating_routes
from app.api.routes import rematch as rematch_routes
from app.api.routes import version as version_routes
from app.api.security import SecurityHeadersMiddleware, check_admin_token, install_docs
from app.config import Settings
from app.db.admins import ensure_admin
from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.ratings import RatingsRepository
from app.db.repo import Repository
from app.db.wallet import WalletRepository
from app.gcpolicy import GcPolicy
from app.infra.backends import Backends, make_backends
from app.infra.leases import LOSS_REASONS, LeaseKeeper
from app.logsetup import install_log_safety
from app.matchmaking.wiring import make_matchmaking
from app.meta.settlement import Settler
from app.metrics import Metrics
from app.ratings import Rater
from app.readiness import Readiness
from app.runtime.bots import BotRunner
from app.runtime.cluster import Cluster
from app.runtime.logwriter import LogWriter
from app.runtime.manager import MatchManager
from app.runtime.rows import MatchRow
from app.transport import SocketHub
from app.transport.asgi import router as ws_router
from app.transport.asgi import serve_direct

log = logging.getLogger("bannerfall")
WEB = Path(__file__).parent / "web"


async def _ensure_admin(repo: Repository, token: str | None) -> None:
    """The configured admin's row (random id, made idempotently) and every other admin revoked:
    rotating ``BANNERFALL_ADMIN_TOKEN``, or removing it, stops the old token (``app.db.admins``)."""
    await ensure_admin(repo.engine, hash_token(token) if token else None)


def _install_safety(app: FastAPI, settings: Settings) -> None:
    """Limits, security headers, offline API docs and log scrubbing (``docs/operations.md``).
    Middleware added here sits inside ``RawSendMiddleware``; from the outside in: security headers
    (so refusals carry them too), rate limits, body limit."""
    install_log_safety()
    if os.environ.get("FORWARDED_ALLOW_IPS"):
        log.warning("FORWARDED_ALLOW_IPS is not read: the node trusts X-Forwarded-For only from "
                    "BANNERFALL_TRUSTED_PROXIES (now %r; docs/operations.md, 'Behind a proxy')",
                    settings.trusted_proxies)
    install_docs(app)
    api_limits.install(app)
    app.state.rate_limiter = api_limits.RateLimiter(settings)
    app.state.socket_slots = api_limits.SocketSlots(settings.max_sockets_per_player)
    app.add_middleware(api_limits.BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(api_limits.RateLimitMiddleware, limiter=app.state.rate_limiter)
    app.add_middleware(SecurityHeadersMiddleware)


def _headers_only(send: Callable[[dict[str, Any]], Awaitable[None]]) -> Callable[[dict[str, Any]], Awaitable[None]]:
    """``send`` for a HEAD request served as GET: the status and headers (``content-length`` that of
    the GET) go out, the body does not."""
    async def send_head(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            if message.get("more_body", False):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)
    return send_head


class RawSendMiddleware:
    """Outer ASGI layer (inside ``TextGuard``, which passes sockets through): sets the client's
    address behind the trusted proxies (``app.api.limits.TrustedProxies``); keeps the server's own
    ``send`` for match sockets in the scope, so the per-socket writer can send frames without the
    per-message cost of every middleware wrapper, and serves match sockets from here
    (:func:`app.transport.asgi.serve_direct`: the layers inside would keep a coroutine frame each for the
    socket's life and do nothing for it but the rate limit, which it checks)."""

    def __init__(self, app, proxies: api_limits.TrustedProxies) -> None:
        self.app = app
        self.proxies = proxies

    async def __call__(self, scope, receive, send) -> None:
        # the client's address behind the trusted proxies, once, for everything inside (rate limits)
        self.proxies.resolve(scope)
        if scope["type"] != "websocket":
            if scope["type"] == "http" and scope.get("method") == "HEAD":
                # HEAD is GET without the body (RFC 9110 9.3.2), for every route: FastAPI's routes
                # answer only the methods they list, so a load balancer's HEAD /healthz got 404
                await self.app({**scope, "method": "GET"}, receive, _headers_only(send))
                return
            await self.app(scope, receive, send)
            return
        scope["bannerfall.raw_send"] = send
        try:
            if not await serve_direct(scope, receive, send):
                await self.app(scope, receive, send)
        finally:
            # uvicorn's protocol keeps the scope, and ``send`` is its bound method: a reference
            # cycle per socket for the cyclic collector unless it is broken here (docs/decisions.md)
            scope.pop("bannerfall.raw_send", None)


def make_lease_keeper(backends: Backends, settings: Settings, on_lost: Callable[[str], None]) -> LeaseKeeper:
    """The node's lease keeper. Several nodes (Redis): ``LEASE_SECONDS``, renewed by a thread of its
    own while the event loop runs (``LEASE_STALL_SECONDS``); a lease lapses when not renewed in
    time. One process (local backends): nothing to fail over to, so a lease never lapses
    by time (``lapses=False``): an event-loop stall (a suspended process, a long pause) must not drop
    every match and rebuild it; renewals are rare (TTL at least 30 s)."""
    if backends.mode == "redis":
        renew_blocking = getattr(backends.leases, "renew_many_blocking", None)
        return LeaseKeeper(backends.leases, settings.node, settings.lease_seconds, on_lost=on_lost,
                           renew_blocking=renew_blocking, stall_seconds=settings.lease_stall_seconds)
    return LeaseKeeper(backends.leases, settings.node, max(settings.lease_seconds, 30.0), on_lost=on_lost,
                       lapses=False)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    check_admin_token(settings.admin_token)  # a weak token: one line and exit, before anything starts

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if settings.migrate_on_start:
            await upgrade_async(settings.database_url)
        engine = make_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms,
                             timeout_seconds=settings.database_timeout_seconds)
        repo = Repository(engine)
        await _ensure_admin(repo, settings.admin_token)
        # the match sockets' shared state: one framing of a text for many sockets, the batch of
        # writes of a group commit, the lean sockets' keepalive (app/transport/hub.py)
        sockets = app.state.sockets = SocketHub(heartbeat_seconds=settings.heartbeat_seconds)
        sockets.start()
        writer = LogWriter(repo, window_ms=settings.commit_window_ms, max_batch=settings.commit_max_batch,
                           retry_seconds=settings.commit_retry_seconds, sends=sockets.corked)
        writer.start()
        app.state.metrics.log_stats = writer.stats
        backends = make_backends(settings.redis_url, settings.node, settings.redis_prefix,
                                 claim_seconds=settings.deadline_claim_seconds,
                                 timeout_seconds=settings.redis_timeout_seconds)
        # bots play in-process as local peers of their match's runner (app/runtime/bots.py)
        bots = BotRunner(delay=settings.bot_delay_seconds) if settings.run_bots else None
        manager = MatchManager(repo, writer, backends.timers, on_match_started=bots.ensure if bots else None,
                               node_id=settings.node, spectator_patch_seconds=settings.spectator_patch_seconds)
        if bots:
            bots.bind(manager)
        keeper = make_lease_keeper(backends, settings, manager.lease_lost)
        lease_seconds = keeper.ttl
        m = app.state.metrics
        for reason in LOSS_REASONS:
            m.lease_losses.labels(reason).set_function(functools.partial(keeper.losses.get, reason, 0))
        m.lease_renew_failures.set_function(lambda: keeper.renew_failures)
        m.lease_renew_seconds.set_function(lambda: keeper.last_renew_seconds)
        m.leases_held.set_function(lambda: len(keeper.held))
        cluster = Cluster(settings.node, backends.pubsub, keeper, manager, lease_seconds=lease_seconds,
                          multi_node=backends.mode == "redis",
                          takeover_interval=settings.takeover_interval_seconds)
        manager.bind(cluster)
        wallets = WalletRepository(engine)
        settler = Settler(wallets, sweep_seconds=settings.settle_sweep_seconds,
                          key_seconds=settings.idempotency_key_seconds)
        ratings = RatingsRepository(engine, writer=repo.log_committer,  # SQLite: rated on its thread
                                    rules=rating_routes.rating_rules(settings))
        rater = Rater(ratings, sweep_seconds=settings.rating_sweep_seconds)

        def match_ended(match: MatchRow) -> None:  # specials settled and ratings changed, once each
            settler.match_ended(match)
            rater.match_ended(match)

        manager.on_match_ended = match_ended
        manager.on_match_insert = wallets.reserve_lifetimes  # a special's lifetime commits with its match
        app.state.wallets, app.state.settler = wallets, settler
        app.state.ratings, app.state.rater = ratings, rater
        manager.on_deadline_lag = app.state.metrics.deadline_lag.observe
        app.state.metrics.links.set_function(lambda: len(cluster.links))
        app.state.metrics.remote_peers.set_function(lambda: len(cluster.remote_peers))
        app.state.settings, app.state.repo, app.state.manager = settings, repo, manager
        app.state.log_writer, app.state.bots, app.state.backends = writer, bots, backends
        app.state.cluster = cluster
        app.state.readiness = Readiness(app.state)
        app.state.started_at = time.time()
        await cluster.start()
        await manager.start()
        await settler.start()
        await rater.start()
        app.state.matchmaking = make_matchmaking(settings, backends, repo, manager, app.state.metrics.registry)
        await app.state.matchmaking.start()
        # what start-up made (modules, engines, recovered matches) is frozen out of the collector's
        # sight; CPython's automatic collector runs as usual for everything else, and every
        # collection is timed into /metrics (app/gcpolicy.py)
        gc_policy = GcPolicy(thresholds=settings.gc_thresholds, metrics=app.state.metrics,
                             log_ms=settings.gc_log_ms)
        gc_policy.start()
        app.state.gc_policy = gc_policy
        # the installed games (a game whose entry point is broken is logged and left out, app/games)
        from app.games import registry

        log.info("bannerfall node %s ready on %s (%s mode; hot paths: %s; games: %s)", settings.node,
                 settings.base_url, backends.mode, _native.STATUS, ", ".join(registry()) or "none")
        if _native.STATUS.startswith("source") and not _native.ASKED:
            log.warning("the compiled hot paths are not in use (%s): each action costs ~20-40 %% more CPU "
                        "(docs/operations.md, 'Compiled hot paths')", _native.STATUS[len("source: "):])
        try:
            yield
        finally:
            await gc_policy.stop()
            await app.state.matchmaking.stop()
            if bots:
                await bots.stop()
            await manager.stop()
            await settler.stop()
            await rater.stop()
            await writer.stop()
            await repo.aclose()
            await cluster.stop()
            await backends.close()
            await engine.dispose()
            await sockets.stop()

    app = FastAPI(title="Bannerfall", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Authoritative game server for card games of territory. "
                              "Match protocol: docs/protocol.md.")
    app.state.metrics = Metrics()
    _install_safety(app, settings)
    app.state.trusted_proxies = api_limits.TrustedProxies(settings.trusted_proxies)
    app.add_middleware(RawSendMiddleware, proxies=app.state.trusted_proxies)
    errors.install(app)
    for module in (players, accounts, inventory, games, lobbies, matches, matchmaking, parties, rematch_routes, admin,
                   rating_routes, version_routes):
        app.include_router(module.router, prefix="/api/v1")
    app.include_router(inventory.admin_router, prefix="/api/v1")
    app.include_router(games.web_router)  # each game's board files and the event wording
    app.include_router(ws_router)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], responses={503: {"description": "not ready: a check is not `ok` "
                                                         "(the body names it; docs/operations.md, 'Observing')"}})
    async def readyz() -> JSONResponse:
        """Whether this node can serve: the database and Redis answer within 0.5 s each (probed at
        once) and the log writer's commits do not fail (``app/readiness.py``)."""
        ok, body = await app.state.readiness.check()
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    async def metrics() -> PlainTextResponse:
        m = app.state.metrics
        m.matches_live.set(len(app.state.manager.runners))
        m.log_records.set(app.state.log_writer.stats.records)
        m.log_commits.set(app.state.log_writer.stats.commits)
        m.deadlines.set(app.state.manager.deadlines_fired)
        stats = app.state.log_writer.stats
        m.log_failures.set(stats.failures)
        m.log_fenced.set(stats.fenced)
        m.log_dropped.set(stats.dropped)
        m.log_pending.set(app.state.log_writer.pending)
        m.storage_ok.set(0 if app.state.log_writer.unhealthy else 1)
        m.recoveries.set(app.state.manager.recoveries)
        m.takeovers.set(app.state.cluster.takeovers)
        return PlainTextResponse(generate_latest(m.registry).decode(), media_type="text/plain; version=0.0.4")

    if WEB.is_dir() and any(WEB.iterdir()):
        from fastapi.staticfiles import StaticFiles

        app.mount("/", StaticFiles(directory=WEB, html=True), name="web")
    return app
