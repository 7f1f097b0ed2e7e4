"""Who may serve a database: one node alone, or any number of nodes that share a Redis.

A node without Redis (embedded mode, or Postgres alone) uses in-process timers, pub/sub and
leases: at start it takes every running match of its database as its own. A second such node on
the same database would take the first one's matches (and its admin token) while the first still
plays them. So ``bannerfall serve`` claims the database for the process's whole life, as it holds
its port, and a claim that is already held is refused at start in one line:

- **SQLite file**: a ``flock`` on ``<database file>.serve-lock`` beside the database (the resolved
  path, so ``./bannerfall.db`` and its absolute spelling are one database). The kernel drops it
  when the process ends, however it ends. The holder writes its pid and address into the file, so
  the refusal can name it.
- **Postgres**: a session advisory lock (``pg_try_advisory_lock(NODE_LOCK_KEY)``, per database) on a
  connection of its own, kept by a thread with its own event loop for the process's life; the
  connection's ``application_name`` names the node and its address, which the refusal shows.

A node with Redis (production mode) takes the same lock **shared**: nodes with Redis run together
(their leases are in Redis), but a node without Redis is refused next to them, and they next to it.
An in-memory SQLite database, or an SQLite URI (``file:…``), is private to its process: no claim.
"""
from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("bannerfall.node_lock")

#: the advisory lock key of a node's claim on its database ("bnsv" in ASCII; the migrations use "bnfl")
NODE_LOCK_KEY = 0x626E7376
#: seconds between checks that the Postgres claim's connection is alive
KEEPALIVE_SECONDS = 5.0


class DatabaseInUse(Exception):
    """The database is claimed by another node this one may not run beside. ``message`` is one
    line naming the database, the other node when known, and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Claim(Protocol):
    def release(self) -> None: ...


def _advice(shared: bool) -> str:
    if shared:
        return ("stop it first, or give this cluster its own database; nodes run together only when "
                "each has BANNERFALL_REDIS_URL")
    return ("stop it, or give this server its own database (--database-url / BANNERFALL_DATABASE_URL); "
            "to run several nodes on one database, give each the same BANNERFALL_REDIS_URL")


# -- SQLite ---------------------------------------------------------------------------------------

def sqlite_file(url: str) -> Path | None:
    """The database file of an SQLite URL, resolved; None for any other engine, an in-memory
    database or an SQLite URI (``file:…``)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if not parsed.get_backend_name().startswith("sqlite"):
        return None
    name = parsed.database or ""
    if name in ("", ":memory:") or name.startswith("file:") or parsed.query.get("uri"):
        return None
    return Path(name).resolve()


class FileClaim:
    """A ``flock`` on ``<database>.serve-lock``: exclusive for a node alone, shared for nodes with
    Redis. Released by :meth:`release` or when the process ends."""

    def __init__(self, database: Path, *, shared: bool, holder: dict[str, Any]) -> None:
        self.path = Path(f"{database}.serve-lock")
        self.database = database
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            other = self._live_holder(fd)
            os.close(fd)
            if other is not None:
                who = f"another bannerfall serve (pid {other.get('pid')}, on {other.get('address')})"
            else:  # held, and not by the node alone that wrote the file last: nodes with Redis
                who = "nodes that share a Redis (BANNERFALL_REDIS_URL)"
            raise DatabaseInUse(f"the database {database} is in use by {who}: {_advice(shared)}") from None
        except BaseException:
            os.close(fd)
            raise
        self.fd: int | None = fd
        if not shared:  # the node alone says who it is (nodes with Redis share the file: they write nothing)
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)

    @staticmethod
    def _live_holder(fd: int) -> dict[str, Any] | None:
        """What the node alone that wrote the file said, if that process is still alive."""
        try:
            data = json.loads(os.pread(fd, 4096, 0) or b"null")
            pid = int(data["pid"])
        except (OSError, ValueError, TypeError, KeyError):
            return None
        try:
            os.kill(pid, 0)
        except PermissionError:
            pass  # alive, another user's
        except OSError:
            return None
        return data

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# -- Postgres ---------------------------------------------------------------------------------------

def _asyncpg_dsn(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresClaim:
    """``pg_try_advisory_lock[_shared](NODE_LOCK_KEY)`` on a connection of its own, held by a thread
    with its own event loop. If that connection drops (Postgres restarted), the lock went with it:
    the thread connects again and takes it again, logging an error if another node took it meanwhile."""

    def __init__(self, url: str, *, shared: bool, holder: dict[str, Any], shown: str) -> None:
        self.dsn, self.shared, self.shown = _asyncpg_dsn(url), shared, shown
        self.app_name = f"bannerfall serve {holder.get('node', '')} {holder.get('address', '')}"[:63]
        self._ready = threading.Event()
        self._outcome: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="bannerfall-node-lock", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise DatabaseInUse(f"could not claim the database {shown} within 30 s (Postgres does not answer)")
        if self._outcome is not None:
            raise self._outcome

    async def _connect(self) -> Any:
        import asyncpg

        return await asyncpg.connect(self.dsn, timeout=5, server_settings={"application_name": self.app_name})

    async def _lock(self, conn: Any) -> bool:
        fn = "pg_try_advisory_lock_shared" if self.shared else "pg_try_advisory_lock"
        return bool(await conn.fetchval(f"SELECT {fn}($1)", NODE_LOCK_KEY))

    async def _holders(self, conn: Any) -> list[str]:
        rows = await conn.fetch(
            "SELECT a.application_name, l.mode FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1 "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            NODE_LOCK_KEY)
        return [(r["application_name"] or "a node") + (" (with Redis)" if r["mode"] == "ShareLock" else "")
                for r in rows]

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            conn = await self._connect()
            if not await self._lock(conn):
                others = await self._holders(conn)
                await conn.close()
                who = ", ".join(sorted(set(others))) or "another node"
                raise DatabaseInUse(f"the database {self.shown} is in use by {who}: {_advice(self.shared)}")
        except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
            self._outcome = exc
            self._ready.set()
            return
        self._ready.set()
        await self._keep(conn)

    async def _keep(self, conn: Any) -> None:
        """Check the connection every few seconds; connect and lock again when it dropped."""
        assert self._stop is not None
        taken_elsewhere = False
        while not self._stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stop.wait(), KEEPALIVE_SECONDS)
            if self._stop.is_set():
                break
            try:
                if conn is None:
                    conn = await self._connect()
                    if not await self._lock(conn):
                        if not taken_elsewhere:
                            log.error("another node without Redis claimed the database %s while this node's "
                                      "claim was lost with its connection: stop one of them", self.shown)
                            taken_elsewhere = True
                        await conn.close()
                        conn = None
                        continue
                    log.info("claim on the database %s taken again", self.shown)
                    taken_elsewhere = False
                await asyncio.wait_for(conn.fetchval("SELECT 1"), 5)
            except Exception as exc:  # noqa: BLE001 - Postgres away: retried at the next check
                if conn is not None:
                    log.warning("the connection holding this node's claim on %s was lost (%s); retrying",
                                self.shown, type(exc).__name__)
                    with contextlib.suppress(Exception):
                        conn.terminate()
                conn = None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)

    def release(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
            self._thread.join(10)


def claim_database(url: str, *, shared: bool, holder: dict[str, Any], shown: str | None = None) -> Claim | None:
    """Claim the database at ``url`` for this process (``shared``: for a node with Redis).

    ``holder``: ``{"pid", "node", "address"}``, shown to a node refused next to this one. Returns the
    claim (keep it for the process's life; :meth:`Claim.release` ends it), or None when the database
    needs none (in-memory SQLite). Raises :class:`DatabaseInUse` when another node holds a claim this
    one may not share; a connection error of the driver as it is."""
    path = sqlite_file(url)
    if path is not None:
        return FileClaim(path, shared=shared, holder=holder)
    if url.startswith("postgresql"):
        return PostgresClaim(url, shared=shared, holder=holder, shown=shown or url.split("@")[-1])
    return None
