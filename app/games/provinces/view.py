"""Provinces: what each viewer may see (rules 6.1–6.3). The only path from state to the wire.

A hidden card is a joker that has not won a duel (``card.value is None``). Its owner sees it; every
other seat and spectators see nothing of it — no placeholder, no count, no gap; the admin sees it
marked ``"hidden": true``. Events use the same filter (:func:`visible_cards`).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from app.games.base import ADMIN

from .state import DECK_SIZE, RANKS, SUITS, Card, State


def visible_cards(cards: Iterable[Card], owner: int, viewer: int) -> list[dict[str, Any]]:
    """Wire dicts of ``cards`` (owned by seat ``owner``) as seen by ``viewer`` (a seat, SPECTATOR
    or ADMIN): hidden jokers are dropped unless the viewer is the owner; the admin sees them marked.
    The card dicts are shared between views and events: read-only."""
    if viewer == owner:
        return [c.public for c in cards]
    if viewer == ADMIN:
        return [c.public if c.value is not None else {**c.public, "hidden": True} for c in cards]
    return [c.public for c in cards if c.value is not None]


def hidden_tokens(state: State, viewer: int) -> set[str]:
    """Tokens of the cards ``viewer`` must not see now: every unrevealed joker in a garrison the
    viewer does not own (none for ADMIN). Cards in the shoe and discard pile have no token."""
    if viewer == ADMIN:
        return set()
    owners = state.owners
    return {
        c.token
        for p, garrison in enumerate(state.garrisons)
        if owners[p] != viewer
        for c in garrison
        if c.value is None
    }


def render(state: State, viewer: int) -> dict[str, Any]:
    """The view of ``state`` for ``viewer`` (seat 0..n-1, SPECTATOR or ADMIN); see
    ``docs/games/provinces.md`` for the shape. ``render_many(state, [viewer])[0]``."""
    return render_many(state, (viewer,))[0]


def render_many(state: State, viewers: Sequence[int]) -> list[dict[str, Any]]:
    """``[render(state, v) for v in viewers]``, computed at once (rules 6.1–6.3 as :func:`render`).

    Each province has three possible entries: the owner's (every card, ``received``), the admin's
    (hidden jokers marked) and everyone else's (hidden jokers dropped, ``received`` None). Each is
    built once per record and shared by the views that show it; an entry whose inputs (owner,
    garrison, age, frontline, attacked, received) did not change since the last views built from
    this board is the same object as then (``board.view_memo``), so the runtime's diff skips it by
    identity. Views share these parts: read-only (callers encode them, never change them)."""
    owners = state.owners
    seats = state.seats
    admin_wanted = ADMIN in viewers
    memo = state.board.view_memo
    province_count, public_cards, all_cards, public, mine, stamp = _board_entries(state, memo)
    # The lists of the previous call are kept (with the stamp they were built at): when no entry was
    # rebuilt since, a viewer gets the very same list object, which the runtime's diff skips by identity.
    lists: dict[Any, tuple[int, list[dict[str, Any]]]] = memo.setdefault("lists", {})
    marked: list[dict[str, Any]] = []  # the admin's entries (only when ADMIN is asked for)
    kept = lists.get(ADMIN)
    if not admin_wanted:
        pass
    elif kept is not None and kept[0] == stamp:
        marked = kept[1]
    else:
        entries: list[Any] = memo["provinces"]
        for entry, garrison in zip(entries, state.garrisons, strict=True):
            admin_entry = entry[8]
            if admin_entry is None:
                public_entry, owner_entry = entry[6], entry[7]
                if public_entry["size"] == owner_entry["size"]:  # nothing hidden: the owner's entry
                    admin_entry = owner_entry
                else:
                    admin_entry = {**owner_entry, "garrison": [
                        c.public if c.value is not None else {**c.public, "hidden": True} for c in garrison]}
                entry[8] = admin_entry
            marked.append(admin_entry)
        lists[ADMIN] = (stamp, marked)
    eliminated = state.eliminated
    alive = [s not in eliminated for s in range(seats)]
    seat_key = (tuple(alive), tuple(province_count), tuple(public_cards), tuple(all_cards))
    kept_seats = memo.get("seats")
    if kept_seats is not None and kept_seats[0] == seat_key:
        seat_public, seat_all = kept_seats[1], kept_seats[2]
    else:
        seat_public = [{"seat": s, "alive": alive[s], "provinces": province_count[s], "cards": public_cards[s]}
                       for s in range(seats)]
        seat_all = [seat_public[s] if public_cards[s] == all_cards[s] else
                    {"seat": s, "alive": alive[s], "provinces": province_count[s], "cards": all_cards[s]}
                    for s in range(seats)]
        memo["seats"] = (seat_key, seat_public, seat_all)
    result = state.result
    outcome = None if result is None else result.to_wire()
    options = state.options
    shared_options = memo.get("options")
    if shared_options is None or shared_options[0] is not options:
        shared_options = memo["options"] = (options, {
            "turn_seconds": options.turn_seconds,
            "max_rounds": options.max_rounds,
            "tie_rule": options.tie_rule,
        })
    seat_order = list(state.seat_order)
    phase = "over" if result is not None else "turn"
    current = state.current
    views: list[dict[str, Any]] = []
    for viewer in viewers:
        admin = viewer == ADMIN
        if admin:
            provinces = marked
            seat_list = seat_all
        elif 0 <= viewer < seats and viewer in owners:
            kept = lists.get(viewer)
            if kept is not None and kept[0] == stamp:
                provinces = kept[1]
            else:
                provinces = [mine[p] if owner == viewer else public[p] for p, owner in enumerate(owners)]
                lists[viewer] = (stamp, provinces)
            if seat_all[viewer] is seat_public[viewer]:
                seat_list = seat_public
            else:
                kept_own = memo.get(f"seats/{viewer}")
                if kept_own is not None and kept_own[0] is seat_all[viewer] and kept_own[1] is seat_public:
                    seat_list = kept_own[2]
                else:
                    seat_list = [seat_all[s] if s == viewer else seat_public[s] for s in range(seats)]
                    memo[f"seats/{viewer}"] = (seat_all[viewer], seat_public, seat_list)
        else:  # spectators and seats without a province see every province as the public does
            provinces = public
            seat_list = seat_public
        view: dict[str, Any] = {
            "game": "provinces",
            "viewer": viewer,
            "phase": phase,
            "phase_id": state.phase_id,
            "turn": state.turn,
            "round": state.round,
            "current_seat": current,
            "seat_order": seat_order,
            "seats": seat_list,
            "provinces": provinces,
            # Counted for the seat to move (and the admin) only: others could count hidden-joker moves.
            "actions_this_turn": state.actions if viewer == current or admin else None,
            "options": shared_options[1],
            "max_garrison": 7,
            "dealing_mode": state.dealing[viewer] if 0 <= viewer < seats else None,
            "outcome": outcome,
        }
        if admin:
            view["dealing_modes"] = list(state.dealing)
            view["shoe"] = [_ident_name(i) for i in reversed(state.shoe)]
            view["discard"] = [_ident_name(i) for i in state.discard]
            view["next_token"] = state.next_token
        views.append(view)
    return views


def _board_entries(state: State, memo: dict[Any, Any]) -> tuple[
        list[int], list[int], list[int], list[dict[str, Any]], list[dict[str, Any]], int]:
    """The board part of the views: (provinces per seat, cards others see per seat, all cards per
    seat, each province's public entry, each province's owner entry, the stamp). Kept in ``memo``
    and returned as the same objects while the state's owners, garrisons and ages are the same
    tuples and the attacked/received masks are equal (a ``set_dealing`` touches none of them); the
    stamp rises whenever an entry is rebuilt. After the first call only the provinces whose inputs
    changed since the previous call are looked at again (the lists are copied and patched, the
    counts adjusted), not the whole board. Read-only, like the views."""
    owners = state.owners
    garrisons = state.garrisons
    ages = state.ages
    attacked = state.attacked
    received = state.received
    kept = memo.get("board")
    if kept is not None:
        k_owners, k_garrisons, k_ages, k_attacked, k_received = kept[0]
        if (k_owners is owners and k_garrisons is garrisons and k_ages is ages and k_attacked == attacked
                and k_received == received):
            return kept[1]
    static = state.board._static
    count = len(owners)
    last: list[Any] | None = memo.get("provinces")
    if last is None or len(last) != count:
        last = memo["provinces"] = [None] * count
        kept = None
    kept_frontline = memo.get("frontline")
    if kept_frontline is not None and kept_frontline[0] == owners:
        frontlines: list[bool] = kept_frontline[1]
    else:  # a province is on the frontline when a neighbour has another owner
        frontlines = []
        for p, _q, _r, adjacent in static:
            owner = owners[p]
            frontline = False
            for other in adjacent:
                if owners[other] != owner:
                    frontline = True
                    break
            frontlines.append(frontline)
        memo["frontline"] = (owners, frontlines)
    stamp: int = memo.get("stamp", 0)
    if kept is not None:
        out = _patched_board(state, memo, kept, last, frontlines, stamp)
    else:
        out = _whole_board(state, last, frontlines, stamp)
    memo["stamp"] = out[5]
    memo["board"] = ((owners, garrisons, ages, attacked, received), out, frontlines)
    return out


def _province_entry(state: State, p: int, frontline: bool) -> list[Any]:
    """Province ``p``'s memo entry: its inputs (owner, garrison, age, frontline, attacked, received),
    then its public entry, its owner's entry and a slot for the admin's (built when asked)."""
    _p, q, r, adjacent = state.board._static[p]
    owner = state.owners[p]
    garrison = state.garrisons[p]
    age = state.ages[p]
    was_attacked = (state.attacked >> p) & 1 == 1
    was_received = (state.received >> p) & 1 == 1
    shown = [c.public for c in garrison if c.value is not None]
    full = shown if len(shown) == len(garrison) else [c.public for c in garrison]
    # the board's own list (made once per board; views are read-only)
    base = {"id": p, "q": q, "r": r, "adjacent": adjacent, "owner": owner, "age": age}
    tail = {"frontline": frontline, "attacked": was_attacked}
    return [
        owner, garrison, age, frontline, was_attacked, was_received,
        {**base, "size": len(shown), "garrison": shown, **tail, "received": None},
        {**base, "size": len(full), "garrison": full, **tail, "received": was_received},
        None,
    ]


def _whole_board(state: State, last: list[Any], frontlines: list[bool], stamp: int) -> tuple[
        list[int], list[int], list[int], list[dict[str, Any]], list[dict[str, Any]], int]:
    """:func:`_board_entries` from scratch: every province looked at (an entry whose inputs did not
    change is kept)."""
    owners = state.owners
    garrisons = state.garrisons
    ages = state.ages
    attacked = state.attacked
    received = state.received
    seats = state.seats
    province_count = [0] * seats
    public_cards = [0] * seats  # the cards others see of each seat (no hidden joker)
    all_cards = [0] * seats  # every card (what the owner and the admin count)
    public: list[dict[str, Any]] = []  # per province: the entry of non-owners
    mine: list[dict[str, Any]] = []  # the owner's entry
    for p in range(len(owners)):
        owner = owners[p]
        frontline = frontlines[p]
        entry = last[p]
        if (entry is None or entry[0] != owner or entry[1] is not garrisons[p] or entry[2] != ages[p]
                or entry[3] is not frontline or entry[4] is not ((attacked >> p) & 1 == 1)
                or entry[5] is not ((received >> p) & 1 == 1)):
            stamp += 1
            entry = last[p] = _province_entry(state, p, frontline)
        province_count[owner] += 1
        public_entry = entry[6]
        owner_entry = entry[7]
        public_cards[owner] += public_entry["size"]
        all_cards[owner] += owner_entry["size"]
        public.append(public_entry)
        mine.append(owner_entry)
    return province_count, public_cards, all_cards, public, mine, stamp


def _patched_board(state: State, memo: dict[Any, Any], kept: Any, last: list[Any], frontlines: list[bool],
                   stamp: int) -> tuple[list[int], list[int], list[int], list[dict[str, Any]],
                                        list[dict[str, Any]], int]:
    """:func:`_board_entries` from the previous call's result (``kept``: its inputs, its result, its
    frontlines): only the provinces whose owner, garrison, age, frontline or attacked/received bit
    changed are rebuilt; the lists are copies of the previous ones with those entries replaced, and
    the counts adjusted by what the old entries held. Returns the previous result itself when no
    entry changed."""
    (k_owners, k_garrisons, k_ages, k_attacked, k_received), previous, k_frontlines = kept
    owners = state.owners
    garrisons = state.garrisons
    ages = state.ages
    count = len(owners)
    changed: list[int] = []
    bits = (state.attacked ^ k_attacked) | (state.received ^ k_received)
    same_owners = owners is k_owners
    same_garrisons = garrisons is k_garrisons
    same_ages = ages is k_ages
    same_frontlines = frontlines is k_frontlines
    for p in range(count):
        if ((not same_owners and owners[p] != k_owners[p])
                or (not same_garrisons and garrisons[p] is not k_garrisons[p])
                or (not same_ages and ages[p] != k_ages[p])
                or (not same_frontlines and frontlines[p] is not k_frontlines[p]) or (bits >> p) & 1):
            changed.append(p)
    if not changed:
        return previous
    province_count = list(previous[0])
    public_cards = list(previous[1])
    all_cards = list(previous[2])
    public = list(previous[3])
    mine = list(previous[4])
    for p in changed:
        old = last[p]
        old_owner = old[0]
        province_count[old_owner] -= 1
        public_cards[old_owner] -= old[6]["size"]
        all_cards[old_owner] -= old[7]["size"]
        stamp += 1
        entry = last[p] = _province_entry(state, p, frontlines[p])
        owner = entry[0]
        province_count[owner] += 1
        public_cards[owner] += entry[6]["size"]
        all_cards[owner] += entry[7]["size"]
        public[p] = entry[6]
        mine[p] = entry[7]
    return province_count, public_cards, all_cards, public, mine, stamp


def _ident_name(ident: int) -> str:
    k = ident % DECK_SIZE
    if k >= 52:
        return "joker"
    return f"{RANKS[k >> 2]} {SUITS[k & 3]}"


__all__ = ["visible_cards", "hidden_tokens", "render", "render_many"]
