"""Repositories: every query the server runs lives here (none inline in routes or the runtime)."""
from __future__ import annotations

import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Sequence, cast

from sqlalchemy import Integer, Table, and_, bindparam, delete, func, insert, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from app.db.models import PlayerToken
from app.db.paging import decode_cursor, encode_cursor
from app.db.sqlite_log import FENCE_CHUNK, SqliteLogCommitter, fence_sql, json_text
from app.db.tables import accounts_t, actions_t, in_list, lobbies_t, matches_t, players_t, seats_t

tokens_t = cast(Table, PlayerToken.__table__)

#: Work done in the transaction that inserts a match, with that transaction's connection and the
#: match row (``MatchManager.on_match_insert``: the specials' lifetimes are reserved there).
MatchInsertHook = Callable[[AsyncConnection, dict[str, Any]], Awaitable[Any]]

# Queries with ``IN (...)`` lists, built once (an ``in_()`` built per query leaves cyclic garbage:
# ``app.db.tables.in_list``).
_PLAYERS_BY_ID = select(players_t).where(in_list(players_t.c.id, "ids"))
#: what a lobby seat shows of its player: id, name, role, and the account's username (None: a guest)
_PLAYER_ROLES = (select(players_t.c.id, players_t.c.name, players_t.c.role, accounts_t.c.username)
                 .select_from(players_t.outerjoin(accounts_t, accounts_t.c.player_id == players_t.c.id))
                 .where(in_list(players_t.c.id, "ids")))
_SEATS_OF_LOBBIES = select(seats_t).where(in_list(seats_t.c.lobby_id, "lobby_ids")).order_by(seats_t.c.seat)
_FREE_SEATS = (update(seats_t).where(seats_t.c.lobby_id == bindparam("p_lobby"), in_list(seats_t.c.seat, "p_seats"))
               .values(player_id=None, bot=None, loadout=None))

# The statements of the lobby routes, built once: each execution then finds its compiled form by
# the statement's cache key instead of building the expression again (``docs/decisions.md``,
# "Making a match"). Bound parameters of an UPDATE are named ``p_*`` (a column's name would be taken
# for a SET value).
_PLAYER_BY_TOKEN = select(players_t).where(players_t.c.token_hash == bindparam("p_hash"))
_PLAYER_BY_SIGN_IN_TOKEN = (select(players_t).join(tokens_t, tokens_t.c.player_id == players_t.c.id)
                            .where(tokens_t.c.token_hash == bindparam("p_hash")))
_LOBBY_STATUS = select(lobbies_t.c.status).where(lobbies_t.c.id == bindparam("p_lobby"))
#: a lobby's seats in seat order, each with what the lobby shows of its player (none for a free seat)
_SEATS_WITH_PLAYERS = (
    select(seats_t, players_t.c.name, players_t.c.role, accounts_t.c.username)
    .select_from(seats_t.outerjoin(players_t, players_t.c.id == seats_t.c.player_id)
                 .outerjoin(accounts_t, accounts_t.c.player_id == seats_t.c.player_id))
    .where(seats_t.c.lobby_id == bindparam("p_lobby")).order_by(seats_t.c.seat))
_SEAT_COLUMNS = tuple(c.name for c in seats_t.c)
#: a lobby with its seats and their players in one statement (a row per seat; a lobby without a
#: seat row still gives one row, its seat columns NULL)
_LOBBY_WITH_SEATS = (
    select(lobbies_t, *(seats_t.c[k] for k in _SEAT_COLUMNS if k != "lobby_id"),
           players_t.c.name.label("seat_player_name"), players_t.c.role.label("seat_player_role"),
           accounts_t.c.username.label("seat_player_username"))
    .select_from(lobbies_t.outerjoin(seats_t, seats_t.c.lobby_id == lobbies_t.c.id)
                 .outerjoin(players_t, players_t.c.id == seats_t.c.player_id)
                 .outerjoin(accounts_t, accounts_t.c.player_id == seats_t.c.player_id))
    .where(lobbies_t.c.id == bindparam("p_lobby")).order_by(seats_t.c.seat))
_LOBBY_COLUMNS = tuple(c.name for c in lobbies_t.c)
_free_seats = seats_t.alias("free_seats")
_seated = seats_t.alias("seated")
#: a join in one statement: the asked seat (or the first free one) taken if it is free and the player
#: holds no seat of the lobby yet; no row changed sends the join to the reading path
_JOIN_FREE_SEAT = (
    update(seats_t)
    .where(seats_t.c.lobby_id == bindparam("p_lobby"),
           seats_t.c.seat == func.coalesce(
               bindparam("p_seat", type_=Integer),
               select(func.min(_free_seats.c.seat))
               .where(_free_seats.c.lobby_id == bindparam("p_lobby"), _free_seats.c.player_id.is_(None),
                      _free_seats.c.bot.is_(None)).scalar_subquery()),
           seats_t.c.player_id.is_(None), seats_t.c.bot.is_(None),
           ~select(_seated.c.seat).where(_seated.c.lobby_id == bindparam("p_lobby"),
                                         _seated.c.player_id == bindparam("p_player")).exists())
    .values(player_id=bindparam("p_player"), bot=None, loadout=bindparam("p_loadout")))
#: the lock of :meth:`Repository._locked_open_lobby`: a no-op change of an open lobby, returning its row
_LOCK_OPEN_LOBBY = (update(lobbies_t).where(lobbies_t.c.id == bindparam("p_lobby"), lobbies_t.c.status == "open")
                    .values(status=lobbies_t.c.status).returning(*lobbies_t.c))
#: the lock of a start: the open lobby marked started with its match (committed with the match)
_START_OPEN_LOBBY = (update(lobbies_t).where(lobbies_t.c.id == bindparam("p_lobby"), lobbies_t.c.status == "open")
                     .values(status="started", match_id=bindparam("p_match")).returning(*lobbies_t.c))
_TAKE_SEAT = (update(seats_t).where(seats_t.c.lobby_id == bindparam("p_lobby"), seats_t.c.seat == bindparam("p_seat"))
              .values(player_id=bindparam("p_player"), bot=bindparam("p_bot"), loadout=bindparam("p_loadout")))
_SET_SEAT_LOADOUT = (update(seats_t)
                     .where(seats_t.c.lobby_id == bindparam("p_lobby"), seats_t.c.seat == bindparam("p_seat"))
                     .values(loadout=bindparam("p_loadout")))
_SEAT_BOT = (update(seats_t).where(seats_t.c.lobby_id == bindparam("p_lobby"), seats_t.c.seat == bindparam("p_seat"))
             .values(player_id=bindparam("p_player"), bot=bindparam("p_bot")))
_CLOSE_LOBBY = update(lobbies_t).where(lobbies_t.c.id == bindparam("p_lobby")).values(status="closed")
_MARK_STARTED = (update(lobbies_t).where(lobbies_t.c.id == bindparam("p_lobby"))
                 .values(status="started", match_id=bindparam("p_match")))
_INSERT_PLAYER = insert(players_t)
_INSERT_LOBBY = insert(lobbies_t)
_INSERT_SEAT = insert(seats_t)
_INSERT_MATCH = insert(matches_t)


@dataclass(slots=True)
class MatchWrite:
    """One match's share of a group commit: ``rows`` (log rows, consecutive ``seq``), the runner's
    fencing ``epoch``, and the end-of-match ``update`` (``status``, ``outcome``, ``ended_at``) if the
    last row ends it."""

    match_id: str
    epoch: int
    rows: list[dict[str, Any]]
    update: dict[str, Any] | None = None


#: Postgres: a whole group commit as one statement, run in autocommit (one round trip, one
#: implicit transaction): lock the batch's match rows in id order, fence them (the WHERE of the
#: docstring of ``Repository.commit_batch``, with the end of a finished match written in the same
#: UPDATE), insert the records of the matches the fence accepted, return those ids.
#: Data-modifying CTEs see each other only through RETURNING, which is how ``ins`` reads ``fence``.
_PG_COMMIT = text(
    "WITH locked AS ("
    " SELECT id FROM matches WHERE id = ANY(CAST(:ids AS VARCHAR[])) ORDER BY id FOR UPDATE"
    "), fence AS ("
    " UPDATE matches AS m SET version = v.last,"
    " status = CASE WHEN v.ended THEN v.status ELSE m.status END,"
    " outcome = CASE WHEN v.ended THEN CAST(v.outcome AS JSON) ELSE m.outcome END,"
    " ended_at = CASE WHEN v.ended THEN v.ended_at ELSE m.ended_at END"
    " FROM unnest(CAST(:ids AS VARCHAR[]), CAST(:epochs AS BIGINT[]), CAST(:firsts AS INTEGER[]),"
    " CAST(:lasts AS INTEGER[]), CAST(:ended AS BOOLEAN[]), CAST(:statuses AS VARCHAR[]),"
    " CAST(:outcomes AS TEXT[]), CAST(:ended_ats AS DOUBLE PRECISION[]))"
    " AS v(id, epoch, first, last, ended, status, outcome, ended_at)"
    " WHERE m.id = v.id AND m.owner_epoch = v.epoch AND m.version = v.first - 1"
    " AND m.id IN (SELECT id FROM locked)"
    " RETURNING m.id"
    "), ins AS ("
    " INSERT INTO match_actions (match_id, seq, seat, kind, action, client_seq, deadlines, created_at)"
    " SELECT r.match_id, r.seq, r.seat, r.kind, CAST(r.action AS JSON), r.client_seq,"
    " CAST(r.deadlines AS JSON), r.created_at"
    " FROM unnest(CAST(:r_ids AS VARCHAR[]), CAST(:r_seqs AS INTEGER[]), CAST(:r_seats AS INTEGER[]),"
    " CAST(:r_kinds AS VARCHAR[]), CAST(:r_actions AS TEXT[]), CAST(:r_client_seqs AS BIGINT[]),"
    " CAST(:r_deadlines AS TEXT[]), CAST(:r_created AS DOUBLE PRECISION[]))"
    " AS r(match_id, seq, seat, kind, action, client_seq, deadlines, created_at)"
    " WHERE r.match_id IN (SELECT id FROM fence)"
    ") SELECT id FROM fence")


def _row(r) -> dict[str, Any] | None:
    return dict(r._mapping) if r is not None else None


class LobbyRefused(LookupError):
    """A lobby change refused by the lobby's state, decided under the lobby's lock.

    ``code``: ``not_found`` (no such lobby), ``lobby_not_open`` (started or closed), ``bad_seat``
    (no such seat number), ``no_free_seat``, ``not_seated``, ``seats_empty`` (start with a free seat).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Repository:
    """Data access over one :class:`AsyncEngine`. Methods return plain dicts."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        #: SQLite in a file: group commits go through one dedicated thread and connection
        #: (``app.db.sqlite_log``); None: through the engine
        self.log_committer: SqliteLogCommitter | None = None
        url = engine.url
        if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:" \
                and not url.database.startswith("file:") and not url.query:
            self.log_committer = SqliteLogCommitter(url.database)
        #: Postgres: the group commits' own small pool, in autocommit and without the pre-ping of
        #: the main pool (a ping is three round trips — BEGIN, ``;``, ROLLBACK — before every
        #: one-statement commit); a connection found dead raises a disconnect, which the log writer
        #: retries on a fresh one (``app.runtime.logwriter._transient``). None: through the engine
        #: (made at the first commit, so a repository that never commits — the CLI's — makes none)
        self.log_engine: AsyncEngine | None = None
        self._log_url = url if url.get_backend_name() == "postgresql" else None

    def close(self) -> None:
        """Release what the repository holds besides the engine (the SQLite log committer's thread
        and connection). Idempotent. The Postgres log pool is released by :meth:`aclose`."""
        committer, self.log_committer = self.log_committer, None
        if committer is not None:
            committer.close()

    async def aclose(self) -> None:
        """:meth:`close`, and the Postgres log pool's connections closed. Idempotent."""
        self.close()
        log_engine, self.log_engine, self._log_url = self.log_engine, None, None
        if log_engine is not None:
            await log_engine.dispose()

    # -- players ---------------------------------------------------------------------------
    async def create_player(self, player_id: str, name: str, role: str, token_hash: str) -> dict[str, Any]:
        row = {"id": player_id, "name": name, "role": role, "token_hash": token_hash, "created_at": time.time()}
        async with self.engine.begin() as conn:
            await conn.execute(_INSERT_PLAYER, row)
        return row

    async def player_by_token_hash(self, token_hash: str) -> dict[str, Any] | None:
        """The player whose first token (``players.token_hash``) or one of whose sign-in tokens
        (``player_tokens``, :mod:`app.db.accounts`) hashes to ``token_hash``."""
        async with self.engine.connect() as conn:
            r = (await conn.execute(_PLAYER_BY_TOKEN, {"p_hash": token_hash})).first()
            if r is None:
                r = (await conn.execute(_PLAYER_BY_SIGN_IN_TOKEN, {"p_hash": token_hash})).first()
        return _row(r)

    async def set_token_hash(self, player_id: str, token_hash: str) -> None:
        """Replace a player's token hash (bots get a fresh token each time they start)."""
        async with self.engine.begin() as conn:
            await conn.execute(update(players_t).where(players_t.c.id == player_id).values(token_hash=token_hash))

    async def player(self, player_id: str) -> dict[str, Any] | None:
        async with self.engine.connect() as conn:
            r = (await conn.execute(select(players_t).where(players_t.c.id == player_id))).first()
        return _row(r)

    async def seat_players(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """What lobby seats show of these players: ``{id: {id, name, role, username}}`` (``username``
        None for a guest or a bot), one query."""
        ids = list(set(ids))
        if not ids:
            return {}
        async with self.engine.connect() as conn:
            rows = (await conn.execute(_PLAYER_ROLES, {"ids": ids})).all()
        return {r.id: dict(r._mapping) for r in rows}

    async def players(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = list(set(ids))
        if not ids:
            return {}
        async with self.engine.connect() as conn:
            rows = (await conn.execute(_PLAYERS_BY_ID, {"ids": ids})).all()
        return {r.id: dict(r._mapping) for r in rows}

    # -- lobbies ---------------------------------------------------------------------------
    async def create_lobby(self, lobby: dict[str, Any], host_id: str,
                           host_loadout: Sequence[str] | None = None, *,
                           host_username: bool = False) -> str | None:
        """Insert a lobby with the host in seat 0 (with ``host_loadout``, Conquest specials it brings).
        With ``host_username``, the host's account username is read first in the same transaction
        and returned (None: a guest); otherwise returns None."""
        async with self.engine.begin() as conn:
            username = None
            if host_username:
                found = (await conn.execute(_PLAYER_ROLES, {"ids": [host_id]})).first()
                username = found.username if found is not None else None
            await conn.execute(_INSERT_LOBBY, lobby)
            await conn.execute(
                _INSERT_SEAT,
                [{"lobby_id": lobby["id"], "seat": s, "player_id": host_id if s == 0 else None, "bot": None,
                  "loadout": list(host_loadout) if s == 0 and host_loadout else None}
                 for s in range(lobby["seat_count"])],
            )
        return username

    async def lobby(self, lobby_id: str) -> dict[str, Any] | None:
        """The lobby with its ``seats`` and, under ``players``, the public rows of its seated players
        (``id, name, role, username``): two statements on one connection. None: no such lobby."""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(_LOBBY_WITH_SEATS, {"p_lobby": lobby_id})).all()
        if not rows:
            return None
        first = rows[0]._mapping
        lobby = {k: first[k] for k in _LOBBY_COLUMNS}
        seats: list[dict[str, Any]] = []
        players: dict[str, dict[str, Any]] = {}
        for r in rows:
            if r.seat is None:  # no seat row
                continue
            seats.append({"lobby_id": lobby_id, "seat": r.seat, "player_id": r.player_id, "bot": r.bot,
                          "loadout": r.loadout})
            if r.player_id is not None:
                players[r.player_id] = {"id": r.player_id, "name": r.seat_player_name, "role": r.seat_player_role,
                                        "username": r.seat_player_username}
        lobby["seats"] = seats
        lobby["players"] = players
        return lobby

    async def lobbies(self, status: str | None = "open", game: str | None = None,
                      limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` lobbies (first page of :meth:`lobbies_page`)."""
        return (await self.lobbies_page(status, game, limit))[0]

    async def lobbies_page(self, status: str | None = "open", game: str | None = None, limit: int = 50,
                           cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """A page of lobbies, newest first (``created_at``, then id), with their seats, and the cursor
        of the next page (None on the last). Keyset paging: stable under inserts. Raises
        :class:`app.db.paging.BadCursor`."""
        q = select(lobbies_t).order_by(lobbies_t.c.created_at.desc(), lobbies_t.c.id.desc()).limit(limit + 1)
        if cursor is not None:
            at, last_id = decode_cursor("lobbies", cursor, (float, str))
            q = q.where(or_(lobbies_t.c.created_at < at, and_(lobbies_t.c.created_at == at, lobbies_t.c.id < last_id)))
        if status:
            q = q.where(lobbies_t.c.status == status)
        if game:
            q = q.where(lobbies_t.c.game == game)
        async with self.engine.connect() as conn:
            rows = [dict(r._mapping) for r in (await conn.execute(q)).all()]
            more = len(rows) > limit
            rows = rows[:limit]
            if rows:
                seats = (await conn.execute(_SEATS_OF_LOBBIES, {"lobby_ids": [r["id"] for r in rows]})).all()
            else:
                seats = []
        by_lobby: dict[str, list] = {}
        for s in seats:
            by_lobby.setdefault(s.lobby_id, []).append(dict(s._mapping))
        for r in rows:
            r["seats"] = by_lobby.get(r["id"], [])
        next_cursor = encode_cursor("lobbies", [rows[-1]["created_at"], rows[-1]["id"]]) if more else None
        return rows, next_cursor

    @asynccontextmanager
    async def _locked_open_lobby(self, lobby_id: str, start_match: str | None = None, *, read_seats: bool = True
                                 ) -> AsyncIterator[tuple[AsyncConnection, dict[str, Any]]]:
        """One transaction holding the lobby's row lock, for a lobby that is ``open`` in it.

        The first statement is a conditional ``UPDATE lobbies … WHERE status = 'open' RETURNING *``
        (a no-op change, or with ``start_match`` the lobby marked ``started`` with that match id,
        committed with the match or rolled back with it): on Postgres it takes the row lock (a
        concurrent one waits, then re-checks the status), on SQLite it takes the database's write
        lock before anything is read, so every join, leave, bot fill and start of one lobby is
        serialised and sees the status it acts on. It returns the lobby's row; its seats with their
        players are read next (:meth:`_seats_in`; not with ``read_seats`` False), in the transaction.
        Raises :class:`LobbyRefused` ``not_found`` or ``lobby_not_open``.
        """
        async with self.engine.begin() as conn:
            if start_match is None:
                res = await conn.execute(_LOCK_OPEN_LOBBY, {"p_lobby": lobby_id})
            else:
                res = await conn.execute(_START_OPEN_LOBBY, {"p_lobby": lobby_id, "p_match": start_match})
            row = res.first()
            if row is None:
                r = (await conn.execute(_LOBBY_STATUS, {"p_lobby": lobby_id})).first()
                if r is None:
                    raise LobbyRefused("not_found", "lobby not found")
                raise LobbyRefused("lobby_not_open", f"the lobby is {r.status}")
            lobby = dict(row._mapping)
            if read_seats:
                await self._seats_in(conn, lobby)
            yield conn, lobby

    @staticmethod
    async def _seats_in(conn: AsyncConnection, lobby: dict[str, Any]) -> None:
        """Set the lobby's ``seats`` (in seat order) and, under ``players``, the public rows (``id,
        name, role, username``) of its seated players: one statement in the caller's transaction (so
        a route can answer without another read after the commit)."""
        seats: list[dict[str, Any]] = []
        players: dict[str, dict[str, Any]] = {}
        for r in (await conn.execute(_SEATS_WITH_PLAYERS, {"p_lobby": lobby["id"]})).all():
            m = r._mapping
            seats.append({k: m[k] for k in _SEAT_COLUMNS})
            if r.player_id is not None:
                players[r.player_id] = {"id": r.player_id, "name": r.name, "role": r.role, "username": r.username}
        lobby["seats"] = seats
        lobby["players"] = players

    async def join_lobby(self, lobby_id: str, player_id: str, seat: int | None = None,
                         loadout: Sequence[str] | None = None) -> dict[str, Any]:
        """Seat ``player_id`` (the first free seat, or ``seat``) and return the lobby as it is then.
        ``loadout`` (Conquest specials, already checked against what the player owns) is stored on the
        seat in the same transaction, so a start can never see the seat without it.

        Idempotent: a player who already holds a seat keeps it and gets the lobby unchanged (whatever
        ``seat`` asks; a ``loadout`` given replaces the seat's). One seat per player per lobby is also
        enforced by the unique index ``uq_lobby_seats_player``. Raises :class:`LobbyRefused`
        ``not_found``, ``lobby_not_open``, ``bad_seat``, ``no_free_seat``.
        """
        # the answer is the lobby read under the lock with this transaction's change applied: nothing
        # else changes a seat of it while the lock is held, so it needs no read after the change
        try:
            async with self._locked_open_lobby(lobby_id, read_seats=False) as (conn, lobby):
                taken = list(loadout) if loadout else None
                if seat is None or 0 <= seat < lobby["seat_count"]:
                    # the usual join first: one conditional UPDATE (a free seat, the player not seated
                    # yet), then the seats read once, the player in them
                    res = await conn.execute(_JOIN_FREE_SEAT, {"p_lobby": lobby_id, "p_seat": seat,
                                                               "p_player": player_id, "p_loadout": taken})
                    if res.rowcount == 1:
                        await self._seats_in(conn, lobby)
                        return lobby
                # seated already, no free seat, no such seat: decided from the seats as read here
                await self._seats_in(conn, lobby)
                mine = [s["seat"] for s in lobby["seats"] if s["player_id"] == player_id]
                if mine:
                    if not loadout:
                        return lobby
                    await conn.execute(_SET_SEAT_LOADOUT, {"p_lobby": lobby_id, "p_seat": mine[0],
                                                           "p_loadout": list(loadout)})
                    lobby["seats"] = [{**s, "loadout": list(loadout)} if s["seat"] == mine[0] else s
                                      for s in lobby["seats"]]
                    return lobby
                if seat is not None and not 0 <= seat < lobby["seat_count"]:
                    raise LobbyRefused("bad_seat", "no such seat")
                free = [s["seat"] for s in lobby["seats"] if s["player_id"] is None and s["bot"] is None]
                if seat is not None:
                    free = [seat] if seat in free else []
                if not free:
                    raise LobbyRefused("no_free_seat", "no free seat" if seat is None else "that seat is taken")
                # a free seat the UPDATE above did not take (a seat freed since, by a writer that
                # bypassed the lobby's lock): taken as the join always did
                await conn.execute(_TAKE_SEAT, {"p_lobby": lobby_id, "p_seat": free[0], "p_player": player_id,
                                                "p_bot": None, "p_loadout": taken})
                await self._seats_in(conn, lobby)
                return lobby
        except IntegrityError:
            # The unique index refused a second seat: only possible if the lock above was bypassed
            # (another writer); the answer is the same as for an already seated player.
            now = await self.lobby(lobby_id)
            if now is not None and any(s["player_id"] == player_id for s in now["seats"]):
                return now
            raise

    async def leave_lobby(self, lobby_id: str, player_id: str) -> dict[str, Any]:
        """Give up the player's seat; the host leaving closes the lobby. Returns the lobby as it is then.
        Raises :class:`LobbyRefused` ``not_found``, ``lobby_not_open`` (a start won the race),
        ``not_seated``."""
        async with self._locked_open_lobby(lobby_id) as (conn, lobby):
            mine = [s["seat"] for s in lobby["seats"] if s["player_id"] == player_id]
            if not mine:
                raise LobbyRefused("not_seated", "you have no seat in this lobby")
            if lobby["host_id"] == player_id:
                await conn.execute(_CLOSE_LOBBY, {"p_lobby": lobby_id})
                lobby["status"] = "closed"
            else:
                # the next player brings their own loadout
                await conn.execute(_FREE_SEATS, {"p_lobby": lobby_id, "p_seats": mine})
                lobby["seats"] = [{**s, "player_id": None, "bot": None, "loadout": None} if s["seat"] in mine else s
                                  for s in lobby["seats"]]
                lobby["players"].pop(player_id, None)
            return lobby  # as changed above (the lock keeps every other change out)

    async def fill_lobby_bots(self, lobby_id: str, kind: str, count: int | None,
                              make_bot: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
        """Fill up to ``count`` (default: all) empty seats with bots of ``kind``; ``make_bot(seat)``
        gives each bot's player row (``id, name, role, token_hash, created_at``), inserted in the same
        transaction. Returns the lobby as it is then. Raises :class:`LobbyRefused` ``not_found``,
        ``lobby_not_open``."""
        async with self._locked_open_lobby(lobby_id) as (conn, lobby):
            free = [s["seat"] for s in lobby["seats"] if s["player_id"] is None and s["bot"] is None]
            bots = {seat: make_bot(seat) for seat in free[: count or len(free)]}
            if bots:  # one statement for the bots' rows, one for their seats
                await conn.execute(_INSERT_PLAYER, list(bots.values()))
                await conn.execute(_SEAT_BOT, [{"p_lobby": lobby_id, "p_seat": seat, "p_player": bot["id"],
                                                "p_bot": kind} for seat, bot in bots.items()])
            lobby["seats"] = [{**s, "player_id": bots[s["seat"]]["id"], "bot": kind} if s["seat"] in bots else s
                              for s in lobby["seats"]]
            for bot in bots.values():
                lobby["players"][bot["id"]] = {"id": bot["id"], "name": bot["name"], "role": bot["role"],
                                               "username": None}
            return lobby  # as changed above (the lock keeps every other change out)

    async def start_lobby_match(self, lobby_id: str,
                                build: Callable[[list[dict[str, Any]]], dict[str, Any]],
                                check: Callable[[list[dict[str, Any]]], None] | None = None,
                                also: "MatchInsertHook | None" = None,
                                match_id: str | None = None) -> dict[str, Any]:
        """Start a lobby's match in one transaction under the lobby's lock: read the seats, call
        ``check(lobby_seats)`` (the seat rows as locked; it raises :class:`LobbyRefused` to refuse,
        e.g. when they no longer are what the caller computed the match's options from), call
        ``build(seats)`` (by seat, ``{"player_id", "name", "bot"}``) for the match row, insert it and
        mark the lobby ``started`` with its ``match_id``, then await ``also(conn, match)`` in the same
        transaction (the specials' lifetimes are reserved there, so they and the match commit or roll
        back together). A leave or join that won the race is seen here; one that lost it finds the
        lobby started. Returns the inserted match.
        ``match_id`` (the id ``build`` gives the match): the lock itself marks the lobby started with it
        (one statement fewer; rolled back with everything else on a refusal).
        Raises :class:`LobbyRefused` ``not_found``, ``lobby_not_open``, ``seats_empty``, ``check``'s,
        or what ``also`` raises (nothing is written then)."""
        async with self._locked_open_lobby(lobby_id, start_match=match_id) as (conn, lobby):
            if any(s["player_id"] is None for s in lobby["seats"]):
                raise LobbyRefused("seats_empty", "every seat needs a player or a bot")
            if check is not None:
                check(lobby["seats"])
            players = lobby["players"]  # the seats' players, read with the seats under the lock
            seats = [{"player_id": s["player_id"], "name": players[s["player_id"]]["name"]
                      if s["player_id"] in players else "", "bot": s["bot"]} for s in lobby["seats"]]
            match = build(seats)
            await conn.execute(_INSERT_MATCH, match)
            if match_id is None:
                await conn.execute(_MARK_STARTED, {"p_lobby": lobby_id, "p_match": match["id"]})
            elif match["id"] != match_id:
                raise ValueError(f"build gave match {match['id']!r}, not {match_id!r}")
            if also is not None:
                await also(conn, match)
            return match

    # -- matches ---------------------------------------------------------------------------
    async def create_match(self, match: dict[str, Any], *, lobby_id: str | None = None,
                           also: "MatchInsertHook | None" = None) -> None:
        """Insert a match (and, in the same transaction, mark its lobby started and await
        ``also(conn, match)``). The creator owns it: ``match`` carries ``owner_epoch`` (1) and
        ``owner_node``. Raises LookupError if the lobby is no longer open, or what ``also`` raises
        (nothing is inserted then)."""
        async with self.engine.begin() as conn:
            await conn.execute(insert(matches_t), match)
            if lobby_id:
                res = await conn.execute(
                    update(lobbies_t).where(lobbies_t.c.id == lobby_id, lobbies_t.c.status == "open")
                    .values(status="started", match_id=match["id"]))
                if res.rowcount != 1:
                    raise LookupError("lobby is no longer open")
            if also is not None:
                await also(conn, match)

    async def match(self, match_id: str) -> dict[str, Any] | None:
        async with self.engine.connect() as conn:
            r = (await conn.execute(select(matches_t).where(matches_t.c.id == match_id))).first()
        return _row(r)

    async def matches(self, status: str | None = None, game: str | None = None, limit: int = 100,
                      offset: int = 0) -> list[dict[str, Any]]:
        q = select(matches_t).order_by(matches_t.c.created_at.desc()).limit(limit).offset(offset)
        if status:
            q = q.where(matches_t.c.status == status)
        if game:
            q = q.where(matches_t.c.game == game)
        async with self.engine.connect() as conn:
            return [dict(r._mapping) for r in (await conn.execute(q)).all()]

    async def matches_page(self, status: str | None = None, game: str | None = None, limit: int = 50,
                           cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """A page of matches, newest first (``created_at``, then id), and the next page's cursor
        (None on the last). Raises :class:`app.db.paging.BadCursor`."""
        q = select(matches_t).order_by(matches_t.c.created_at.desc(), matches_t.c.id.desc()).limit(limit + 1)
        if cursor is not None:
            at, last_id = decode_cursor("matches", cursor, (float, str))
            q = q.where(or_(matches_t.c.created_at < at, and_(matches_t.c.created_at == at, matches_t.c.id < last_id)))
        if status:
            q = q.where(matches_t.c.status == status)
        if game:
            q = q.where(matches_t.c.game == game)
        async with self.engine.connect() as conn:
            rows = [dict(r._mapping) for r in (await conn.execute(q)).all()]
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, encode_cursor("matches", [rows[-1]["created_at"], rows[-1]["id"]]) if more else None

    async def running_match_ids(self) -> list[str]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(matches_t.c.id).where(matches_t.c.status == "running"))).all()
        return [r.id for r in rows]

    async def count_matches(self) -> dict[str, int]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(matches_t.c.status, func.count()).group_by(matches_t.c.status))).all()
        return {r[0]: r[1] for r in rows}

    # -- the action log ----------------------------------------------------------------------
    async def actions(self, match_id: str, after: int = 0) -> list[dict[str, Any]]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(
                select(actions_t).where(actions_t.c.match_id == match_id, actions_t.c.seq > after)
                .order_by(actions_t.c.seq))).all()
        return [dict(r._mapping) for r in rows]

    async def commit_batch(self, groups: Sequence["MatchWrite"]) -> set[str]:
        """Group commit: one transaction for the log records of many matches (one :class:`MatchWrite`
        per match, records in ``seq`` order, consecutive).

        Per match, the statement that writes is conditional (the fencing token)::

            UPDATE matches SET version = :last [, status, outcome, ended_at]
            WHERE id = :id AND owner_epoch = :epoch AND version = :first - 1

        A match whose update matches no row is *refused*: its owner epoch changed (another node took
        it over) or its durable version is not the one its records follow (an earlier record of it
        failed). Its records are not inserted; every other match's records are inserted and committed
        in the same transaction. The row lock taken by the update is held to the commit, so a
        concurrent :meth:`take_match` waits for it (and a write after a take sees the new epoch).
        Rows are locked in match id order (no deadlock between two writers). On Postgres the whole
        batch is one statement (``_PG_COMMIT``: lock, ``UPDATE … FROM unnest(…)``, insert).

        Returns the ids of the refused matches. Raises whatever the driver raises (nothing is
        committed then): ``sqlalchemy.exc.IntegrityError`` if an insert still collides."""
        refused: set[str] = set()
        ordered: list[MatchWrite] = []
        for g in sorted(groups, key=lambda g: g.match_id):
            if not g.rows:
                continue
            if g.rows[-1]["seq"] - g.rows[0]["seq"] + 1 != len(g.rows):
                refused.add(g.match_id)
            else:
                ordered.append(g)
        if self.log_committer is not None:
            return refused | await self.log_committer.commit(ordered)
        if self.engine.dialect.name == "postgresql":
            return refused | await self._commit_pg(ordered)
        async with self.engine.begin() as conn:  # SQLite without the committer (in memory)
            accepted = await self._fence_sqlite(conn, ordered)
            rows: list[dict[str, Any]] = []
            for g in ordered:
                if g.match_id not in accepted:
                    refused.add(g.match_id)
                    continue
                rows.extend(g.rows)
                if g.update:  # the row is locked by this transaction and its epoch checked above
                    values = {k: v for k, v in g.update.items() if k not in ("id", "version")}
                    await conn.execute(update(matches_t).where(matches_t.c.id == g.match_id).values(**values))
            if rows:
                await conn.execute(insert(actions_t), rows)
        return refused

    async def _commit_pg(self, ordered: list["MatchWrite"]) -> set[str]:
        """Postgres: the batch as the one statement ``_PG_COMMIT`` in autocommit (the same fence,
        lock order and all-or-nothing as the transaction of :meth:`commit_batch`, in one round trip
        instead of six: under load every await of the commit waited behind the event loop's other
        work). Returns the ids refused by the fence."""
        if not ordered:
            return set()
        ended = [g.update is not None for g in ordered]
        r_ids: list[str] = []
        r_seqs: list[int] = []
        r_seats: list[int | None] = []
        r_kinds: list[str] = []
        r_actions: list[str] = []
        r_client_seqs: list[int | None] = []
        r_deadlines: list[str] = []
        r_created: list[float] = []
        for g in ordered:
            for r in g.rows:
                r_ids.append(r["match_id"])
                r_seqs.append(r["seq"])
                r_seats.append(r["seat"])
                r_kinds.append(r["kind"])
                r_actions.append(json_text(r["action"]))
                r_client_seqs.append(r["client_seq"])
                r_deadlines.append(json_text(r["deadlines"]))
                r_created.append(r["created_at"])
        params = {
            "ids": [g.match_id for g in ordered], "epochs": [g.epoch for g in ordered],
            "firsts": [g.rows[0]["seq"] for g in ordered], "lasts": [g.rows[-1]["seq"] for g in ordered],
            "ended": ended,
            "statuses": [g.update["status"] if g.update else None for g in ordered],
            "outcomes": [json_text(g.update.get("outcome")) if g.update else None for g in ordered],
            "ended_ats": [g.update.get("ended_at") if g.update else None for g in ordered],
            "r_ids": r_ids, "r_seqs": r_seqs, "r_seats": r_seats, "r_kinds": r_kinds, "r_actions": r_actions,
            "r_client_seqs": r_client_seqs, "r_deadlines": r_deadlines, "r_created": r_created,
        }
        if self.log_engine is None and self._log_url is not None:
            self.log_engine = create_async_engine(self._log_url, pool_size=2, max_overflow=2, pool_pre_ping=False,
                                                  isolation_level="AUTOCOMMIT")
        if self.log_engine is not None:
            async with self.log_engine.connect() as conn:
                res = await conn.execute(_PG_COMMIT, params)
                accepted = {row[0] for row in res}
        else:
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                res = await conn.execute(_PG_COMMIT, params)
                accepted = {row[0] for row in res}
        return {g.match_id for g in ordered} - accepted

    @staticmethod
    async def _fence_sqlite(conn, ordered: list["MatchWrite"]) -> set[str]:
        """SQLite: the fence of every match in one ``UPDATE … FROM (VALUES …) RETURNING`` per
        :data:`app.db.sqlite_log.FENCE_CHUNK` matches (one round trip to the driver's thread instead of one per
        match: bench/server.md "Where the time goes"). SQLite locks the whole database for the
        transaction, so the order of the rows does not matter here. Returns the ids that matched."""
        accepted: set[str] = set()
        for start in range(0, len(ordered), FENCE_CHUNK):
            chunk = ordered[start:start + FENCE_CHUNK]
            params: list[Any] = []
            for g in chunk:
                params += (g.match_id, g.epoch, g.rows[0]["seq"], g.rows[-1]["seq"])
            res = await conn.exec_driver_sql(fence_sql(len(chunk)), tuple(params))
            accepted.update(r[0] for r in res)
        return accepted

    async def take_match(self, match_id: str, node_id: str) -> int | None:
        """Take ownership of a running match in its own committed transaction (before its log is
        read): ``owner_epoch += 1``, ``owner_node = node_id``. Returns the new epoch (the runner's
        fencing token), None if the match does not exist or is not running. Waits for a concurrent
        :meth:`commit_batch` that writes the match (row lock)."""
        async with self.engine.begin() as conn:
            res = await conn.execute(
                update(matches_t).where(matches_t.c.id == match_id, matches_t.c.status == "running")
                .values(owner_epoch=matches_t.c.owner_epoch + 1, owner_node=node_id)
                .returning(matches_t.c.owner_epoch))
            row = res.first()
        return int(row[0]) if row is not None else None

    async def delete_lobby(self, lobby_id: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(delete(seats_t).where(seats_t.c.lobby_id == lobby_id))
            await conn.execute(delete(lobbies_t).where(lobbies_t.c.id == lobby_id))

