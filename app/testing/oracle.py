"""An oracle for hidden information that does not trust the game.

A game says what a viewer must not see with ``hidden_tokens(state, viewer)``; the leak checks used
to take that set as the truth, so a game that forgot a hand there was checked against nothing. The
oracle computes the same set from the views alone: the card ids (``CardTokens`` tokens) of the admin
view that are missing from the viewer's view. :func:`oracle_problems` reports every difference
between the two, both ways; :func:`hidden_sets` gives the union (what the messages a viewer receives
are checked against).
"""
from __future__ import annotations

import re
from typing import Any, Iterable

import orjson

from app.games.base import ADMIN, SPECTATOR

__all__ = ["TOKEN", "card_ids", "examine", "hidden_sets", "oracle_hidden", "oracle_problems", "viewers_of"]

#: what a card id looks like: a :class:`app.games.base.CardTokens` token (12 base-32 characters)
TOKEN = re.compile(r"^[a-z2-7]{12}$")


_QUOTED_TOKEN = re.compile(rb'"([a-z2-7]{12})"')


def card_ids(doc: Any, out: set[str] | None = None) -> set[str]:
    """Every string of ``doc`` (a JSON-ready value: dicts, lists, strings ...) that looks like a card
    id, object keys included (found in its JSON text: a whole quoted string of the token pattern)."""
    found = set() if out is None else out
    text = orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)
    found.update(m.decode() for m in _QUOTED_TOKEN.findall(text))
    return found


def viewers_of(seats: int) -> list[int]:
    """Every viewer of a match: its seats, a spectator and the admin."""
    return [*range(seats), SPECTATOR, ADMIN]


def oracle_hidden(admin_view: Any, view: Any) -> set[str]:
    """The card ids of ``admin_view`` that ``view`` does not show: what its viewer is kept from."""
    return card_ids(admin_view) - card_ids(view)


def examine(game: Any, state: Any, viewers: Iterable[int]) -> tuple[dict[int, frozenset[str]], list[str]]:
    """Both at once, from one set of views: ``(`` :func:`hidden_sets` ``,`` :func:`oracle_problems` ``)``."""
    admin = game.view(state, ADMIN)
    admin_ids = card_ids(admin)
    sets: dict[int, frozenset[str]] = {}
    problems: list[str] = []
    for viewer in viewers:
        declared = set(game.hidden_tokens(state, viewer))
        if viewer == ADMIN:
            if declared:
                problems.append(f"{game.info.id}: hidden_tokens(state, ADMIN) is not empty: {len(declared)} tokens")
            sets[viewer] = frozenset(declared)
            continue
        shown = card_ids(game.view(state, viewer))
        seen = admin_ids - shown
        forgotten = seen - declared
        if forgotten:
            problems.append(f"{game.info.id}: viewer {viewer}: {len(forgotten)} card ids of the admin view are "
                            f"missing from the viewer's view but not in hidden_tokens: {sorted(forgotten)[:6]}")
        extra = (declared & admin_ids) - seen
        if extra:
            problems.append(f"{game.info.id}: viewer {viewer}: hidden_tokens lists {len(extra)} card ids the "
                            f"viewer's view shows: {sorted(extra)[:6]}")
        sets[viewer] = frozenset(declared | seen)
    return sets, problems


def oracle_problems(game: Any, state: Any, viewers: Iterable[int]) -> list[str]:
    """Every difference between ``game.hidden_tokens(state, v)`` and :func:`oracle_hidden` for each
    viewer ``v`` (the admin's hidden set must be empty), one line each; ``[]`` when they agree."""
    return examine(game, state, viewers)[1]


def hidden_sets(game: Any, state: Any, viewers: Iterable[int]) -> dict[int, frozenset[str]]:
    """viewer -> the ids it must not see now: the game's ``hidden_tokens`` and the oracle's together
    (a message checked against this set fails for either one's ids)."""
    return examine(game, state, viewers)[0]
