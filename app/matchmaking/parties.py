"""Parties and rematch offers in the ticket stores: each operation decides atomically (one Lua script
on Redis, one step without ``await`` in process), in the same store as the tickets, so a party's
ticket is made in the same step that checks the party, its leader and every member's live ticket.

A party is ``{id, leader_id, members, game, seats, options, code, code_expires_at, ticket_id,
created_at, version}``: ``members`` in joining order (at most ``seats``), ``code`` the current invite
code (unguessable, until ``code_expires_at``), ``ticket_id`` its last ticket (the party is queued while
that ticket is ``waiting`` or ``claimed``), ``version`` grows at every change (long-polls compare it).
A player is in at most one party. A party and its members' links expire ``party_ttl`` seconds after
its last change.

A rematch offer is ``{match_id, needed, agreed, status, expires_at, new_match_id, declined_by}``:
``needed`` the human players of the ended match, ``status`` ``open`` → ``starting`` (every one
agreed: exactly one caller is told to start it) → ``started``, or ``open`` → ``cancelled`` (one
declined, or the start failed) / ``expired`` (the window passed).

Redis keys (docs/infra.md): ``mm:party:{id}`` (hash), ``mm:pm:{player}`` (the player's party id),
``mm:code:{code}`` (an invite code's party id, expiring with the code), ``mm:r:{match}`` (hash: a
rematch offer); wake-ups on ``mm:events``: the party id, ``rematch:{match}``.
"""
from __future__ import annotations

import json
import time
from typing import Any, Protocol, cast

from app.matchmaking.store import (
    LIVE,
    LUA_TICKETS,
    LocalTicketStore,
    RedisTicketStore,
    TicketExists,
    _s,
    members_of,
)


class PartyRefused(Exception):
    """A party change refused: ``code`` is the API's error code (``party_full``, ``party_queued``,
    ``not_leader``, ``in_party``, ``bad_invite``, ``party_claimed``, ``party_changed``, ``not_found``)."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(code)
        self.code = code
        self.detail = detail


class PartyStore(Protocol):
    """What :class:`LocalParties` and :class:`RedisParties` add to a ticket store (each method is
    documented on :class:`LocalParties`)."""

    async def get(self, ticket_id: str) -> dict[str, Any] | None: ...
    async def cancel(self, ticket_id: str, player_id: str) -> str: ...
    async def wait(self, ticket_id: str, timeout: float) -> None: ...
    async def create_party(self, party: dict[str, Any]) -> str | None: ...
    async def party(self, party_id: str) -> dict[str, Any] | None: ...
    async def party_of(self, player_id: str) -> str | None: ...
    async def join_party(self, code: str, player_id: str) -> str: ...
    async def leave_party(self, party_id: str, player_id: str, *, disband: bool = False) -> bool: ...
    async def new_invite(self, party_id: str, player_id: str, code: str, expires_at: float) -> None: ...
    async def queue_party(self, party_id: str, player_id: str, members: list[str],
                          ticket: dict[str, Any]) -> dict[str, Any]: ...
    async def rematch_vote(self, match_id: str, player_id: str, needed: list[str], expires_at: float) -> str: ...
    async def rematch_decline(self, match_id: str, player_id: str, needed: list[str],
                              expires_at: float) -> str: ...
    async def rematch_done(self, match_id: str, status: str, new_match_id: str | None) -> None: ...
    async def rematch(self, match_id: str) -> dict[str, Any] | None: ...


def parties(service: Any) -> PartyStore:
    """The party store of a matchmaking service (``make_matchmaking`` always makes one)."""
    return cast(PartyStore, service.store)


def rematch_key(match_id: str) -> str:
    """The wake-up key of a match's rematch offer."""
    return f"rematch:{match_id}"


# --------------------------------------------------------------------------- in process
class LocalParties(LocalTicketStore):
    """:class:`LocalTicketStore` with parties and rematch offers (embedded mode)."""

    def __init__(self, *, ticket_ttl: float = 3600.0, party_ttl: float = 3600.0) -> None:
        super().__init__(ticket_ttl=ticket_ttl)
        self.party_ttl = party_ttl
        self.parties: dict[str, dict[str, Any]] = {}
        self.party_of_player: dict[str, str] = {}
        self.codes: dict[str, tuple[str, float]] = {}
        self.rematches: dict[str, dict[str, Any]] = {}

    def _party(self, party_id: str) -> dict[str, Any] | None:
        party = self.parties.get(party_id)
        if party is not None and party["touched_at"] < time.time() - self.party_ttl:
            self._drop(party)
            return None
        return party

    def _drop(self, party: dict[str, Any]) -> None:
        self.parties.pop(party["id"], None)
        for m in party["members"]:
            if self.party_of_player.get(m) == party["id"]:
                del self.party_of_player[m]
        self.codes.pop(party["code"], None)

    def _changed(self, party: dict[str, Any]) -> None:
        party["version"] += 1
        party["touched_at"] = time.time()
        self._waiters.wake(party["id"])

    def _ticket_live(self, ticket_id: str | None) -> bool:
        return bool(ticket_id) and ticket_id in self.tickets and self.tickets[ticket_id]["status"] in LIVE

    async def create_party(self, party: dict[str, Any]) -> str | None:
        """Store a new party led by ``party["leader_id"]``; the id of the leader's current party
        instead (nothing changes) if it is in one."""
        current = self.party_of_player.get(party["leader_id"])
        if current is not None and self._party(current) is not None:
            return current
        stored = {**party, "members": [party["leader_id"]], "ticket_id": None, "version": 1,
                  "touched_at": time.time()}
        self.parties[party["id"]] = stored
        self.party_of_player[party["leader_id"]] = party["id"]
        self.codes[party["code"]] = (party["id"], party["code_expires_at"])
        return None

    async def party(self, party_id: str) -> dict[str, Any] | None:
        party = self._party(party_id)
        if party is None:
            return None
        out = {k: v for k, v in party.items() if k != "touched_at"}
        out["members"] = list(party["members"])
        return out

    async def party_of(self, player_id: str) -> str | None:
        current = self.party_of_player.get(player_id)
        return current if current is not None and self._party(current) is not None else None

    async def join_party(self, code: str, player_id: str) -> str:
        """Join the party of invite ``code``; its id. Raises :class:`PartyRefused` ``bad_invite``
        (unknown or expired code), ``in_party``, ``party_queued``, ``party_full``."""
        found = self.codes.get(code)
        party = self._party(found[0]) if found is not None and found[1] > time.time() else None
        if party is None or party["code"] != code:
            raise PartyRefused("bad_invite")
        if player_id in party["members"]:
            return party["id"]
        current = self.party_of_player.get(player_id)
        if current is not None and current != party["id"] and self._party(current) is not None:
            raise PartyRefused("in_party", current)
        if self._ticket_live(party["ticket_id"]):
            raise PartyRefused("party_queued")
        if len(party["members"]) >= party["seats"]:
            raise PartyRefused("party_full")
        party["members"].append(player_id)
        self.party_of_player[player_id] = party["id"]
        self._changed(party)
        return party["id"]

    async def leave_party(self, party_id: str, player_id: str, *, disband: bool = False) -> bool:
        """``player_id`` leaves (``disband``: the leader ends the party for all). A waiting ticket of
        the party is cancelled in the same step (True is returned then). Raises
        :class:`PartyRefused` ``not_found`` (not a member), ``not_leader``, ``party_claimed`` (its
        match is being made: nothing changed)."""
        party = self._party(party_id)
        if party is None or player_id not in party["members"]:
            raise PartyRefused("not_found")
        if disband and party["leader_id"] != player_id:
            raise PartyRefused("not_leader")
        cancelled = False
        ticket = self.tickets.get(party["ticket_id"] or "")
        if ticket is not None and ticket["status"] == "claimed":
            raise PartyRefused("party_claimed")
        if ticket is not None and ticket["status"] == "waiting":
            ticket["status"] = "cancelled"
            self._end(ticket)
            cancelled = True
        gone = list(party["members"]) if disband else [player_id]
        for m in gone:
            if self.party_of_player.get(m) == party_id:
                del self.party_of_player[m]
        party["members"] = [m for m in party["members"] if m not in gone]
        if not party["members"]:
            self._drop(party)
        elif party["leader_id"] in gone:
            party["leader_id"] = party["members"][0]
        self._changed(party)
        return cancelled

    async def new_invite(self, party_id: str, player_id: str, code: str, expires_at: float) -> None:
        """A new invite code for the party (the old one stops working). Raises :class:`PartyRefused`
        ``not_found``, ``not_leader``."""
        party = self._party(party_id)
        if party is None or player_id not in party["members"]:
            raise PartyRefused("not_found")
        if party["leader_id"] != player_id:
            raise PartyRefused("not_leader")
        self.codes.pop(party["code"], None)
        party.update(code=code, code_expires_at=expires_at)
        self.codes[code] = (party_id, expires_at)
        self._changed(party)

    async def queue_party(self, party_id: str, player_id: str, members: list[str],
                          ticket: dict[str, Any]) -> dict[str, Any]:
        """Queue the party with ``ticket`` (made from the party as read: ``members``); the stored
        ticket. Raises :class:`PartyRefused` ``not_found``, ``not_leader``, ``party_queued``,
        ``party_changed`` (its members are no longer ``members``), or :class:`TicketExists` naming
        the member who has a live ticket."""
        party = self._party(party_id)
        if party is None or player_id not in party["members"]:
            raise PartyRefused("not_found")
        if party["leader_id"] != player_id:
            raise PartyRefused("not_leader")
        if self._ticket_live(party["ticket_id"]):
            raise PartyRefused("party_queued")
        if party["members"] != members:
            raise PartyRefused("party_changed")
        for m in members:
            current = self._live_of(m)
            if current is not None:
                raise TicketExists(current, m)
        stored = self._put({**ticket, "members": list(members), "party_id": party_id})
        party["ticket_id"] = ticket["id"]
        self._changed(party)
        return stored

    # -- rematch offers ---------------------------------------------------------------------------
    def _offer(self, match_id: str, needed: list[str], expires_at: float) -> dict[str, Any]:
        offer = self.rematches.get(match_id)
        if offer is None:
            offer = self.rematches[match_id] = {"match_id": match_id, "needed": list(needed), "agreed": [],
                                                "status": "open", "expires_at": expires_at,
                                                "new_match_id": None, "declined_by": None}
        return offer

    async def rematch_vote(self, match_id: str, player_id: str, needed: list[str], expires_at: float) -> str:
        """Agree to a rematch: ``start`` (every needed player agreed: this caller, alone, starts it),
        ``open`` (waiting for others), ``not_seated``, or the offer's status when it is no longer
        open (``starting``, ``started``, ``cancelled``, ``expired``)."""
        offer = self._offer(match_id, needed, expires_at)
        if offer["status"] != "open":
            return str(offer["status"])
        if time.time() > offer["expires_at"]:
            offer["status"] = "expired"
            self._waiters.wake(rematch_key(match_id))
            return "expired"
        if player_id not in offer["needed"]:
            return "not_seated"
        if player_id not in offer["agreed"]:
            offer["agreed"].append(player_id)
        result = "open"
        if all(p in offer["agreed"] for p in offer["needed"]):
            result, offer["status"] = "start", "starting"
        self._waiters.wake(rematch_key(match_id))
        return result

    async def rematch_decline(self, match_id: str, player_id: str, needed: list[str], expires_at: float) -> str:
        """Decline (or leave): ``ok`` (the offer is ``cancelled`` now), ``not_seated``, or the
        offer's status when it is no longer open."""
        offer = self._offer(match_id, needed, expires_at)
        if player_id not in offer["needed"]:
            return "not_seated"
        if offer["status"] != "open":
            return str(offer["status"])
        offer.update(status="cancelled", declined_by=player_id)
        self._waiters.wake(rematch_key(match_id))
        return "ok"

    async def rematch_done(self, match_id: str, status: str, new_match_id: str | None) -> None:
        """The starter's result: ``started`` with the new match, or ``cancelled`` (it failed)."""
        offer = self.rematches.get(match_id)
        if offer is not None:
            offer.update(status=status, new_match_id=new_match_id)
        self._waiters.wake(rematch_key(match_id))

    async def rematch(self, match_id: str) -> dict[str, Any] | None:
        offer = self.rematches.get(match_id)
        return None if offer is None else {**offer, "needed": list(offer["needed"]), "agreed": list(offer["agreed"])}


# --------------------------------------------------------------------------- Redis
_PARTY_CREATE = """
local p, id, leader = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call('GET', p .. 'mm:pm:' .. leader)
if cur and redis.call('EXISTS', p .. 'mm:party:' .. cur) == 1 then return cur end
local key = p .. 'mm:party:' .. id
redis.call('HSET', key, 'data', ARGV[4], 'seats', ARGV[5], 'leader', leader, 'members', ' ' .. leader .. ' ',
           'code', ARGV[6], 'code_expires', ARGV[7], 'ticket', '', 'version', 1)
redis.call('EXPIRE', key, ARGV[9])
redis.call('SET', p .. 'mm:pm:' .. leader, id, 'EX', ARGV[9])
redis.call('SET', p .. 'mm:code:' .. ARGV[6], id, 'EX', ARGV[8])
return ''
"""

#: after a change: the version grows, the party and its members' links live ``ttl`` more seconds,
#: long-polls wake
_LUA_TOUCH = """
local function touch(p, pid, key, members, ttl)
  redis.call('HINCRBY', key, 'version', 1)
  redis.call('EXPIRE', key, ttl)
  for _, m in ipairs(members) do redis.call('EXPIRE', p .. 'mm:pm:' .. m, ttl) end
  redis.call('PUBLISH', p .. 'mm:events', pid)
end
"""

_PARTY_JOIN = LUA_TICKETS + _LUA_TOUCH + """
local p, code, player, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local pid = redis.call('GET', p .. 'mm:code:' .. code)
if not pid then return {'bad_invite', ''} end
local key = p .. 'mm:party:' .. pid
local h = redis.call('HMGET', key, 'members', 'seats', 'ticket', 'code')
if not h[1] or h[4] ~= code then return {'bad_invite', ''} end
if has(h[1], player) then return {'ok', pid} end
local cur = redis.call('GET', p .. 'mm:pm:' .. player)
if cur and cur ~= pid and has(redis.call('HGET', p .. 'mm:party:' .. cur, 'members'), player) then
  return {'in_party', cur}
end
if ticket_live(p, h[3]) then return {'party_queued', pid} end
if #split(h[1]) >= tonumber(h[2]) then return {'party_full', pid} end
redis.call('HSET', key, 'members', h[1] .. player .. ' ')
redis.call('SET', p .. 'mm:pm:' .. player, pid, 'EX', ttl)
touch(p, pid, key, split(h[1] .. player), ttl)
return {'ok', pid}
"""

_PARTY_LEAVE = LUA_TICKETS + _LUA_TOUCH + """
local p, pid, player, ttl, ticket_ttl, disband = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local key = p .. 'mm:party:' .. pid
local h = redis.call('HMGET', key, 'members', 'leader', 'ticket', 'code')
if not h[1] or not has(h[1], player) then return 'not_found' end
if disband == '1' and h[2] ~= player then return 'not_leader' end
local result = 'ok'
if h[3] and h[3] ~= '' then
  local st = redis.call('HGET', p .. 'mm:t:' .. h[3], 'status')
  if st == 'claimed' then return 'party_claimed' end
  if st == 'waiting' then
    cancel_ticket(p, h[3], ticket_ttl)
    result = 'cancelled'
  end
end
local rest = {}
for _, m in ipairs(split(h[1])) do
  if disband == '1' or m == player then
    if redis.call('GET', p .. 'mm:pm:' .. m) == pid then redis.call('DEL', p .. 'mm:pm:' .. m) end
  else
    rest[#rest + 1] = m
  end
end
if #rest == 0 then
  redis.call('DEL', key)
  if redis.call('GET', p .. 'mm:code:' .. h[4]) == pid then redis.call('DEL', p .. 'mm:code:' .. h[4]) end
  redis.call('PUBLISH', p .. 'mm:events', pid)
else
  local leader = h[2]
  if leader == player then leader = rest[1] end
  redis.call('HSET', key, 'members', ' ' .. table.concat(rest, ' ') .. ' ', 'leader', leader)
  touch(p, pid, key, rest, ttl)
end
return result
"""

_PARTY_INVITE = LUA_TICKETS + _LUA_TOUCH + """
local p, pid, player, code, expires, code_ttl, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local key = p .. 'mm:party:' .. pid
local h = redis.call('HMGET', key, 'members', 'leader', 'code')
if not h[1] or not has(h[1], player) then return 'not_found' end
if h[2] ~= player then return 'not_leader' end
if redis.call('GET', p .. 'mm:code:' .. h[3]) == pid then redis.call('DEL', p .. 'mm:code:' .. h[3]) end
redis.call('HSET', key, 'code', code, 'code_expires', expires)
redis.call('SET', p .. 'mm:code:' .. code, pid, 'EX', code_ttl)
touch(p, pid, key, split(h[1]), ttl)
return 'ok'
"""

_PARTY_QUEUE = LUA_TICKETS + _LUA_TOUCH + """
local p, pid, player, expected, tid = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local key = p .. 'mm:party:' .. pid
local h = redis.call('HMGET', key, 'members', 'leader', 'ticket')
if not h[1] or not has(h[1], player) then return 'not_found' end
if h[2] ~= player then return 'not_leader' end
if ticket_live(p, h[3]) then return 'party_queued' end
if h[1] ~= expected then return 'party_changed' end
local members = split(h[1])
for _, m in ipairs(members) do
  local cur = live_ticket(p, m)
  if cur then return 'ticket_exists ' .. m .. ' ' .. cur end
end
put_ticket(p, tid, player, members, pid, ARGV[6], ARGV[7], ARGV[8], ARGV[9])
redis.call('HSET', key, 'ticket', tid)
touch(p, pid, key, members, ARGV[10])
return 'ok'
"""

_REMATCH_OPEN = """
local function offer(p, mid, needed, expires, ttl)
  local key = p .. 'mm:r:' .. mid
  if redis.call('EXISTS', key) == 0 then
    redis.call('HSET', key, 'needed', needed, 'agreed', ' ', 'status', 'open', 'expires', expires,
               'new_match', '', 'by', '')
    redis.call('EXPIRE', key, ttl)
  end
  return key
end
"""

_REMATCH_VOTE = LUA_TICKETS + _REMATCH_OPEN + """
local p, mid, player = ARGV[1], ARGV[2], ARGV[3]
local key = offer(p, mid, ARGV[4], ARGV[5], ARGV[7])
local h = redis.call('HMGET', key, 'status', 'needed', 'agreed', 'expires')
if h[1] ~= 'open' then return h[1] end
local wake = 'rematch:' .. mid
if tonumber(ARGV[6]) > tonumber(h[4]) then
  redis.call('HSET', key, 'status', 'expired')
  redis.call('PUBLISH', p .. 'mm:events', wake)
  return 'expired'
end
if not has(h[2], player) then return 'not_seated' end
local agreed = h[3]
if not has(agreed, player) then
  agreed = agreed .. player .. ' '
  redis.call('HSET', key, 'agreed', agreed)
end
local result = 'start'
for _, m in ipairs(split(h[2])) do
  if not has(agreed, m) then result = 'open' end
end
if result == 'start' then redis.call('HSET', key, 'status', 'starting') end
redis.call('PUBLISH', p .. 'mm:events', wake)
return result
"""

_REMATCH_DECLINE = LUA_TICKETS + _REMATCH_OPEN + """
local p, mid, player = ARGV[1], ARGV[2], ARGV[3]
local key = offer(p, mid, ARGV[4], ARGV[5], ARGV[6])
local h = redis.call('HMGET', key, 'status', 'needed')
if not has(h[2], player) then return 'not_seated' end
if h[1] ~= 'open' then return h[1] end
redis.call('HSET', key, 'status', 'cancelled', 'by', player)
redis.call('PUBLISH', p .. 'mm:events', 'rematch:' .. mid)
return 'ok'
"""

_REMATCH_DONE = """
local p, mid = ARGV[1], ARGV[2]
local key = p .. 'mm:r:' .. mid
if redis.call('EXISTS', key) == 1 then redis.call('HSET', key, 'status', ARGV[3], 'new_match', ARGV[4]) end
redis.call('PUBLISH', p .. 'mm:events', 'rematch:' .. mid)
return 1
"""


def _members(value: str) -> list[str]:
    return value.split()


class RedisParties(RedisTicketStore):
    """:class:`RedisTicketStore` with parties and rematch offers (production mode)."""

    def __init__(self, client: Any, redis_url: str, prefix: str, *, ticket_ttl: float = 3600.0,
                 recheck: float = 2.0, party_ttl: float = 3600.0) -> None:
        super().__init__(client, redis_url, prefix, ticket_ttl=ticket_ttl, recheck=recheck)
        self.party_ttl = int(party_ttl)
        reg = client.register_script
        self._p_create, self._p_join, self._p_leave = reg(_PARTY_CREATE), reg(_PARTY_JOIN), reg(_PARTY_LEAVE)
        self._p_invite, self._p_queue = reg(_PARTY_INVITE), reg(_PARTY_QUEUE)
        self._r_vote, self._r_decline, self._r_done = reg(_REMATCH_VOTE), reg(_REMATCH_DECLINE), reg(_REMATCH_DONE)

    async def create_party(self, party: dict[str, Any]) -> str | None:
        data = json.dumps({k: party[k] for k in ("game", "seats", "options", "created_at")}, separators=(",", ":"))
        code_ttl = max(1, int(party["code_expires_at"] - time.time()))
        current = _s(await self._p_create(args=[
            self.prefix, party["id"], party["leader_id"], data, party["seats"], party["code"],
            repr(float(party["code_expires_at"])), code_ttl, self.party_ttl]))
        return current or None

    async def party(self, party_id: str) -> dict[str, Any] | None:
        raw = await self.client.hgetall(self.prefix + "mm:party:" + party_id)
        if not raw or b"data" not in raw:
            return None
        f = {_s(k): _s(v) for k, v in raw.items()}
        data = json.loads(f["data"])
        return {"id": party_id, "leader_id": f["leader"], "members": _members(f["members"]), "game": data["game"],
                "seats": int(data["seats"]), "options": data["options"], "created_at": data["created_at"],
                "code": f["code"], "code_expires_at": float(f["code_expires"]), "ticket_id": f["ticket"] or None,
                "version": int(f["version"])}

    async def party_of(self, player_id: str) -> str | None:
        current = await self.client.get(self.prefix + "mm:pm:" + player_id)
        if current is None:
            return None
        party = await self.party(_s(current))
        return party["id"] if party is not None and player_id in party["members"] else None

    async def join_party(self, code: str, player_id: str) -> str:
        result, party_id = (_s(x) for x in await self._p_join(args=[self.prefix, code, player_id, self.party_ttl]))
        if result != "ok":
            raise PartyRefused(result, party_id)
        return party_id

    async def leave_party(self, party_id: str, player_id: str, *, disband: bool = False) -> bool:
        result = _s(await self._p_leave(args=[self.prefix, party_id, player_id, self.party_ttl, self.ttl,
                                              "1" if disband else "0"]))
        if result not in ("ok", "cancelled"):
            raise PartyRefused(result)
        return result == "cancelled"

    async def new_invite(self, party_id: str, player_id: str, code: str, expires_at: float) -> None:
        result = _s(await self._p_invite(args=[self.prefix, party_id, player_id, code, repr(float(expires_at)),
                                               max(1, int(expires_at - time.time())), self.party_ttl]))
        if result != "ok":
            raise PartyRefused(result)

    async def queue_party(self, party_id: str, player_id: str, members: list[str],
                          ticket: dict[str, Any]) -> dict[str, Any]:
        ticket = {**ticket, "members": list(members), "party_id": party_id}
        data = json.dumps(ticket, separators=(",", ":"))
        result = _s(await self._p_queue(args=[
            self.prefix, party_id, player_id, " " + " ".join(members) + " ", ticket["id"], data, ticket["pool"],
            repr(float(ticket["created_at"])), self.ttl, self.party_ttl]))
        if result.startswith("ticket_exists"):
            _word, member, current = result.split()
            raise TicketExists(current, member)
        if result != "ok":
            raise PartyRefused(result)
        return {**ticket, "status": "waiting", "claim": None, "match_id": None, "lobby_id": None}

    async def rematch_vote(self, match_id: str, player_id: str, needed: list[str], expires_at: float) -> str:
        return _s(await self._r_vote(args=[self.prefix, match_id, player_id, " " + " ".join(needed) + " ",
                                           repr(float(expires_at)), repr(time.time()), self.ttl]))

    async def rematch_decline(self, match_id: str, player_id: str, needed: list[str], expires_at: float) -> str:
        return _s(await self._r_decline(args=[self.prefix, match_id, player_id, " " + " ".join(needed) + " ",
                                              repr(float(expires_at)), self.ttl]))

    async def rematch_done(self, match_id: str, status: str, new_match_id: str | None) -> None:
        await self._r_done(args=[self.prefix, match_id, status, new_match_id or ""])

    async def rematch(self, match_id: str) -> dict[str, Any] | None:
        raw = await self.client.hgetall(self.prefix + "mm:r:" + match_id)
        if not raw:
            return None
        f = {_s(k): _s(v) for k, v in raw.items()}
        return {"match_id": match_id, "needed": _members(f["needed"]), "agreed": _members(f["agreed"]),
                "status": f["status"], "expires_at": float(f["expires"]), "new_match_id": f["new_match"] or None,
                "declined_by": f["by"] or None}


__all__ = ["LocalParties", "PartyRefused", "PartyStore", "RedisParties", "members_of", "parties", "rematch_key"]
