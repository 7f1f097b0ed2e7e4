"""Limits: the client's address behind trusted proxies (:class:`TrustedProxies`), request-body size,
rate limits per client address and per player (the ``limits`` library: memory storage in embedded
mode, Redis when ``redis_url`` is set), and caps per player on open lobbies, running bot matches and
sockets.

Every refusal changes nothing and says when to come back: REST answers ``413`` or ``429`` with
``{code, message}`` (``429`` with ``Retry-After``); a socket gets an ``error`` then close code 4429.
Settings and defaults: ``docs/operations.md`` ("Limits").
"""
from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import math
import time
import weakref
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping
from typing import Annotated, Any

import orjson
from fastapi import Depends, Request
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api.deps import PlayerDep
from app.api.errors import drop_tracebacks
from app.config import Settings

log = logging.getLogger("bannerfall.limits")

CLOSE_RATE_LIMITED = 4429
#: Seconds a client is told to wait when a cap (not a rate) refuses it: caps free up when a lobby
#: closes or a match ends, which the server cannot predict.
CAP_RETRY_SECONDS = 30
#: Paths never rate limited: probes of load balancers and monitoring.
EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
NEW_PLAYER_PATH = "/api/v1/players"


class LimitExceeded(StarletteHTTPException):
    """A refusal with a code: 413 ``body_too_large`` or 429 ``rate_limited`` / ``too_many_*``
    (with ``Retry-After``). Rendered as ``{code, message}`` by :func:`install`."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None) -> None:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        super().__init__(status, message, headers=headers)
        self.code = code
        self.message = message


def _error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> Any:
    from fastapi.responses import JSONResponse

    return JSONResponse({"code": code, "message": message}, status_code=status, headers=headers)


def install(app) -> None:
    """Register the handler that renders :class:`LimitExceeded` as ``{code, message}``."""

    async def _limit_exceeded(_request: Request, exc: Exception):
        assert isinstance(exc, LimitExceeded)
        drop_tracebacks(exc)
        metrics = getattr(app.state, "metrics", None)
        if metrics is not None:
            metrics.errors.labels(exc.code).inc()
        return _error_response(exc.status_code, exc.code, exc.message, exc.headers)

    app.add_exception_handler(LimitExceeded, _limit_exceeded)


# -- the client's address -------------------------------------------------------------------

#: IPv6 clients are counted by their /64 network: one subscriber usually holds a whole /64 (RFC 6177,
#: RFC 8273), so counting single addresses would give it 2^64 fresh budgets
IPV6_COUNTED_PREFIX = 64


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``text`` as an address (``[v6]`` brackets and an IPv4-mapped IPv6 form undone), else None."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def parse_networks(spec: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``"10.0.0.5, 172.28.0.0/16, ::1"`` → networks (an address is a one-address network); ``""`` →
    none. Raises ValueError for ``*`` (trusting every address would let any client name its own
    address) and for anything that is not an address or a network."""
    networks = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        if item == "*":
            raise ValueError("'*' would trust every client's X-Forwarded-For: list the proxies' addresses "
                             "or networks (e.g. 172.28.0.10 or 10.0.0.0/8)")
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network") from None
    return tuple(networks)


class TrustedProxies:
    """The proxies in front of the node (``trusted_proxies``: addresses and networks). Only a
    request whose peer is one of them has its ``X-Forwarded-For`` read, from the right: each entry
    added by a trusted proxy is skipped, and the first entry that is not a trusted proxy is the
    client (the leftmost entry if all are trusted). Entries left of it were written by the client
    and are never read, so a client cannot choose its address whatever header it sends. An entry
    that is not an address stops the walk: the client is then ``"invalid"`` (one budget for all
    such requests, never an exempt address). ``X-Forwarded-Proto`` of a trusted peer sets the
    scheme. Without a trusted peer the connection's own address is the client's."""

    def __init__(self, spec: str) -> None:
        self.networks = parse_networks(spec)

    def trusts(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
        return ip is not None and any(ip.version == net.version and ip in net for net in self.networks)

    def client(self, peer: str, forwarded_for: list[str]) -> str:
        """The client's address for a connection from ``peer`` carrying ``forwarded_for`` (the
        ``X-Forwarded-For`` entries in order, all header lines joined)."""
        ip = _ip(peer)
        if not self.trusts(ip):
            return str(ip) if ip is not None else peer
        current = str(ip)
        for entry in reversed(forwarded_for):
            hop = _ip(entry)
            if hop is None:
                return "invalid"
            current = str(hop)
            if not self.trusts(hop):
                return current
        return current

    def resolve(self, scope: dict[str, Any]) -> None:
        """Rewrite ``scope["client"]`` (and ``scope["scheme"]``) of an HTTP request or socket to the
        client's as :meth:`client` finds it; a scope without ``client`` is left alone."""
        peer = scope.get("client")
        if not peer or not self.networks:
            return
        forwarded: list[str] = []
        proto: bytes | None = None
        for key, value in scope.get("headers", ()):
            if key == b"x-forwarded-for":
                forwarded += value.decode("latin-1").split(",")
            elif key == b"x-forwarded-proto":
                proto = value
        if not forwarded and proto is None:
            return
        if not self.trusts(_ip(peer[0])):
            return
        if forwarded:
            scope["client"] = (self.client(peer[0], forwarded), 0)
        if proto is not None:
            scheme = proto.decode("latin-1").split(",")[-1].strip().lower()
            if scheme in ("http", "https"):
                scope["scheme"] = ("wss" if scheme == "https" else "ws") if scope["type"] == "websocket" else scheme


def address_key(address: str) -> str:
    """The key a client address is counted by: the address itself, an IPv6 one by its /64 network
    (:data:`IPV6_COUNTED_PREFIX`)."""
    ip = _ip(address)
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{ip}/{IPV6_COUNTED_PREFIX}", strict=False))
    return str(ip) if ip is not None else address


def client_address(scope: Mapping[str, Any]) -> str:
    """The client's address of a request or socket as :class:`TrustedProxies` resolved it."""
    client = scope.get("client")
    return client[0] if client else "unknown"


# -- request bodies --------------------------------------------------------------------------

class BodyLimitMiddleware:
    """Refuses request bodies over ``max_bytes`` with 413 ``body_too_large``: at once when
    ``Content-Length`` says so, otherwise by counting bytes as they arrive (chunked uploads) and
    failing the read that crosses the limit, so no more than ``max_bytes`` (plus one chunk) is ever
    held for a request."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        message = f"request bodies are limited to {limit} bytes"
        for key, value in scope.get("headers", ()):
            if key == b"content-length":
                try:
                    too_big = int(value) > limit
                except ValueError:
                    too_big = False
                if too_big:
                    await _error_response(413, "body_too_large", message)(scope, receive, send)
                    return
        received = 0

        async def counting_receive():
            nonlocal received
            msg = await receive()
            if msg["type"] == "http.request":
                received += len(msg.get("body", b""))
                if received > limit:
                    raise LimitExceeded(413, "body_too_large", message)
            return msg

        await self.app(scope, counting_receive, send)


# -- rate limits -----------------------------------------------------------------------------

def _parse(spec: str | None) -> list[Any]:
    """``"20/second;600/minute"`` → rate limit items; empty or ``off`` → no limit."""
    from limits import parse_many

    if not spec or spec.strip().lower() in ("off", "none", "0"):
        return []
    return list(parse_many(spec))


def token_key(token: str) -> str:
    """The per-player rate-limit key of a bearer token: a keyed one-way digest, different from the
    stored token hash (so neither the token nor its stored hash is ever a Redis key)."""
    return hashlib.blake2b(token.encode(), digest_size=16, person=b"bf-ratelimit").hexdigest()


#: after a storage failure the limits are not checked for this many seconds (each check would
#: wait for Redis's timeouts first)
SKIP_AFTER_FAILURE_SECONDS = 2.0
#: Seconds between two sweeps of expired keys in the embedded (memory) rate-limit storage
SWEEP_SECONDS = 1.0

_swept_storage: Any = None


class _OneLock(defaultdict[str, asyncio.Lock]):
    """The ``locks`` of :func:`swept_memory_storage`: ``locks[key]`` is one ``asyncio.Lock`` for every
    key (made at first use, on the running loop) and ``pop`` forgets nothing, so the storage keeps
    no object per key for its locking."""

    def __init__(self) -> None:
        super().__init__(None)
        self._lock: asyncio.Lock | None = None

    def __getitem__(self, key: str) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def pop(self, key: Any, default: Any = None) -> Any:
        return default


def swept_memory_storage() -> Any:
    """A ``limits`` async ``MemoryStorage`` whose sweep of expired keys runs at most once every
    :data:`SWEEP_SECONDS`. The library starts that sweep — one pass over every key it holds — after
    each hit whose previous sweep has finished, so a node with many recent clients paid for all of
    them on every request (87 µs a hit at 10,000 keys against 11 µs at 100, measured here). No count
    depends on the sweep: a read drops an expired counter itself and a moving window compares
    timestamps; the sweep only frees memory, now a second late at most.

    Its ``locks`` give every key one shared ``asyncio.Lock`` (:class:`_OneLock`) instead of one lock
    per key kept until the key expires (about five per match just made, each an object the cyclic
    collector walks). The library's critical sections have no ``await`` but the sweep's, which holds
    the lock of one key at a time over a thread hop; a shared lock makes a hit wait at most for that
    one hop, once a second.

    The overrides are of the library's private ``__schedule_expiry`` (name-mangled) and its
    ``locks`` attribute: ``tests/infra/test_limits_sweep.py`` fails if a release renames them."""
    global _swept_storage
    if _swept_storage is None:
        from limits.aio.storage import MemoryStorage

        class SweptMemoryStorage(MemoryStorage):
            _next_sweep = 0.0

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.locks = _OneLock()

            def __setstate__(self, state: dict[str, Any]) -> None:
                super().__setstate__(state)
                self.locks = _OneLock()

            async def _MemoryStorage__schedule_expiry(self) -> None:
                now = time.monotonic()
                if now < self._next_sweep:
                    return
                self._next_sweep = now + SWEEP_SECONDS
                await super()._MemoryStorage__schedule_expiry()  # type: ignore[misc]

        _swept_storage = SweptMemoryStorage
    return _swept_storage()


class RateLimiter:
    """Rate limits of the ``limits`` library. In production mode (``redis_url`` set) the counters live
    in Redis under ``{redis_prefix}limits:`` so every node shares them; otherwise in memory. Request
    limits use sliding-window counters (two numbers per key; near a window's edge they may let a few
    more through); credential budgets (``exact=True``: sign-ins, claims, password changes, failed party joins) use a
    moving window, one timestamp per counted attempt, so "6 per minute" means at most 6 in any 60 s.
    A storage failure lets the request through (fail open) and is logged once a minute; for
    :data:`SKIP_AFTER_FAILURE_SECONDS` after it requests pass without waiting on the storage."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.per_ip = _parse(settings.rate_limit_ip)
        self.per_player = _parse(settings.rate_limit_player)
        self.new_players = _parse(settings.rate_limit_new_players)
        self.claims = _parse(settings.rate_limit_claim)
        self.password_changes = _parse(settings.rate_limit_password_change)
        self.exempt = frozenset(a.strip() for a in settings.rate_limit_exempt.split(",") if a.strip())
        self._strategies: tuple[Any, Any] | None = None
        self._warned_at = 0.0
        #: ``time.monotonic()`` until which the limits are not checked (fail open without waiting)
        self._skip_until = 0.0

    def _made(self) -> tuple[Any, Any]:
        """(sliding-window counter, moving window) strategies over one storage, made at first use
        inside the server's event loop (the Redis client binds to it)."""
        if self._strategies is None:
            from limits.aio.storage import RedisStorage
            from limits.aio.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

            url = self.settings.redis_url
            if url:
                from redis.asyncio.retry import Retry
                from redis.backoff import NoBackoff
                from redis.exceptions import ConnectionError as RedisConnectionError

                # one retry, only for a refused or reset connection: redis-py's default (ten retries,
                # timeouts included) made every request wait ~15 s for its limits while Redis hung
                storage: Any = RedisStorage("async+" + url, implementation="redispy",
                                            key_prefix=f"{self.settings.redis_prefix}limits",
                                            socket_timeout=1.0, socket_connect_timeout=1.0,
                                            retry=Retry(NoBackoff(), 1,  # type: ignore[arg-type]
                                                        supported_errors=(RedisConnectionError,)))
            else:
                storage = swept_memory_storage()
            self._strategies = (SlidingWindowCounterRateLimiter(storage), MovingWindowRateLimiter(storage))
        return self._strategies

    async def hit(self, items: list[Any], *key: str, exact: bool = False) -> int | None:
        """Count one request against every item; the seconds to wait when one is exhausted, else None.
        ``exact``: a moving window (credential budgets) instead of a sliding-window counter."""
        return await self._check(items, key, count=True, exact=exact)

    async def test(self, items: list[Any], *key: str, exact: bool = False) -> int | None:
        """Like :meth:`hit` without counting anything: the seconds to wait when one more request would
        exceed an item, else None (for budgets only some outcomes spend, such as failed sign-ins)."""
        return await self._check(items, key, count=False, exact=exact)

    async def _check(self, items: list[Any], key: tuple[str, ...], *, count: bool, exact: bool) -> int | None:
        if time.monotonic() < self._skip_until:  # the storage failed a moment ago: fail open at once
            return None
        try:
            strategy = self._made()[1 if exact else 0]
            for item in items:
                allowed = (await strategy.hit(item, *key) if count else await strategy.test(item, *key))
                if not allowed:
                    stats = await strategy.get_window_stats(item, *key)
                    return max(1, math.ceil(stats.reset_time - time.time()))
        except Exception as exc:  # the storage (Redis) failed: let the request through
            now = time.monotonic()
            self._skip_until = now + SKIP_AFTER_FAILURE_SECONDS
            if now - self._warned_at > 60:
                self._warned_at = now
                log.warning("rate limits not checked: storage failed (%s)", type(exc).__name__)
        return None


def _bearer(scope) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() != "bearer":
                return None
            return token.strip() or None
    return None


class RateLimitMiddleware:
    """Per client address (except ``rate_limit_exempt``): every HTTP request and every socket opened
    (``rate_limit_ip``), and ``POST /api/v1/players`` besides (``rate_limit_new_players``); per
    player: every request with a
    bearer token (``rate_limit_player``, keyed by :func:`token_key`). Over a limit: 429
    ``rate_limited`` with ``Retry-After``, or for a socket an ``error`` then close 4429."""

    def __init__(self, app, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope, receive, send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or scope.get("path") in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        if not await refuse_if_limited(self.limiter, scope, receive, send):
            await self.app(scope, receive, send)


async def refuse_if_limited(limiter: RateLimiter, scope, receive, send) -> bool:
    """The checks of :class:`RateLimitMiddleware` for one HTTP request or socket (``scope``): True
    when a limit refused it (the answer is sent: 429, or for a socket an ``error`` then 4429),
    False when it may go on. Also called for the match sockets served before the middleware
    (``app.main.RawSendMiddleware``)."""
    kind = scope["type"]
    address = client_address(scope)
    by_address = address not in limiter.exempt
    ip = address_key(address)
    retry = await limiter.hit(limiter.per_ip, "ip", ip) if limiter.per_ip and by_address else None
    if retry is None and kind == "http":
        if (limiter.new_players and by_address and scope.get("method") == "POST"
                and scope.get("path") == NEW_PLAYER_PATH):
            retry = await limiter.hit(limiter.new_players, "new-player", ip)
        if retry is None and limiter.per_player:
            token = _bearer(scope)
            if token:
                retry = await limiter.hit(limiter.per_player, "player", token_key(token))
    if retry is None:
        return False
    message = f"too many requests: retry in {retry} s"
    app = scope.get("app")
    metrics = getattr(getattr(app, "state", None), "metrics", None)
    if metrics is not None:
        metrics.errors.labels("rate_limited").inc()
    if kind == "http":
        await _error_response(429, "rate_limited", message, {"Retry-After": str(retry)})(scope, receive, send)
        return True
    first = await receive()
    if first["type"] != "websocket.connect":
        return True
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": orjson.dumps(
        {"type": "error", "code": "rate_limited", "message": message}).decode()})
    await send({"type": "websocket.close", "code": CLOSE_RATE_LIMITED, "reason": "rate limited"})
    return True


# -- caps per player -------------------------------------------------------------------------

def keyed_lock(request: Request, kind: str, key: str) -> asyncio.Lock:
    """This node's lock for one ``kind`` of check-then-change on one ``key`` (a player's capped
    changes; a username's sign-ins): the check and the change it guards run under it, one request
    at a time, so parallel requests cannot all pass the check before any has made its change (2 Dec
    2026: 19 parallel creates with a cap of 3 made 19 lobbies; 20 parallel wrong passwords passed a
    budget of 5). Kept while some request holds or waits for it (a weak map, per app)."""
    locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] | None = getattr(
        request.app.state, "keyed_locks", None)
    if locks is None:
        locks = request.app.state.keyed_locks = weakref.WeakValueDictionary()
    lock = locks.get((kind, key))
    if lock is None:
        lock = locks[(kind, key)] = asyncio.Lock()
    return lock


async def lobby_cap(request: Request, player: PlayerDep) -> AsyncIterator[None]:
    """Route dependency (create, join): refuses 429 ``too_many_lobbies`` when the player already
    holds a seat in ``max_lobbies_per_player`` open lobbies (0 = no cap); a join of a lobby the player
    already sits in passes (it is idempotent and adds nothing). The check and the route
    run under the player's lock on this node (:func:`keyed_lock`): exact on one node; requests of one
    player spread over N nodes at once may pass the cap by at most N - 1."""
    from app.db.caps import open_lobbies_of, seated_in

    cap = request.app.state.settings.max_lobbies_per_player
    if not cap:
        yield
        return
    engine = request.app.state.repo.engine
    lobby_id = request.path_params.get("lobby_id")  # a join: one of a lobby the player sits in is
    async with keyed_lock(request, "caps", player["id"]):  # idempotent and adds no lobby: it passes
        if (await open_lobbies_of(engine, player["id"]) >= cap
                and (lobby_id is None or not await seated_in(engine, str(lobby_id), player["id"]))):
            raise LimitExceeded(429, "too_many_lobbies",
                                f"you are in {cap} open lobbies already: leave or start one first", CAP_RETRY_SECONDS)
        yield


class BotMatchCheck:
    """What a start gets from :func:`bot_match_cap`: :meth:`check` of the seats it starts."""

    def __init__(self, engine: Any, player_id: str, cap: int) -> None:
        self.engine = engine
        self.player_id = player_id
        self.cap = cap

    async def check(self, seats: list[dict[str, Any]]) -> None:
        """Refuse 429 ``too_many_bot_matches`` when ``seats`` (the seats the start will put in the
        match, as it read them) hold a bot and the player hosts ``cap`` running matches with bots."""
        from app.db.caps import has_bots, running_bot_matches_hosted_by

        if not self.cap or not has_bots(seats):
            return
        if await running_bot_matches_hosted_by(self.engine, self.player_id) >= self.cap:
            raise LimitExceeded(429, "too_many_bot_matches",
                                f"you host {self.cap} running matches with bots already: finish one first",
                                CAP_RETRY_SECONDS)


async def bot_match_cap(request: Request, player: PlayerDep) -> AsyncIterator[BotMatchCheck]:
    """Route dependency (start): the player's lock (as :func:`lobby_cap`) held for the whole route,
    and a :class:`BotMatchCheck` (``max_bot_matches_per_player``, 0 = no cap) the route runs on the
    seats it starts, the ones the match is made of (the start refuses if they change before its
    lock): a bot added after an earlier look at the lobby cannot slip past the cap."""
    cap = request.app.state.settings.max_bot_matches_per_player
    check = BotMatchCheck(request.app.state.repo.engine, player["id"], cap)
    if not cap:
        yield check
        return
    async with keyed_lock(request, "caps", player["id"]):
        yield check


LobbyCap = Annotated[None, Depends(lobby_cap)]
BotMatchCap = Annotated[BotMatchCheck, Depends(bot_match_cap)]


class SocketSlots:
    """Sockets per player on this node (``max_sockets_per_player``, 0 = no cap): a count per player
    (a dict of atoms: nothing per socket for the cyclic collector). Every :meth:`take` that
    succeeded is matched by one :meth:`give_back` (the transports give a socket's slot back once,
    when it closes)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._by_player: dict[str, int] = {}

    def take(self, player_id: str, ws: Any = None) -> bool:
        held = self._by_player.get(player_id, 0)
        if self.cap and held >= self.cap:
            return False
        self._by_player[player_id] = held + 1
        return True

    def give_back(self, player_id: str, ws: Any = None) -> None:
        held = self._by_player.get(player_id, 0) - 1
        if held > 0:
            self._by_player[player_id] = held
        else:
            self._by_player.pop(player_id, None)

    def count(self, player_id: str) -> int:
        return self._by_player.get(player_id, 0)


def admit_socket(ws: Any, player: dict[str, Any], meta: dict[str, Any], as_: Any) -> tuple[str, str, int] | None:
    """Hook for the match socket after ``hello``: None when the socket may go on, else
    ``(error code, message, close code)``. Refuses an admin seated in the match who asks
    ``"as": "admin"`` (``seated_admin``, 4403: see ``app.api.security.seated_admin_problem``) and a
    player over ``max_sockets_per_player`` on this node (``too_many_sockets``, 4429). A socket let
    through must be given back with :func:`release_socket`."""
    from app.api.security import CLOSE_FORBIDDEN, seated_admin_problem

    if as_ == "admin":
        problem = seated_admin_problem(meta, player)
        if problem is not None:
            return "seated_admin", problem, CLOSE_FORBIDDEN
    slots: SocketSlots = ws.app.state.socket_slots
    if not slots.take(player["id"], ws):
        ws.app.state.metrics.errors.labels("too_many_sockets").inc()
        return ("too_many_sockets", f"you have {slots.cap} sockets open on this node already: close one first",
                CLOSE_RATE_LIMITED)
    return None


def release_socket(ws: Any, player: dict[str, Any]) -> None:
    ws.app.state.socket_slots.give_back(player["id"], ws)
