"""Tricks: what each viewer may see (``tricks.md``, "View"). The only path from the state to the
wire. A seat sees its own hand; nobody sees the other hand (only how many cards it holds); the
trump card, the table and the last trick are public; the admin sees both hands."""
from __future__ import annotations

from typing import Any

from app.games.base import ADMIN

from bannerfall_tricks.rules import playable
from bannerfall_tricks.state import State


def view(state: State, viewer: int) -> dict[str, Any]:
    """The view of ``viewer``: a seat (0 or 1), SPECTATOR (-1) or ADMIN (-2)."""
    seat = viewer if viewer in (0, 1) else None
    out: dict[str, Any] = {
        "game": "tricks",
        "viewer": viewer,
        "phase": "over" if state.result is not None else "play",
        "phase_id": state.phase_id,
        "hand_number": state.hand,
        "hands_to_play": state.options.hands,
        "current_seat": state.current,
        "leader": state.leader,
        "trump": state.trump.wire,
        "hand": [c.wire for c in state.hands[seat]] if seat is not None else None,
        "playable": ([c.token for c in playable(state, seat)] if seat is not None and state.current == seat
                     and state.result is None else []),
        "hand_sizes": [len(hand) for hand in state.hands],
        "table": [{"seat": s, **c.wire} for s, c in state.table],
        "last_trick": [{"seat": s, **c.wire} for s, c in state.last_trick],
        "tricks": list(state.tricks),
        "score": list(state.score),
        "outcome": state.result.to_wire() if state.result is not None else None,
    }
    if viewer == ADMIN:
        out["hands"] = [[c.wire for c in hand] for hand in state.hands]
    return out


def hidden_tokens(state: State, viewer: int) -> set[str]:
    """The card ids ``viewer`` must not see now: every hand but its own (none for the admin)."""
    if viewer == ADMIN:
        return set()
    return {c.token for seat, hand in enumerate(state.hands) if seat != viewer for c in hand}
