"""Which waiting tickets make a match: a pure function of the tickets, their ratings and the time.

Rule (docs/decisions.md, "Quick play"): tickets are taken oldest first. The oldest free ticket is
the *anchor*; a ticket is a candidate for it when the two ratings (openskill ordinals) differ by at
most ``max(window(anchor), window(candidate))``, where ``window(t) = min(max, base + widen × waited
seconds of t)``. A ticket takes ``size`` seats (1, or a party's members); candidates closest in
rating (older first on ties) fill the seats the anchor leaves, the closest set whose sizes add up
exactly (:func:`_fill`). When none fills the table and the anchor has waited ``bots_after_seconds``
(its own choice; None never), the anchor and the closest candidates that also accept bots and fit
make the match and bots fill the rest. Otherwise the anchor keeps waiting and the next oldest free
ticket becomes the anchor. An anchor whose player may not host another match with bots now
(``no_bots``: at ``MAX_BOT_MATCHES_PER_PLAYER``) gets no bots; it may still be matched with people.
A party's rating is set when it queues (docs/decisions.md, "Parties").
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Window:
    """Rating window, in openskill ordinal points: ``base`` at first, ``widen`` more per second
    waited, never above ``max``."""

    base: float = 3.0
    widen: float = 0.5
    max: float = 30.0

    def at(self, waited: float) -> float:
        """The window of a ticket that has waited ``waited`` seconds (negative counts as 0)."""
        return min(self.max, self.base + self.widen * max(0.0, waited))


@dataclass(frozen=True)
class Group:
    """A match to form: ticket ids (the anchor first) and how many bot seats fill the rest."""

    ticket_ids: tuple[str, ...]
    bots: int


def size_of(ticket: dict[str, Any]) -> int:
    """Seats a ticket takes: its party's members (``members``), or 1."""
    return max(1, len(ticket.get("members") or ()))


#: candidates :func:`_fill` looks at, closest first (bounds its search)
_FILL_CANDIDATES = 24


def _fill(candidates: Sequence[dict[str, Any]], seats: int) -> list[dict[str, Any]] | None:
    """The first set of ``candidates`` (in their order, closest first) whose sizes add up to exactly
    ``seats``: lexicographically first by candidate order, so single tickets and small parties that
    are closest win; None when no set fills them. Depth-first, over the closest
    ``_FILL_CANDIDATES`` only."""
    pool = list(candidates[:_FILL_CANDIDATES])
    chosen: list[dict[str, Any]] = []

    def search(start: int, left: int) -> bool:
        if left == 0:
            return True
        for i in range(start, len(pool)):
            size = size_of(pool[i])
            if size <= left:
                chosen.append(pool[i])
                if search(i + 1, left - size):
                    return True
                chosen.pop()
        return False

    return chosen if search(0, seats) else None


def _fit(candidates: Sequence[dict[str, Any]], seats: int) -> list[dict[str, Any]]:
    """Closest first, every candidate that still fits into ``seats`` (greedy): the humans of a table
    that bots complete."""
    out, left = [], seats
    for t in candidates:
        if size_of(t) <= left:
            out.append(t)
            left -= size_of(t)
    return out


def form_groups(tickets: Sequence[dict[str, Any]], seats: int, now: float, window: Window,
                no_bots: frozenset[str] = frozenset()) -> list[Group]:
    """Groups from one pool's waiting tickets (each ``{id, player_id, rating, created_at,
    bots_after_seconds}`` and, for a party, ``members``; ``created_at`` and ``now`` in epoch seconds).
    A ticket is in at most one group; a group's tickets take exactly ``seats`` seats with its bots; a
    group with bots never has an anchor whose player is in ``no_bots``. Pure."""
    free = sorted(tickets, key=lambda t: (t["created_at"], t["id"]))
    groups: list[Group] = []
    while free:
        anchor = free.pop(0)
        waited = now - anchor["created_at"]
        reach = window.at(waited)
        candidates = [t for t in free
                      if abs(t["rating"] - anchor["rating"]) <= max(reach, window.at(now - t["created_at"]))]
        candidates.sort(key=lambda t: (abs(t["rating"] - anchor["rating"]), t["created_at"], t["id"]))
        left = seats - size_of(anchor)
        if left < 0:
            continue  # a party larger than the table (refused when it queues): never matched
        filled = _fill(candidates, left)
        if filled is not None:
            chosen, bots = filled, 0
        elif (anchor.get("bots_after_seconds") is not None and waited >= anchor["bots_after_seconds"]
              and anchor.get("player_id") not in no_bots):
            chosen = _fit([t for t in candidates if t.get("bots_after_seconds") is not None], left)
            bots = left - sum(size_of(t) for t in chosen)
        else:
            continue
        groups.append(Group((anchor["id"], *(t["id"] for t in chosen)), bots))
        taken = {t["id"] for t in chosen}
        free = [t for t in free if t["id"] not in taken]
    return groups
