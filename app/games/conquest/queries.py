"""Hold'em Conquest: read-only questions about a state used by validation, prompts, views and bots
(which lands a seat may attack or defend, where it still decides; conquest.md 2.1-2.2, 3.2-3.4).
"""
from __future__ import annotations

from app.games.conquest.board import LANDS_BY_SEATS
from app.games.conquest.state import LIVE, STAGE_RIVER, STAGE_TURN, TURN, State

# --------------------------------------------------------------------------------------------
# Queries used by validation, prompts and views
# --------------------------------------------------------------------------------------------

def attackable(state: State, seat: int) -> list[int]:
    """Lands ``seat`` may activate this round: adjacent to a land it controlled at the round's
    start, not its own (2.1, 1.1)."""
    return list(state.targets.get(seat, ()))


def _compute_targets(state: State) -> dict[int, bytes]:
    """Living seat -> lands adjacent to one it controls now and not its own, ascending, as bytes
    (one land id a byte; see ``State.targets``) (2.1)."""
    masks = state.board.neighbour_masks
    owner = state.owner
    find = owner.index
    targets = {}
    out_round = state.out_round
    for seat in range(state.seats):
        if out_round[seat] == 0:
            owned = near = 0  # bit sets of lands
            land = -1
            for _ in range(owner.count(seat)):
                land = find(seat, land + 1)
                owned |= 1 << land
                near |= masks[land]
            free = near & ~owned
            lands = b""
            for byte_lands in _BYTE_LANDS:  # the set bits, a byte at a time
                if not free:
                    break
                lands += byte_lands[free & 255]
                free >>= 8
            targets[seat] = lands
    return targets


#: ``_BYTE_LANDS[k][b]``: the lands whose bits are set in ``b`` as the k-th byte of a bit set, ascending
#: (bytes of land ids)
_BYTE_LANDS = tuple(tuple(bytes(8 * k + i for i in range(8) if b >> i & 1) for b in range(256))
                    for k in range((max(LANDS_BY_SEATS.values()) + 7) // 8))


def attacks_of(state: State, seat: int) -> int:
    """How many lands ``seat`` activated this round."""
    return sum(1 for seats in state.attacks.values() if seat in seats)


def defendable(state: State, seat: int) -> list[int]:
    """Lands of ``seat`` attacked this round (2.2)."""
    return [land for land in state.attacks if state.owner[land] == seat]


def seat_battle_lands(state: State, seat: int) -> list[int]:
    """Lands (ascending) whose battle this round ``seat`` takes part in."""
    return list(state.battle_lands.get(seat, ()))


def decision_lands(state: State, seat: int) -> list[int]:
    """Lands where ``seat`` is still in a battle waiting for its stay-or-fold decision (3.2–3.4)."""
    stage = STAGE_TURN if state.phase == TURN else STAGE_RIVER
    battles = state.battles
    return [land for land in state.battle_lands.get(seat, ())
            if battles[land].stage == stage and battles[land].status[seat] == LIVE]
