"""Provinces: the rules engine (``shared/rules/provinces.md``).

Setup, the battle, dealing, ``apply`` and the public legality (``check_action``, ``legal_actions``);
the ``Game`` object is :class:`app.games.provinces.game.ProvincesGame`. Actions (one seat acts at
a time, on its turn; see ``docs/games/provinces.md``):

- ``{"type": "attack", "from": p, "to": q, "cards": [token, ...]}`` (rules 3.1–3.7)
- ``{"type": "move", "from": p, "to": q, "cards": [token, ...]}`` (rules 4.2, 4.3)
- ``{"type": "sort", "province": p, "order": [token, ...]}`` (rule 4.1)
- ``{"type": "set_dealing", "mode": "evenly" | "randomly" | "most_unevenly"}`` (rule 5)
- ``{"type": "end_turn"}`` (rules 2.2, 2.3)
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from app.games.base import (
    SPECTATOR,
    CardTokens,
    Event,
    IllegalAction,
    LegalAction,
    Outcome,
    Rng,
    action_type,
)

from .board import generate_board
from .state import (
    DEALING_MODES,
    DECK_SIZE,
    IDENT,
    JOKER,
    MAX_ACTIONS_PER_TURN,
    MAX_GARRISON,
    RANK,
    SUIT,
    TOKEN,
    VALUE,
    Card,
    Options,
    State,
    card_wire,
    is_joker_ident,
    new_card,
    with_value,
)
from .view import visible_cards

#: Provinces per player (rule 1.3) and starting cards per garrison.
PROVINCES_PER_SEAT = 6
STARTING_CARDS = 2


# --------------------------------------------------------------------------------------------
# setup


def setup_state(seats: int, options: Options, seed: bytes) -> State:
    """A new match for ``seats`` players (2–6): shuffled seat order, generated map, shoe of
    ``ceil(seats / 2)`` decks, provinces dealt round-robin, 2 cards per starting garrison with no
    joker (rules 1.1, 1.3, 2.1). Raises ValueError for a bad seat count."""
    if type(seats) is not int or not 2 <= seats <= 6:
        raise ValueError("provinces needs 2 to 6 seats")
    rng = Rng(seed)
    seat_order = list(range(seats))
    rng.shuffle(seat_order)
    board = generate_board(rng, PROVINCES_PER_SEAT * seats)
    decks = (seats + 1) // 2
    shoe = list(range(decks * DECK_SIZE))
    rng.shuffle(shoe)
    order = list(range(board.size))
    rng.shuffle(order)
    owners = [0] * board.size
    for i, p in enumerate(order):
        owners[p] = seat_order[i % seats]
    tokens = CardTokens(seed)
    next_token = 0
    garrisons = []
    for _p in range(board.size):
        garrison: list[Card] = []
        while len(garrison) < STARTING_CARDS:
            ident = shoe.pop()
            if is_joker_ident(ident):
                # Rule 1.3: a joker drawn for a starting garrison is shuffled back in.
                shoe.insert(rng.randbelow(len(shoe) + 1), ident)
                continue
            garrison.append(new_card(tokens.token(next_token), ident))
            next_token += 1
        garrisons.append(tuple(garrison))
    return State(
        seats=seats,
        seat_order=tuple(seat_order),
        board=board,
        options=options,
        owners=tuple(owners),
        garrisons=tuple(garrisons),
        ages=(0,) * board.size,
        dealing=("evenly",) * seats,
        shoe=tuple(shoe),
        discard=(),
        rng=rng,
        tokens=tokens,
        next_token=next_token,
    )


# --------------------------------------------------------------------------------------------
# argument parsing (nothing a client sends is trusted)


def _province(state: State, action: Mapping[str, Any], key: str) -> int:
    value = action.get(key)
    if type(value) is not int:
        raise IllegalAction("malformed_action", f"'{key}' must be a province id (integer)")
    if not 0 <= value < state.board.size:
        raise IllegalAction("unknown_province", f"no province {value}")
    return value


def _route(state: State, seat: int, action: Mapping[str, Any]) -> tuple[int, int]:
    """``from`` and ``to`` of an attack or move: ``from`` is the seat's, ``to`` adjacent to it."""
    src = _province(state, action, "from")
    dst = _province(state, action, "to")
    if state.owners[src] != seat:
        raise IllegalAction("not_your_province", "cards can only leave a province of yours")
    if dst not in state.board.adjacent[src]:
        raise IllegalAction("not_adjacent", "the target is not adjacent")
    return src, dst


def _chosen_cards(garrison: tuple[Card, ...], raw: Any, key: str) -> list[int]:
    """Indices (ascending, i.e. garrison order) of the tokens listed in ``raw``."""
    if not isinstance(raw, (list, tuple)):
        raise IllegalAction("malformed_action", f"'{key}' must be a list of card ids")
    if not raw:
        raise IllegalAction("no_cards", f"'{key}' must name at least one card")
    if len(raw) > MAX_GARRISON:
        raise IllegalAction("unknown_card", f"'{key}' names more cards than a garrison holds")
    where = {c[TOKEN]: i for i, c in enumerate(garrison)}
    chosen = set()
    for token in raw:
        if type(token) is not str:
            raise IllegalAction("malformed_action", "card ids are strings")
        i = where.get(token)
        if i is None:
            raise IllegalAction("unknown_card", "a named card is not in that garrison")
        if i in chosen:
            raise IllegalAction("duplicate_card", "a card is named twice")
        chosen.add(i)
    return sorted(chosen)


def _split_events(
    kind: str, build, seats: int, hidden_owners: list[int]
) -> list[Event]:
    """One event for everyone, or — when seats in ``hidden_owners`` have hidden jokers in it — one
    version per such seat plus a public version for everyone else (spectators included, as seat
    ``SPECTATOR`` in the audience). ``build(viewer)`` returns the data redacted for ``viewer`` or
    None when the public version would be empty (then nothing is sent to the others)."""
    if not hidden_owners:
        return [Event(kind, build(SPECTATOR))]
    events = []
    for seat in hidden_owners:
        events.append(Event(kind, build(seat), frozenset((seat,))))
    public = build(SPECTATOR)
    if public is not None:
        others = frozenset(s for s in range(seats) if s not in hidden_owners) | {SPECTATOR}
        events.append(Event(kind, public, others))
    return events


# --------------------------------------------------------------------------------------------
# battle (rules 3.2–3.7)


class Duel:
    __slots__ = ("attacker", "defender", "winner", "card", "attacker_stack", "defender_stack")

    def __init__(self, attacker, defender, winner, card, attacker_stack, defender_stack) -> None:
        self.attacker = attacker
        self.defender = defender
        self.winner = winner  # "attacker" | "defender" | "none"
        self.card = card  # the winning card after the duel, or None
        self.attacker_stack = attacker_stack
        self.defender_stack = defender_stack


def fight(
    attacking: list[Card], defending: list[Card], tie_rule: str,
) -> tuple[list[Duel], list[Card], list[Card], list[Card], bool, bool]:
    """Run a battle (rules 3.2–3.5). Returns ``(duels, attacker_survivors, defender_survivors,
    destroyed, attacker_routed, defender_routed)``; survivors in their final order. ``defending``
    must not be empty (rule 3.7: an empty province is taken without a duel)."""
    a_stack = list(attacking)
    d_stack = list(defending)
    a_start = len(a_stack)
    d_start = len(d_stack)
    a_lost = d_lost = 0
    duels: list[Duel] = []
    destroyed: list[Card] = []
    defender_wins_ties = tie_rule == "defender_wins"
    while True:
        a = a_stack.pop(0)
        d = d_stack.pop(0)
        av = a[VALUE]
        dv = d[VALUE]
        card = None
        if av is None or dv is None:
            if av is None and dv is None:  # rule 3.3: joker against joker
                winner = "none"
            elif av is None:  # rule 3.4: the joker turns into the beaten card
                winner = "attacker"
                card = (a[TOKEN], a[IDENT], d[RANK], d[SUIT], dv)
            else:
                winner = "defender"
                card = (d[TOKEN], d[IDENT], a[RANK], a[SUIT], av)
        elif av > dv:
            winner = "attacker"
            card = with_value(a, max(av - 1, 0))
        elif dv > av or defender_wins_ties:
            winner = "defender"
            card = with_value(d, max(dv - 1, 0))
        else:
            winner = "none"
        if winner == "attacker":
            assert card is not None  # set with every winner other than "none"
            a_stack.append(card)
            destroyed.append(d)
            d_lost += 1
        elif winner == "defender":
            assert card is not None
            d_stack.append(card)
            destroyed.append(a)
            a_lost += 1
        else:
            destroyed.append(a)
            destroyed.append(d)
            a_lost += 1
            d_lost += 1
        duels.append(Duel(a, d, winner, card, tuple(a_stack), tuple(d_stack)))
        a_routed = 2 * a_lost >= a_start
        d_routed = 2 * d_lost >= d_start
        if a_routed or d_routed:
            return duels, a_stack, d_stack, destroyed, a_routed, d_routed


def battle_result(attacking: Sequence[int | None], defending: Sequence[int | None], tie_rule: str) -> tuple[bool, int]:
    """The result of a battle on card values alone (None = an unrevealed joker), by rules 3.2–3.7:
    ``(conquered, attacker_survivors)``. An empty ``defending`` is taken without a duel. Bots judge
    an attack on the garrison they can see with it (the same :func:`fight` as the engine)."""
    if not defending:
        return True, len(attacking)

    def cards(values: Sequence[int | None]) -> list[Card]:
        return [("", 0, JOKER if v is None else "", None, v) for v in values]

    _, survivors, _, _, a_routed, d_routed = fight(cards(attacking), cards(defending), tie_rule)
    return d_routed and not a_routed, len(survivors)


# --------------------------------------------------------------------------------------------
# dealing (rules 2.3, 5)


def _draw(state: State, count: int) -> list[int]:
    """Draw up to ``count`` idents from the shoe of (already cloned) ``state``, reshuffling the
    discard pile in when the shoe runs out (rule 1.1); fewer when both are empty (rule 2.3)."""
    shoe = list(state.shoe)
    drawn = []
    for _ in range(count):
        if not shoe:
            if not state.discard:
                break
            shoe = list(state.discard)
            state.discard = ()
            state.rng.shuffle(shoe)
        drawn.append(shoe.pop())
    state.shoe = tuple(shoe)
    return drawn


def _reinforce(state: State, seat: int) -> list[Event]:
    """Rule 2.3 / 5: deal ``seat`` one card per province it holds, by its dealing mode; cards go
    to the bottom (5.4); cards with no room are discarded. Mutates the already cloned ``state``."""
    mine = [p for p, owner in enumerate(state.owners) if owner == seat]
    ages = state.ages
    mine.sort(key=lambda p: (ages[p], p))  # rule 1.5: oldest first
    drawn = _draw(state, len(mine))
    garrisons = list(state.garrisons)
    room = {p: MAX_GARRISON - len(garrisons[p]) for p in mine}
    mode = state.dealing[seat]
    placed_in: list[int | None] = []
    cursor = 0
    for _ident in drawn:
        target = None
        if mode == "evenly":
            for step in range(len(mine)):
                p = mine[(cursor + step) % len(mine)]
                if room[p] > 0:
                    target = p
                    cursor = (cursor + step + 1) % len(mine)
                    break
        elif mode == "most_unevenly":
            for p in mine:
                if room[p] > 0:
                    target = p
                    break
        else:  # randomly
            open_ = [p for p in mine if room[p] > 0]
            if open_:
                target = open_[state.rng.randbelow(len(open_))]
        if target is not None:
            room[target] -= 1
        placed_in.append(target)
    placements: list[tuple[int, Card]] = []
    discarded: list[int] = []
    added: dict[int, list[Card]] = {}
    next_token = state.next_token
    tokens = state.tokens
    for ident, target in zip(drawn, placed_in, strict=True):
        if target is None:
            discarded.append(ident)
            continue
        card = new_card(tokens.token(next_token), ident)
        next_token += 1
        placements.append((target, card))
        added.setdefault(target, []).append(card)
    for p, cards in added.items():
        garrisons[p] = garrisons[p] + tuple(cards)
    state.next_token = next_token
    state.garrisons = tuple(garrisons)
    if discarded:
        state.discard = state.discard + tuple(discarded)

    has_joker = any(is_joker_ident(i) for i in drawn)

    def build(viewer: int) -> dict:
        if viewer == seat:
            return {
                "seat": seat,
                "cards": [{"province": p, "card": card_wire(c)} for p, c in placements],
                "discarded": len(discarded),
            }
        return {
            "seat": seat,
            "cards": [{"province": p, "card": card_wire(c)} for p, c in placements if c[VALUE] is not None],
            "discarded": sum(1 for i in discarded if not is_joker_ident(i)),
        }

    return _split_events("reinforced", build, state.seats, [seat] if has_joker else [])


# --------------------------------------------------------------------------------------------
# outcome (rule 2.4)


def _finish(state: State, reason: str) -> Outcome:
    """Ranks: survivors by (provinces, cards on the board) — equal keys share a rank — then the
    eliminated, the last eliminated first. Scores: provinces held."""
    provinces = [0] * state.seats
    cards = [0] * state.seats
    for p, owner in enumerate(state.owners):
        provinces[owner] += 1
        cards[owner] += len(state.garrisons[p])
    survivors = [s for s in range(state.seats) if provinces[s] > 0]
    survivors.sort(key=lambda s: (-provinces[s], -cards[s], s))
    ranks: dict[int, int] = {}
    for i, s in enumerate(survivors):
        if i and (provinces[s], cards[s]) == (provinces[survivors[i - 1]], cards[survivors[i - 1]]):
            ranks[s] = ranks[survivors[i - 1]]
        else:
            ranks[s] = i + 1
    place = len(survivors)
    for s in reversed(state.eliminated):
        place += 1
        ranks[s] = place
    return Outcome(
        ranks={s: ranks[s] for s in range(state.seats)},
        scores={s: provinces[s] for s in range(state.seats)},
        reason=reason,
    )


def _over_events(state: State) -> list[Event]:
    assert state.result is not None  # called once the result is set
    return [Event("match_over", state.result.to_wire())]


# --------------------------------------------------------------------------------------------
# the game object


# --------------------------------------------------------------------------------------------
# apply and public legality


def apply(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Apply ``action`` by ``seat``; returns the new state and events. Never mutates ``state``.

    Raises IllegalAction: ``match_over``, ``malformed_action``, ``unknown_action``,
    ``not_your_turn``, ``action_limit`` and the codes of each action (docs/games/provinces.md)."""
    if state.result is not None:
        raise IllegalAction("match_over", "the match is over")
    # Fast path for the usual plain dict; anything else goes through the shared checks.
    kind = action.get("type") if type(action) is dict else action_type(action)
    if type(kind) is not str:
        raise IllegalAction("malformed_action", "an action needs a string 'type'")
    if type(seat) is not int or seat != state.current:
        raise IllegalAction("not_your_turn", "it is not your turn")
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise IllegalAction("unknown_action", f"unknown action type {kind[:40]!r}")
    if kind != "end_turn" and state.actions >= MAX_ACTIONS_PER_TURN:
        raise IllegalAction("action_limit", "too many actions this turn; end the turn")
    return handler(state, seat, action)


def check_action(state: State, seat: int, action: Mapping[str, Any]) -> None:
    """Raise the IllegalAction ``apply`` would raise for ``action`` by ``seat`` now; None if legal.

    The checks are those of :func:`apply` and its handlers (they run before any change and the
    input state is never mutated), so legality has one definition."""
    apply(state, seat, action)


def is_frontline(state: State, province: int) -> bool:
    """True if ``province`` borders a province of another seat (rule 4.1)."""
    owner = state.owners[province]
    return any(state.owners[o] != owner for o in state.board.adjacent[province])


def legal_actions(state: State, seat: int) -> list[LegalAction]:
    """The legal kinds of action for ``seat`` now (rules 2.2, 3.1, 4.1–4.3, 5), each with a legal
    example and its domains: ``attack``/``move`` routes with the cards that may go (``subset_of``
    the garrison, ``max`` the room), ``sort`` of a frontline garrison (``permutation_of``),
    ``set_dealing`` (``mode`` among the dealing modes) and ``end_turn``. ``[]`` if it is not the
    seat's turn or the match is over."""
    if state.result is not None or seat != state.current:
        return []
    out: list[LegalAction] = []
    if state.actions < MAX_ACTIONS_PER_TURN:
        owners = state.owners
        for p, garrison in enumerate(state.garrisons):
            if owners[p] != seat or not garrison:
                continue
            tokens = [c[TOKEN] for c in garrison]
            received = state.received >> p & 1
            for q in state.board.adjacent[p]:
                if owners[q] != seat:
                    if not received and not state.attacked >> p & 1:
                        out.append(LegalAction("attack", {"type": "attack", "from": p, "to": q, "cards": tokens},
                                               {"from": [p], "to": [q],
                                                "cards": {"subset_of": tokens, "min": 1, "max": len(tokens)}}))
                elif not received:
                    room = MAX_GARRISON - len(state.garrisons[q])
                    if room > 0:
                        count = min(room, len(tokens))
                        out.append(LegalAction("move", {"type": "move", "from": p, "to": q, "cards": tokens[:count]},
                                               {"from": [p], "to": [q],
                                                "cards": {"subset_of": tokens, "min": 1, "max": count}}))
            if is_frontline(state, p):
                out.append(LegalAction("sort", {"type": "sort", "province": p, "order": tokens},
                                       {"province": [p], "order": {"permutation_of": tokens}}))
        out.append(LegalAction("set_dealing", {"type": "set_dealing", "mode": DEALING_MODES[0]},
                               {"mode": list(DEALING_MODES)}))
    out.append(LegalAction("end_turn", {"type": "end_turn"}))
    return out


# -- actions ----------------------------------------------------------------------------------


def _attack(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Rules 3.1–3.7: attack an adjacent province of another seat with chosen cards."""
    src, dst = _route(state, seat, action)
    owners = state.owners
    if owners[dst] == seat:
        raise IllegalAction("own_province", "you cannot attack your own province")
    if state.attacked >> src & 1:
        raise IllegalAction("already_attacked", "that province has already attacked this turn")
    if state.received >> src & 1:
        raise IllegalAction("received_this_turn", "a province that received cards this turn cannot attack")
    garrison = state.garrisons[src]
    chosen = _chosen_cards(garrison, action.get("cards"), "cards")
    chosen_set = set(chosen)
    stack = [garrison[i] for i in chosen]
    stay = tuple(c for i, c in enumerate(garrison) if i not in chosen_set)
    defender = owners[dst]
    defending = state.garrisons[dst]

    new = state.clone()
    new.actions = state.actions + 1
    new.attacked = state.attacked | (1 << src)
    garrisons = list(state.garrisons)
    new_owners = owners
    destroyed: list[Card] = []
    retreat_to = None
    retreated: tuple[Card, ...] = ()
    retreat_lost: tuple[Card, ...] = ()
    if defending:
        duels, survivors, d_survivors, destroyed, a_routed, d_routed = fight(
            stack, list(defending), state.options.tie_rule)
    else:  # rule 3.7: an empty province is taken without a duel
        duels, survivors, d_survivors, a_routed, d_routed = [], stack, [], False, True
    conquered = d_routed and not a_routed
    if conquered:  # rule 3.6
        owners_after = list(owners)
        owners_after[dst] = seat
        new_owners = tuple(owners_after)
        new.owners = new_owners
        ages = list(state.ages)
        ages[dst] = state.turn
        new.ages = tuple(ages)
        new.received = state.received | (1 << dst)
        garrisons[src] = stay
        garrisons[dst] = tuple(survivors)
        if d_survivors:
            best_room = -1
            for p in state.board.adjacent[dst]:  # ascending ids: ties go to the lowest
                if new_owners[p] == defender:
                    room = MAX_GARRISON - len(garrisons[p])
                    if room > best_room:
                        best_room, retreat_to = room, p
            if retreat_to is None:
                retreat_lost = tuple(d_survivors)
            else:
                retreated = tuple(d_survivors[:best_room])
                retreat_lost = tuple(d_survivors[best_room:])
                garrisons[retreat_to] = garrisons[retreat_to] + retreated
            destroyed = destroyed + list(retreat_lost)
    else:  # rule 3.7: the surviving stack returns on top
        garrisons[src] = tuple(survivors) + stay
        garrisons[dst] = tuple(d_survivors)
    new.garrisons = tuple(garrisons)
    if destroyed:
        new.discard = state.discard + tuple(c[IDENT] for c in destroyed)

    attacker_hidden = any(c[VALUE] is None for c in stack)
    defender_hidden = any(c[VALUE] is None for c in defending)

    def build(viewer: int) -> dict:
        def of_a(cards):
            return visible_cards(cards, seat, viewer)

        def of_d(cards):
            return visible_cards(cards, defender, viewer)

        return {
            "seat": seat,
            "defender": defender,
            "from": src,
            "to": dst,
            "attacking": of_a(stack),
            "defending": of_d(defending),
            "duels": [
                {
                    "attacker": card_wire(duel.attacker),
                    "defender": card_wire(duel.defender),
                    "winner": duel.winner,
                    "card": None if duel.card is None else card_wire(duel.card),
                    "attacker_stack": of_a(duel.attacker_stack),
                    "defender_stack": of_d(duel.defender_stack),
                }
                for duel in duels
            ],
            "routed": [side for side, hit in (("attacker", a_routed), ("defender", d_routed)) if hit] if duels else [],
            "result": "conquered" if conquered else "repelled",
            "occupying": of_a(survivors) if conquered else [],
            "returned": [] if conquered else of_a(survivors),
            "retreat": {"to": retreat_to, "cards": of_d(retreated), "destroyed": of_d(retreat_lost)}
            if conquered and d_survivors
            else None,
        }

    hidden_owners = [s for s, hit in ((seat, attacker_hidden), (defender, defender_hidden)) if hit]
    events = _split_events("battle", build, state.seats, hidden_owners)
    if conquered and defender not in new_owners:
        new.eliminated = state.eliminated + (defender,)
        events.append(Event("eliminated", {"seat": defender}))
        alive = {o for o in new_owners}
        if len(alive) == 1:
            new.result = _finish(new, "last_standing")
            new.current = None
            events.extend(_over_events(new))
    return new, events


def _move(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Rules 4.2, 4.3: move chosen cards to the bottom of an adjacent own province (≤ 7 cards)."""
    src, dst = _route(state, seat, action)
    owners = state.owners
    if owners[dst] != seat:
        raise IllegalAction("not_your_province", "you can only move cards into your own province")
    if state.received >> src & 1:
        raise IllegalAction("received_this_turn", "a province that received cards this turn cannot move cards out")
    garrison = state.garrisons[src]
    chosen = _chosen_cards(garrison, action.get("cards"), "cards")
    target = state.garrisons[dst]
    if len(target) + len(chosen) > MAX_GARRISON:
        raise IllegalAction("garrison_full", f"the target would hold more than {MAX_GARRISON} cards")
    chosen_set = set(chosen)
    moving = tuple(garrison[i] for i in chosen)
    new = state.clone()
    new.actions = state.actions + 1
    new.received = state.received | (1 << dst)
    garrisons = list(state.garrisons)
    garrisons[src] = tuple(c for i, c in enumerate(garrison) if i not in chosen_set)
    garrisons[dst] = target + moving
    new.garrisons = tuple(garrisons)

    def build(viewer: int) -> dict | None:
        cards = visible_cards(moving, seat, viewer)
        if not cards:
            return None
        return {"seat": seat, "from": src, "to": dst, "cards": cards}

    hidden = [seat] if any(c[VALUE] is None for c in moving) else []
    return new, _split_events("moved", build, state.seats, hidden)


def _sort(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Rule 4.1: reorder the garrison of one of your frontline provinces (``order``: every token of
    the garrison, top first). A sort that leaves the order of the cards others see as it was (it
    moved only hidden jokers, or nothing) is private: only the seat gets its ``sorted`` event (6.4)."""
    p = _province(state, action, "province")
    owners = state.owners
    if owners[p] != seat:
        raise IllegalAction("not_your_province", "you can only sort your own province")
    if all(owners[o] == seat for o in state.board.adjacent[p]):
        raise IllegalAction("not_frontline", "only a frontline province can be sorted")
    raw = action.get("order")
    if not isinstance(raw, (list, tuple)):
        raise IllegalAction("malformed_action", "'order' must be a list of card ids")
    garrison = state.garrisons[p]
    if len(raw) != len(garrison):
        raise IllegalAction("bad_order", "'order' must list every card of the garrison exactly once")
    where = {c[TOKEN]: c for c in garrison}
    seen = set()
    ordered = []
    for token in raw:
        if type(token) is not str:
            raise IllegalAction("malformed_action", "card ids are strings")
        card = where.get(token)
        if card is None or token in seen:
            raise IllegalAction("bad_order", "'order' must list every card of the garrison exactly once")
        seen.add(token)
        ordered.append(card)
    new = state.clone()
    new.actions = state.actions + 1
    garrisons = list(state.garrisons)
    garrisons[p] = tuple(ordered)
    new.garrisons = tuple(garrisons)

    seen_before = [c[TOKEN] for c in garrison if c[VALUE] is not None]
    seen_after = [c[TOKEN] for c in ordered if c[VALUE] is not None]
    if seen_after == seen_before:  # nothing another viewer may see has changed (6.4)
        return new, [Event("sorted", {"seat": seat, "province": p, "order": [c[TOKEN] for c in ordered]},
                           frozenset((seat,)))]

    def build(viewer: int) -> dict | None:
        cards = visible_cards(ordered, seat, viewer)
        return {"seat": seat, "province": p, "order": [c["id"] for c in cards]}

    hidden = [seat] if len(seen_after) != len(ordered) else []
    return new, _split_events("sorted", build, state.seats, hidden)


def _set_dealing(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Rule 5: choose the dealing mode (private to the seat, rule 6.2)."""
    mode = action.get("mode")
    if type(mode) is not str:
        raise IllegalAction("malformed_action", "'mode' must be a string")
    if mode not in DEALING_MODES:
        raise IllegalAction("unknown_mode", f"mode must be one of {', '.join(DEALING_MODES)}")
    new = state.clone()
    new.actions = state.actions + 1
    dealing = list(state.dealing)
    dealing[seat] = mode
    new.dealing = tuple(dealing)
    return new, [Event("dealing_mode_set", {"seat": seat, "mode": mode}, frozenset((seat,)))]


def _end_turn(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Rules 2.2–2.4: reinforce the seat, then pass the turn to the next seat with provinces;
    after ``max_rounds`` full rounds the match is decided."""
    new = state.clone()
    new.rng = state.rng.clone()
    events = [Event("turn_ended", {"seat": seat, "turn": state.turn})]
    events.extend(_reinforce(new, seat))
    order = state.seat_order
    index = order.index(seat)
    owners = new.owners
    n = len(order)
    nxt = index
    for step in range(1, n + 1):
        candidate = (index + step) % n
        if order[candidate] in owners:
            nxt = candidate
            break
    new.turn = state.turn + 1
    new.attacked = 0
    new.received = 0
    new.actions = 0
    if nxt <= index:  # a full round is complete
        if state.round >= state.options.max_rounds:
            new.result = _finish(new, "max_rounds")
            new.current = None
            events.extend(_over_events(new))
            return new, events
        new.round = state.round + 1
    new.current = order[nxt]
    new.phase_id = state.phase_id + 1
    events.append(Event("turn_started", {
        "seat": new.current, "turn": new.turn, "round": new.round, "phase_id": new.phase_id,
    }))
    return new, events


_HANDLERS = {
    "attack": _attack,
    "move": _move,
    "sort": _sort,
    "set_dealing": _set_dealing,
    "end_turn": _end_turn,
}
