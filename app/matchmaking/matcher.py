"""Which waiting tickets make a match: a pure function of the tickets, their ratings and the time.

Rule (docs/decisions.md, "Quick play"): tickets are taken oldest first. The oldest free ticket is
the *anchor*; a ticket is a candidate for it when the two ratings (openskill ordinals) differ by at
most ``max(window(anchor), window(candidate))``, where ``window(t) = min(max, base + widen × waited
seconds of t)``. The ``seats − 1`` candidates closest in rating (older first on ties) join the anchor.
When there are not enough and the anchor has waited ``bots_after_seconds`` (its own choice; None
never), the anchor and the closest candidates that also accept bots make the match and bots fill the
rest. Otherwise the anchor keeps waiting and the next oldest free ticket becomes the anchor.
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


def form_groups(tickets: Sequence[dict[str, Any]], seats: int, now: float, window: Window) -> list[Group]:
    """Groups from one pool's waiting tickets (each ``{id, rating, created_at, bots_after_seconds}``;
    ``created_at`` and ``now`` in epoch seconds). A ticket is in at most one group. Pure."""
    free = sorted(tickets, key=lambda t: (t["created_at"], t["id"]))
    groups: list[Group] = []
    while free:
        anchor = free.pop(0)
        waited = now - anchor["created_at"]
        reach = window.at(waited)
        candidates = [t for t in free
                      if abs(t["rating"] - anchor["rating"]) <= max(reach, window.at(now - t["created_at"]))]
        candidates.sort(key=lambda t: (abs(t["rating"] - anchor["rating"]), t["created_at"], t["id"]))
        if len(candidates) >= seats - 1:
            chosen = candidates[:seats - 1]
            bots = 0
        elif anchor.get("bots_after_seconds") is not None and waited >= anchor["bots_after_seconds"]:
            chosen = [t for t in candidates if t.get("bots_after_seconds") is not None][:seats - 1]
            bots = seats - 1 - len(chosen)
        else:
            continue
        groups.append(Group((anchor["id"], *(t["id"] for t in chosen)), bots))
        taken = {t["id"] for t in chosen}
        free = [t for t in free if t["id"] not in taken]
    return groups
