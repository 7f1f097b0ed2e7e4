"""The rows that cross the runtime's layers, typed (``docs/runtime.md``).

They are ``TypedDict``s: at run time plain dicts (what the repository reads and writes and what
the hooks ``on_match_started`` / ``on_match_ended`` receive), checked by mypy where they are built
and read. Columns: ``app/db/models.py`` (``Match``, ``MatchAction``).
"""
from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast


class SeatRow(TypedDict):
    """One seat of a match: its player and, for a bot seat, the bot kind (``"random"``, ``"smart"``)."""

    player_id: str | None
    name: NotRequired[str]
    bot: NotRequired[str | None]
    loadout: NotRequired[Any]


class MatchRow(TypedDict):
    """A match (table ``matches``). ``seed`` is hex and stays secret until the end; ``seed_hash`` is
    ``sha256(seed)``; ``deadlines``: phase id (as a string) -> epoch seconds; times in epoch seconds;
    ``rules_version``: the game's rules version the match started under (``GameInfo.rules_version``)."""

    id: str
    game: str
    options: dict[str, Any]
    seat_count: int
    seats: list[SeatRow]
    seed: str
    seed_hash: str
    status: str  # running | finished | aborted
    lobby_id: str | None
    deadlines: dict[str, float]
    outcome: dict[str, Any] | None
    version: int
    created_at: float
    ended_at: float | None
    owner_epoch: NotRequired[int]
    owner_node: NotRequired[str | None]
    rules_version: NotRequired[int]


class LogRow(TypedDict):
    """One record of a match's action log (table ``match_actions``), in ``seq`` order from 1.
    ``kind``: ``act`` (a seat's action, with its ``client_seq``), ``deadline`` (a default action) or
    ``abort`` (``seat`` None). ``deadlines``: the open phases after it (phase id string -> epoch s)."""

    match_id: str
    seq: int
    seat: int | None
    kind: str
    action: dict[str, Any]
    client_seq: int | None
    deadlines: dict[str, float]
    created_at: float


class MatchUpdate(TypedDict):
    """The columns of ``matches`` written with a match's last record (it ended)."""

    id: str
    status: str
    outcome: dict[str, Any] | None
    ended_at: float
    version: int


def match_row(row: dict[str, Any] | None) -> MatchRow | None:
    """A ``matches`` row as the repository returns it (a dict), typed: the runtime's one boundary cast."""
    return cast("MatchRow | None", row)


def log_rows(rows: list[dict[str, Any]]) -> list[LogRow]:
    """``match_actions`` rows as the repository returns them, typed."""
    return cast("list[LogRow]", rows)
