"""Settings, read from the environment with the prefix ``BANNERFALL_`` (pydantic-settings).

Every option is documented in ``docs/operations.md``.
"""
from __future__ import annotations

import socket
import uuid
from functools import cached_property

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    #: Offer permessage-deflate on match sockets: less bandwidth, much more CPU per message.
    ws_compression: bool = False
    #: Seconds a new socket has to send ``hello``.
    hello_timeout_seconds: float = Field(10.0, gt=0)
    #: Group commit: the longest a log write waits for company, in milliseconds (0 = flush at once).
    commit_window_ms: float = Field(2.0, ge=0)
    #: Most log records in one commit.
    commit_max_batch: int = Field(2000, ge=1)
    #: Match lease time across nodes, seconds (production mode).
    lease_seconds: float = Field(10.0, gt=0.5)
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

    @cached_property
    def node(self) -> str:
        return self.node_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"

    @property
    def base_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
