"""What each viewer may see of a Hold'em Conquest match (conquest.md section 4).

:func:`view` is the only path from state to the wire; :func:`hidden_tokens` lists the card ids a
viewer must not see right now. Both rest on the same three questions — :func:`flop_visible`,
:func:`hand_visible` and the pools' owner — so they cannot disagree.

Cards on the wire: ``{"id": token, "card": "Ac"}`` when visible; ``{"hidden": true}`` (no id) when
not; in the admin view every card is shown and those hidden from spectators carry ``"hidden": true``.

:func:`view` builds a fresh dict from the state alone, piece by piece (a land, a battle, the seats,
``you`` ...). :func:`view_parts`, the runtime's path (``Game.view_parts``), encodes the same pieces
(``app/parts.py``: a member, or an item of a list member, as its JSON bytes) and keeps each one, as
bytes, while what it shows is the same, so a submission re-encodes only what it changed: equal to
``encode_view(view(state, viewer))`` byte for byte (``tests/games/conquest/test_view_parts.py``).
"""
from __future__ import annotations

from typing import Any, Sequence

from app.games.base import ADMIN, SPECTATOR
from app.games.conquest import poker
from app.games.conquest.board import Board
from app.games.conquest.costs import max_battles, reserved_mana, shield_on
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
    FLOP,
    MAX_BATTLES,
    NEUTRAL,
    ORDERS,
    OVER,
    RIVER,
    STAGE_ASSIGN,
    STAGE_DONE,
    TURN,
    Battle,
    Dealt,
    State,
)
from app.parts import ViewParts
from app.parts import dumps as parts_dumps


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


def _flop_wire(battle: Battle) -> list[dict[str, Any]] | None:
    if battle.stage == STAGE_ASSIGN:
        return None
    return [{"id": token, "card": _NAMES[card]} for card, token in battle.flop]


def _table_card(dealt: Dealt | None) -> dict[str, Any] | None:
    return None if dealt is None else {"id": dealt[1], "card": _NAMES[dealt[0]]}


def _battle_view(state: State, battle: Battle, viewer: int, admin: bool) -> dict[str, Any]:
    """``battle`` as ``viewer`` sees it (``admin``: every card, those hidden from spectators marked);
    a fresh dict of fresh lists."""
    participants = []
    hands = battle.hands
    finalists = battle.finalists
    defender = battle.defender
    specials = bool(battle.jokers or battle.kept or state.active)
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
            shown = [{"id": token, "card": _NAMES[card]} for card, token in hand]
            if specials and seat != viewer and seat not in finalists:
                reason = hand_seen(state, battle, seat, viewer)
                for seen_card in shown:
                    seen_card["seen"] = reason
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
        participants.append(entry)
    stage = battle.stage
    return {
        "land": battle.land, "holder": _who(battle.holder), "stage": stage, "flop": _flop_wire(battle),
        "turn": _table_card(battle.turn), "river": _table_card(battle.river), "participants": participants,
        "winner": None if stage != STAGE_DONE or battle.winner is None else _who(battle.winner),
        "result": battle.result,
    }


def _battle_class(state: State, battle: Battle, viewer: int) -> int:
    """Whom ``viewer`` sees ``battle`` as, without specials of its own: ADMIN, SPECTATOR (a seat not in
    it, or one whose hand is shown to all at the final) or itself."""
    if viewer == ADMIN:
        return ADMIN
    if viewer not in battle.hands or viewer in battle.finalists:
        return SPECTATOR
    return viewer


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


def _open_flop(battle: Battle) -> list[dict[str, Any]]:
    return [{"id": token, "card": _NAMES[card]} for card, token in battle.flop]


def _land_entry(board: Board, land: int, owner: int, flop: Any) -> dict[str, Any]:
    q, r = board.coords[land]
    return {
        "id": land, "q": q, "r": r,
        "owner": None if owner == NEUTRAL else owner,
        "neighbours": list(board.neighbours[land]),
        "flop": flop,
    }


def _shield(state: State, land: int) -> int | None:
    """The shield shown on ``land`` (public: others must know what a table costs them, 5.3.1.1)."""
    shield = state.shields.get(land) if state.shields else None
    if shield is not None and state.owner[land] == shield[0]:
        return shield[1]
    return None


def _land_view(state: State, land: int, viewer: int) -> dict[str, Any]:
    """The entry of ``land`` as ``viewer`` sees it: its owner and its table's flop (open while its
    battle is fought, else face down: nothing but its place, 4.3; its faces for the admin, or for a
    seat that sees them through a special, marked with it, :func:`flop_seen`)."""
    board = state.board
    owner = state.owner[land]
    flop: Any
    if flop_visible(state, land, viewer):
        flop = _open_flop(state.battles[land])
    elif viewer == ADMIN:
        flop = [{"card": _NAMES[card], "hidden": True} for card in state.tables[land][FLOP]]
    else:
        reason = flop_seen(state, land, viewer) if viewer >= 0 else None
        if reason is None:
            flop = [{"hidden": True}, {"hidden": True}, {"hidden": True}]
        else:
            flop = [{"card": _NAMES[card], "seen": reason} for card in state.tables[land][FLOP]]
    entry = _land_entry(board, land, owner, flop)
    size = _shield(state, land)
    if size is not None:
        entry["shield"] = size
    return entry


def _attacks(state: State) -> list[dict[str, Any]]:
    return [{"land": land, "attackers": list(s)} for land, s in state.attacks.items()]


def _passed(state: State) -> list[dict[str, Any]]:
    return [{"land": land, "from": frm, "to": to} for land, frm, to in state.passed]


def _outcome(state: State) -> dict[str, Any] | None:
    if state.result is None:
        return None
    ranks, scores, reason = state.result
    return {"ranks": {str(s): v for s, v in ranks.items()}, "scores": {str(s): v for s, v in scores.items()},
            "reason": reason}


def view(state: State, viewer: int) -> dict[str, Any]:
    """The match as ``viewer`` (a seat, SPECTATOR or ADMIN) may see it (shape in
    docs/games/conquest.md, "View"): a fresh dict of fresh values, built from the state alone (the
    reference :func:`view_parts` is checked against). Raises what the state's look-ups raise for a
    viewer that is none of these."""
    admin = viewer == ADMIN
    options = state.options
    owners = state.owner
    active = state.active.get(viewer) if state.active and not admin else None
    out: dict[str, Any] = {
        "game": "conquest",
        "viewer": viewer,
        "round": state.round,
        "max_rounds": options.max_rounds,
        "tables_to_win": options.tables_to_win,
        "phase": state.phase,
        "phase_id": state.phase_id,
        "seats": _seats(state, [owners.count(seat) for seat in range(state.seats)]),
        "lands": [_land_view(state, land, viewer) for land in range(len(owners))],
        "attacks": _attacks(state),
        "defences": list(state.defences),
        "passed": _passed(state),
        "battles": [_battle_view(state, battle, viewer if active else _battle_class(state, battle, viewer), admin)
                    for battle in state.battles.values()],
        "outcome": _outcome(state),
    }
    if 0 <= viewer < state.seats:
        out["you"] = _you(state, viewer)
    elif admin:
        out["pools"] = _pools(state)
        out["submissions"] = _submissions(state)
    return out


def _pools(state: State) -> dict[str, Any]:
    return {str(seat): [_card(d, False, True) for d in pool] for seat, pool in state.pools.items()}


def _submissions(state: State) -> dict[str, Any]:
    return {str(seat): _submission_wire(state, seat) for seat in state.submissions}


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
        # mana held for the submission on file (charged when the phase ends): a special may use
        # only ``mana - reserved`` (conquest.md 1.4)
        you["reserved"] = reserved_mana(state, seat)
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



# -- parts ----------------------------------------------------------------------------------------
#
# The runtime's path (``Game.view_parts``): each member of a view, and each item of a list member,
# as its JSON bytes, equal to ``app.parts.encode_view(view(state, viewer))``. Every piece is the
# encoding of the dict the functions above build for :func:`view`, made once and kept while what it
# shows is the same (bytes, and tuples of bytes: nothing the cyclic collector walks):
#
# - ``state.view_memo``, per position (shared by the states that differ only in ``submissions``,
#   :meth:`State.clone_submission`; a resolution's :meth:`State.clone` starts an empty one): the
#   header, the lands of each kind of viewer, attacks, defences and passes, each viewer's battles,
#   the seats by who has submitted (``1000 + bit set``), each seat's ``you`` with the submission and
#   the order prices it was built from (``300 + seat``), the outcome;
# - ``board.view_parts``, per match: a face-down land's entry by land and owner (it shows nothing else);
# - ``battle.view_memo``, per battle object (never changed once a state holds it; :meth:`Battle.copy`
#   starts without one): its encoding for each kind of viewer (:func:`_battle_class`, or the seat and
#   its active specials).

_dumps = parts_dumps  # parts are kept: each in a bytes of its own size
_NULL = b"null"
_GAME = b'"conquest"'
#: encodings of the small ints a view repeats (viewers, rounds, phase ids, lands)
_INTS = tuple([_dumps(i) for i in range(1024)])
_PHASES = {phase: _dumps(phase) for phase in (ORDERS, DEFENCE, ASSIGN, TURN, RIVER, OVER)}


def _int(value: int) -> bytes:
    return _INTS[value] if 0 <= value < 1024 else _dumps(value)


def _public_lands(state: State, memo: dict[Any, Any]) -> tuple[bytes, ...]:
    """Every land as the spectators see it (and the seats without a special that shows them more)."""
    lands = memo.get("lands")
    if lands is not None:
        return lands
    board = state.board
    kept = board.view_parts
    owners = state.owner
    battles = state.battles
    shields = state.shields
    out = []
    for land in range(len(owners)):
        battle = battles.get(land)
        if (battle is None or battle.stage == STAGE_ASSIGN or battle.stage == STAGE_DONE) \
                and (not shields or land not in shields):
            # face down and unshielded: the entry shows nothing but the land and its owner
            key = land * 8 + owners[land] + 1
            part = kept.get(key)
            if part is None:
                part = kept[key] = _dumps(_land_view(state, land, SPECTATOR))
        else:
            part = _dumps(_land_view(state, land, SPECTATOR))
        out.append(part)
    lands = memo["lands"] = tuple(out)
    return lands


def _viewer_lands(state: State, memo: dict[Any, Any], viewer: int) -> tuple[bytes, ...]:
    if viewer == ADMIN:
        lands = memo.get("lands_admin")
        if lands is None:
            lands = memo["lands_admin"] = tuple([_dumps(_land_view(state, land, ADMIN))
                                                 for land in range(len(state.owner))])
        return lands
    public = _public_lands(state, memo)
    if viewer < 0 or not (viewer in state.active or viewer in state.scouted):
        return public
    key = 100 + viewer  # a seat that sees face-down flops through a special (section 5)
    lands = memo.get(key)
    if lands is None:
        out = list(public)
        for land in range(len(out)):
            if not flop_visible(state, land, viewer) and flop_seen(state, land, viewer) is not None:
                out[land] = _dumps(_land_view(state, land, viewer))
        lands = memo[key] = tuple(out)
    return lands


def _battle_part(state: State, battle: Battle, viewer: int) -> bytes:
    """``battle`` for ``viewer``, kept in ``battle.view_memo`` by the kind of viewer."""
    memo = battle.view_memo
    if memo is None:
        memo = battle.view_memo = {}
    active = state.active.get(viewer) if state.active and viewer != ADMIN else None
    key: Any
    if active:
        key = (viewer, active)
        who = viewer
    else:
        key = who = _battle_class(state, battle, viewer)
    part = memo.get(key)
    if part is None:
        part = memo[key] = _dumps(_battle_view(state, battle, who, viewer == ADMIN))
    return part


def _viewer_battles(state: State, memo: dict[Any, Any], viewer: int) -> tuple[bytes, ...]:
    key = 200 + viewer  # viewer from -2
    battles = memo.get(key)
    if battles is None:
        battles = memo[key] = tuple([_battle_part(state, battle, viewer) for battle in state.battles.values()])
    return battles


def _seat_parts(state: State, memo: dict[Any, Any]) -> tuple[bytes, ...]:
    """The seats, the same for every viewer: by position and who has submitted."""
    key = 1000
    for seat in state.submissions:
        key += 1 << seat
    seats = memo.get(key)
    if seats is None:
        owners = state.owner
        seats = memo[key] = tuple([_dumps(entry) for entry in
                                   _seats(state, [owners.count(seat) for seat in range(state.seats)])])
    return seats


def _you_part(state: State, memo: dict[Any, Any], seat: int) -> bytes:
    """Seat ``seat``'s ``you``: by position, its submission and the prices held for it."""
    submission = state.submissions.get(seat)
    prices = state.order_prices.get(seat) if state.order_prices else None
    key = 300 + seat
    kept = memo.get(key)
    if kept is not None and kept[0] is submission and kept[1] is prices:
        return kept[2]
    part = _dumps(_you(state, seat))
    memo[key] = (submission, prices, part)
    return part


def view_parts(state: State, viewers: Sequence[int]) -> list[ViewParts]:
    """Every viewer's :func:`view` as parts (``app.parts.ViewParts``: the members in order, a list
    member item by item), equal to ``encode_view(view(state, viewer))`` byte for byte; a piece is
    encoded again only when what it shows changed (see above)."""
    memo = state.view_memo
    head = memo.get("head")
    if head is None:
        options = state.options
        head = memo["head"] = (_int(state.round), _int(options.max_rounds), _int(options.tables_to_win),
                               _PHASES.get(state.phase) or _dumps(state.phase), _int(state.phase_id))
    public = memo.get("public")
    if public is None:
        public = memo["public"] = (tuple([_dumps(a) for a in _attacks(state)]),
                                   tuple([_int(land) for land in state.defences]),
                                   tuple([_dumps(p) for p in _passed(state)]))
    outcome = memo.get("outcome")
    if outcome is None:
        outcome = memo["outcome"] = _NULL if state.result is None else _dumps(_outcome(state))
    seats = _seat_parts(state, memo)
    out: list[ViewParts] = []
    for viewer in viewers:
        parts: list[tuple[str, Any]] = [
            ("game", _GAME),
            ("viewer", _int(viewer)),
            ("round", head[0]),
            ("max_rounds", head[1]),
            ("tables_to_win", head[2]),
            ("phase", head[3]),
            ("phase_id", head[4]),
            ("seats", seats),
            ("lands", _viewer_lands(state, memo, viewer)),
            ("attacks", public[0]),
            ("defences", public[1]),
            ("passed", public[2]),
            ("battles", _viewer_battles(state, memo, viewer)),
            ("outcome", outcome),
        ]
        if 0 <= viewer < state.seats:
            parts.append(("you", _you_part(state, memo, viewer)))
        elif viewer == ADMIN:
            parts.append(("pools", _dumps(_pools(state))))
            parts.append(("submissions", _dumps(_submissions(state))))
        out.append(tuple(parts))
    return out
