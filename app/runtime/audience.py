"""Audiences of one match: who may see the same thing, and their own version numbers (issue 11 items 1–3).

An **audience** is a set of viewers that may see exactly the same thing: each seat, and all
spectators. (All admins form a third kind of audience whose version is the match's own action
count: admins may see and count everything, so they need no book here.)

Each audience has a **document** — ``{"status", "prompts", "view"}``, what its ``state`` message
shows — and a **version**: 0 at the deal, raised by exactly 1 by each log record that changes its
document or brings it an event it may see. A record that changes nothing an audience may see (a
Provinces ``set_dealing``, moving only hidden jokers) leaves that audience's version where it was,
so nothing the audience receives, then or later, counts the actions it could not see
(``../shared/rules/provinces.md`` 6.4). The numbers are a function of the log alone: the live runner
and a replay of the log (``app/runtime/replay.py``) advance the same book the same way, so a match
rebuilt on another node gives every audience the same versions.
"""
from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

from app.delta import diff
from app.games.base import ADMIN, SPECTATOR, Event, Game

__all__ = ["AudienceBook", "audience_events"]


class AudienceBook:
    """The versions and current documents of a match's audiences (seats ``0..n-1``, then spectators).

    ``versions[i]`` and ``docs[i]`` belong to audience ``i``: seat ``i`` for ``i < n``, spectators for
    ``i == n`` (:meth:`index`). Documents are never mutated once built (the runner diffs and sends
    them), so a document is replaced, not changed, when its audience's version rises."""

    __slots__ = ("docs", "game", "keys", "versions")

    def __init__(self, game: Game, seat_count: int, state: Any, status: str, prompts: list[dict[str, Any]],
                 versions: Sequence[int] | None = None) -> None:
        self.game = game
        #: the viewer of each audience: seats 0..n-1, then SPECTATOR
        self.keys: tuple[int, ...] = (*range(seat_count), SPECTATOR)
        self.versions: list[int] = list(versions) if versions is not None else [0] * len(self.keys)
        if len(self.versions) != len(self.keys):
            raise ValueError(f"{len(self.versions)} versions for {len(self.keys)} audiences")
        self.docs: list[dict[str, Any]] = [{"status": status, "prompts": prompts, "view": view}
                                           for view in game.views(state, self.keys)]

    def document(self, state: Any, viewer: int, status: str, prompts: list[dict[str, Any]]) -> dict[str, Any]:
        """``viewer``'s document: ``{"status": str, "prompts": [PromptInfo], "view": Game.view(...)}``."""
        return {"status": status, "prompts": prompts, "view": self.game.view(state, viewer)}

    def index(self, viewer: int) -> int:
        """The audience of ``viewer`` (a seat or SPECTATOR). Raises ValueError for ADMIN or an unknown seat."""
        if viewer == ADMIN or viewer >= len(self.keys) - 1 or viewer < SPECTATOR:
            raise ValueError(f"viewer {viewer} has no audience in the book")
        return viewer if viewer >= 0 else len(self.keys) - 1

    def advance(self, state: Any, status: str, prompts: list[dict[str, Any]],
                events: Sequence[Event], wanted: Container[int] | None = None
                ) -> dict[int, list[dict[str, Any]] | None]:
        """One log record was applied, giving ``state``/``status``/``prompts`` and ``events``: raise the
        version of every audience whose document changed or that may see one of ``events``, and keep
        its new document. Returns, for each audience that changed (index → in ascending order), the
        RFC 6902 patch from its previous document to the new one (``app.delta.diff``; ``[]`` when only
        events are new), or None for an audience not in ``wanted`` whose document changed.

        ``wanted``: the audiences whose patch someone will send now (the runner: the seats with a
        socket that takes deltas); None = every audience. For the others the test of change is
        ``old != new``, one comparison in C, and no patch is made (a socket that attaches later gets a
        full state, or the runner diffs the two documents it keeps). For a document
        ``{"status": str, "prompts": list, "view": dict}``, ``diff`` gives ``[]`` exactly when the two
        are ``==`` (it skips equal members with ``==``), so the versions do not depend on ``wanted``:
        the replay of a log (no patches) gives every audience the versions the live runner gave.

        The views come from one ``Game.views`` call, and a part shared by several audiences (the same
        old and new objects at the same path) is diffed once; patches may share operation dicts
        (read-only, like the documents)."""
        changed: dict[int, list[dict[str, Any]] | None] = {}
        docs = self.docs
        shared: dict[tuple[int, int, str], list[dict[str, Any]]] = {}  # parts common to audiences: diffed once
        # one batch for every audience: the engine shares the work (and unchanged parts, which the
        # diff then skips by identity) between the viewers and with the previous record's views
        for i, (viewer, view) in enumerate(zip(self.keys, self.game.views(state, self.keys), strict=True)):
            doc = {"status": status, "prompts": prompts, "view": view}
            patch: list[dict[str, Any]] | None
            if wanted is None or i in wanted:
                patch = diff(docs[i], doc, shared)
                moved = bool(patch)
            else:
                moved = docs[i] != doc
                patch = None if moved else []
            if moved or any(e.visible_to(viewer) for e in events):
                self.versions[i] += 1
                # an unchanged document keeps its old object, so the copy clients hold stays exact
                if moved:
                    docs[i] = doc
                changed[i] = patch
        return changed


def audience_events(version: int, events: Sequence[Event], viewer: int) -> list[dict[str, Any]]:
    """The events of one record that ``viewer`` may see (``Event.visible_to``), tagged ``v`` = its
    audience's ``version``: ``{"v", "type", **data}`` (``Event.to_wire`` with ``v`` first), built in
    one dict each, without a Python-level call per event and audience."""
    out: list[dict[str, Any]] = []
    for e in events:
        audience = e.audience
        if audience is None or viewer == ADMIN or viewer in audience:
            out.append({"v": version, "type": e.type, **e.data})
    return out
