"""Where tickets wait: one small Protocol, an in-process store (embedded mode, one node) and a Redis
store (production mode, every node). Every change that decides something is atomic: a Python step
with no ``await`` in it locally, one Lua script on Redis. Parties and rematch offers live in the same
stores (:mod:`app.matchmaking.parties`), so a party's ticket is made in the same atomic step that
checks the party and every member.

A ticket is a dict ``{id, player_id, members, party_id, game, seats, options, pool, rating,
created_at, bots_after_seconds, status, claim, match_id, lobby_id}``; ``player_id`` is who queued
(a party's leader), ``members`` every player it seats (``[player_id]`` alone, or the party), each of
whom has it as their one live ticket; ``status`` is ``waiting`` → ``claimed`` (a node is forming its
match) → ``matched``, or ``waiting`` → ``cancelled``; a claim that does not finish goes back to
``waiting``.

Redis keys under the prefix (docs/operations.md, "Quick play"): ``mm:t:{id}`` (a ticket's hash),
``mm:p:{player}`` (the player's live ticket id), ``mm:q:{pool}`` (sorted set of waiting ticket ids
by ``created_at``), ``mm:pools`` (set of pools), ``mm:claims`` (sorted set of claim ids by deadline),
``mm:c:{claim}`` (set of the claim's ticket ids); channel ``mm:events`` (a ticket id each time one is
matched or cancelled, a party's id or ``rematch:{match}`` when those change, and ``lobby:{lobby}``
when a lobby changes: :meth:`TicketStore.notify`).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Iterator
from typing import Any, Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger("bannerfall.matchmaking")

LIVE = ("waiting", "claimed")


class TicketExists(Exception):
    """A player (``player_id``; None: the one queueing) already has a live ticket: ``ticket_id``."""

    def __init__(self, ticket_id: str, player_id: str | None = None) -> None:
        super().__init__(f"the player already has the live ticket {ticket_id}")
        self.ticket_id = ticket_id
        self.player_id = player_id


def members_of(ticket: dict[str, Any]) -> list[str]:
    """Every player a ticket seats (its party's members, or its one player)."""
    return list(ticket.get("members") or [ticket["player_id"]])


class TicketStore(Protocol):
    async def start(self) -> None: ...
    async def close(self) -> None: ...
    async def create(self, ticket: dict[str, Any]) -> dict[str, Any]:
        """Queue a ``waiting`` ticket; raises :class:`TicketExists` if its player has a live one
        (decided atomically with the insert)."""
    async def get(self, ticket_id: str) -> dict[str, Any] | None: ...
    async def cancel(self, ticket_id: str, player_id: str) -> str:
        """``ok`` if it was waiting (it is ``cancelled`` now), else its status (``claimed``,
        ``matched``, ``cancelled``: nothing changed), or ``missing`` (no such ticket among this
        player's: any member of a party may cancel its ticket)."""
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
        """Return when the ticket (or party, or ``rematch:{match}``) may have changed, or after
        ``timeout`` s."""

    def waiters(self) -> int:
        """How many :meth:`wait` calls are waiting on this node now."""

    def watch(self, key: str) -> contextlib.AbstractContextManager[asyncio.Event]:
        """An event set whenever ``key`` may have changed, for the block (see :class:`_Waiters`);
        a waiter re-reads at least every :attr:`recheck` seconds (None: wake-ups are never lost)."""

    def notify(self, key: str) -> None:
        """``key`` changed outside the store (a lobby, ``lobby:{id}``, in the database): wake its
        watchers on every node. Never raises and never waits: a wake-up that cannot be sent is made
        up by the watchers' re-read every :attr:`recheck` seconds."""

    @property
    def recheck(self) -> float | None: ...


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

    def wake_all(self) -> None:
        """Every waiting long-poll re-reads its ticket now (the event channel dropped: a re-read
        tells each what happened, or answers 503 while the store is unreachable)."""
        for events in self._events.values():
            for event in events:
                event.set()

    def count(self) -> int:
        """Long-polls waiting now (all tickets)."""
        return sum(len(events) for events in self._events.values())

    @contextlib.contextmanager
    def watch(self, key: str) -> Iterator[asyncio.Event]:
        """An event set by every :meth:`wake` of ``key`` while the block runs: registered before
        the caller reads what it waits on, so a change between that read and the wait is not lost."""
        event = asyncio.Event()
        self._events.setdefault(key, set()).add(event)
        try:
            yield event
        finally:
            waiters = self._events.get(key)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._events[key]

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

    def _live_of(self, player_id: str) -> str | None:
        current = self.live.get(player_id)
        if current is not None and current in self.tickets and self.tickets[current]["status"] in LIVE:
            return current
        return None

    def _put(self, ticket: dict[str, Any]) -> dict[str, Any]:
        stored = {**ticket, "members": members_of(ticket), "status": "waiting", "claim": None, "match_id": None,
                  "lobby_id": None}
        self.tickets[ticket["id"]] = stored
        for member in stored["members"]:
            self.live[member] = ticket["id"]
        return dict(stored)

    async def create(self, ticket: dict[str, Any]) -> dict[str, Any]:
        current = self._live_of(ticket["player_id"])
        if current is not None:
            raise TicketExists(current)
        return self._put({**ticket, "members": [ticket["player_id"]], "party_id": None})

    async def get(self, ticket_id: str) -> dict[str, Any] | None:
        ticket = self.tickets.get(ticket_id)
        return dict(ticket) if ticket else None

    async def cancel(self, ticket_id: str, player_id: str) -> str:
        ticket = self.tickets.get(ticket_id)
        if ticket is None or player_id not in members_of(ticket):
            return "missing"
        if ticket["status"] != "waiting":
            return str(ticket["status"])
        ticket["status"] = "cancelled"
        self._end(ticket)
        return "ok"

    def _end(self, ticket: dict[str, Any]) -> None:
        for member in members_of(ticket):
            if self.live.get(member) == ticket["id"]:
                del self.live[member]
        self._waiters.wake(ticket["id"])
        if ticket.get("party_id"):
            self._waiters.wake(ticket["party_id"])

    async def pools(self) -> list[str]:
        self._prune(time.time())
        return sorted({t["pool"] for t in self.tickets.values() if t["status"] == "waiting"})

    def _prune(self, now: float) -> None:
        """Forget tickets older than the TTL (as Redis expires them), except claimed ones."""
        for ticket_id in [i for i, t in self.tickets.items()
                          if t["status"] != "claimed" and t["created_at"] < now - self.ttl]:
            ticket = self.tickets.pop(ticket_id)
            for member in members_of(ticket):
                if self.live.get(member) == ticket_id:
                    del self.live[member]

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

    def watch(self, key: str) -> contextlib.AbstractContextManager[asyncio.Event]:
        return self._waiters.watch(key)

    def notify(self, key: str) -> None:
        self._waiters.wake(key)

    @property
    def recheck(self) -> float | None:
        return None  # in process: every change wakes its watchers

    def waiters(self) -> int:
        """Long-polls waiting on this node now (``bannerfall_matchmaking_long_polls``)."""
        return self._waiters.count()


# --------------------------------------------------------------------------- Redis
#: Lua helpers every ticket script starts with. A ticket's hash keeps ``players`` (its members as
#: `` a b c ``, spaces around each id, so ``has(list, id)`` is a plain substring test) and ``party``.
LUA_TICKETS = """
local function split(s)
  local out = {}
  for w in string.gmatch(s or '', '%S+') do out[#out + 1] = w end
  return out
end
local function has(list, id)
  return list ~= nil and list ~= false and string.find(list, ' ' .. id .. ' ', 1, true) ~= nil
end
local function live_ticket(p, player)
  local current = redis.call('GET', p .. 'mm:p:' .. player)
  if current then
    local st = redis.call('HGET', p .. 'mm:t:' .. current, 'status')
    if st == 'waiting' or st == 'claimed' then return current end
  end
  return false
end
local function ticket_live(p, id)
  if not id or id == '' then return false end
  local st = redis.call('HGET', p .. 'mm:t:' .. id, 'status')
  return st == 'waiting' or st == 'claimed'
end
local function put_ticket(p, id, leader, members, party, data, pool, created, ttl)
  local key = p .. 'mm:t:' .. id
  redis.call('HSET', key, 'data', data, 'status', 'waiting', 'player', leader,
             'players', ' ' .. table.concat(members, ' ') .. ' ', 'party', party,
             'pool', pool, 'created', created, 'claim', '', 'match_id', '', 'lobby_id', '')
  redis.call('EXPIRE', key, ttl)
  for _, m in ipairs(members) do redis.call('SET', p .. 'mm:p:' .. m, id, 'EX', ttl) end
  redis.call('ZADD', p .. 'mm:q:' .. pool, created, id)
  redis.call('SADD', p .. 'mm:pools', pool)
end
local function free_members(p, key, id)
  local f = redis.call('HMGET', key, 'players', 'player', 'party')
  local members = split(f[1] or f[2])
  for _, m in ipairs(members) do
    if redis.call('GET', p .. 'mm:p:' .. m) == id then redis.call('DEL', p .. 'mm:p:' .. m) end
  end
  redis.call('PUBLISH', p .. 'mm:events', id)
  if f[3] and f[3] ~= '' then redis.call('PUBLISH', p .. 'mm:events', f[3]) end
end
local function cancel_ticket(p, id, ttl)
  local key = p .. 'mm:t:' .. id
  local pool = redis.call('HGET', key, 'pool')
  redis.call('HSET', key, 'status', 'cancelled')
  redis.call('ZREM', p .. 'mm:q:' .. pool, id)
  free_members(p, key, id)
  redis.call('EXPIRE', key, ttl)
end
"""

_CREATE = LUA_TICKETS + """
local p = ARGV[1]
local id, player, pool = ARGV[2], ARGV[3], ARGV[5]
local current = live_ticket(p, player)
if current then return current end
put_ticket(p, id, player, {player}, '', ARGV[4], pool, ARGV[6], ARGV[7])
return ''
"""

_CANCEL = LUA_TICKETS + """
local p, id = ARGV[1], ARGV[2]
local key = p .. 'mm:t:' .. id
local fields = redis.call('HMGET', key, 'status', 'player', 'players')
if not fields[1] then return 'missing' end
if not has(fields[3] or (' ' .. fields[2] .. ' '), ARGV[3]) then return 'missing' end
if fields[1] ~= 'waiting' then return fields[1] end
cancel_ticket(p, id, ARGV[4])
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

_FINISH = LUA_TICKETS + """
local p, claim = ARGV[1], ARGV[2]
local ids = redis.call('SMEMBERS', p .. 'mm:c:' .. claim)
local done = 0
for _, id in ipairs(ids) do
  local key = p .. 'mm:t:' .. id
  local f = redis.call('HMGET', key, 'status', 'claim')
  if f[1] == 'claimed' and f[2] == claim then
    redis.call('HSET', key, 'status', 'matched', 'match_id', ARGV[3], 'lobby_id', ARGV[4])
    free_members(p, key, id)
    redis.call('EXPIRE', key, ARGV[5])
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
        self._recheck = recheck
        self._waiters = _Waiters()
        self._listener: asyncio.Task | None = None
        #: wake-ups being published (:meth:`notify`), kept until sent
        self._publishing: set[asyncio.Task] = set()
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
        for task in list(self._publishing):
            task.cancel()
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
                self._waiters.wake_all()
                log.warning("matchmaking event channel lost (%s); resubscribing", type(exc).__name__)
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()
                    await sub.aclose()

    async def create(self, ticket: dict[str, Any]) -> dict[str, Any]:
        ticket = {**ticket, "members": [ticket["player_id"]], "party_id": None}
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
        await self._waiters.wait(ticket_id, min(timeout, self._recheck))

    def watch(self, key: str) -> contextlib.AbstractContextManager[asyncio.Event]:
        return self._waiters.watch(key)

    def notify(self, key: str) -> None:
        self._waiters.wake(key)  # this node's watchers at once; the others through the channel
        task = asyncio.get_running_loop().create_task(self._publish(key))
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)

    async def _publish(self, key: str) -> None:
        try:
            await self.client.publish(self.prefix + "mm:events", key)
        except (RedisError, OSError) as exc:  # the other nodes' watchers re-read within ``recheck``
            log.warning("wake-up of %s not published (%s)", key, type(exc).__name__)

    @property
    def recheck(self) -> float | None:
        return self._recheck  # a pub/sub message may be lost: re-read this often

    def waiters(self) -> int:
        """Long-polls waiting on this node now (``bannerfall_matchmaking_long_polls``)."""
        return self._waiters.count()
