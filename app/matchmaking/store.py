"""Where tickets wait: one small Protocol, an in-process store (embedded mode, one node) and a Redis
store (production mode, every node). Every change that decides something is atomic: a Python step
with no ``await`` in it locally, one Lua script on Redis.

A ticket is a dict ``{id, player_id, game, seats, options, pool, rating, created_at,
bots_after_seconds, status, claim, match_id, lobby_id}``; ``status`` is ``waiting`` → ``claimed``
(a node is forming its match) → ``matched``, or ``waiting`` → ``cancelled``; a claim that does not
finish goes back to ``waiting``.

Redis keys under the prefix (docs/operations.md, "Quick play"): ``mm:t:{id}`` (a ticket's hash),
``mm:p:{player}`` (the player's live ticket id), ``mm:q:{pool}`` (sorted set of waiting ticket ids
by ``created_at``), ``mm:pools`` (set of pools), ``mm:claims`` (sorted set of claim ids by deadline),
``mm:c:{claim}`` (set of the claim's ticket ids); channel ``mm:events`` (a ticket id each time one is
matched or cancelled).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any, Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger("bannerfall.matchmaking")

LIVE = ("waiting", "claimed")


class TicketExists(Exception):
    """The player already has a live ticket: ``ticket_id``."""

    def __init__(self, ticket_id: str) -> None:
        super().__init__(f"the player already has the live ticket {ticket_id}")
        self.ticket_id = ticket_id


class TicketStore(Protocol):
    async def start(self) -> None: ...
    async def close(self) -> None: ...
    async def create(self, ticket: dict[str, Any]) -> dict[str, Any]:
        """Queue a ``waiting`` ticket; raises :class:`TicketExists` if its player has a live one
        (decided atomically with the insert)."""
    async def get(self, ticket_id: str) -> dict[str, Any] | None: ...
    async def cancel(self, ticket_id: str, player_id: str) -> str:
        """``ok`` if it was waiting (it is ``cancelled`` now), else its status (``claimed``,
        ``matched``, ``cancelled``: nothing changed), or ``missing`` (no such ticket of this player)."""
    async def pools(self) -> list[str]: ...
    async def waiting(self, pool: str, limit: int = 200) -> list[dict[str, Any]]:
        """The pool's waiting tickets, oldest first, at most ``limit``."""
    async def claim(self, claim_id: str, pool: str, ticket_ids: list[str], deadline: float) -> bool:
        """All of ``ticket_ids`` from ``waiting`` to ``claimed`` by ``claim_id`` (until ``deadline``,
        epoch seconds), or none of them (False) if any is not waiting."""
    async def finish(self, claim_id: str, match_id: str, lobby_id: str) -> int:
        """The claim's tickets (still claimed by it) become ``matched``; idempotent; returns how many."""
    async def release(self, claim_id: str) -> int:
        """The claim's tickets (still claimed by it) wait again at their old place; idempotent."""
    async def claim_tickets(self, claim_id: str) -> list[dict[str, Any]]: ...
    async def expired_claims(self, now: float) -> list[str]: ...
    async def wait(self, ticket_id: str, timeout: float) -> None:
        """Return when the ticket may have changed (matched or cancelled), or after ``timeout`` s."""

    def waiters(self) -> int:
        """How many :meth:`wait` calls are waiting on this node now."""


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ticket_out(fields: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(fields["data"])
    data.update(status=fields["status"], claim=fields.get("claim") or None,
                match_id=fields.get("match_id") or None, lobby_id=fields.get("lobby_id") or None)
    return data


class _Waiters:
    def __init__(self) -> None:
        self._events: dict[str, set[asyncio.Event]] = {}

    def wake(self, ticket_id: str) -> None:
        for event in self._events.get(ticket_id, ()):
            event.set()

    def count(self) -> int:
        """Long-polls waiting now (all tickets)."""
        return sum(len(events) for events in self._events.values())

    async def wait(self, ticket_id: str, timeout: float) -> None:
        event = asyncio.Event()
        self._events.setdefault(ticket_id, set()).add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            waiters = self._events.get(ticket_id)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._events[ticket_id]


class LocalTicketStore:
    """In-process tickets (embedded mode). Each method decides without awaiting, so it is atomic."""

    def __init__(self, *, ticket_ttl: float = 3600.0) -> None:
        self.ttl = ticket_ttl
        self.tickets: dict[str, dict[str, Any]] = {}
        self.live: dict[str, str] = {}
        self.claims: dict[str, tuple[float, list[str]]] = {}
        self._waiters = _Waiters()

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create(self, ticket: dict[str, Any]) -> dict[str, Any]:
        current = self.live.get(ticket["player_id"])
        if current is not None and self.tickets[current]["status"] in LIVE:
            raise TicketExists(current)
        stored = {**ticket, "status": "waiting", "claim": None, "match_id": None, "lobby_id": None}
        self.tickets[ticket["id"]] = stored
        self.live[ticket["player_id"]] = ticket["id"]
        return dict(stored)

    async def get(self, ticket_id: str) -> dict[str, Any] | None:
        ticket = self.tickets.get(ticket_id)
        return dict(ticket) if ticket else None

    async def cancel(self, ticket_id: str, player_id: str) -> str:
        ticket = self.tickets.get(ticket_id)
        if ticket is None or ticket["player_id"] != player_id:
            return "missing"
        if ticket["status"] != "waiting":
            return str(ticket["status"])
        ticket["status"] = "cancelled"
        self._end(ticket)
        return "ok"

    def _end(self, ticket: dict[str, Any]) -> None:
        if self.live.get(ticket["player_id"]) == ticket["id"]:
            del self.live[ticket["player_id"]]
        self._waiters.wake(ticket["id"])

    async def pools(self) -> list[str]:
        self._prune(time.time())
        return sorted({t["pool"] for t in self.tickets.values() if t["status"] == "waiting"})

    def _prune(self, now: float) -> None:
        """Forget tickets older than the TTL (as Redis expires them), except claimed ones."""
        for ticket_id in [i for i, t in self.tickets.items()
                          if t["status"] != "claimed" and t["created_at"] < now - self.ttl]:
            ticket = self.tickets.pop(ticket_id)
            if self.live.get(ticket["player_id"]) == ticket_id:
                del self.live[ticket["player_id"]]

    async def waiting(self, pool: str, limit: int = 200) -> list[dict[str, Any]]:
        self._prune(time.time())
        found = [dict(t) for t in self.tickets.values() if t["pool"] == pool and t["status"] == "waiting"]
        found.sort(key=lambda t: (t["created_at"], t["id"]))
        return found[:limit]

    async def claim(self, claim_id: str, pool: str, ticket_ids: list[str], deadline: float) -> bool:
        tickets = [self.tickets.get(i) for i in ticket_ids]
        if not all(t is not None and t["status"] == "waiting" and t["pool"] == pool for t in tickets):
            return False
        for t in tickets:
            assert t is not None
            t.update(status="claimed", claim=claim_id)
        self.claims[claim_id] = (deadline, list(ticket_ids))
        return True

    async def finish(self, claim_id: str, match_id: str, lobby_id: str) -> int:
        _deadline, ids = self.claims.pop(claim_id, (0.0, []))
        done = 0
        for t in (self.tickets[i] for i in ids):
            if t["status"] == "claimed" and t["claim"] == claim_id:
                t.update(status="matched", match_id=match_id, lobby_id=lobby_id)
                self._end(t)
                done += 1
        return done

    async def release(self, claim_id: str) -> int:
        _deadline, ids = self.claims.pop(claim_id, (0.0, []))
        done = 0
        for t in (self.tickets[i] for i in ids):
            if t["status"] == "claimed" and t["claim"] == claim_id:
                t.update(status="waiting", claim=None)
                done += 1
        return done

    async def claim_tickets(self, claim_id: str) -> list[dict[str, Any]]:
        _deadline, ids = self.claims.get(claim_id, (0.0, []))
        return [dict(self.tickets[i]) for i in ids]

    async def expired_claims(self, now: float) -> list[str]:
        return [c for c, (deadline, _ids) in self.claims.items() if deadline <= now]

    async def wait(self, ticket_id: str, timeout: float) -> None:
        await self._waiters.wait(ticket_id, timeout)

    def waiters(self) -> int:
        """Long-polls waiting on this node now (``bannerfall_matchmaking_long_polls``)."""
        return self._waiters.count()


# --------------------------------------------------------------------------- Redis
_CREATE = """
local p = ARGV[1]
local id, player, pool = ARGV[2], ARGV[3], ARGV[5]
local current = redis.call('GET', p .. 'mm:p:' .. player)
if current then
  local st = redis.call('HGET', p .. 'mm:t:' .. current, 'status')
  if st == 'waiting' or st == 'claimed' then return current end
end
redis.call('HSET', p .. 'mm:t:' .. id, 'data', ARGV[4], 'status', 'waiting', 'player', player,
           'pool', pool, 'created', ARGV[6], 'claim', '', 'match_id', '', 'lobby_id', '')
redis.call('EXPIRE', p .. 'mm:t:' .. id, ARGV[7])
redis.call('SET', p .. 'mm:p:' .. player, id, 'EX', ARGV[7])
redis.call('ZADD', p .. 'mm:q:' .. pool, ARGV[6], id)
redis.call('SADD', p .. 'mm:pools', pool)
return ''
"""

_CANCEL = """
local p, id = ARGV[1], ARGV[2]
local key = p .. 'mm:t:' .. id
local fields = redis.call('HMGET', key, 'status', 'player', 'pool')
if not fields[1] or fields[2] ~= ARGV[3] then return 'missing' end
if fields[1] ~= 'waiting' then return fields[1] end
redis.call('HSET', key, 'status', 'cancelled')
redis.call('ZREM', p .. 'mm:q:' .. fields[3], id)
if redis.call('GET', p .. 'mm:p:' .. fields[2]) == id then redis.call('DEL', p .. 'mm:p:' .. fields[2]) end
redis.call('EXPIRE', key, ARGV[4])
redis.call('PUBLISH', p .. 'mm:events', id)
return 'ok'
"""

_CLAIM = """
local p, claim, deadline, pool = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
for i = 5, #ARGV do
  local f = redis.call('HMGET', p .. 'mm:t:' .. ARGV[i], 'status', 'pool')
  if f[1] ~= 'waiting' or f[2] ~= pool then return 0 end
end
for i = 5, #ARGV do
  redis.call('HSET', p .. 'mm:t:' .. ARGV[i], 'status', 'claimed', 'claim', claim)
  redis.call('ZREM', p .. 'mm:q:' .. pool, ARGV[i])
  redis.call('SADD', p .. 'mm:c:' .. claim, ARGV[i])
end
redis.call('ZADD', p .. 'mm:claims', deadline, claim)
return 1
"""

_FINISH = """
local p, claim = ARGV[1], ARGV[2]
local ids = redis.call('SMEMBERS', p .. 'mm:c:' .. claim)
local done = 0
for _, id in ipairs(ids) do
  local key = p .. 'mm:t:' .. id
  local f = redis.call('HMGET', key, 'status', 'claim', 'player')
  if f[1] == 'claimed' and f[2] == claim then
    redis.call('HSET', key, 'status', 'matched', 'match_id', ARGV[3], 'lobby_id', ARGV[4])
    if redis.call('GET', p .. 'mm:p:' .. f[3]) == id then redis.call('DEL', p .. 'mm:p:' .. f[3]) end
    redis.call('EXPIRE', key, ARGV[5])
    redis.call('PUBLISH', p .. 'mm:events', id)
    done = done + 1
  end
end
redis.call('ZREM', p .. 'mm:claims', claim)
redis.call('DEL', p .. 'mm:c:' .. claim)
return done
"""

_RELEASE = """
local p, claim = ARGV[1], ARGV[2]
local ids = redis.call('SMEMBERS', p .. 'mm:c:' .. claim)
local done = 0
for _, id in ipairs(ids) do
  local key = p .. 'mm:t:' .. id
  local f = redis.call('HMGET', key, 'status', 'claim', 'pool', 'created')
  if f[1] == 'claimed' and f[2] == claim then
    redis.call('HSET', key, 'status', 'waiting', 'claim', '')
    redis.call('ZADD', p .. 'mm:q:' .. f[3], f[4], id)
    redis.call('SADD', p .. 'mm:pools', f[3])
    done = done + 1
  end
end
redis.call('ZREM', p .. 'mm:claims', claim)
redis.call('DEL', p .. 'mm:c:' .. claim)
return done
"""

_PRUNE = """
local p, pool = ARGV[1], ARGV[2]
for i = 3, #ARGV do
  if redis.call('EXISTS', p .. 'mm:t:' .. ARGV[i]) == 0 then redis.call('ZREM', p .. 'mm:q:' .. pool, ARGV[i]) end
end
if redis.call('ZCARD', p .. 'mm:q:' .. pool) == 0 then redis.call('SREM', p .. 'mm:pools', pool) end
return 1
"""


class RedisTicketStore:
    """Tickets in Redis, shared by every node. Decisions are Lua scripts (atomic on the server);
    ``wait`` listens on the ``mm:events`` channel with its own connection and, should that channel
    drop a message, the long-poll re-reads the ticket at least every ``recheck`` seconds anyway."""

    def __init__(self, client: Redis, redis_url: str, prefix: str, *, ticket_ttl: float = 3600.0,
                 recheck: float = 2.0) -> None:
        self.client = client
        self.redis_url = redis_url
        self.prefix = prefix
        self.ttl = int(ticket_ttl)
        self.recheck = recheck
        self._waiters = _Waiters()
        self._listener: asyncio.Task | None = None
        #: set while the event channel is subscribed (wake-ups reach this node's long-polls)
        self.subscribed = asyncio.Event()
        self._create = client.register_script(_CREATE)
        self._cancel = client.register_script(_CANCEL)
        self._claim = client.register_script(_CLAIM)
        self._finish = client.register_script(_FINISH)
        self._release = client.register_script(_RELEASE)
        self._prune = client.register_script(_PRUNE)

    async def start(self) -> None:
        self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None

    async def _listen(self) -> None:
        channel = self.prefix + "mm:events"
        while True:
            sub = Redis.from_url(self.redis_url, socket_connect_timeout=2.0)
            pubsub = sub.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(channel)
                self.subscribed.set()
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._waiters.wake(_s(message["data"]))
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:  # the long-poll re-reads anyway; resubscribe shortly
                self.subscribed.clear()
                log.warning("matchmaking event channel lost (%s); resubscribing", type(exc).__name__)
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()
                    await sub.aclose()

    async def create(self, ticket: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(ticket, separators=(",", ":"))
        current = await self._create(args=[self.prefix, ticket["id"], ticket["player_id"], data, ticket["pool"],
                                           repr(float(ticket["created_at"])), self.ttl])
        current = _s(current)
        if current:
            raise TicketExists(current)
        return {**ticket, "status": "waiting", "claim": None, "match_id": None, "lobby_id": None}

    async def get(self, ticket_id: str) -> dict[str, Any] | None:
        raw = await self.client.hgetall(self.prefix + "mm:t:" + ticket_id)
        if not raw or b"data" not in raw:
            return None
        return _ticket_out({_s(k): _s(v) for k, v in raw.items()})

    async def cancel(self, ticket_id: str, player_id: str) -> str:
        result = await self._cancel(args=[self.prefix, ticket_id, player_id, self.ttl])
        return _s(result)

    async def pools(self) -> list[str]:
        return sorted(_s(p) for p in await self.client.smembers(self.prefix + "mm:pools"))

    async def waiting(self, pool: str, limit: int = 200) -> list[dict[str, Any]]:
        ids = [_s(i) for i in await self.client.zrange(self.prefix + "mm:q:" + pool, 0, limit - 1)]
        rows: list[Any] = []
        if ids:
            async with self.client.pipeline(transaction=False) as pipe:
                for i in ids:
                    pipe.hgetall(self.prefix + "mm:t:" + i)
                rows = await pipe.execute()
        out, gone = [], []
        for ticket_id, raw in zip(ids, rows, strict=True):
            if raw and b"data" in raw:
                ticket = _ticket_out({_s(k): _s(v) for k, v in raw.items()})
                if ticket["status"] == "waiting":
                    out.append(ticket)
            else:
                gone.append(ticket_id)  # expired after MATCHMAKING_TICKET_TTL_SECONDS
        if not ids or gone:  # an empty pool leaves the pool set; expired ids leave the queue
            await self._prune(args=[self.prefix, pool, *gone])
        return out

    async def claim(self, claim_id: str, pool: str, ticket_ids: list[str], deadline: float) -> bool:
        return bool(await self._claim(args=[self.prefix, claim_id, repr(deadline), pool, *ticket_ids]))

    async def finish(self, claim_id: str, match_id: str, lobby_id: str) -> int:
        return int(await self._finish(args=[self.prefix, claim_id, match_id, lobby_id, self.ttl]))

    async def release(self, claim_id: str) -> int:
        return int(await self._release(args=[self.prefix, claim_id]))

    async def claim_tickets(self, claim_id: str) -> list[dict[str, Any]]:
        ids = sorted(_s(i) for i in await self.client.smembers(self.prefix + "mm:c:" + claim_id))
        found = [await self.get(i) for i in ids]
        return [t for t in found if t is not None]

    async def expired_claims(self, now: float) -> list[str]:
        return [_s(c) for c in await self.client.zrangebyscore(self.prefix + "mm:claims", "-inf", now)]

    async def wait(self, ticket_id: str, timeout: float) -> None:
        await self._waiters.wait(ticket_id, min(timeout, self.recheck))

    def waiters(self) -> int:
        """Long-polls waiting on this node now (``bannerfall_matchmaking_long_polls``)."""
        return self._waiters.count()
