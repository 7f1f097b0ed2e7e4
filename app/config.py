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
    #: Group commit: seconds a batch is retried on transient database errors before its matches
    #: fail (their runners are dropped and rebuilt from the durable log).
    commit_retry_seconds: float = Field(10.0, ge=0)
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

    @cached_property
    def node(self) -> str:
        return self.node_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"

    @property
    def base_url(self) -> str:
        return self.public_url or f"http://{self.host}:{self.port}"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
