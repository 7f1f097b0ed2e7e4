"""Hold'em Conquest round and battle machinery (conquest.md 2-3, 5 in the final): the phase resolvers run
inside ``apply`` once a simultaneous phase is complete - orders, defence, assignment, the turn and river
steps, the final, the end of the round and of the match.
"""
from __future__ import annotations

from typing import Any, Iterable

from app.games.base import Event, Rng
from app.games.conquest import poker
from app.games.conquest.costs import (
    activation_cost,
    defence_cost,
    fold_refund,
    hand_size,
    insurance_refund,
    land_income,
    max_battles,
    stage_cost,
    tie_refund,
)
from app.games.conquest.poker import NAMES as _NAMES
from app.games.conquest.queries import _compute_targets
from app.games.conquest.state import (
    ASSIGN,
    DECK,
    DEFENCE,
    FIXED,
    FLOP,
    FOLD_RIVER,
    FOLD_TURN,
    LIVE,
    MAX_BATTLES,
    NEUTRAL,
    ORDERS,
    OUT_RIVER,
    OUT_TURN,
    OVER,
    RIVER,
    STAGE_DONE,
    STAGE_RIVER,
    STAGE_TURN,
    TURN,
    Battle,
    Dealt,
    State,
    Table,
    table,
)


def _fresh_table(st: State, stacked: list[int] | None = None) -> Table:
    """A table whose own 52-card deck is reshuffled, with a new face-down flop (1.3). ``stacked``
    (test support): the whole deck in order, top first."""
    if stacked is not None:
        return table(bytes(stacked[:3]), bytes(stacked[3:]), 49)
    # The flop: 3 uniformly random cards, drawn as ``_take`` would from the full deck (the k-th
    # card left in ascending order, for k = randbelow(52), randbelow(51), randbelow(50)); the rest
    # stays an unordered remainder in ascending order.
    randbelow = st.rng.randbelow
    first = randbelow(52)
    second = randbelow(51)
    if second >= first:
        second += 1
    low, high = (first, second) if first < second else (second, first)
    third = randbelow(50)
    if third >= low:
        third += 1
        if third >= high:
            third += 1
        x, y, z = (low, third, high) if third < high else (low, high, third)
    else:
        x, y, z = third, low, high
    full = _FULL_DECK
    return table(bytes((first, second, third)), full[:x] + full[x + 1:y] + full[y + 1:z] + full[z + 1:], 0)


_FULL_DECK = bytes(range(52))


def _take(rng: Rng, deck: bytes, fixed: int, skip) -> tuple[int, bytes, int]:
    """Draw one card from ``deck`` leaving out the cards in ``skip``: the first of the ``fixed``
    (stacked) top cards not skipped, else a uniformly random one of the unordered rest.
    Returns ``(card, rest of the deck, fixed count of the rest)``."""
    for i in range(fixed):
        if deck[i] not in skip:
            return deck[i], deck[:i] + deck[i + 1:], fixed - 1
    size = len(deck) - fixed
    randbelow = rng.randbelow
    while True:
        j = fixed + randbelow(size)
        card = deck[j]
        if card not in skip:
            return card, deck[:j] + deck[j + 1:], fixed


# --------------------------------------------------------------------------------------------
# Phase machinery
# --------------------------------------------------------------------------------------------

def _enter(st: State, phase: str, required: Iterable[int]) -> None:
    st.phase = phase
    st.phase_id += 1
    st.submissions = {}
    st.order_prices = {}
    st.required = frozenset(required)


def _run(st: State, events: list[Event]) -> None:
    """Resolve phases whose every required submission is in, until one waits or the match ends."""
    while st.phase != OVER and len(st.submissions) >= len(st.required):
        _RESOLVERS[st.phase](st, events)


def _start_round(st: State, events: list[Event]) -> None:
    """Open round ``st.round``'s ORDERS phase (2.1): prompts for living seats with mana and a target."""
    st.attacks = {}
    st.defences = ()
    st.passed = ()
    events.append(Event("round_started", {"round": st.round}))
    st.targets = _compute_targets(st)
    mana = st.mana
    required = [seat for seat, lands in st.targets.items() if mana[seat] > 0 and lands]
    _enter(st, ORDERS, required)


def _resolve_orders(st: State, events: list[Event]) -> None:
    """Pay the activations, reveal them to all (2.1, 2.2) and open DEFENCE.

    Each order costs what it cost when it was submitted (reserved since, so mana stays >= 0, 1.4).
    A shield put on its table after that (5.3.1.1) adds its N only if the attacker can still pay
    it: the shield's price is paid before acting, so an attack whose N the attacker cannot pay is
    *withdrawn* and costs nothing (tables in ascending land id, each withdrawal freeing its price
    for the next). Only the attacker is told (``attacks_withdrawn``)."""
    mana = st.mana
    submissions = st.submissions
    prices = st.order_prices
    attacks: dict[int, list[int]] = {}
    made: dict[int, int] = {}
    withdrawn: dict[int, list[int]] = {}
    for seat in sorted(submissions):
        lands = submissions[seat]
        reserved = prices.get(seat)
        if reserved is None:  # not expected: ``apply`` records the prices with the orders
            reserved = tuple(activation_cost(st, seat, land) for land in lands)
        left = mana[seat] - sum(reserved)
        for land, paid in zip(lands, reserved, strict=True):
            extra = activation_cost(st, seat, land) - paid if st.shields else 0
            if extra > left:
                withdrawn.setdefault(seat, []).append(land)
                left += paid
                continue
            left -= extra
            attacks.setdefault(land, []).append(seat)
            made[seat] = made.get(seat, 0) + 1
        mana[seat] = left
    st.attacks = {land: tuple(attacks[land]) for land in sorted(attacks)}
    events.append(Event("activations", {
        "attacks": [{"land": land, "attackers": list(seats)} for land, seats in st.attacks.items()],
        "mana": list(mana),
    }))
    for seat, lands in withdrawn.items():
        events.append(Event("attacks_withdrawn", {"seat": seat, "lands": lands, "reason": "shield"},
                            frozenset((seat,))))
    # prompted: seats with an attacked land (``defendable``), mana, and fewer than MAX_BATTLES
    # activations
    owner = st.owner
    attacked = {owner[land] for land in attacks}
    required = [seat for seat in range(st.seats)
                if mana[seat] > 0 and seat in attacked
                and made.get(seat, 0) < (max_battles(st, seat) if st.active else MAX_BATTLES)]
    _enter(st, DEFENCE, required)


def _resolve_defence(st: State, events: list[Event]) -> None:
    """Pay the defences, pass undefended tables with one attacker (2.2), create the battles, deal
    the pools (2.3) and open ASSIGN."""
    mana = st.mana
    submissions = st.submissions
    defended = set()
    for seat in sorted(submissions):
        for land in submissions[seat]:
            mana[seat] -= defence_cost(st, seat, land)
            defended.add(land)
    st.defences = tuple(sorted(defended))
    events.append(Event("defences", {"lands": list(st.defences), "mana": list(mana)}))
    battles: dict[int, Battle] = {}
    lands_of: dict[int, list[int]] = {}
    passed = []
    owner = st.owner
    tables = st.tables
    for land, attackers in st.attacks.items():  # ascending land id, so ``battles`` is too
        holder = owner[land]
        defender = holder if land in defended else None
        if holder != NEUTRAL and defender is None and len(attackers) == 1:
            owner[land] = attackers[0]
            passed.append((land, holder, attackers[0]))
            events.append(Event("table_passed", {"land": land, "from": holder, "to": attackers[0]}))
            continue
        dealt_table = tables[land]
        battle = battles[land] = Battle(land, holder, attackers, defender, dealt_table[DECK], dealt_table[FIXED])
        for seat in battle.paid:
            lands_of.setdefault(seat, []).append(land)
    st.passed = tuple(passed)
    st.battles = battles
    st.battle_lands = {seat: bytes(lands) for seat, lands in lands_of.items()}
    if st.active or st.hand_sizes:  # double_hand (5.3.2.4): 4 cards a hand this round
        st.hand_sizes = {seat: 4 for seat in lands_of if st.has(seat, "double_hand")}
    pools = dict(st.pools)  # replaced, never changed in place (State.clone shares it)
    required = []
    for seat in range(st.seats):
        lands = lands_of.get(seat)
        if not lands:
            continue
        pool = _deal_pool(st, seat, lands)
        events.append(Event("pool_dealt", {"seat": seat, "lands": lands,
                                           "cards": [{"id": token, "card": _NAMES[card]} for card, token in pool]},
                            frozenset((seat,))))
        if len(pool) != 2 * len(lands):  # specials (5.3.2.4, 5.3.2.5): bigger hands or pools
            if len(lands) == 1 and len(pool) == hand_size(st, seat):
                battles[lands[0]].hands[seat] = pool
            else:
                pools[seat] = pool
                required.append(seat)
        elif len(lands) == 1:  # one table: nothing to decide
            battles[lands[0]].hands[seat] = pool
        else:
            pools[seat] = pool
            required.append(seat)
    st.pools = pools
    _enter(st, ASSIGN, required)


def _deal_pool(st: State, seat: int, lands: list[int]) -> tuple[Dealt, ...]:
    """2 cards per battle table from the seat's own deck for this round, which leaves out the flops
    of those tables (2.3)."""
    tables = st.tables
    excluded: set[int] = set()
    for land in lands:
        excluded.update(tables[land][FLOP])
    stacked = []
    if st.pool_stack:  # test support; replaced, never changed in place (State.clone shares it)
        stack = dict(st.pool_stack)
        stacked = [c for c in stack.pop(seat, ()) if c not in excluded]
        st.pool_stack = stack
    excluded.update(stacked)
    rest = list(_FULL_DECK)  # the cards not excluded, ascending: card c sits at index c until removed
    for card in sorted(excluded, reverse=True):
        del rest[card]
    size = 2 * len(lands)
    if st.active and seat in st.active:  # 5.3.2.4 double_hand: 4 a table; 5.3.2.5 double_set: 4 a table attacked
        if st.has(seat, "double_hand"):
            size = 4 * len(lands)
        elif st.has(seat, "double_set"):
            size = sum(4 if seat in st.battles[land].attackers else 2 for land in lands)
    randbelow = st.rng.randbelow
    left = len(rest)
    for i in range(size - len(stacked)):  # partial Fisher–Yates: only the cards dealt are drawn
        j = i + randbelow(left - i)
        rest[i], rest[j] = rest[j], rest[i]
    cards = (stacked + rest)[:size] if stacked else rest[:size]
    first = st.dealt
    st.dealt = first + len(cards)
    return tuple(zip(cards, map(st.tokens.token, range(first, st.dealt)), strict=True))


def _resolve_assign(st: State, events: list[Event]) -> None:
    """Set the submitted hands, start every battle (flop revealed 3.1, the neutral's hand dealt) and
    run the turn step."""
    battles = st.battles
    submissions = st.submissions
    for seat in sorted(submissions):
        hands = submissions[seat]
        for land, hand in hands:
            battles[land].hands[seat] = hand
        data: dict[str, Any] = {"seat": seat, "hands": [
            {"land": land, "cards": [{"id": token, "card": _NAMES[card]} for card, token in hand]}
            for land, hand in hands]}
        pool = st.pools[seat]
        if len(pool) > sum(len(hand) for _, hand in hands):  # double_set: the extra cards burn (5.3.2.5)
            used = {dealt[1] for _, hand in hands for dealt in hand}
            data["burned"] = [token for _, token in pool if token not in used]
        events.append(Event("hands_set", data, frozenset((seat,))))
    st.pools = {}
    if not battles:
        _end_round(st, events)
        return
    started = []
    tables = st.tables
    issue = st.tokens.token
    for land, battle in battles.items():  # ascending land id
        cards = tables[land][FLOP]
        first = st.dealt
        st.dealt = first + len(cards)
        flop = battle.flop = tuple(zip(cards, map(issue, range(first, st.dealt)), strict=True))
        holder = battle.holder
        if holder == NEUTRAL:
            # hound (5.3.2.2): a participant sees the neutral's hand, which needs ids now
            hound = bool(st.active) and any(st.has(seat, "hound") for seat in battle.paid)
            battle.hands[NEUTRAL] = tuple(_draw_from_table(st, battle, 2, issue=hound))
        started.append({"land": land, "holder": _who(holder), "attackers": list(battle.attackers),
                        "defender": battle.defender,
                        "flop": [{"id": token, "card": _NAMES[card]} for card, token in flop]})
    events.append(Event("battles_started", {"battles": started}))
    _stage_step(st, events, STAGE_TURN)


def _draw_from_table(st: State, battle: Battle, count: int, issue: bool = True) -> list[Dealt]:
    """Draw ``count`` cards from the table's deck, leaving out every participant's hand (3.8; the
    flop is already out of the deck). ``issue``: give the cards wire tokens now; else their token is
    ``""`` until they are first shown (the neutral's hand, at the final). ``battle`` must belong to
    ``st`` (states are cloned with their battles before a resolution)."""
    in_hands = set()
    for hand in battle.hands.values():
        for dealt in hand:
            in_hands.add(dealt[0])
    deck, fixed, rng = battle.deck, battle.fixed, st.rng
    drawn = []
    for _ in range(count):
        if fixed:
            card, deck, fixed = _take(rng, deck, fixed, in_hands)
        else:  # ``_take`` without stacked cards, inline: a uniform card of the deck not in a hand
            size = len(deck)
            while True:
                j = rng.randbelow(size)
                card = deck[j]
                if card not in in_hands:
                    break
            deck = deck[:j] + deck[j + 1:]
        drawn.append(st.deal(card) if issue else (card, ""))
    battle.deck = deck
    battle.fixed = fixed
    return drawn


def _stage_step(st: State, events: list[Event], stage: str) -> None:
    """Payments for ``stage`` on every open battle, table by table in ascending land id, seats
    ascending (technical fold for one who cannot pay, 3.2/3.3); the tables still contested open
    their card (one ``stage_opened`` event for all), those left with one or no participant are
    settled (3.5), and the decision phase begins."""
    out_status = OUT_TURN if stage == STAGE_TURN else OUT_RIVER
    tables = []
    settle = []
    required: set[int] = set()
    mana = st.mana
    rng = st.rng
    randbelow = rng.randbelow
    token = st.tokens.token
    for battle in st.battles.values():  # ascending land id
        if battle.stage == STAGE_DONE:
            continue
        paid, out, live = [], [], []
        status = battle.status
        for seat in battle.seats:
            if status[seat] != LIVE:
                continue
            if seat != NEUTRAL:
                cost = stage_cost(st, battle, seat, stage)
                if mana[seat] < cost:
                    status[seat] = out_status
                    out.append(seat)
                    continue
                mana[seat] -= cost
                battle.paid[seat] += cost
                paid.append(seat)
            live.append(seat)
        if len(live) <= 1:
            tables.append({"land": battle.land, "paid": paid, "technical_folds": out, "card": None})
            settle.append((battle, live))
            continue
        # still contested: the stage's card, from the table's deck without the hands (3.8; every
        # hand is 2 cards)
        in_hands = set()
        for hand in battle.hands.values():
            in_hands.add(hand[0][0])
            in_hands.add(hand[1][0])
            if len(hand) > 2:  # double_hand (5.3.2.4)
                in_hands.update(dealt[0] for dealt in hand)
        deck = battle.deck
        if battle.fixed:
            card, battle.deck, battle.fixed = _take(rng, deck, battle.fixed, in_hands)
        else:  # ``_take`` without stacked cards, inline: a uniform card of the deck not in a hand
            size = len(deck)
            while True:
                j = randbelow(size)
                card = deck[j]
                if card not in in_hands:
                    break
            battle.deck = deck[:j] + deck[j + 1:]
        dealt = (card, token(st.dealt))
        st.dealt += 1
        if stage == STAGE_TURN:
            battle.turn = dealt
        else:
            battle.river = dealt
        battle.stage = stage
        tables.append({"land": battle.land, "paid": paid, "technical_folds": out,
                       "card": {"id": dealt[1], "card": _NAMES[card]}})
        required.update(live)
    required.discard(NEUTRAL)
    events.append(Event("stage_opened", {"stage": stage, "tables": tables, "mana": list(mana)}))
    for battle, live in settle:
        _settle(st, battle, live, events)
    _enter(st, TURN if stage == STAGE_TURN else RIVER, required)


def _apply_folds(st: State, events: list[Event], stage: str) -> list[Battle]:
    """Folds of the decision phase with their refunds (3.2, 3.3; one ``folds`` event), then settle
    tables left with one or no participant (3.5). Returns the battles still contested."""
    status = FOLD_TURN if stage == STAGE_TURN else FOLD_RIVER
    submissions = st.submissions
    battles = st.battles
    mana = st.mana
    folds = []
    for seat in sorted(submissions):
        lands = submissions[seat]
        if lands and type(lands[0]) is tuple:  # (folds, keep) with double_hand (5.3.2.4)
            lands, keep = lands
            for land, kept in keep:
                battles[land].kept = {**battles[land].kept, seat: kept}
        for land in lands:
            battle = battles[land]
            battle.status[seat] = status
            refund = fold_refund(st, battle, seat, stage)
            mana[seat] += refund
            battle.refunded[seat] += refund
            folds.append({"land": land, "seat": seat, "refund": refund})
    if folds:
        events.append(Event("folds", {"stage": stage, "folds": folds, "mana": list(mana)}))
    contested = []
    for battle in battles.values():  # ascending land id
        if battle.stage != stage:
            continue
        battle_status = battle.status
        live = []
        for seat in battle.seats:
            if battle_status[seat] == LIVE:
                live.append(seat)
        if len(live) <= 1:
            _settle(st, battle, live, events)
        else:
            contested.append(battle)
    return contested


def _resolve_turn(st: State, events: list[Event]) -> None:
    _apply_folds(st, events, STAGE_TURN)
    _stage_step(st, events, STAGE_RIVER)


def _resolve_river(st: State, events: list[Event]) -> None:
    for battle in _apply_folds(st, events, STAGE_RIVER):
        _final(st, battle, events)
    _end_round(st, events)


def _final(st: State, battle: Battle, events: list[Event]) -> None:
    """Best five of seven; the best hand wins; a full tie refunds every finalist's stake and the
    table stays with its holder (3.6). The finalists' hands are shown to all (4.1)."""
    flop = battle.flop
    turn, river = battle.turn, battle.river
    assert turn is not None and river is not None  # the final follows the river stage (3.5)
    board = (flop[0][0], flop[1][0], flop[2][0], turn[0], river[0])
    status = battle.status
    hands = battle.hands
    live = [seat for seat in battle.seats if status[seat] == LIVE]
    rank7 = poker.rank7
    if battle.jokers or any(len(hands[seat]) != 2 for seat in live):  # joker, double_hand (5.3.2.3-4)
        ranks = {seat: _special_rank(battle, seat, board) for seat in live}
    else:
        ranks = {seat: rank7((hands[seat][0][0], hands[seat][1][0]) + board) for seat in live}
    best = min(ranks.values())
    winners = [seat for seat in live if ranks[seat] == best]
    battle.finalists = tuple(live)
    battle.ranks = ranks
    if NEUTRAL in ranks and not hands[NEUTRAL][0][1]:  # shown for the first time: it gets its tokens now
        hands[NEUTRAL] = tuple(st.deal(card) for card, _ in hands[NEUTRAL])
    category = poker.category
    shown: list[dict[str, Any]] = [
        {"seat": _who(seat), "cards": [{"id": token, "card": _NAMES[card]} for card, token in hands[seat]],
         "category": category(ranks[seat])}
        for seat in live]
    if battle.jokers or battle.kept or battle.joker_cards:
        for entry, seat in zip(shown, live, strict=True):
            _mark_final_hand(battle, seat, entry["cards"])
    events.append(Event("showdown", {"land": battle.land, "hands": shown}))
    if len(winners) == 1:
        if st.active:  # insurance (5.3.3.3): a finalist who loses gets its stake back
            mana = st.mana
            for seat in live:
                if seat != NEUTRAL and seat != winners[0]:
                    refund = insurance_refund(st, battle, seat)
                    if refund:
                        mana[seat] += refund
                        battle.refunded[seat] += refund
        _finish_battle(st, battle, winners[0], "final", events)
        return
    mana = st.mana
    for seat in live:
        if seat != NEUTRAL:
            refund = tie_refund(st, battle, seat)
            mana[seat] += refund
            battle.refunded[seat] += refund
    _finish_battle(st, battle, battle.holder, "tie", events)


def _settle(st: State, battle: Battle, live: list[int], events: list[Event]) -> None:
    """One participant left: the table is theirs; none left: it stays with its holder (3.5)."""
    if live:
        _finish_battle(st, battle, live[0], "last_standing", events)
    else:
        _finish_battle(st, battle, battle.holder, "none_left", events)


def _finish_battle(st: State, battle: Battle, winner: int, result: str, events: list[Event]) -> None:
    """Close a battle: the land goes to ``winner`` and the table gets a fresh flop (1.3)."""
    battle.stage = STAGE_DONE
    battle.winner = winner
    battle.result = result
    st.owner[battle.land] = winner
    st.tables[battle.land] = _fresh_table(st)
    if st.scouted:  # a scout saw the old flop only (5.3.1.2)
        st.scouted = {seat: lands - {battle.land} for seat, lands in st.scouted.items()}
    refunded = battle.refunded
    events.append(Event("battle_won", {"land": battle.land, "winner": _who(winner), "result": result,
                                       "refunded": {str(seat): n for seat, n in refunded.items()},
                                       "mana": list(st.mana)}))


def _end_round(st: State, events: list[Event]) -> None:
    """Eliminations, victory (2.5), income (2.6), then the next round or the end of the match."""
    seats = st.seats
    owners = st.owner
    counts = [owners.count(seat) for seat in range(seats)]
    out_round = st.out_round
    alive = []
    for seat in range(seats):
        if out_round[seat] == 0:
            if counts[seat] == 0:
                out_round[seat] = st.round
                events.append(Event("eliminated", {"seat": seat}))
            else:
                alive.append(seat)
    if st.shields:  # a shield stays only while its seat holds the land (5.3.1.1)
        st.shields = {land: shield for land, shield in st.shields.items() if owners[land] == shield[0]}
    to_win = st.options.tables_to_win
    for seat in alive:
        if counts[seat] >= to_win:
            _finish_match(st, counts, "tables_to_win", events)
            return
    if len(alive) <= 1:
        _finish_match(st, counts, "last_standing", events)
        return
    mana = st.mana
    find = owners.index
    for seat in alive:  # every land a seat controls, ascending (only living seats control any)
        land = -1
        for _ in range(counts[seat]):
            land = find(seat, land + 1)
            mana[seat] += land_income(st, seat, land)
    events.append(Event("income", {"mana": list(mana), "tables": counts}))
    if st.round >= st.options.max_rounds:
        _finish_match(st, counts, "max_rounds", events)
        return
    st.round += 1
    _start_round(st, events)


def _finish_match(st: State, counts: list[int], reason: str, events: list[Event]) -> None:
    """Ranks: most tables, then the later elimination, then most mana; equal keys draw (2.5)."""
    keys = [(counts[s], st.out_round[s] or 1 << 30, st.mana[s]) for s in range(st.seats)]
    ranks = {s: 1 + sum(1 for other in keys if other > keys[s]) for s in range(st.seats)}
    scores = {s: counts[s] for s in range(st.seats)}
    st.result = (ranks, scores, reason)
    st.phase = OVER
    st.phase_id += 1
    st.submissions = {}
    st.order_prices = {}
    st.required = frozenset()
    events.append(Event("match_over", {"ranks": {str(s): r for s, r in ranks.items()},
                                       "scores": {str(s): v for s, v in scores.items()}, "reason": reason}))


_RESOLVERS = {
    ORDERS: _resolve_orders,
    DEFENCE: _resolve_defence,
    ASSIGN: _resolve_assign,
    TURN: _resolve_turn,
    RIVER: _resolve_river,
}


# --------------------------------------------------------------------------------------------
# Small wire helpers for events (a dealt card on the wire is ``{"id": token, "card": _NAMES[card]}``,
# written out where it is built: it is on the hot path)
# --------------------------------------------------------------------------------------------

def _who(seat: int) -> int | str:
    """A seat, or ``"neutral"``."""
    return "neutral" if seat == NEUTRAL else seat


# --------------------------------------------------------------------------------------------
# Specials (conquest.md section 5): the final with a joker or a 4-card hand, and the action
# --------------------------------------------------------------------------------------------

def _special_rank(battle: Battle, seat: int, board: tuple[int, ...]) -> int:
    """The rank of ``seat``'s hand at the final with its specials (5.3.2.3 joker, 5.3.2.4
    double_hand): the 2 cards kept (else the best 2 of 4), a joker card replaced by the card not
    among the other 6 that makes the best hand. Records ``battle.kept`` / ``battle.joker_cards``."""
    hand = battle.hands[seat]
    if seat in battle.kept:
        pairs = [battle.kept[seat]]
    elif len(hand) == 2:
        pairs = [hand]
    else:
        pairs = [(hand[i], hand[j]) for i in range(len(hand)) for j in range(i + 1, len(hand))]
    joker = battle.jokers.get(seat)
    best: tuple[int, tuple[Dealt, ...], int | None] | None = None
    for pair in pairs:
        if joker is not None and (pair[0][1] == joker or pair[1][1] == joker):
            other = pair[1][0] if pair[0][1] == joker else pair[0][0]
            taken = set(board)
            taken.add(other)
            for card in range(52):
                if card not in taken:
                    rank = poker.rank7((other, card) + board)
                    if best is None or rank < best[0]:
                        best = (rank, pair, card)
        else:
            rank = poker.rank7((pair[0][0], pair[1][0]) + board)
            if best is None or rank < best[0]:
                best = (rank, pair, None)
    assert best is not None
    best_rank, best_pair, became = best
    if len(hand) != 2:
        battle.kept = {**battle.kept, seat: best_pair}
    if became is not None:
        battle.joker_cards = {**battle.joker_cards, seat: became}
    return best_rank


def _mark_final_hand(battle: Battle, seat: int, cards: list[dict[str, Any]]) -> None:
    """Mark a finalist's wire hand (built fresh): the joker's card with the card it became
    (``"joker": "Qs"``, 5.3.2.3) and, for a 4-card hand, the 2 that counted (``"counted": true``)."""
    joker = battle.jokers.get(seat)
    became = battle.joker_cards.get(seat)
    kept = battle.kept.get(seat)
    counted = {dealt[1] for dealt in kept} if kept else None
    for entry in cards:
        if joker is not None and entry["id"] == joker:
            entry["joker"] = _NAMES[became] if became is not None else True
        if counted is not None and entry["id"] in counted:
            entry["counted"] = True
