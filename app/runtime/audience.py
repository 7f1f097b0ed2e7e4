"""Audiences of one match: who may see the same thing, and their own version numbers.

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

from app.games.base import ADMIN, SPECTATOR, Event, Game
from app.parts import Document, Part, Shape, ViewParts, diff, document, revise, shape_of

__all__ = ["AudienceBook", "audience_events"]


class AudienceBook:
    """The versions and current documents of a match's audiences (seats ``0..n-1``, then spectators).

    ``versions[i]`` and ``docs[i]`` belong to audience ``i``: seat ``i`` for ``i < n``, spectators for
    ``i == n`` (:meth:`index`). A document is an ``app.parts.Document`` (a flat dict of encoded
    parts, which the cyclic collector never tracks), never changed once built, so it is replaced,
    not changed, when its audience's version rises.

    Each document goes with its **shape** (``app.parts.Shape``: member keys and list lengths, no
    parts), which :meth:`step` takes and gives beside the documents: a step given the shapes makes
    each new document from the parts that changed alone (``app.parts.revise``). That is a shortcut,
    never a difference: without them (or when the members changed) it builds and compares the whole
    document, with the same result. A shape is a tuple of atoms, which the collector untracks."""

    __slots__ = ("docs", "game", "keys", "shapes", "versions")

    def __init__(self, game: Game, seat_count: int, state: Any, status: bytes, prompts: Part,
                 versions: Sequence[int] | None = None) -> None:
        self.game = game
        #: the viewer of each audience: seats 0..n-1, then SPECTATOR
        self.keys: tuple[int, ...] = (*range(seat_count), SPECTATOR)
        self.versions: Sequence[int] = list(versions) if versions is not None else [0] * len(self.keys)
        if len(self.versions) != len(self.keys):
            raise ValueError(f"{len(self.versions)} versions for {len(self.keys)} audiences")
        views = _view_parts(game, state, self.keys)
        self.docs: Sequence[Document] = [document(status, prompts, view) for view in views]
        self.shapes: tuple[Shape, ...] = _shapes(prompts, views)

    def hand_over(self) -> tuple[tuple[int, ...], tuple[Document, ...], tuple[Shape, ...]]:
        """The versions, documents and their shapes the book holds, as tuples, now the caller's alone:
        the book keeps none (a live match's documents are its snapshots', ``app/runtime/step.py``;
        keeping the first ones here would hold the deal's documents, and two lists, for the match's
        whole life). :meth:`advance` needs them back: a book handed over is only :meth:`step`'s."""
        held = tuple(self.versions), tuple(self.docs), self.shapes
        self.versions, self.docs, self.shapes = (), (), ()
        return held

    def document(self, state: Any, viewer: int, status: bytes, prompts: Part) -> Document:
        """``viewer``'s document (``Game.view_parts`` of that viewer alone, with ``status`` and ``prompts``)."""
        return document(status, prompts, _view_parts(self.game, state, (viewer,))[0])

    def index(self, viewer: int) -> int:
        """The audience of ``viewer`` (a seat or SPECTATOR). Raises ValueError for ADMIN or an unknown seat."""
        if viewer == ADMIN or viewer >= len(self.keys) - 1 or viewer < SPECTATOR:
            raise ValueError(f"viewer {viewer} has no audience in the book")
        return viewer if viewer >= 0 else len(self.keys) - 1

    def step(self, versions: Sequence[int], docs: Sequence[Document], state: Any, status: bytes, prompts: Part,
             events: Sequence[Event], wanted: Container[int] | None = None, shapes: Sequence[Shape] = ()
             ) -> tuple[tuple[int, ...], tuple[Document, ...], dict[int, list[dict[str, Any]] | None],
                        tuple[Shape, ...]]:
        """One log record was applied, giving ``state``/``status``/``prompts`` (encoded) and ``events``,
        to audiences at ``versions`` with ``docs`` (and ``shapes``, theirs: ``()`` when unknown): the
        version of every audience whose document changed or that may see one of ``events`` rises by 1
        and it takes its new document. Returns (the new versions, the new documents, the audiences
        that changed, the new documents' shapes), changing nothing given; the third maps each
        audience that changed (index, ascending) to the RFC 6902 patch from its previous document to
        the new one (``app.parts.diff``; ``[]`` when only events are new), or None for an audience not
        in ``wanted`` whose document changed (its patch is made when someone needs it, from the two
        documents). ``wanted`` None: every audience. Whether a document changed is whether a part's
        bytes changed, so the versions never depend on ``wanted`` or ``shapes``: a replay of the log
        gives every audience the versions the live runner gave (``app/runtime/step.py``).

        The views come from one ``Game.view_parts`` call for every audience; a document that did not
        change keeps its object."""
        changed: dict[int, list[dict[str, Any]] | None] = {}
        new_versions = list(versions)
        new_docs = list(docs)
        views = _view_parts(self.game, state, self.keys)
        made: list[Shape] = []
        for i, (viewer, view) in enumerate(zip(self.keys, views, strict=True)):
            old = docs[i]
            patch = wanted is None or i in wanted
            revised = revise(old, shapes[i], status, prompts, view, patch) if i < len(shapes) else None
            if revised is not None:
                doc, ops, shape = revised
                renewed = doc is not old
            else:
                doc = document(status, prompts, view)
                renewed = doc != old
                ops = diff(old, doc) if renewed and patch else None
                shape = _shared(shape_of(prompts, view), made)
            if renewed:
                new_docs[i] = doc
                new_versions[i] += 1
                changed[i] = ops
            elif events and any(e.audience is None or viewer in e.audience for e in events):
                new_versions[i] += 1
                changed[i] = []
            made.append(shape)
        return tuple(new_versions), tuple(new_docs), changed, tuple(made)

    def advance(self, state: Any, status: bytes, prompts: Part, events: Sequence[Event],
                wanted: Container[int] | None = None) -> dict[int, list[dict[str, Any]] | None]:
        """:meth:`step` from the book's own :attr:`versions` and :attr:`docs`, which it then holds
        (tools and tests that follow a log by hand). Returns the audiences that changed."""
        versions, docs, changed, shapes = self.step(self.versions, self.docs, state, status, prompts, events, wanted,
                                                    self.shapes)
        self.versions, self.docs, self.shapes = versions, docs, shapes
        return changed


def _shapes(prompts: Part, views: Sequence[ViewParts]) -> tuple[Shape, ...]:
    made: list[Shape] = []
    for view in views:
        made.append(_shared(shape_of(prompts, view), made))
    return tuple(made)


def _shared(shape: Shape, made: Sequence[Shape]) -> Shape:
    """``shape``, its member keys being the previous audience's tuple when equal (one per match, not
    one per audience)."""
    if made:
        before = made[-1]
        if before == shape:
            return before
        if before[0] == shape[0]:
            return before[0], shape[1], shape[2]
    return shape


def _view_parts(game: Game, state: Any, viewers: Sequence[int]) -> list[ViewParts]:
    return game.view_parts(state, viewers)


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
