"""Provinces: what each viewer may see (rules 6.1–6.3). The only path from state to the wire.

A hidden card is a joker that has not won a duel (its value is None). Its owner sees it; every
other seat and spectators see nothing of it — no placeholder, no count, no gap; the admin sees it
marked ``"hidden": true``. Events use the same filter (:func:`visible_cards`).

Views are made as encoded parts (:func:`view_parts`, ``app/parts.py``): the view object's members in
order, ``seats`` and ``provinces`` item by item. A province has three possible encodings — its
owner's (every card, ``received``), the admin's (hidden jokers marked) and everyone else's (hidden
jokers dropped, ``received`` None) — built once when the province's inputs change and kept in the
board's memo (``Board.view_memo``: bytes and tuples of atoms, which the cyclic collector does not
walk). :func:`render` / :func:`render_many` decode the parts: one source for both.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import orjson

from app.games.base import ADMIN
from app.parts import ViewParts, view_json
from app.parts import dumps as parts_dumps

from .state import DECK_SIZE, RANKS, SUITS, VALUE, Card, State, card_wire

_dumps = parts_dumps  # parts are kept: each in a bytes of its own size


def visible_cards(cards: Iterable[Card], owner: int, viewer: int) -> list[dict[str, Any]]:
    """Wire dicts of ``cards`` (owned by seat ``owner``) as seen by ``viewer`` (a seat, SPECTATOR
    or ADMIN): hidden jokers are dropped unless the viewer is the owner; the admin sees them marked."""
    if viewer == owner:
        return [card_wire(c) for c in cards]
    if viewer == ADMIN:
        return [card_wire(c) if c[VALUE] is not None else {**card_wire(c), "hidden": True} for c in cards]
    return [card_wire(c) for c in cards if c[VALUE] is not None]


def hidden_tokens(state: State, viewer: int) -> set[str]:
    """Tokens of the cards ``viewer`` must not see now: every unrevealed joker in a garrison the
    viewer does not own (none for ADMIN). Cards in the shoe and discard pile have no token."""
    if viewer == ADMIN:
        return set()
    owners = state.owners
    return {
        c[0]
        for p, garrison in enumerate(state.garrisons)
        if owners[p] != viewer
        for c in garrison
        if c[VALUE] is None
    }


def render(state: State, viewer: int) -> dict[str, Any]:
    """The view of ``state`` for ``viewer`` (seat 0..n-1, SPECTATOR or ADMIN); see
    ``docs/games/provinces.md`` for the shape."""
    return render_many(state, (viewer,))[0]


def render_many(state: State, viewers: Sequence[int]) -> list[dict[str, Any]]:
    """``[render(state, v) for v in viewers]``: :func:`view_parts` decoded."""
    return [orjson.loads(view_json(parts)) for parts in view_parts(state, viewers)]


# -- parts ----------------------------------------------------------------------------------------

_GAME = _dumps("provinces")
_NULL = b"null"
_SEVEN = b"7"


def _province(p: int, q: int, r: int, adjacent: tuple[int, ...], owner: int, age: int, garrison: tuple[Card, ...],
              frontline: bool, attacked: bool, received: bool) -> tuple[bytes, bytes, bytes]:
    """Province ``p``'s three encodings: (everyone else's, its owner's, the admin's)."""
    shown = [card_wire(c) for c in garrison if c[VALUE] is not None]
    base = {"id": p, "q": q, "r": r, "adjacent": adjacent, "owner": owner, "age": age}
    public = _dumps({**base, "size": len(shown), "garrison": shown, "frontline": frontline, "attacked": attacked,
                     "received": None})
    if len(shown) == len(garrison):
        full = shown
        marked = shown
    else:
        full = [card_wire(c) for c in garrison]
        marked = [card_wire(c) if c[VALUE] is not None else {**card_wire(c), "hidden": True} for c in garrison]
    mine = _dumps({**base, "size": len(full), "garrison": full, "frontline": frontline, "attacked": attacked,
                   "received": received})
    admin = mine if marked is full else _dumps({**base, "size": len(full), "garrison": marked, "frontline": frontline,
                                                "attacked": attacked, "received": received})
    return public, mine, admin


def _board(state: State, memo: dict[Any, Any]) -> tuple[tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...],
                                                       tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Every province's encodings as three tuples (everyone else's, owners', admin's), and per seat
    its provinces, the cards others see and all its cards. Kept in ``memo`` while the owners,
    garrisons and ages are the same tuples and the attacked/received masks are equal (a
    ``set_dealing`` touches none of them); otherwise only the provinces whose inputs changed are
    encoded again."""
    owners, garrisons, ages = state.owners, state.garrisons, state.ages
    attacked, received = state.attacked, state.received
    kept = memo.get("board")
    if kept is not None:
        k_owners, k_garrisons, k_ages, k_attacked, k_received = kept[0]
        if (k_owners is owners and k_garrisons is garrisons and k_ages is ages and k_attacked == attacked
                and k_received == received):
            return kept[1]
    static = state.board.static
    entries: list[Any] = memo.get("provinces") or [None] * len(owners)
    frontlines = _frontlines(state, memo)
    seats = state.seats
    count = [0] * seats
    public_cards = [0] * seats
    all_cards = [0] * seats
    public: list[bytes] = []
    mine: list[bytes] = []
    admin: list[bytes] = []
    for p, (_p, q, r, adjacent) in enumerate(static):
        owner, garrison, age = owners[p], garrisons[p], ages[p]
        frontline, was_attacked, was_received = frontlines[p], (attacked >> p) & 1 == 1, (received >> p) & 1 == 1
        key = (owner, garrison, age, frontline, was_attacked, was_received)
        entry = entries[p]
        if entry is None or entry[0] != key:
            entry = entries[p] = (key, *_province(p, q, r, adjacent, owner, age, garrison, frontline, was_attacked,
                                                  was_received),
                                  sum(1 for c in garrison if c[VALUE] is not None), len(garrison))
        count[owner] += 1
        public_cards[owner] += entry[4]
        all_cards[owner] += entry[5]
        public.append(entry[1])
        mine.append(entry[2])
        admin.append(entry[3])
    memo["provinces"] = entries
    out = (tuple(public), tuple(mine), tuple(admin), tuple(count), tuple(public_cards), tuple(all_cards))
    memo["board"] = ((owners, garrisons, ages, attacked, received), out)
    return out


def _frontlines(state: State, memo: dict[Any, Any]) -> tuple[bool, ...]:
    """Per province: whether a neighbour has another owner (kept while the owners are equal)."""
    owners = state.owners
    kept = memo.get("frontline")
    if kept is not None and kept[0] == owners:
        return kept[1]
    out = []
    for _p, _q, _r, adjacent in state.board.static:
        owner = owners[_p]
        out.append(any(owners[other] != owner for other in adjacent))
    frontlines = tuple(out)
    memo["frontline"] = (owners, frontlines)
    return frontlines


def _seats(state: State, memo: dict[Any, Any], count: tuple[int, ...], public_cards: tuple[int, ...],
           all_cards: tuple[int, ...]) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """Per seat, the entry others see and the one the seat and the admin see (its hidden jokers counted)."""
    eliminated = state.eliminated
    key = (eliminated, count, public_cards, all_cards)
    kept = memo.get("seats")
    if kept is not None and kept[0] == key:
        return kept[1]
    public = []
    full = []
    for s in range(state.seats):
        alive = s not in eliminated
        entry = _dumps({"seat": s, "alive": alive, "provinces": count[s], "cards": public_cards[s]})
        public.append(entry)
        full.append(entry if public_cards[s] == all_cards[s] else
                    _dumps({"seat": s, "alive": alive, "provinces": count[s], "cards": all_cards[s]}))
    out = (tuple(public), tuple(full))
    memo["seats"] = (key, out)
    return out


#: encodings of the small ints a view repeats (seats, turns, phase ids, counts)
_INTS = tuple(_dumps(i) for i in range(4096))
_STRS: dict[str, bytes] = {m: _dumps(m) for m in ("evenly", "randomly", "most_unevenly")}


def _scalar(value: Any) -> bytes:
    """The encoding of a scalar of a view (small ints and the dealing modes from tables)."""
    if type(value) is int and 0 <= value < 4096:
        return _INTS[value]
    if value is None:
        return _NULL
    found = _STRS.get(value) if type(value) is str else None
    return found if found is not None else _dumps(value)


def view_parts(state: State, viewers: Sequence[int]) -> list[ViewParts]:
    """Every viewer's view as parts (``app.parts.ViewParts``), rules 6.1–6.3 (see the module)."""
    memo = state.board.view_memo
    public, mine, marked, count, public_cards, all_cards = _board(state, memo)
    seat_public, seat_all = _seats(state, memo, count, public_cards, all_cards)
    owners = state.owners
    seats = state.seats
    result = state.result
    outcome = _NULL if result is None else _dumps(result.to_wire())
    options = memo.get("options")
    if options is None or options[0] is not state.options:
        o = state.options
        options = memo["options"] = (o, _dumps({"turn_seconds": o.turn_seconds, "max_rounds": o.max_rounds,
                                                "tie_rule": o.tie_rule}))
    order = memo.get("order")
    if order is None or order[0] != state.seat_order:
        order = memo["order"] = (state.seat_order, tuple(_dumps(s) for s in state.seat_order))
    current = state.current
    phase = b'"over"' if result is not None else b'"turn"'
    common = (_scalar(state.phase_id), _scalar(state.turn), _scalar(state.round),
              _scalar(current))
    lists: dict[Any, Any] = memo.setdefault("lists", {})
    out: list[ViewParts] = []
    for viewer in viewers:
        admin = viewer == ADMIN
        if admin:
            provinces = marked
            seat_list = seat_all
        elif 0 <= viewer < seats and viewer in owners:
            kept = lists.get(viewer)
            if kept is not None and kept[0] is public and kept[1] is mine:
                provinces = kept[2]
            else:
                provinces = tuple(mine[p] if owner == viewer else public[p] for p, owner in enumerate(owners))
                lists[viewer] = (public, mine, provinces)
            seat_list = seat_public if seat_all[viewer] is seat_public[viewer] else \
                tuple(seat_all[s] if s == viewer else seat_public[s] for s in range(seats))
        else:  # spectators and seats without a province see every province as the public does
            provinces = public
            seat_list = seat_public
        parts: list[tuple[str, Any]] = [
            ("game", _GAME),
            ("viewer", _scalar(viewer)),
            ("phase", phase),
            ("phase_id", common[0]),
            ("turn", common[1]),
            ("round", common[2]),
            ("current_seat", common[3]),
            ("seat_order", order[1]),
            ("seats", seat_list),
            ("provinces", provinces),
            # Counted for the seat to move (and the admin) only: others could count hidden-joker moves.
            ("actions_this_turn", _scalar(state.actions) if viewer == current or admin else _NULL),
            ("options", options[1]),
            ("max_garrison", _SEVEN),
            ("dealing_mode", _scalar(state.dealing[viewer]) if 0 <= viewer < seats else _NULL),
            ("outcome", outcome),
        ]
        if admin:
            parts += [
                ("dealing_modes", tuple(_scalar(m) for m in state.dealing)),
                ("shoe", tuple(_dumps(_ident_name(i)) for i in reversed(state.shoe))),
                ("discard", tuple(_dumps(_ident_name(i)) for i in state.discard)),
                ("next_token", _dumps(state.next_token)),
            ]
        out.append(tuple(parts))
    return out


def _ident_name(ident: int) -> str:
    k = ident % DECK_SIZE
    if k >= 52:
        return "joker"
    return f"{RANKS[k >> 2]} {SUITS[k & 3]}"


__all__ = ["hidden_tokens", "render", "render_many", "view_parts", "visible_cards"]
