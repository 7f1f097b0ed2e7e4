"""Settings, read from the environment with the prefix ``BANNERFALL_`` (pydantic-settings).

Every option is documented in ``docs/operations.md``.
"""
from __future__ import annotations

import socket
import uuid
from functools import cached_property
from typing import Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Default reel strip: each special once and five blanks (20 symbols).
_DEFAULT_STRIP = (
    "shield", "scout", "loyalty", "spy", "corruption", "big_brother", "read_hand", "hound", "joker",
    "double_hand", "double_set", "double_income", "full_double_income", "insurance", "free_fold",
    "blank", "blank", "blank", "blank", "blank",
)


#: the SQLAlchemy drivers Bannerfall runs on (``make_url(url).drivername``)
DATABASE_DRIVERS = ("sqlite+aiosqlite", "postgresql+asyncpg")


def _usable_database_url(url: str) -> str:
    """``url`` if it names one of :data:`DATABASE_DRIVERS`; else ValueError, one line, the password
    hidden (so ``mysql://…`` is refused before any driver is imported)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        driver = make_url(url).drivername
    except (ArgumentError, ValueError):
        raise ValueError(f"{url.split('@')[-1]!r} is not a database URL (sqlite+aiosqlite:///FILE or "
                         "postgresql://USER@HOST/DB)") from None
    if driver not in DATABASE_DRIVERS:
        shown = make_url(url).render_as_string(hide_password=True)
        raise ValueError(f"{shown} is not a database Bannerfall can use ({driver}): use SQLite "
                         "(sqlite:///FILE) or PostgreSQL (postgresql://USER@HOST/DB)")
    return url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BANNERFALL_", env_file=None, extra="ignore")

    #: SQLAlchemy async URL. Embedded default: a SQLite file in the working directory.
    database_url: str = "sqlite+aiosqlite:///./bannerfall.db"
    #: Redis URL for deadlines, fan-out and leases across nodes. None: in-process backends (one node).
    redis_url: str | None = None
    #: Prefix of every Redis key and channel (several clusters may share one Redis).
    redis_prefix: str = "bannerfall:"
    host: str = "127.0.0.1"
    port: int = 8000
    #: The URL bots use to reach this node (defaults to http://host:port).
    public_url: str | None = None
    #: A token that is accepted as the first admin (stored hashed on start, never logged).
    admin_token: str | None = None
    #: Apply Alembic migrations on start (``serve``).
    migrate_on_start: bool = True
    #: Largest WebSocket message a client may send, in bytes.
    max_message_bytes: int = Field(16_384, ge=256)
    #: Outgoing messages queued per socket before a slow client is disconnected (close 4008).
    send_queue_size: int = Field(512, ge=8)
    #: Seconds between server pings; a socket silent for 3 intervals is dropped.
    heartbeat_seconds: float = Field(20.0, gt=0)
    #: Spectators get at most one ``delta`` per this many seconds, covering every change since their
    #: last one (one encoding for all of them). 0: every change at once.
    spectator_patch_seconds: float = Field(0.1, ge=0, le=5)
    #: The kernel's send buffer of a match socket (lean transport), bytes (0: the system's own, which
    #: grows to megabytes): what a client that stops reading holds on the server before its queue of
    #: ``send_queue_size`` messages fills and it is closed with 4008.
    socket_send_buffer_bytes: int = Field(131_072, ge=0)
    #: Offer permessage-deflate on match sockets: less bandwidth, much more CPU per message.
    ws_compression: bool = False
    #: Bound on closing a socket, seconds: queued messages, then the close frame and the client's
    #: answer; after it the TCP connection is aborted (a client that stopped reading).
    socket_close_seconds: float = Field(2.0, gt=0)
    #: An ``act`` forwarded to the match's node and not answered (``ack``/``error``) within this many
    #: seconds closes its socket with 4503: reconnect, ``resume`` and resend it with the same seq.
    act_timeout_seconds: float = Field(5.0, gt=0)
    #: A socket linked to the match's node on another node waits this long for that node's first
    #: message; then it gets ``match_unavailable`` and 1013.
    link_answer_seconds: float = Field(1.5, gt=0)
    #: Bound on the storage lookups of a new socket (token, match, owner); then ``storage_unavailable``.
    socket_setup_seconds: float = Field(5.0, gt=0)
    #: Seconds a new socket has to send ``hello``.
    hello_timeout_seconds: float = Field(10.0, gt=0)
    #: Client messages a socket may send per second on average (0: no budget); a message past the
    #: budget gets ``too_many_messages`` and is not served (docs/protocol.md, "Error codes on the socket").
    socket_messages_per_second: float = Field(100.0, ge=0)
    #: Messages a socket may send at once above that rate; this many refused in a row close it (4429).
    socket_message_burst: int = Field(200, ge=1)
    #: How match sockets are served: ``lean`` (app/transport/fast.py: one protocol object per socket,
    #: under ``bannerfall serve``'s uvicorn), ``asgi`` (app/transport/asgi.py: the FastAPI route,
    #: any ASGI server; also what serves permessage-deflate). ``auto``: lean unless compression is on
    #: or uvicorn lacks what lean needs.
    socket_transport: Literal["auto", "lean", "asgi"] = "auto"
    #: Group commit: a busy log writer waits this many milliseconds for company before its next
    #: commit (0 = never); a record that finds it idle is committed at once (app/runtime/logwriter.py).
    commit_window_ms: float = Field(2.0, ge=0)
    #: CPython's cyclic collector after start-up (app/gcpolicy.py): its thresholds "gen0,gen1,gen2"
    #: (``gc.set_threshold``). CPython's gen0 and gen2; gen1 collected every 1,000 young collections
    #: (CPython: 10), so what an action leaves for the next one (a match's state) dies before it is
    #: promoted to the old generation, whose collections walk everything (docs/benchmarks/capacity.md).
    #: The objects made at start are frozen out of its sight first (``gc.freeze``).
    gc_thresholds: str = Field("700,1000,10", pattern=r"^\s*\d+\s*,\s*\d+\s*,\s*\d+\s*$")
    #: A collection longer than this many milliseconds is logged (0: none); every one is counted in
    #: ``bannerfall_gc_pause_seconds``.
    gc_log_ms: float = Field(20.0, ge=0)
    #: Most log records in one commit.
    commit_max_batch: int = Field(2000, ge=1)
    #: Group commit: seconds a batch is retried on transient database errors before its matches
    #: fail (their runners are dropped and rebuilt from the durable log).
    commit_retry_seconds: float = Field(10.0, ge=0)
    #: SQLite (embedded mode): how long a REST request's statement waits for the database's write
    #: lock, milliseconds; then the request is answered ``503 storage_busy`` (nothing changed).
    sqlite_busy_timeout_ms: int = Field(10_000, ge=0)
    #: Postgres (production mode): seconds a new connection, a statement, or a wait for a pooled
    #: connection may take before the request is answered ``503 storage_unavailable`` (or
    #: ``storage_busy`` for the pool); bounds every REST answer while Postgres hangs.
    database_timeout_seconds: float = Field(5.0, gt=0)
    #: Redis (production mode): seconds to connect and for each reply; a command is retried once
    #: only when its connection was refused or reset, never after a timeout.
    redis_timeout_seconds: float = Field(2.0, gt=0)
    #: Match lease time across nodes, seconds (production mode). A dead node's matches go on
    #: elsewhere within about lease + takeover interval; renewed every lease/4 by a thread of its own.
    lease_seconds: float = Field(2.0, gt=0.5)
    #: Production mode: the lease thread keeps renewing while the event loop has run within this
    #: many seconds; a loop stalled longer (blocked, starved of CPU) lets its leases lapse, so its
    #: matches move to a node that can run them.
    lease_stall_seconds: float = Field(5.0, gt=0)
    #: Seconds between scans for running matches whose lease is free (takeover of a dead node's).
    takeover_interval_seconds: float = Field(0.5, gt=0)
    #: A claimed deadline is hidden from other claims this long; it fires again unless its phase
    #: ended durably meanwhile (production mode).
    deadline_claim_seconds: float = Field(5.0, gt=0)
    #: This node's id (defaults to hostname + random suffix).
    node_id: str | None = None
    #: Run bots for bot seats on this node.
    run_bots: bool = True
    #: Seconds a bot waits before acting (0 = at once); makes demos watchable.
    bot_delay_seconds: float = Field(0.0, ge=0)
    log_level: str = "info"
    # -- limits (docs/operations.md, "Limits") ----------------------------------------------
    #: Largest HTTP request body, bytes (413 ``body_too_large`` above).
    max_body_bytes: int = Field(65_536, ge=1024)
    #: Requests and socket opens per client address, ``limits`` notation ("N/second;M/minute"); "" = off.
    rate_limit_ip: str = "50/second;1500/minute"
    #: Client addresses the per-address limits skip (comma-separated): by default this node's own bots
    #: and local tools. Behind a proxy, list the proxy in ``trusted_proxies``.
    rate_limit_exempt: str = "127.0.0.1,::1"
    #: The proxies in front of this node (comma-separated addresses or networks, ``10.0.0.0/8``): only
    #: their ``X-Forwarded-For`` is read, from the right (``app.api.limits.TrustedProxies``); "" = none;
    #: ``*`` is refused. uvicorn's own ``FORWARDED_ALLOW_IPS`` is not used.
    trusted_proxies: str = "127.0.0.1,::1"
    #: Requests per player (per bearer token); "" = off.
    rate_limit_player: str = "20/second;600/minute"
    #: ``POST /players`` (new guests) per client address; "" = off.
    rate_limit_new_players: str = "10/minute;100/hour"
    #: Open lobbies a player may sit in at once (0 = no cap).
    max_lobbies_per_player: int = Field(3, ge=0)
    #: Running matches with bots a player may host at once (0 = no cap).
    max_bot_matches_per_player: int = Field(3, ge=0)
    #: Match sockets a player may hold open on one node (0 = no cap).
    max_sockets_per_player: int = Field(8, ge=0)

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, spec: str) -> str:
        from app.api.limits import parse_networks

        parse_networks(spec)  # ValueError: one line at start
        return spec

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, url: str) -> str:
        """Accept the usual sync spellings and name the async driver: ``postgresql://`` and
        ``postgres://`` become ``postgresql+asyncpg://``, ``sqlite://`` becomes ``sqlite+aiosqlite://``."""
        url = url.strip()
        for plain, async_ in (("postgresql://", "postgresql+asyncpg://"), ("postgres://", "postgresql+asyncpg://"),
                              ("sqlite://", "sqlite+aiosqlite://")):
            if url.startswith(plain):
                url = async_ + url[len(plain):]
                break
        return _usable_database_url(url)

    # -- the meta-game of Hold'em Conquest (conquest.md 5; docs/operations.md "Meta-game") ----------
    #: Crystals one slot machine spin costs (seed §5.2.4: 20 cents at the cheapest purchase rate;
    #: the default assumes 100 crystals a dollar).
    spin_price: int = Field(20, ge=1, le=1_000_000)
    #: The symbols of each of the three reels (every reel the same strip; a symbol listed twice is
    #: twice as likely). A symbol is a special id or ``blank``.
    spin_strip: list[str] = Field(default_factory=lambda: list(_DEFAULT_STRIP), min_length=1, max_length=256)
    #: Reels showing the same special -> the matches that special is won for (seed §5.1.2: 1-10 by
    #: level). Keys ``"1"``, ``"2"``, ``"3"``; a missing key or 0 wins nothing.
    spin_paytable: dict[str, int] = Field(default_factory=lambda: {"2": 3, "3": 10})
    #: Special costs in mana copied into every Conquest match's options (overrides of the engine's
    #: defaults, ``app.games.conquest.specials.DEFAULT_SPECIAL_COSTS``); each 0-10 (seed §5.1.4), else
    #: the server refuses to start, in one line.
    special_costs: dict[str, int] = Field(default_factory=dict)
    #: Seconds an ``Idempotency-Key`` keeps its first answer (spins, grants, claims, lobby starts;
    #: docs/protocol.md, "Idempotency keys"); after that the same key is a new request.
    idempotency_key_seconds: float = Field(86_400.0, ge=60)
    #: Seconds between sweeps that count finished matches' specials (settled at once on the node
    #: that ran the match; the sweep catches what a crash left).
    settle_sweep_seconds: float = Field(30.0, gt=0)

    # -- accounts, ratings and paging (docs/operations.md "Accounts and ratings") ----------
    #: Failed sign-ins per username from one client address, ``limits`` notation; "" = off (the
    #: exempt addresses count too). Only failures count, so the owner signing in spends nothing,
    #: and a stranger's guesses from another address do not lock the owner out.
    rate_limit_sign_in: str = "5/minute;30/hour"
    #: Failed sign-ins per username from all addresses together; "" = off. Bounds a guess spread over
    #: many addresses; locking an account this way takes that many failures in the window.
    rate_limit_sign_in_user: str = "20/minute;100/hour"
    #: Sign-in attempts per client address (not for ``rate_limit_exempt`` addresses); "" = off.
    rate_limit_sign_in_ip: str = "20/minute;200/hour"
    #: argon2id parameters for new password hashes: OWASP's recommended minimum (19 MiB, 2 passes,
    #: 1 lane), lighter than argon2-cffi's default (64 MiB, 3 passes, 4 lanes) for small shared
    #: nodes (docs/operations.md has the measurements). A stored hash made with other parameters is
    #: re-hashed at its next sign-in.
    argon2_time_cost: int = Field(2, ge=1, le=20)
    argon2_memory_kib: int = Field(19_456, ge=8, le=4_194_304)
    argon2_parallelism: int = Field(1, ge=1, le=64)
    #: Threads that hash and check passwords (argon2, and the strength check of new ones) at once;
    #: each holds ``argon2_memory_kib`` while it hashes and a core while it runs.
    argon2_workers: int = Field(1, ge=1, le=64)
    #: Password operations that may wait for a worker; one more is refused at once with
    #: ``503 busy`` and ``Retry-After`` (the work a burst can queue is bounded).
    argon2_queue: int = Field(8, ge=0, le=10_000)
    #: Claims (``POST /accounts/claim``) per client address (not for ``rate_limit_exempt``) and per
    #: player, every attempt counted, before any lookup or hash; "" = off.
    rate_limit_claim: str = "5/minute;20/hour"
    #: Password changes (``POST /accounts/password``) per player, every attempt counted, before the
    #: current password is checked; "" = off.
    rate_limit_password_change: str = "5/minute;20/hour"
    #: Seconds between sweeps that rate finished-but-unrated matches (a match is rated at once on
    #: the node that ran it; the sweep catches what a crash or another node left).
    rating_sweep_seconds: float = Field(30.0, gt=0)
    #: Largest page any paged list returns (``?limit=`` above it is cut to it).
    page_max: int = Field(500, ge=1, le=1000)
    #: The repeated-opponent rule: the k-th rated match of two players within
    #: ``rating_repeat_window_seconds`` counts with weight max(0, 1 - (k-1)/N) for both (N = this;
    #: 0 = off). Three: 1, 2/3, 1/3, then nothing.
    rating_repeat_limit: int = Field(3, ge=0, le=1000)
    #: Seconds back the repeated-opponent rule looks (a rolling day).
    rating_repeat_window_seconds: float = Field(86_400.0, ge=0)
    #: Weighted rated matches a rating needs to leave provisional and be listed on the leaderboard.
    rating_provisional_matches: float = Field(10.0, ge=0, le=10_000)

    @field_validator("spin_strip")
    @classmethod
    def _check_strip(cls, value: list[str]) -> list[str]:
        from app.games.conquest.specials import SPECIALS

        unknown = sorted(set(value) - set(SPECIALS) - {"blank"})
        if unknown:
            raise ValueError(f"unknown reel symbols {unknown} (special ids or 'blank')")
        return value

    @field_validator("spin_paytable")
    @classmethod
    def _check_paytable(cls, value: dict[str, int]) -> dict[str, int]:
        for key, matches in value.items():
            if key not in ("1", "2", "3") or not 0 <= matches <= 10:
                raise ValueError("spin_paytable maps '1'/'2'/'3' to 0-10 matches (seed §5.1.2)")
        return value

    @field_validator("special_costs")
    @classmethod
    def _check_costs(cls, value: dict[str, int]) -> dict[str, int]:
        from app.games.conquest.specials import MAX_SPECIAL_COST, SPECIALS

        for special, cost in value.items():
            # PydanticCustomError: the message alone, without pydantic's "Value error, " prefix
            if special not in SPECIALS:
                raise PydanticCustomError("unknown_special", "'{special}' is not a special id (one of {known})",
                                          {"special": special, "known": ", ".join(SPECIALS)})
            if not 0 <= cost <= MAX_SPECIAL_COST:
                raise PydanticCustomError(
                    "special_cost_out_of_range",
                    "{special} costs {cost} mana; an activation costs 0-{most} mana (conquest.md 5, seed §5.1.4)",
                    {"special": special, "cost": cost, "most": MAX_SPECIAL_COST})
        return value

    # -- quick play (docs/operations.md, "Quick play") -------------------------
    #: Rating window at first, in openskill ordinal points (mu - 3 sigma).
    matchmaking_window_base: float = Field(3.0, ge=0)
    #: Ordinal points the window widens by per second a ticket waits.
    matchmaking_window_widen: float = Field(0.5, ge=0)
    #: The widest window.
    matchmaking_window_max: float = Field(30.0, ge=0)
    #: Seconds between matcher rounds on each node.
    matchmaking_tick_seconds: float = Field(0.5, gt=0)
    #: A claim whose match was not created within this many seconds is settled by any node (its
    #: lobby fenced off, its tickets back in the queue).
    matchmaking_claim_seconds: float = Field(15.0, gt=0)
    #: The bot kind that fills seats after a ticket's ``bots_after_seconds``.
    matchmaking_bot_kind: str = "smart"
    #: Seconds an ended ticket stays readable (Redis key expiry; also bounds a live ticket's life).
    matchmaking_ticket_ttl_seconds: float = Field(3600.0, ge=60)

    # -- parties and rematches (docs/operations.md, "Parties and rematches") ------------------------
    #: Seconds an invite code works after it is made (the leader may make a new one at any time).
    party_invite_seconds: float = Field(900.0, ge=10, le=86_400)
    #: Seconds a party lives after its last change (made, joined, left, queued).
    party_ttl_seconds: float = Field(3600.0, ge=60)
    #: Parties made and invite codes made, per player, ``limits`` notation; "" = off.
    rate_limit_party_invites: str = "10/minute;60/hour"
    #: Failed joins (unknown or expired codes) per player, ``limits`` notation; "" = off.
    rate_limit_party_joins: str = "10/minute;60/hour"
    #: Seconds after a match ends during which its players may agree to a rematch.
    rematch_seconds: float = Field(60.0, ge=5, le=3600)
    #: Long-polls (tickets, parties, rematches) one player may hold open at once on one node.
    max_long_polls_per_player: int = Field(4, ge=1, le=100)

    @cached_property
    def node(self) -> str:
        return self.node_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"

    @property
    def base_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
