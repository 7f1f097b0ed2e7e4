"""Settings, read from the environment with the prefix ``BANNERFALL_`` (pydantic-settings).

Every option is documented in ``docs/operations.md``.
"""
from __future__ import annotations

import socket
import uuid
from functools import cached_property

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Default reel strip: each special once and five blanks (20 symbols).
_DEFAULT_STRIP = (
    "shield", "scout", "loyalty", "spy", "corruption", "big_brother", "read_hand", "hound", "joker",
    "double_hand", "double_set", "double_income", "full_double_income", "insurance", "free_fold",
    "blank", "blank", "blank", "blank", "blank",
)


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
    #: last one (one encoding for all of them; issue 11 item 2). 0: every change at once.
    spectator_patch_seconds: float = Field(0.1, ge=0, le=5)
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
    #: Group commit: a busy log writer waits this many milliseconds for company before its next
    #: commit (0 = never); a record that finds it idle is committed at once (app/runtime/logwriter.py).
    commit_window_ms: float = Field(2.0, ge=0)
    #: Cyclic garbage collections on the server's own clock (app/gcpolicy.py), CPython's automatic
    #: collector being off after start-up: a young collection (what was made since the previous
    #: one, whose survivors are then frozen out of the collector's sight) every this many seconds
    #: (the default, 600: a safety net; cyclic garbage is never freed by reference counting, so it
    #: raises the growth count below and triggers a collection by itself, while steady play, whose
    #: new state replaces old, does not: a timer of 60 s only walked the ~40,000 live objects of the
    #: played matches' current states, 20-44 ms, for nothing; docs/decisions.md, "Garbage
    #: collection"). 0: keep CPython's automatic collector, with ``gc_thresholds``.
    gc_full_seconds: float = Field(600.0, ge=0)
    #: ... or sooner, when this many more container objects are alive than after the last one: a
    #: young collection's pause is bounded by it (it walks 2-4 times this count where new state
    #: replaces old, ~0.3-0.8 µs per object: 10-44 ms in Conquest's closed loop, measured).
    gc_growth_objects: int = Field(20_000, ge=1000)
    #: Seconds between two deep collections (everything unfrozen and walked once: the cycles of
    #: objects frozen while alive that died later; ~150 ms with ~750 live matches, measured). 0: never.
    gc_deep_seconds: float = Field(3600.0, ge=0)
    #: Python's cyclic-GC thresholds after start-up ("gen0,gen1,gen2", ``gc.set_threshold``) when
    #: ``gc_full_seconds`` is 0; the objects made at start are frozen out of the collector's sight
    #: first (``gc.freeze``) in both cases.
    gc_thresholds: str = Field("20000,20,50", pattern=r"^\s*\d+\s*,\s*\d+\s*,\s*\d+\s*$")
    #: Most log records in one commit.
    commit_max_batch: int = Field(2000, ge=1)
    #: Group commit: seconds a batch is retried on transient database errors before its matches
    #: fail (their runners are dropped and rebuilt from the durable log).
    commit_retry_seconds: float = Field(10.0, ge=0)
    #: SQLite (embedded mode): how long a REST request's statement waits for the database's write
    #: lock, milliseconds; then the request is answered ``503 storage_busy`` (nothing changed).
    sqlite_busy_timeout_ms: int = Field(10_000, ge=0)
    #: Match lease time across nodes, seconds (production mode). A dead node's matches go on
    #: elsewhere within about lease + takeover interval; renewed every lease/3.
    lease_seconds: float = Field(2.0, gt=0.5)
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
    #: and local tools. Behind a proxy, make client addresses real with uvicorn's FORWARDED_ALLOW_IPS.
    rate_limit_exempt: str = "127.0.0.1,::1"
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

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, url: str) -> str:
        """Accept the usual sync spellings and name the async driver: ``postgresql://`` and
        ``postgres://`` become ``postgresql+asyncpg://``, ``sqlite://`` becomes ``sqlite+aiosqlite://``."""
        url = url.strip()
        for plain, async_ in (("postgresql://", "postgresql+asyncpg://"), ("postgres://", "postgresql+asyncpg://"),
                              ("sqlite://", "sqlite+aiosqlite://")):
            if url.startswith(plain):
                return async_ + url[len(plain):]
        return url

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
    #: defaults, ``app.games.conquest.specials.DEFAULT_SPECIAL_COSTS``).
    special_costs: dict[str, int] = Field(default_factory=dict)
    #: Seconds between sweeps that count finished matches' specials (settled at once on the node
    #: that ran the match; the sweep catches what a crash left).
    settle_sweep_seconds: float = Field(30.0, gt=0)

    # -- accounts, ratings and paging (issue 14; docs/operations.md "Accounts and ratings") ----------
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
    #: Seconds between sweeps that rate finished-but-unrated matches (a match is rated at once on
    #: the node that ran it; the sweep catches what a crash or another node left).
    rating_sweep_seconds: float = Field(30.0, gt=0)
    #: Largest page any paged list returns (``?limit=`` above it is cut to it).
    page_max: int = Field(500, ge=1, le=1000)

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
            if special not in SPECIALS or not 0 <= cost <= MAX_SPECIAL_COST:
                raise ValueError(f"special_costs: {special!r} must be a special id with a cost 0-{MAX_SPECIAL_COST}")
        return value

    # -- quick play (issue 14 item 2; docs/operations.md, "Quick play") -------------------------
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

    @cached_property
    def node(self) -> str:
        return self.node_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"

    @property
    def base_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
