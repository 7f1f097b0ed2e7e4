"""Loadouts (conquest.md 5): which owned specials a seat brings to a Hold'em Conquest match.

A player names them when creating or joining a Conquest lobby (or later, while the lobby is open);
they must own each with matches left. At start the server copies every seat's loadout into the
match's options (``loadouts``) with the configured ``special_costs``, so the match's record, seed and
replay hold them. Bot seats own every special (they have no inventory) and get their loadout from
the engine's ``choose_loadout``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.games.conquest.specials import DEFAULT_SPECIAL_COSTS, SPECIALS

#: Options only the server fills; a client naming them in lobby options gets 422 ``reserved_option``.
RESERVED_OPTIONS = ("loadouts", "special_costs")
#: What a bot brings when the engine offers no ``choose_loadout``: cheap specials that pay in any match.
FALLBACK_BOT_LOADOUT = ("scout", "hound", "double_income", "insurance")


class LoadoutError(Exception):
    """A loadout that cannot be brought: ``code`` is ``loadout_not_supported``, ``unknown_special``,
    ``duplicate_special`` or ``special_not_owned``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_loadout(game_id: str, loadout: Sequence[str] | None, owned: Mapping[str, int]) -> list[str]:
    """Validate a loadout against the game and what the player owns (``{special: matches_left}``).
    Returns it as a list (``[]`` for None). Raises :class:`LoadoutError`."""
    loadout = list(loadout or [])
    if not loadout:
        return []
    if game_id != "conquest":
        raise LoadoutError("loadout_not_supported", f"{game_id} has no specials")
    for special in loadout:
        if special not in SPECIALS:
            raise LoadoutError("unknown_special", f"no special {special!r}")
    if len(set(loadout)) != len(loadout):
        raise LoadoutError("duplicate_special", "a special is listed twice")
    missing = [s for s in loadout if owned.get(s, 0) <= 0]
    if missing:
        raise LoadoutError("special_not_owned", f"you do not own {', '.join(missing)} with matches left")
    return loadout


def bot_loadout(seat: int) -> list[str]:
    """The loadout of a bot seat: the engine's ``choose_loadout`` over every special (bots own all of
    them), else :data:`FALLBACK_BOT_LOADOUT`."""
    try:
        from app.games.conquest import bots
    except ImportError:  # pragma: no cover - the engine always has bots
        return list(FALLBACK_BOT_LOADOUT)
    choose = getattr(bots, "choose_loadout", None)
    if choose is None:
        return list(FALLBACK_BOT_LOADOUT)
    try:
        chosen = list(choose(list(SPECIALS), seed=seat))  # varied by seat, deterministic
    except TypeError:
        chosen = list(choose(list(SPECIALS)))
    return [s for s in dict.fromkeys(chosen) if s in SPECIALS]


def start_options(game_id: str, options: Mapping[str, Any], lobby_seats: Sequence[Mapping[str, Any]],
                  owned_by_player: Mapping[str, Mapping[str, int]], costs: Mapping[str, int]
                  ) -> tuple[dict[str, Any], list[list[str]]]:
    """The options a Conquest match starts with and each seat's loadout.

    A player's loadout keeps only the specials they still own with matches left at start (one may
    have run out in another match since joining); a bot's comes from :func:`bot_loadout`. The
    options get ``loadouts`` and ``special_costs`` (the engine's defaults with ``costs`` over them).
    Other games: options unchanged, empty loadouts."""
    if game_id != "conquest":
        return dict(options), [[] for _ in lobby_seats]
    loadouts = []
    for s in lobby_seats:
        if s.get("bot"):
            loadouts.append(bot_loadout(s["seat"]))
        else:
            owned = owned_by_player.get(s.get("player_id") or "", {})
            loadouts.append([x for x in (s.get("loadout") or []) if owned.get(x, 0) > 0])
    return {**options, "loadouts": loadouts, "special_costs": {**DEFAULT_SPECIAL_COSTS, **costs}}, loadouts
