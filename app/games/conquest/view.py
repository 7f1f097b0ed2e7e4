"""What each viewer may see of a Hold'em Conquest match (conquest.md section 4).

:func:`view` is the only path from state to the wire; :func:`hidden_tokens` lists the card ids a
viewer must not see right now. Both rest on the same three questions — :func:`flop_visible`,
:func:`hand_visible` and the pools' owner — so they cannot disagree.

Cards on the wire: ``{"id": token, "card": "Ac"}`` when visible; ``{"hidden": true}`` (no id) when
not; in the admin view every card is shown and those hidden from spectators carry ``"hidden": true``.

A view is a read-only picture: the parts that depend only on the position (the lands, attacks,
defences, passes and each viewer's battles) are built once per position, kept in
``state.view_memo`` and shared by the views of every viewer and of the states that differ only in
``submissions`` (see :class:`~app.games.conquest.state.State`); the entry of a land whose flop is
face down depends only on the land and its owner and is built the first time that owner holds it,
then kept for the match (``board.view_parts``, with each land's ``neighbours`` list and the face-down
flop, shared by all entries); ``seats`` is built once per position and set of submissions. The
top-level dict, ``you``, ``outcome`` and the admin's ``pools`` and ``submissions`` are new on every
call. Callers serialise views; they must not change them.
"""
from __future__ import annotations

from operator import getitem
from typing import Any

from app.games.base import ADMIN, SPECTATOR
from app.games.conquest import poker
from app.games.conquest.costs import max_battles, shield_on
from app.games.conquest.poker import NAMES as _NAMES
from app.games.conquest.queries import (
    attackable,
    attacks_of,
    decision_lands,
    defendable,
    seat_battle_lands,
)
from app.games.conquest.round import _mark_final_hand
from app.games.conquest.rules import scout_price, special_price
from app.games.conquest.specials import SPECIALS
from app.games.conquest.state import (
    ASSIGN,
    DEFENCE,
    MAX_BATTLES,
    NEUTRAL,
    ORDERS,
    RIVER,
    STAGE_ASSIGN,
    STAGE_DONE,
    TURN,
    Battle,
    Dealt,
    State,
)


def flop_visible(state: State, land: int, viewer: int) -> bool:
    """Is the *current* flop of ``land``'s table open to everyone? Only while a battle is being
    fought on it (3.1, 4.1, 4.3). What one seat sees of a face-down flop through a special is
    :func:`flop_seen`."""
    battle = state.battles.get(land)
    return battle is not None and battle.stage != STAGE_ASSIGN and battle.stage != STAGE_DONE


def flop_seen(state: State, land: int, viewer: int) -> str | None:
    """The special through which seat ``viewer`` sees ``land``'s face-down flop, else None
    (section 5): ``scout`` (that table, until its flop changes, 5.3.1.2), ``loyalty`` (own
    tables, 5.3.1.3), ``spy`` (neutral lands, 5.3.1.4), ``corruption`` (other players' lands,
    5.3.1.5), ``big_brother`` (every table, 5.3.1.6). Another seat's shield hides its table from
    corruption and big_brother: only a scout paying N more sees it (5.3.1.1). Shown to that seat
    only, as faces without ids (the cards get ids when their battle starts, 4.4)."""
    if viewer < 0:
        return None
    scouted = state.scouted.get(viewer)
    if scouted and land in scouted:
        return "scout"
    active = state.active.get(viewer)
    if not active:
        return None
    owner = state.owner[land]
    if owner == viewer:
        if "loyalty" in active:
            return "loyalty"
    elif owner == NEUTRAL:
        if "spy" in active:
            return "spy"
    elif shield_on(state, land, viewer):
        return None
    elif "corruption" in active:
        return "corruption"
    return "big_brother" if "big_brother" in active else None


def hand_visible(state: State, battle: Battle, participant: int, viewer: int) -> bool:
    """A hand is seen by its owner, and by all once it reaches the final (4.1, 4.2); the neutral's
    hand and folded hands by nobody else — except one seat through a special (:func:`hand_seen`)."""
    if (participant == viewer and participant != NEUTRAL) or participant in battle.finalists:
        return True
    return bool(state.active) and hand_seen(state, battle, participant, viewer) is not None


def hand_seen(state: State, battle: Battle, participant: int, viewer: int) -> str | None:
    """The special through which seat ``viewer`` sees ``participant``'s hand in ``battle``:
    ``read_hand`` (attackers of a land the viewer held when attacked, 5.3.2.1) or ``hound`` (the
    neutral's hand in a battle the viewer fights in, 5.3.2.2); else None."""
    active = state.active.get(viewer) if viewer >= 0 else None
    if not active:
        return None
    if participant == NEUTRAL:
        hand = battle.hands.get(NEUTRAL)
        if "hound" in active and viewer in battle.paid and hand and hand[0][1]:
            return "hound"
        return None
    if "read_hand" in active and battle.holder == viewer and participant in battle.attackers:
        return "read_hand"
    return None


def hidden_tokens(state: State, viewer: int) -> set[str]:
    """Card ids ``viewer`` (a seat, SPECTATOR or ADMIN) must not see now: other seats' pools, and
    hands neither theirs nor shown at a final (4.2). Unopened flops (4.3) have no ids at all: a flop
    card gets its id when its battle starts. Empty for ADMIN."""
    if viewer == ADMIN:
        return set()
    hidden: set[str] = set()
    for seat, pool in state.pools.items():
        if seat != viewer:
            hidden.update(dealt[1] for dealt in pool)
    for battle in state.battles.values():
        for participant, hand in battle.hands.items():
            if not hand_visible(state, battle, participant, viewer):
                hidden.update(dealt[1] for dealt in hand if dealt[1])
    return hidden


def _card(dealt: Dealt, visible: bool, admin: bool) -> dict[str, Any]:
    if visible:
        return {"id": dealt[1], "card": _NAMES[dealt[0]]}
    if admin:
        shown = {"card": _NAMES[dealt[0]], "hidden": True}
        if dealt[1]:
            shown["id"] = dealt[1]
        return shown
    return {"hidden": True}


def _who(seat: int) -> int | str:
    return "neutral" if seat == NEUTRAL else seat


class _Parts:
    """The pieces of one battle's views kept across viewers and positions (``view_memo["parts"]``,
    carried over by :meth:`Battle.copy`): a hand or table piece ``values[key]`` was built from the
    state object ``inputs[key]`` (:func:`_part`); a composite piece has no inputs and is kept by
    equality (:func:`_equal_kept`). Keys are ints (:func:`_seat_key` and friends) and values and
    inputs sit in two dicts, not in key tuples and pairs: the collector walks nothing per kept piece
    but the piece (2 Dec 2026: the memo's tuples were 40 % of a Conquest match's young objects). A
    key shared by two pieces by chance only costs a rebuild: a piece is returned only for the very
    object it was built from, or when it equals what was just built."""

    __slots__ = ("inputs", "values")

    def __init__(self, inputs: dict[int, Any], values: dict[int, Any]) -> None:
        self.inputs = inputs
        self.values = values

    def copy(self) -> _Parts:
        return _Parts(dict(self.inputs), dict(self.values))


#: small keys of the pieces kept once per battle
_FLOP, _TURN, _RIVER = 3, 4, 5


def _seat_key(seat: int, kind: int) -> int:
    """The key of seat ``seat``'s hand piece of ``kind`` (1: shown, 2: hidden); seats from -1."""
    return (seat + 1) * 8 + kind


def _object_key(obj: Any, seat: int) -> int:
    """A key naming ``obj`` and ``seat`` (-2..13): ``obj`` stays alive while the piece kept under
    the key holds it (an entry its hand, a battle its participants), so no other object takes its id."""
    return id(obj) * 16 + seat + 2


def _part(parts: _Parts, key: int, inputs: Any) -> Any:
    """The piece ``key`` of a battle's views if it was kept (:func:`_keep`) from the very object
    ``inputs`` (a hand, the flop, a card), else None: an unchanged piece is the same object for
    every viewer and from position to position, so the runtime's diff skips it by identity or walks
    it once for all. (No builder callbacks: a closure compiled by mypyc is a reference cycle,
    cyclic garbage on every view; 1 Dec 2026.)"""
    if inputs is not None and parts.inputs.get(key) is inputs:
        return parts.values[key]
    return None


def _keep(parts: _Parts, key: int, inputs: Any, value: Any) -> Any:
    """Keep ``value`` as the piece ``key`` built from ``inputs`` (see :func:`_part`); returns it."""
    parts.inputs[key] = inputs
    parts.values[key] = value
    return value


def _equal_kept(parts: _Parts, key: int, value: Any) -> Any:
    """The kept piece ``key`` if it equals ``value`` (``==`` in C: its members are mostly the very
    same objects, which compare without a walk), else ``value``, now kept. For the pieces made of
    other pieces and scalars (a participant's entry, the participants, the battle): no inputs tuple
    kept for them. Views never hold ``True`` where an equal ``1`` could be, so equal is the same JSON."""
    kept = parts.values.get(key)
    if kept is not None and kept == value:
        return kept
    parts.values[key] = value
    return value


def _flop_wire(battle: Battle) -> list[dict[str, Any]] | None:
    if battle.stage == STAGE_ASSIGN:
        return None
    return [{"id": token, "card": _NAMES[card]} for card, token in battle.flop]


def _table_card(dealt: Dealt | None) -> dict[str, Any] | None:
    return None if dealt is None else {"id": dealt[1], "card": _NAMES[dealt[0]]}


def _table_piece(parts: _Parts, key: int, dealt: Dealt | None) -> dict[str, Any] | None:
    """:func:`_table_card` of ``dealt``, kept in ``parts`` as ``key`` while ``dealt`` is the same card."""
    if dealt is None:
        return None
    kept = _part(parts, key, dealt)
    return kept if kept is not None else _keep(parts, key, dealt, _table_card(dealt))


def _battle_parts(battle: Battle) -> _Parts:
    """The pieces of ``battle``'s views kept across viewers and positions (``view_memo["parts"]``,
    carried over by :meth:`Battle.copy`, each checked against what it was built from)."""
    memo = battle.view_memo
    if memo is None:
        memo = battle.view_memo = {}
    parts = memo.get("parts")
    if parts is None:
        parts = memo["parts"] = _Parts({}, {})
    return parts


def _battle_view(state: State, battle: Battle, viewer: int, admin: bool) -> dict[str, Any]:
    participants = []
    hands = battle.hands
    finalists = battle.finalists
    defender = battle.defender
    specials = bool(battle.jokers or battle.kept or state.active)
    # without specials and for players and spectators, a hand shows the same to every viewer who
    # sees it (and the same hidden cards to every one who does not), so the hands, the participants'
    # entries, the cards on the table and the battle's dict itself are pieces shared by every viewer
    # and kept from position to position while what they show is the same
    parts = _battle_parts(battle) if not (specials or admin) else None
    for seat in battle.seats:
        hand = hands.get(seat)
        shown: list[dict[str, Any]] | None
        if hand is None:
            shown = None
        elif admin:  # every card, those hidden from spectators marked so (4.2)
            if hand_visible(state, battle, seat, SPECTATOR):
                shown = [{"id": token, "card": _NAMES[card]} for card, token in hand]
            else:
                shown = [_card(dealt, False, True) for dealt in hand]
        elif hand_visible(state, battle, seat, viewer):
            shown = _part(parts, _seat_key(seat, 1), hand) if parts is not None else None
            if shown is None:
                shown = [{"id": token, "card": _NAMES[card]} for card, token in hand]
                if parts is not None:
                    _keep(parts, _seat_key(seat, 1), hand, shown)
            if specials and seat != viewer and seat not in finalists:
                reason = hand_seen(state, battle, seat, viewer)
                for seen_card in shown:
                    seen_card["seen"] = reason
        elif parts is not None:
            shown = _part(parts, _seat_key(seat, 2), hand)
            if shown is None:
                shown = _keep(parts, _seat_key(seat, 2), hand, [{"hidden": True} for _ in hand])
        else:
            shown = [{"hidden": True} for _ in hand]
        if specials and shown is not None:
            if seat in finalists:  # the joker and the counted cards are public at the final
                _mark_final_hand(battle, seat, [c for c in shown if "id" in c])
            elif seat in battle.jokers and (admin or seat == viewer):  # others see it only at the final
                for card in shown:
                    if card.get("id") == battle.jokers[seat]:
                        card["joker"] = True
        entry: dict[str, Any]
        if seat == NEUTRAL:
            entry = {"seat": "neutral", "role": "neutral", "status": battle.status[seat], "hand": shown}
        else:
            entry = {"seat": seat, "role": "defender" if seat == defender else "attacker",
                     "status": battle.status[seat], "hand": shown,
                     "paid": battle.paid[seat], "refunded": battle.refunded[seat]}
        if seat in finalists:
            entry["category"] = poker.category(battle.ranks[seat])
        if parts is not None:  # the same entry object while it shows the same (hand by identity)
            entry = _equal_kept(parts, _object_key(shown, seat), entry)
        participants.append(entry)
    stage = battle.stage
    turn, river = battle.turn, battle.river

    if parts is None:
        return {
            "land": battle.land, "holder": _who(battle.holder), "stage": stage, "flop": _flop_wire(battle),
            "turn": _table_card(turn), "river": _table_card(river), "participants": participants,
            "winner": None if stage != STAGE_DONE or battle.winner is None else _who(battle.winner),
            "result": battle.result,
        }
    flop = None
    if stage != STAGE_ASSIGN:
        flop = _part(parts, _FLOP, battle.flop)
        if flop is None:
            flop = _keep(parts, _FLOP, battle.flop, _flop_wire(battle))
    built = {
        "land": battle.land,
        "holder": _who(battle.holder),
        "stage": stage,
        "flop": flop,
        "turn": _table_piece(parts, _TURN, turn),
        "river": _table_piece(parts, _RIVER, river),
        "participants": _equal_kept(parts, hash(tuple(map(id, participants))), participants),
        "winner": None if stage != STAGE_DONE or battle.winner is None else _who(battle.winner),
        "result": battle.result,
    }
    return _equal_kept(parts, _object_key(built["participants"], -2), built)


def _submission_wire(state: State, seat: int) -> dict[str, Any] | None:
    sub = state.submissions.get(seat)
    if sub is None:
        return None
    phase = state.phase
    if phase == ORDERS:
        return {"type": "orders", "attack": list(sub)}
    if phase == DEFENCE:
        return {"type": "defend", "lands": list(sub)}
    if phase == ASSIGN:
        return {"type": "assign", "hands": {str(land): [dealt[1] for dealt in hand] for land, hand in sub}}
    if sub and type(sub[0]) is tuple:  # with double_hand's choice (5.3.2.4)
        folds, keep = sub
        return {"type": "decide", "folds": list(folds),
                "keep": {str(land): [kept[0][1], kept[1][1]] for land, kept in keep}}
    return {"type": "decide", "folds": list(sub)}


def _lands(state: State, admin: bool) -> list[dict[str, Any]]:
    """The map part of the view: one entry per land with its owner and its table's flop (open while
    its battle is fought, else face down: nothing but its place, 4.3; its faces for the admin)."""
    viewer = ADMIN if admin else SPECTATOR
    open_flops = {land: [{"id": token, "card": _NAMES[card]} for card, token in battle.flop]
                  for land, battle in state.battles.items() if flop_visible(state, land, viewer)}
    owners = state.owner
    board = state.board
    if admin:  # face-down flops show their faces, marked hidden
        tables = state.tables
        lands = [_land_entry(board, land, owner, open_flops.get(land) or
                             [{"card": _NAMES[card], "hidden": True} for card in tables[land].flop])
                 for land, owner in enumerate(owners)]
    else:
        # The entry of a land with a face-down flop depends on nothing but the land and its owner:
        # built the first time that owner holds that land, then kept for the match.
        # ``face_down[owner][land]``, the neutral's row last (index -1).
        parts = board.view_parts
        face_down = parts.get("face_down_lands")
        if face_down is None:
            face_down = parts["face_down_lands"] = [[None] * board.size for _ in range(state.seats + 1)]
        # ``[face_down[owner][land] for land, owner in enumerate(owners)]``, looped in C
        found: list[Any] = list(map(getitem, map(face_down.__getitem__, owners), range(len(owners))))
        if None in found:
            for land, entry in enumerate(found):
                if entry is None:
                    owner = owners[land]
                    found[land] = face_down[owner][land] = _land_entry(board, land, owner, _face_down_flop(board))
        lands = found
        for land, flop in open_flops.items():
            lands[land] = _land_entry(board, land, owners[land], flop)
    if state.shields:  # public: others must know what a table costs them (5.3.1.1)
        for land, (seat, size) in state.shields.items():
            if owners[land] == seat:
                lands[land] = {**lands[land], "shield": size}
    return lands


def _seen_lands(state: State, viewer: int, lands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``lands`` with the face-down flops seat ``viewer`` sees through a special (:func:`flop_seen`):
    faces without ids, each marked with the special (``"seen": "scout"``)."""
    tables = state.tables
    out = lands
    for land in range(len(lands)):
        if flop_visible(state, land, viewer):
            continue
        reason = flop_seen(state, land, viewer)
        if reason is not None:
            if out is lands:
                out = list(lands)
            out[land] = {**lands[land], "flop": [{"card": _NAMES[card], "seen": reason}
                                                 for card in tables[land].flop]}
    return out


def _land_entry(board, land: int, owner: int, flop: list[dict[str, Any]]) -> dict[str, Any]:
    q, r = board.coords[land]
    neighbours = board.view_parts.get("neighbours")
    if neighbours is None:  # each land's list, shared by its entries (views are read-only)
        neighbours = board.view_parts["neighbours"] = [list(near) for near in board.neighbours]
    return {
        "id": land, "q": q, "r": r,
        "owner": None if owner == NEUTRAL else owner,
        "neighbours": neighbours[land],
        "flop": flop,
    }


def _face_down_flop(board) -> list[dict[str, Any]]:
    """The flop of a table whose cards are face down, one list shared by the match's entries."""
    flop = board.view_parts.get("face_down_flop")
    if flop is None:
        flop = board.view_parts["face_down_flop"] = [{"hidden": True}, {"hidden": True}, {"hidden": True}]
    return flop


def _battles(state: State, viewer: int, admin: bool) -> list[dict[str, Any]]:
    """The battles part of ``viewer``'s view, ascending land id (``battles`` is kept in that order).
    Each battle's view is kept in ``battle.view_memo`` (a settled battle stays the same object from
    position to position); a battle in which the viewer sees no more than a spectator is shared
    with the spectators' view. A seat with active specials has its own entries, keyed by what it
    has activated (a settled battle outlives an activation)."""
    views = []
    active = state.active.get(viewer) if state.active and not admin else None
    for battle in state.battles.values():
        if active:
            key: Any = (viewer, active)
            who = viewer
        elif not admin and (viewer not in battle.hands
                            or viewer in battle.finalists):
            key = who = SPECTATOR
        else:
            key = who = viewer
        memo = battle.view_memo
        if memo is None:
            memo = battle.view_memo = {}
        shown = memo.get(key)
        if shown is None:
            shown = memo[key] = _battle_view(state, battle, who, admin)
        views.append(shown)
    return views


def view(state: State, viewer: int) -> dict[str, Any]:
    """The match as ``viewer`` (a seat, SPECTATOR or ADMIN) may see it (shape in
    docs/games/conquest.md, "View"). Read-only: parts are shared between views (module docstring)."""
    admin = viewer == ADMIN
    memo = state.view_memo
    # the memo's keys are strings and ints (no tuple kept per position for the collector to walk)
    key: Any = "lands_admin" if admin else "lands"
    lands = memo.get(key)
    if lands is None:
        lands = memo[key] = _lands(state, admin)
    if viewer >= 0 and (viewer in state.active or viewer in state.scouted):  # section 5 reveals
        key = 100 + viewer  # seen lands
        seen = memo.get(key)
        if seen is None:
            seen = memo[key] = _seen_lands(state, viewer, lands)
        lands = seen
    key = 200 + viewer  # battles (viewer from -2)
    battles = memo.get(key)
    if battles is None:
        battles = memo[key] = _battles(state, viewer, admin)
    public = memo.get("public")
    if public is None:
        owners = state.owner
        public = memo["public"] = (
            [{"land": land, "attackers": list(s)} for land, s in state.attacks.items()],
            list(state.defences),
            [{"land": land, "from": frm, "to": to} for land, frm, to in state.passed],
            [owners.count(seat) for seat in range(state.seats)],  # tables per seat
        )
    # the seats part is the same for every viewer: built once per position and set of submissions
    # (``submitted``; the memo is shared by states that differ only in ``submissions``)
    key = 1000 + sum(1 << seat for seat in state.submissions)  # seats, by who submitted
    seats = memo.get(key)
    if seats is None:
        seats = memo[key] = _seats(state, public[3])
    options = state.options
    out: dict[str, Any] = {
        "game": "conquest",
        "viewer": viewer,
        "round": state.round,
        "max_rounds": options.max_rounds,
        "tables_to_win": options.tables_to_win,
        "phase": state.phase,
        "phase_id": state.phase_id,
        "seats": seats,
        "lands": lands,
        "attacks": public[0],
        "defences": public[1],
        "passed": public[2],
        "battles": battles,
        "outcome": None,
    }
    if state.result is not None:
        ranks, scores, reason = state.result
        out["outcome"] = {"ranks": {str(s): v for s, v in ranks.items()},
                          "scores": {str(s): v for s, v in scores.items()}, "reason": reason}
    if 0 <= viewer < state.seats:
        out["you"] = _you(state, viewer)
    elif admin:
        out["pools"] = {str(seat): [_card(d, False, True) for d in pool] for seat, pool in state.pools.items()}
        out["submissions"] = {str(seat): _submission_wire(state, seat) for seat in state.submissions}
    return out


def _seats(state: State, counts: list[int]) -> list[dict[str, Any]]:
    """The public entry of every seat (``counts``: tables per seat)."""
    mana = state.mana
    out_round = state.out_round
    starts = state.board.starts
    required = state.required
    submissions = state.submissions
    seats: list[dict[str, Any]] = [{
        "seat": seat,
        "mana": mana[seat],
        "tables": counts[seat],
        "eliminated": out_round[seat] != 0,
        "start_land": starts[seat],
        "must_act": seat in required,
        "submitted": seat in submissions,
    } for seat in range(state.seats)]
    if state.options.loadouts:  # section 5: what each seat has activated is public
        active = state.active
        for entry in seats:
            mine = active.get(entry["seat"], ())
            entry["specials"] = [special for special in SPECIALS if special in mine]
            entry["double_income_land"] = state.double_land.get(entry["seat"])
    return seats


def _you(state: State, seat: int) -> dict[str, Any]:
    """The viewer's own private part and what they may choose now."""
    phase = state.phase
    pool = state.pools.get(seat)
    you: dict[str, Any] = {
        "seat": seat,
        "mana": state.mana[seat],
        "max_battles": max_battles(state, seat) if state.active else MAX_BATTLES,
        "submission": _submission_wire(state, seat) if seat in state.submissions else None,
        "pool": [{"id": token, "card": _NAMES[card]} for card, token in pool] if pool else [],
        "attackable": [],
        "defendable": [],
        # this round's battles exist from the assign phase on (before, ``battles`` are last round's)
        "battle_lands": seat_battle_lands(state, seat) if phase in (ASSIGN, TURN, RIVER) else [],
        "decision_lands": [],
    }
    loadout = state.loadout(seat)
    if loadout:  # section 5: what this seat brought and what using each costs now
        you["loadout"] = list(loadout)
        you["hand_size"] = state.hand_sizes.get(seat, 2) if state.hand_sizes else 2
        you["special_costs"] = {special: special_price(state, seat, special) for special in loadout}
        if "scout" in loadout:
            you["scout_costs"] = {str(land): scout_price(state, seat, land) for land in range(state.board.size)
                                  if not flop_visible(state, land, seat) and flop_seen(state, land, seat) is None}
        if "joker" in loadout:
            you["jokers"] = [land for land, battle in state.battles.items() if seat in battle.jokers]
    if seat in state.required:
        if phase == ORDERS:
            you["attackable"] = attackable(state, seat)
        elif phase == DEFENCE:
            you["defendable"] = defendable(state, seat)
            you["attacks_made"] = attacks_of(state, seat)
        elif phase in (TURN, RIVER):
            you["decision_lands"] = decision_lands(state, seat)
    return you
