"""Ratings: one openskill rating per player per game, changed exactly once per
finished match, with every change recorded beside the match that caused it; and the leaderboard.

The interface the matchmaker reads: :class:`RatingsRepository` ``rating(player_id, game)`` and
``ratings(player_ids, game)`` returning :class:`Rating`; a player without a row has the openskill
default (mu 25, sigma 25/3, ordinal mu - 3 sigma = 0).

Exactly once: :meth:`RatingsRepository.rate_match` (:func:`rate_match_sync`) inserts the match's
``match_ratings`` marker (``ON CONFLICT DO NOTHING``) and, only if that insert took, writes the new
ratings and one ``rating_changes`` row per player (primary key ``(match_id, player_id)``) in the
same transaction. A replayed end, a retry, a sweep or a second node that sees the same end finds the marker and
changes nothing. Aborted matches are marked and rate nobody.

Which matches are rated (docs/decisions.md, "Rated matches"): a match of a ``rated`` lobby (quick
play, a rematch of a rated match, a lobby made with ``rated: true``) whose every seat is a distinct
account. Guests and bots never move an account's rating: a match with either is marked and rates
nobody. The repeated-opponent rule (:class:`RatingRules`) applies only part of openskill's change
for players who met the same opponents in rated matches shortly before, and a rating is
provisional (off the leaderboard) until it has ``provisional_matches`` weighted matches.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.paging import decode_cursor, encode_cursor
from app.db.sqlite_log import SqliteLogCommitter
from app.db.tables import (
    ENDED,
    accounts_t,
    changes_t,
    in_list,
    lobbies_t,
    marks_t,
    matches_t,
    players_t,
    ratings_t,
)

DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3.0
#: the displayed rating: ``max(0, round(DISPLAY_BASE + DISPLAY_SCALE × ordinal))``
DISPLAY_BASE = 1000
DISPLAY_SCALE = 40


def ordinal(mu: float, sigma: float) -> float:
    """openskill's conservative estimate: mu - 3 sigma (0 for a new player)."""
    return mu - 3.0 * sigma


def display_rating(ordinal_: float) -> int:
    """The rating players see: ``max(0, round(1000 + 40 × ordinal))`` (a new player 1000, never
    negative; docs/decisions.md, "Ratings people can read"). The exact mu, sigma and ordinal stay in
    the API."""
    return max(0, round(DISPLAY_BASE + DISPLAY_SCALE * ordinal_))


@dataclass(frozen=True)
class RatingRules:
    """What makes a rating change count (docs/decisions.md, "Rated matches").

    ``repeat_limit`` N: the k-th rated match (k = 1, 2, …) of two players within
    ``repeat_window_seconds`` counts with weight ``max(0, 1 − (k − 1)/N)`` for each of them (1, 2/3,
    1/3, then 0 with N = 3); a player's weight in a match is the mean over its opponents; 0 turns the
    rule off. ``provisional_matches``: weighted matches a rating needs to be on the leaderboard."""

    repeat_limit: int = 3
    repeat_window_seconds: float = 86_400.0
    provisional_matches: float = 10.0

    def pair_weight(self, earlier: int) -> float:
        """The weight of a match between two players who had ``earlier`` rated matches together
        within the window."""
        if self.repeat_limit <= 0:
            return 1.0
        return max(0.0, 1.0 - earlier / self.repeat_limit)


DEFAULT_RULES = RatingRules()


@dataclass(frozen=True)
class Rating:
    """A player's rating in one game. ``mu``/``sigma``: openskill Plackett-Luce skill and its
    uncertainty; ``ordinal``: mu - 3 sigma (what the leaderboard orders by); ``matches``: rated
    matches played; ``wins``: of them, those the player ranked first in (alone or tied)."""

    mu: float
    sigma: float
    ordinal: float
    matches: int
    wins: int
    #: rated matches counted by their weight (the repeated-opponent rule)
    weighted_matches: float = 0.0

    @property
    def display(self) -> int:
        """:func:`display_rating` of the ordinal."""
        return display_rating(self.ordinal)


#: built once: an ``in_()`` built per query leaves cyclic garbage (``app.db.tables.in_list``)
_RATINGS_OF = select(ratings_t).where(ratings_t.c.game == bindparam("game"), in_list(ratings_t.c.player_id, "ids"))
_RATINGS_ORDERED = _RATINGS_OF.order_by(ratings_t.c.player_id)
_RATINGS_LOCKED = _RATINGS_ORDERED.with_for_update()

DEFAULT_RATING = Rating(DEFAULT_MU, DEFAULT_SIGMA, ordinal(DEFAULT_MU, DEFAULT_SIGMA), 0, 0)


def match_ranks(match: Mapping[str, Any]) -> list[int] | None:
    """The 1-based rank of every seat from ``match["outcome"]["ranks"]`` (``{"<seat>": rank}``), or
    None when the outcome does not rank every seat."""
    ranks = ((match.get("outcome") or {}).get("ranks")) or {}
    out = []
    for seat in range(int(match.get("seat_count") or len(match.get("seats") or []))):
        rank = ranks.get(str(seat), ranks.get(seat))
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
            return None
        out.append(rank)
    return out if len(out) >= 2 else None


#: the statements of :func:`rate_match_sync`, built once per dialect (``ON CONFLICT`` is dialect
#: specific) and executed with parameters: statements built per match left bound parameters in
#: reference cycles (``app.db.tables.in_list``)
_MARK_RATED = update(marks_t).where(marks_t.c.match_id == bindparam("m_id"))
#: the SET values ``mu``, ``sigma``, ``ordinal``, ``updated_at`` come with the parameters
_UPDATE_RATING = update(ratings_t).where(
    ratings_t.c.player_id == bindparam("pid"), ratings_t.c.game == bindparam("g")).values(
    matches=ratings_t.c.matches + 1, wins=ratings_t.c.wins + bindparam("won"),
    weighted_matches=ratings_t.c.weighted_matches + bindparam("w"))
_INSERT_CHANGES = changes_t.insert()
_LOBBY_RATED = select(lobbies_t.c.rated).where(lobbies_t.c.id == bindparam("lobby_id"))
_ACCOUNTS_OF = select(func.count()).select_from(accounts_t).where(in_list(accounts_t.c.player_id, "ids"))
_mine, _theirs = changes_t.alias("mine"), changes_t.alias("theirs")
#: rated matches each pair of ``ids`` played together since ``since`` (the repeated-opponent rule)
_PAIRS = (select(_mine.c.player_id, _theirs.c.player_id.label("other"), func.count().label("n"))
          .select_from(_mine.join(_theirs, and_(_mine.c.match_id == _theirs.c.match_id,
                                                _mine.c.player_id < _theirs.c.player_id)))
          .where(in_list(_mine.c.player_id, "ids_a"), in_list(_theirs.c.player_id, "ids_b"),
                 _mine.c.created_at >= bindparam("since"), _mine.c.match_id != bindparam("this_match"))
          .group_by(_mine.c.player_id, _theirs.c.player_id))


@dataclass(frozen=True)
class _Inserts:
    marker: Any
    ratings: Any


def _inserts(insert: Any) -> _Inserts:
    return _Inserts(marker=insert(marks_t).on_conflict_do_nothing(index_elements=["match_id"]),
                    ratings=insert(ratings_t).on_conflict_do_nothing(index_elements=["player_id", "game"]))


_INSERTS = {"postgresql": _inserts(postgresql.insert), "sqlite": _inserts(sqlite.insert)}


def _model():
    from openskill.models import PlackettLuce

    return PlackettLuce(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)


def is_rated(conn: Connection, match: Mapping[str, Any]) -> bool:
    """Whether ``match`` may change ratings: its lobby is ``rated`` and every seat is a distinct
    human with an account (so guests and bots never move an account's rating)."""
    seats = list(match.get("seats") or [])
    if not match.get("lobby_id") or len(seats) < 2:
        return False
    if not conn.execute(_LOBBY_RATED, {"lobby_id": match["lobby_id"]}).scalar():
        return False
    ids = [s.get("player_id") for s in seats]
    if any(s.get("bot") or not s.get("player_id") for s in seats) or len(set(ids)) != len(ids):
        return False
    return int(conn.execute(_ACCOUNTS_OF, {"ids": ids}).scalar_one()) == len(ids)


def repeat_weights(conn: Connection, match_id: str, ids: list[str], now: float,
                   rules: RatingRules) -> dict[str, float]:
    """``{player: weight}`` of the repeated-opponent rule: per player, the mean over its opponents
    of ``rules.pair_weight(rated matches the two played together in the window before this one)``.
    Run after the players' rating rows are locked, so two matches of a pair ending at once count
    each other."""
    if rules.repeat_limit <= 0:
        return {pid: 1.0 for pid in ids}
    earlier: dict[tuple[str, str], int] = {}
    for row in conn.execute(_PAIRS, {"ids_a": ids, "ids_b": ids, "since": now - rules.repeat_window_seconds,
                                     "this_match": match_id}):
        earlier[(row.player_id, row.other)] = int(row.n)
    out = {}
    for pid in ids:
        others = [o for o in ids if o != pid]
        out[pid] = sum(rules.pair_weight(earlier.get((min(pid, o), max(pid, o)), 0)) for o in others) / len(others)
    return out


def rate_match_sync(conn: Connection, match: Mapping[str, Any], now: float,
                    rules: RatingRules = DEFAULT_RULES) -> int | None:
    """The transaction of :meth:`RatingsRepository.rate_match` (same result) on a sync
    connection inside a transaction the caller begins and ends: the ``match_ratings`` marker
    (``ON CONFLICT DO NOTHING``: None if it was there), and only if it took and the match is rated
    (:func:`is_rated`), the default rows of new players, their current ratings (Postgres: ``FOR
    UPDATE``, so two matches of one player ending together chain), the repeated-opponent weights
    (:func:`repeat_weights`), the new ratings (openskill's change times the weight), one
    ``rating_changes`` row per player and the marker's count."""
    dialect = conn.dialect.name
    inserts = _INSERTS[dialect]
    res = conn.execute(inserts.marker, {"match_id": match["id"], "rated": 0, "rated_at": now})
    if res.rowcount != 1:
        return None
    ranks = match_ranks(match) if match["status"] == "finished" else None
    seats = list(match.get("seats") or [])
    if ranks is None or len(seats) != len(ranks) or not is_rated(conn, match):
        return 0
    humans: dict[str, int] = {}  # player -> its first seat (one rating change per player)
    for seat, info in enumerate(seats):
        pid = info.get("player_id")
        if pid and not info.get("bot") and pid not in humans:
            humans[pid] = seat
    if not humans:
        return 0
    game = match["game"]
    ids = sorted(humans)
    conn.execute(inserts.ratings, [
        {"player_id": pid, "game": game, "mu": DEFAULT_MU, "sigma": DEFAULT_SIGMA,
         "ordinal": ordinal(DEFAULT_MU, DEFAULT_SIGMA), "matches": 0, "wins": 0, "weighted_matches": 0.0,
         "updated_at": now}
        for pid in ids])
    # Postgres: two matches of one player ending together: one waits
    q = _RATINGS_LOCKED if dialect == "postgresql" else _RATINGS_ORDERED
    current = {r.player_id: r for r in conn.execute(q, {"game": game, "ids": ids}).all()}
    model = _model()
    by_seat = {seat: pid for pid, seat in humans.items()}
    teams = []
    for seat in range(len(seats)):
        pid = by_seat.get(seat)
        if pid is not None:
            teams.append([model.rating(mu=current[pid].mu, sigma=current[pid].sigma)])
        else:  # a bot, an empty seat or a second seat of the same player: the default
            teams.append([model.rating()])
    new = model.rate(teams, ranks=[float(r) for r in ranks])
    weights = repeat_weights(conn, match["id"], ids, now, rules)
    best = min(ranks)
    rating_rows, change_rows = [], []
    for pid, seat in humans.items():
        before, computed, w = current[pid], new[seat][0], weights[pid]
        mu = before.mu + w * (computed.mu - before.mu)
        sigma = before.sigma + w * (computed.sigma - before.sigma)
        rating_rows.append({"pid": pid, "g": game, "won": 1 if ranks[seat] == best else 0, "w": w, "mu": mu,
                            "sigma": sigma, "ordinal": ordinal(mu, sigma), "updated_at": now})
        change_rows.append({
            "match_id": match["id"], "player_id": pid, "game": game, "seat": seat, "rank": ranks[seat],
            "mu_before": before.mu, "sigma_before": before.sigma, "mu_after": mu,
            "sigma_after": sigma, "ordinal_after": ordinal(mu, sigma), "weight": w,
            "created_at": now})
    conn.execute(_UPDATE_RATING, rating_rows)
    conn.execute(_INSERT_CHANGES, change_rows)
    conn.execute(_MARK_RATED, {"m_id": match["id"], "rated": len(humans)})
    return len(humans)


class RatingsRepository:
    """Ratings, rating changes and the leaderboard over one :class:`AsyncEngine`.

    ``writer``: SQLite's log committer (``Repository.log_committer``), through which
    :meth:`rate_match` writes; None: every transaction on the engine (Postgres; readers)."""

    def __init__(self, engine: AsyncEngine, *, writer: SqliteLogCommitter | None = None,
                 rules: RatingRules = DEFAULT_RULES) -> None:
        self.engine = engine
        self.writer = writer
        self.rules = rules

    # -- the matchmaker's interface -------------------------------------------------------------
    async def rating(self, player_id: str, game: str) -> Rating:
        """The player's rating in ``game`` (the default if it has never been rated there)."""
        return (await self.ratings([player_id], game))[player_id]

    async def ratings(self, player_ids: Iterable[str], game: str) -> dict[str, Rating]:
        """``{player_id: Rating}`` for every id asked (defaults for the unrated)."""
        ids = list(dict.fromkeys(player_ids))
        out = {pid: DEFAULT_RATING for pid in ids}
        if not ids:
            return out
        async with self.engine.connect() as conn:
            rows = (await conn.execute(_RATINGS_OF, {"game": game, "ids": ids})).all()
        for r in rows:
            out[r.player_id] = Rating(r.mu, r.sigma, r.ordinal, r.matches, r.wins, r.weighted_matches)
        return out

    # -- rating a match, exactly once ---------------------------------------------------------------
    async def rate_match(self, match: Mapping[str, Any]) -> int | None:
        """Rate one ended match (``match``: a ``matches`` row as a dict), exactly once.

        Returns the number of players whose rating changed (0 for an aborted match, a match without
        a full ranking or without humans), or None if the match was rated already or has not ended.
        Ranks come from ``outcome.ranks`` (1 = best, equal ranks a draw); Plackett-Luce, 2-6 seats.

        The transaction is :func:`rate_match_sync`. On SQLite with the log committer (``writer``)
        it runs whole on the committer's thread and connection, between two group commits, so the
        write lock is never held across event-loop turns (a rating held it 10-30 ms on a
        busy loop while the group commit waited for it); otherwise (Postgres, SQLite in memory) on
        the engine, in ``run_sync``.
        """
        if match.get("status") not in ("finished", "aborted"):
            return None
        now = time.time()
        if self.writer is not None:
            return await self.writer.run(partial(rate_match_sync, match=match, now=now, rules=self.rules))
        async with self.engine.begin() as conn:
            return await conn.run_sync(rate_match_sync, match, now, self.rules)

    async def unrated_matches(self, limit: int = 200) -> list[dict[str, Any]]:
        """Ended matches (finished or aborted) that have no ``match_ratings`` marker yet, oldest first."""
        q = (select(matches_t).outerjoin(marks_t, marks_t.c.match_id == matches_t.c.id)
             .where(ENDED, marks_t.c.match_id.is_(None))
             .order_by(matches_t.c.ended_at, matches_t.c.id).limit(limit))
        async with self.engine.connect() as conn:
            return [dict(r._mapping) for r in (await conn.execute(q)).all()]

    async def changes(self, *, match_id: str | None = None, player_id: str | None = None,
                      game: str | None = None) -> list[dict[str, Any]]:
        """Recorded rating changes, oldest first, filtered by match, player and/or game."""
        q = select(changes_t).order_by(changes_t.c.created_at, changes_t.c.match_id, changes_t.c.player_id)
        if match_id is not None:
            q = q.where(changes_t.c.match_id == match_id)
        if player_id is not None:
            q = q.where(changes_t.c.player_id == player_id)
        if game is not None:
            q = q.where(changes_t.c.game == game)
        async with self.engine.connect() as conn:
            return [dict(r._mapping) for r in (await conn.execute(q)).all()]

    # -- the leaderboard and profiles ----------------------------------------------------------
    def _board(self):
        return (select(ratings_t, players_t.c.name, players_t.c.role, accounts_t.c.username)
                .join(players_t, players_t.c.id == ratings_t.c.player_id)
                .outerjoin(accounts_t, accounts_t.c.player_id == ratings_t.c.player_id))

    def _listed(self):
        """Ratings that are on the leaderboard: not provisional (weighted matches reach
        ``rules.provisional_matches``; a float sum of weights, so with a tolerance)."""
        return and_(ratings_t.c.matches > 0,
                    ratings_t.c.weighted_matches >= self.rules.provisional_matches - 1e-6)

    def provisional(self, rating: Rating | Mapping[str, Any]) -> bool:
        """Whether a rating is provisional (too few weighted matches for the leaderboard)."""
        weighted = rating["weighted_matches"] if isinstance(rating, Mapping) else rating.weighted_matches
        return float(weighted) < self.rules.provisional_matches - 1e-6

    def _better(self, game: str, ordinal_: float, player_id: str):
        """Listed rows ranked above ``(ordinal_, player_id)``: a higher ordinal, or the same and a
        smaller id."""
        return and_(ratings_t.c.game == game, self._listed(),
                    or_(ratings_t.c.ordinal > ordinal_,
                        and_(ratings_t.c.ordinal == ordinal_, ratings_t.c.player_id < player_id)))

    async def leaderboard(self, game: str, *, limit: int, cursor: str | None = None,
                          me: str | None = None) -> dict[str, Any]:
        """One page of ``game``'s leaderboard: players whose rating is not provisional
        (:meth:`provisional`), by ordinal (highest first; ties by player id). ``cursor``: from the
        previous page (raises :class:`app.db.paging.BadCursor`). Returns ``{items, next_cursor,
        me}``; each item is a ratings row with ``name``, ``role``, ``username`` and its 1-based
        ``rank`` at read time; ``me`` is the asking player's row (or None if never rated here), with
        ``rank`` None while provisional."""
        kind = f"leaderboard:{game}"
        q = (self._board().where(ratings_t.c.game == game, self._listed())
             .order_by(ratings_t.c.ordinal.desc(), ratings_t.c.player_id).limit(limit + 1))
        if cursor is not None:
            c_ord, c_id = decode_cursor(kind, cursor, (float, str))
            q = q.where(or_(ratings_t.c.ordinal < c_ord,
                            and_(ratings_t.c.ordinal == c_ord, ratings_t.c.player_id > c_id)))
        async with self.engine.connect() as conn:
            rows = [dict(r._mapping) for r in (await conn.execute(q)).all()]
            more = len(rows) > limit
            rows = rows[:limit]
            if rows:
                first = rows[0]
                above = (await conn.execute(select(func.count()).select_from(ratings_t).where(
                    self._better(game, first["ordinal"], first["player_id"])))).scalar_one()
                for i, row in enumerate(rows):
                    row["rank"] = above + 1 + i
            mine = None
            if me is not None:
                r = (await conn.execute(self._board().where(ratings_t.c.game == game, ratings_t.c.player_id == me,
                                                            ratings_t.c.matches > 0))).first()
                if r is not None:
                    mine = dict(r._mapping)
                    mine["rank"] = None if self.provisional(mine) else 1 + (await conn.execute(
                        select(func.count()).select_from(ratings_t).where(
                            self._better(game, mine["ordinal"], me)))).scalar_one()
        last = rows[-1] if rows else None
        next_cursor = encode_cursor(kind, [last["ordinal"], last["player_id"]]) if more and last else None
        return {"items": rows, "next_cursor": next_cursor, "me": mine}

    async def player_ratings(self, player_id: str) -> dict[str, Rating]:
        """``{game: Rating}`` for every game the player was rated in."""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(ratings_t).where(ratings_t.c.player_id == player_id,
                                                               ratings_t.c.matches > 0))).all()
        return {r.game: Rating(r.mu, r.sigma, r.ordinal, r.matches, r.wins, r.weighted_matches) for r in rows}

    async def recent_matches(self, player_id: str, limit: int = 10) -> list[dict[str, Any]]:
        """The player's last ``limit`` rated matches, newest first: its rating change with the
        match's ``seat_count`` and ``ended_at``."""
        q = (select(changes_t, matches_t.c.seat_count, matches_t.c.ended_at)
             .join(matches_t, matches_t.c.id == changes_t.c.match_id)
             .where(changes_t.c.player_id == player_id)
             .order_by(changes_t.c.created_at.desc(), changes_t.c.match_id.desc()).limit(limit))
        async with self.engine.connect() as conn:
            return [dict(r._mapping) for r in (await conn.execute(q)).all()]
