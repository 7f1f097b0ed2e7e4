"""Section 1: the board (conquest.md 1.1–1.5)."""
from __future__ import annotations

from app.games.base import SPECTATOR
from app.games.conquest import GAME
from app.games.conquest.board import AXIAL_DIRECTIONS
from app.games.conquest.state import DECK, FLOP, NEUTRAL

from .support import finish_phase, orders, position


def _connected(board) -> bool:
    seen, frontier = {0}, [0]
    while frontier:
        land = frontier.pop()
        for other in board.neighbours[land]:
            if other not in seen:
                seen.add(other)
                frontier.append(other)
    return len(seen) == board.size


def test_1_1_map_sizes_and_hex_adjacency():
    for seats, size in ((2, 15), (3, 19), (4, 23)):
        for n in range(5):
            state = GAME.setup(seats, None, b"map-%d" % n)
            board = state.board
            assert board.size == size
            assert len(set(board.coords)) == size
            assert _connected(board)
            for land, (q, r) in enumerate(board.coords):
                expected = {i for i, (q2, r2) in enumerate(board.coords) if (q2 - q, r2 - r) in AXIAL_DIRECTIONS}
                assert set(board.neighbours[land]) == expected  # adjacent iff a shared side


def test_1_1_one_starting_land_each_rest_neutral():
    for seats in (2, 3, 4):
        state = GAME.setup(seats, None, b"start")
        owners = state.owner
        for seat in range(seats):
            assert owners.count(seat) == 1
            assert owners[state.board.starts[seat]] == seat
        assert owners.count(NEUTRAL) == state.board.size - seats


def test_1_1_view_carries_axial_coordinates_and_neighbours():
    state = GAME.setup(3, None, b"view")
    view = GAME.view(state, SPECTATOR)
    for land in view["lands"]:
        assert (land["q"], land["r"]) == state.board.coords[land["id"]]
        assert land["neighbours"] == list(state.board.neighbours[land["id"]])


def test_1_2_map_deterministic_from_seed():
    a = GAME.setup(4, None, b"same").board
    b = GAME.setup(4, None, b"same").board
    assert a == b
    others = {GAME.setup(4, None, b"other-%d" % n).board.coords for n in range(6)}
    assert len(others) > 1


def test_1_2_starting_lands_have_two_neighbours_and_are_apart():
    for seats in (2, 3, 4):
        for n in range(25):
            board = GAME.setup(seats, None, b"apart-%d" % n).board
            for i, land in enumerate(board.starts):
                assert len(board.neighbours[land]) >= 2
                for other in board.starts[i + 1:]:
                    assert board.distance[land][other] >= 2


def test_1_3_every_table_has_its_own_deck_and_face_down_flop():
    state = GAME.setup(4, None, b"tables")
    flops = [table[FLOP] for table in state.tables]
    assert all(len(set(f)) == 3 for f in flops)
    for table in state.tables:  # each table holds a whole 52-card deck of its own
        assert sorted(table[FLOP] + table[DECK]) == list(range(52))
    # 23 tables x 3 cards > 52: cards repeat across tables, which only own decks allow
    assert len({c for f in flops for c in f}) < 69
    for viewer in (0, 1, SPECTATOR):
        for land in GAME.view(state, viewer)["lands"]:
            assert land["flop"] == [{"hidden": True}] * 3


def test_1_3_fresh_flop_after_a_battle():
    board = GAME.setup(2, None, b"conquest-position").board
    start = board.starts[0]
    target = board.neighbours[start][0]
    state = position(owner={start: 0, board.starts[1]: 1})
    untouched = [land for land in range(board.size) if land != target]
    before = {land: state.tables[land][FLOP] for land in range(board.size)}
    state, _ = finish_phase(state, orders({0: [target], 1: []}))
    state, _ = finish_phase(state)  # turn decision: stay
    state, _ = finish_phase(state)  # river decision: stay -> final
    battle = state.battles[target]
    assert battle.stage == "done"
    assert state.tables[target] is not None and state.tables[target][FLOP] != before[target]
    assert bytes(d[0] for d in battle.flop) == before[target]  # the battle was fought on the old flop
    for land in untouched:
        assert state.tables[land][FLOP] == before[land]
    assert GAME.view(state, SPECTATOR)["lands"][target]["flop"] == [{"hidden": True}] * 3


def test_1_4_starting_mana_option():
    assert GAME.setup(2, None, b"m").mana == [10, 10]
    assert GAME.setup(3, GAME.Options(starting_mana=4), b"m").mana == [4, 4, 4]
    broke = GAME.setup(2, {"starting_mana": 0}, b"m")
    # nobody can pay an activation: round 1 resolves at once, and its income (2.6) is the only mana
    assert (broke.round, broke.mana) == (2, [1, 1])
