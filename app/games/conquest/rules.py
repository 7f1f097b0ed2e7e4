"""Hold'em Conquest rules: setup, prompts, apply, and the round and battle machinery.

A round (conquest.md 2) is a chain of simultaneous phases, each resolved inside ``apply`` when the
last required submission arrives (or at once when nobody has anything to decide):

    ORDERS (2.1) -> DEFENCE (2.2) -> ASSIGN (2.3) -> [turn step] TURN (3.2) -> [river step]
    RIVER (3.3) -> [final 3.6] -> end of round: victory (2.5), income (2.6) -> next round's ORDERS

Section 5 (specials) acts through plain named steps: :func:`activation_cost` (shields),
:func:`defence_cost`, :func:`stage_cost`, :func:`fold_refund` (free_fold), :func:`tie_refund`,
:func:`insurance_refund`, :func:`land_income` (double incomes), :func:`max_battles` (the cap of 7),
the deal (double_hand, double_set), the final (joker, double_hand) and, for reveals,
:func:`app.games.conquest.view.flop_seen` / :func:`~app.games.conquest.view.hand_seen`; the
``special`` action itself is :func:`_apply_special`.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, NoReturn

from pydantic import BaseModel

from app.games.base import (
    CardTokens,
    Event,
    IllegalAction,
    Outcome,
    Prompt,
    Rng,
    action_type,
)
from app.games.conquest import poker
from app.games.conquest.poker import NAMES as _NAMES
from app.games.conquest.board import LANDS_BY_SEATS, generate_board
from app.games.conquest.specials import SHIELD_MAX, SHIELD_MIN, SPECIALS, special_cost
from app.games.conquest.state import (
    ASSIGN,
    DEFENCE,
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
    Options,
    State,
    Table,
)

#: The action type expected in each phase, and the prompt kind shown for it.
ACTION_OF_PHASE = {ORDERS: "orders", DEFENCE: "defend", ASSIGN: "assign", TURN: "decide", RIVER: "decide"}
KIND_OF_PHASE = {ORDERS: "orders", DEFENCE: "defence", ASSIGN: "assign", TURN: "decision", RIVER: "decision"}
ACTION_TYPES = frozenset(ACTION_OF_PHASE.values())

#: Largest list or object accepted in an action (more is ``malformed_action``).
MAX_ITEMS = 64

#: The house cap on battles a round with ``double_set`` or ``double_hand`` active (conquest.md 2.1).
MAX_BATTLES_DOUBLE = 7

#: Specials that show flops / hands (view.py reads these; conquest.md 5.3.1, 5.3.2.1-2).
FLOP_SPECIALS = frozenset(("loyalty", "spy", "corruption", "big_brother"))
HAND_SPECIALS = frozenset(("read_hand", "hound"))
_SPECIAL_SET = frozenset(SPECIALS)


# --------------------------------------------------------------------------------------------
# Costs, refunds and income: the hooks section 5 (specials) will extend.
# --------------------------------------------------------------------------------------------

def activation_cost(state: State, seat: int, land: int) -> int:
    """Mana to activate ``land`` for an attack (conquest.md 2.1): 1, plus N on a table another seat
    shielded with N (5.3.1.1)."""
    if state.shields:
        return 1 + shield_on(state, land, seat)
    return 1


def shield_on(state: State, land: int, seat: int) -> int:
    """Mana ``seat`` must pay on top of an action on ``land``'s table because another seat shielded
    it (conquest.md 5.3.1.1): N while the shielding seat holds the land, else 0."""
    shield = state.shields.get(land)
    if shield is None or shield[0] == seat or state.owner[land] != shield[0]:
        return 0
    return shield[1]


def max_battles(state: State, seat: int) -> int:
    """Battles ``seat`` may take part in this round (conquest.md 2.1): 10, or 7 with ``double_set``
    or ``double_hand`` active (their larger pools must fit in one deck)."""
    active = state.active.get(seat) if state.active else None
    if active and ("double_set" in active or "double_hand" in active):
        return MAX_BATTLES_DOUBLE
    return MAX_BATTLES


def defence_cost(state: State, seat: int, land: int) -> int:
    """Mana to defend ``land`` (conquest.md 2.2): 1."""
    return 1


def stage_cost(state: State, battle: Battle, seat: int, stage: str) -> int:
    """Mana a participant pays to see ``stage`` (``"turn"``: 1, conquest.md 3.2; ``"river"``: 2, 3.3)."""
    return 1 if stage == STAGE_TURN else 2


def fold_refund(state: State, battle: Battle, seat: int, stage: str) -> int:
    """Mana returned on a (non-technical) fold at ``stage``: 1 at the turn (3.2), 1 — the turn's —
    at the river (3.3); with ``free_fold`` the whole stake paid in this battle (5.3.3.4). A
    technical fold returns nothing."""
    if state.active and state.has(seat, "free_fold"):
        return battle.paid[seat] - battle.refunded[seat]
    return 1


def tie_refund(state: State, battle: Battle, seat: int) -> int:
    """Mana returned to a finalist when the best hands tie fully: their whole stake (1.5, 3.6)."""
    return battle.paid[seat]


def land_income(state: State, seat: int, land: int) -> int:
    """Mana a controlled land yields at the end of the round (conquest.md 2.6): 1; 2 with
    ``full_double_income`` (5.3.3.2) or on the land chosen for ``double_income`` (5.3.3.1); the two
    do not add up."""
    if state.active:
        active = state.active.get(seat)
        if active and ("full_double_income" in active
                       or ("double_income" in active and state.double_land.get(seat) == land)):
            return 2
    return 1


def insurance_refund(state: State, battle: Battle, seat: int) -> int:
    """Mana returned to a finalist who loses at the final (no fold): with ``insurance`` their stake
    in this battle (5.3.3.3), else 0."""
    if state.active and state.has(seat, "insurance"):
        return battle.paid[seat] - battle.refunded[seat]
    return 0


def hand_size(state: State, seat: int) -> int:
    """Cards in each of ``seat``'s hands this round: 2, or 4 with ``double_hand`` (5.3.2.4)."""
    return state.hand_sizes.get(seat, 2) if state.hand_sizes else 2


# --------------------------------------------------------------------------------------------
# Setup
# --------------------------------------------------------------------------------------------

def coerce_options(options: BaseModel | Mapping[str, Any] | None) -> Options:
    """The lobby options as :class:`Options` (accepts an Options, another model, a dict or None)."""
    if options is None:
        return Options()
    if isinstance(options, Options):
        return options
    if isinstance(options, BaseModel):
        options = options.model_dump()
    return Options.model_validate(dict(options))


def setup(seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> State:
    """A new match at round 1's ORDERS phase (conquest.md 1.1–1.4). Raises ValueError for a seat
    count outside 2–4, an empty seed, or ``options.loadouts`` listing more seats than the match has
    (section 5)."""
    if not isinstance(seats, int) or not 2 <= seats <= 4:
        raise ValueError("conquest is for 2-4 seats")
    opts = coerce_options(options)
    if len(opts.loadouts) > seats:
        raise ValueError(f"loadouts for {len(opts.loadouts)} seats in a {seats}-seat match")
    st = State.__new__(State)
    st.seats = seats
    st.options = opts
    st.rng = Rng(seed)
    st.board = generate_board(seats, st.rng)
    st.tokens = CardTokens(seed)
    st.dealt = 0
    st.round = 1
    st.phase = ORDERS
    st.phase_id = 0
    st.owner = [NEUTRAL] * st.board.size
    for seat, land in enumerate(st.board.starts):
        st.owner[land] = seat
    st.mana = [opts.starting_mana] * seats
    st.out_round = [0] * seats
    st.tables = [_fresh_table(st) for _ in range(st.board.size)]
    st.required = frozenset()
    st.submissions = {}
    st.attacks = {}
    st.defences = ()
    st.passed = ()
    st.battles = {}
    st.battle_lands = {}
    st.pools = {}
    st.pool_stack = {}
    st.result = None
    st.targets = {}
    st.view_memo = {}
    st.active = {}
    st.scouted = {}
    st.shields = {}
    st.double_land = {}
    st.hand_sizes = {}
    events: list[Event] = []
    _start_round(st, events)
    _run(st, events)
    return st


def _fresh_table(st: State, stacked: list[int] | None = None) -> Table:
    """A table whose own 52-card deck is reshuffled, with a new face-down flop (1.3). ``stacked``
    (test support): the whole deck in order, top first."""
    if stacked is not None:
        return Table(tuple(stacked[:3]), tuple(stacked[3:]), 49)
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
    return Table((first, second, third), full[:x] + full[x + 1:y] + full[y + 1:z] + full[z + 1:], 0)


_FULL_DECK = tuple(range(52))


def _take(rng: Rng, deck: tuple[int, ...], fixed: int, skip) -> tuple[int, tuple[int, ...], int]:
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


def stacked_position(
    seats: int = 2,
    *,
    seed: bytes = b"conquest-position",
    options: BaseModel | Mapping[str, Any] | None = None,
    owner: Mapping[int, int] | None = None,
    mana: Iterable[int] | None = None,
    table_decks: Mapping[int, str | Iterable[str]] | None = None,
    pools: Mapping[int, str | Iterable[str]] | None = None,
) -> State:
    """Test support: an exact position at round 1's ORDERS phase.

    - ``owner``: land -> seat for every player-owned land (all others neutral); default: the map's
      starting lands. Lands come from the map of ``seed`` (see ``state.board``).
    - ``mana``: seat -> mana.
    - ``table_decks``: land -> its deck top first, e.g. ``"3h4s5c 9d Kh"``: the first 3 cards are the
      flop, the next are drawn in order (the neutral's hand, then turn, then river — skipping any card
      in a participant's hand, 3.8); unnamed cards follow in ascending order.
    - ``pools``: seat -> cards dealt first to its next pool (2.3), in order.
    """
    st = setup(seats, options, seed).clone()
    if owner is not None:
        st.owner = [NEUTRAL] * st.board.size
        for land, seat in owner.items():
            st.owner[land] = seat
    if mana is not None:
        st.mana = list(mana)
    for land, names in (table_decks or {}).items():
        cards = poker.parse_cards(names)
        st.tables[land] = _fresh_table(st, cards + [c for c in range(52) if c not in cards])
    if pools:  # a new dict: ``pool_stack`` is replaced, never changed in place (State.clone)
        st.pool_stack = {**st.pool_stack, **{seat: tuple(poker.parse_cards(names)) for seat, names in pools.items()}}
    _start_round(st, [])
    _run(st, [])
    return st


# --------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------

def default_action(state: State, seat: int) -> dict[str, Any]:
    """The action applied for ``seat`` at the deadline: no attacks (2.1), defend none (2.2), the
    pool in dealt order over tables in ascending land id (2.3), stay everywhere (3.4)."""
    phase = state.phase
    if phase == ORDERS:
        return {"type": "orders", "attack": []}
    if phase == DEFENCE:
        return {"type": "defend", "lands": []}
    if phase == ASSIGN:
        pool = state.pools[seat]
        lands = state.battle_lands.get(seat, ())
        size = hand_size(state, seat)
        if size != 2:
            return {"type": "assign", "hands": {str(land): [d[1] for d in pool[size * i:size * (i + 1)]]
                                                for i, land in enumerate(lands)}}
        return {"type": "assign",
                "hands": {str(land): [pool[2 * i][1], pool[2 * i + 1][1]] for i, land in enumerate(lands)}}
    return {"type": "decide", "folds": []}


def prompts(state: State) -> list[Prompt]:
    """One prompt per seat in ``state.required`` (all of one simultaneous phase); [] once over."""
    if state.phase == OVER:
        return []
    kind = KIND_OF_PHASE[state.phase]
    opts = state.options
    seconds = opts.decision_seconds if state.phase in (TURN, RIVER) else opts.phase_seconds
    return [
        Prompt(seat, kind, state.phase_id, float(seconds), default_action(state, seat), True,
               seat in state.submissions)
        for seat in sorted(state.required)
    ]


# --------------------------------------------------------------------------------------------
# Queries used by validation, prompts and views
# --------------------------------------------------------------------------------------------

def attackable(state: State, seat: int) -> list[int]:
    """Lands ``seat`` may activate this round: adjacent to a land it controlled at the round's
    start, not its own (2.1, 1.1)."""
    return list(state.targets.get(seat, ()))


def _compute_targets(state: State) -> dict[int, tuple[int, ...]]:
    """Living seat -> lands adjacent to one it controls now and not its own, ascending (2.1)."""
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
            lands: tuple[int, ...] = ()
            for byte_lands in _BYTE_LANDS:  # the set bits, a byte at a time
                if not free:
                    break
                lands += byte_lands[free & 255]
                free >>= 8
            targets[seat] = lands
    return targets


#: ``_BYTE_LANDS[k][b]``: the lands whose bits are set in ``b`` as the k-th byte of a bit set, ascending
_BYTE_LANDS = tuple(tuple(tuple(8 * k + i for i in range(8) if b >> i & 1) for b in range(256))
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


# --------------------------------------------------------------------------------------------
# apply
# --------------------------------------------------------------------------------------------

def apply(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Apply ``seat``'s ``action`` (shapes in docs/games/conquest.md). Stores the submission of the
    current simultaneous phase (replacing an earlier one) and resolves the phase once every required
    seat has submitted. Raises IllegalAction (the input state is never changed):
    ``match_over``, ``malformed_action``, ``unknown_action``, ``fold_before_paid``, ``no_prompt``,
    ``wrong_phase`` and the per-action codes of the validators."""
    # a plain dict with a string type is the common case: skip the generic Mapping check
    kind = action.get("type") if type(action) is dict else None
    if type(kind) is not str:
        kind = action_type(action)
    phase = state.phase
    if kind != ACTION_OF_PHASE.get(phase):  # over, or not this phase's action
        if kind == "special":
            return _apply_special(state, seat, action)
        _reject(state, seat, kind)
    if type(seat) is not int or seat not in state.required:
        raise IllegalAction("no_prompt", f"seat {seat!r} has nothing to decide now")
    submission = _VALIDATORS[kind](state, seat, action)
    submissions = state.submissions
    events = [Event("submitted", {"seat": seat, "phase_id": state.phase_id, "kind": KIND_OF_PHASE[phase]})]
    if len(submissions) + (seat not in submissions) < len(state.required):
        # a plain submission changes only ``submissions``
        st = state.clone_submission()
        st.submissions[seat] = submission
        return st, events
    # the last one resolves the phase, which may change everything: a full copy (open battles too)
    st = state.clone()
    st.submissions[seat] = submission
    _run(st, events)
    return st, events


def _reject(state: State, seat: Any, kind: str) -> NoReturn:
    """Raise the IllegalAction for an action ``kind`` that is not the current phase's, checking in
    this order: ``match_over``, ``unknown_action``, ``fold_before_paid``, ``no_prompt``, ``wrong_phase``."""
    phase = state.phase
    if phase == OVER:
        raise IllegalAction("match_over", "the match is over")
    if kind not in ACTION_TYPES:
        raise IllegalAction("unknown_action", f"unknown action type {kind!r}")
    if kind == "decide" and phase != TURN and phase != RIVER:
        raise IllegalAction("fold_before_paid", "a fold is possible only once a stage is paid and its card is open (3.4)")
    if type(seat) is not int or seat not in state.required:
        raise IllegalAction("no_prompt", f"seat {seat!r} has nothing to decide now")
    raise IllegalAction("wrong_phase", f"{kind!r} is not an action of the {phase} phase")


def _land_list(value: Any, state: State, field: str) -> tuple[int, ...]:
    """A list of distinct land ids, ascending; IllegalAction otherwise."""
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise IllegalAction("malformed_action", f"'{field}' must be a list of land ids")
    if not value:
        return ()
    size = state.board.size
    for land in value:
        if type(land) is not int:
            raise IllegalAction("malformed_action", f"'{field}' must hold integer land ids")
        if not 0 <= land < size:
            raise IllegalAction("unknown_land", f"there is no land {land}")
    if len(set(value)) != len(value):
        raise IllegalAction("duplicate_land", f"a land appears twice in '{field}'")
    return tuple(sorted(value))


def _validate_orders(state: State, seat: int, action: Mapping[str, Any]) -> tuple[int, ...]:
    """{"type": "orders", "attack": [land, ...]} (conquest.md 2.1). Codes: ``own_land``,
    ``not_adjacent``, ``too_many_battles``, ``not_enough_mana``."""
    lands = _land_list(action.get("attack"), state, "attack")
    allowed = state.targets.get(seat, ())
    for land in lands:
        if state.owner[land] == seat:
            raise IllegalAction("own_land", f"land {land} is already yours")
        if land not in allowed:
            raise IllegalAction("not_adjacent", f"land {land} is not adjacent to a land you control")
    cap = max_battles(state, seat)
    if len(lands) > cap:
        raise IllegalAction("too_many_battles", f"at most {cap} battles a round")
    cost = 0
    for land in lands:
        cost += activation_cost(state, seat, land)
    if cost > state.mana[seat]:
        raise IllegalAction("not_enough_mana", "not enough mana for these activations")
    return lands


def _validate_defend(state: State, seat: int, action: Mapping[str, Any]) -> tuple[int, ...]:
    """{"type": "defend", "lands": [land, ...]} (conquest.md 2.2). Codes: ``not_your_land``,
    ``not_attacked``, ``too_many_battles``, ``not_enough_mana``."""
    lands = _land_list(action.get("lands"), state, "lands")
    for land in lands:
        if state.owner[land] != seat:
            raise IllegalAction("not_your_land", f"land {land} is not yours")
        if land not in state.attacks:
            raise IllegalAction("not_attacked", f"land {land} is not attacked")
    cap = max_battles(state, seat)
    if lands and len(lands) + attacks_of(state, seat) > cap:
        raise IllegalAction("too_many_battles", f"at most {cap} battles a round")
    cost = 0
    for land in lands:
        cost += defence_cost(state, seat, land)
    if cost > state.mana[seat]:
        raise IllegalAction("not_enough_mana", "not enough mana for these defences")
    return lands


def _validate_assign(state: State, seat: int, action: Mapping[str, Any]) -> tuple[tuple[int, tuple[Dealt, ...]], ...]:
    """{"type": "assign", "hands": {"<land>": [token, token], ...}} (conquest.md 2.3): exactly 2
    pool cards on each of the seat's battle tables, every pool card used once. Codes:
    ``unknown_land``, ``not_in_battle``, ``missing_hand``, ``bad_hand``, ``card_not_in_pool``,
    ``card_reused``."""
    hands = action.get("hands")
    if (type(hands) is not dict and not isinstance(hands, Mapping)) or len(hands) > MAX_ITEMS:
        raise IllegalAction("malformed_action", "'hands' must be an object of land id -> 2 card ids")
    lands = state.battle_lands.get(seat, ())
    size = state.board.size
    cards_per_hand = hand_size(state, seat)
    pool = {dealt[1]: dealt for dealt in state.pools[seat]}
    chosen: dict[int, tuple[Dealt, ...]] = {}
    used: set[str] = set()
    for key, cards in hands.items():
        if type(key) is int:
            land = key
        elif isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 4:
            land = int(key)
        else:
            raise IllegalAction("malformed_action", "'hands' keys must be land ids")
        if not 0 <= land < size:
            raise IllegalAction("unknown_land", f"there is no land {land}")
        if land not in lands:
            raise IllegalAction("not_in_battle", f"you have no battle on land {land}")
        if land in chosen:
            raise IllegalAction("duplicate_land", f"land {land} appears twice")
        if cards_per_hand != 2:
            if not isinstance(cards, list) or len(cards) != cards_per_hand \
                    or not all(isinstance(token, str) for token in cards):
                raise IllegalAction("bad_hand", f"a hand is a list of exactly {cards_per_hand} card ids")
        elif not isinstance(cards, list) or len(cards) != 2 or not isinstance(cards[0], str) \
                or not isinstance(cards[1], str):
            raise IllegalAction("bad_hand", "a hand is a list of exactly 2 card ids")
        for token in cards:
            if token not in pool:
                raise IllegalAction("card_not_in_pool", "that card is not in your pool")
            if token in used:
                raise IllegalAction("card_reused", "a pool card can go to one hand only")
            used.add(token)
        chosen[land] = tuple(pool[token] for token in cards)
    for land in lands:
        if land not in chosen:
            raise IllegalAction("missing_hand", f"no hand for land {land}: no card may stay in the pool")
    return tuple(sorted(chosen.items()))


def _validate_decide(state: State, seat: int, action: Mapping[str, Any]) -> Any:
    """{"type": "decide", "folds": [land, ...]}: fold on those tables, stay on the others (3.2–3.4).
    Code: ``not_in_battle`` for a land where the seat has no live hand at this stage."""
    lands = _land_list(action.get("folds"), state, "folds")
    live = decision_lands(state, seat)
    for land in lands:
        if land not in live:
            raise IllegalAction("not_in_battle", f"you have no live hand to fold on land {land}")
    if "keep" in action:  # double_hand (5.3.2.4): the 2 of 4 cards that count at the final
        return lands, _validate_keep(state, seat, action["keep"], live, lands)
    return lands


def _validate_keep(state: State, seat: int, keep: Any, live: list[int],
                   folds: tuple[int, ...]) -> tuple[tuple[int, tuple[Dealt, ...]], ...]:
    """``"keep": {"<land>": [token, token]}`` in a river ``decide`` (5.3.2.4): for a live 4-card
    hand, the 2 cards that count at the final. Codes: ``wrong_phase`` (not at the river),
    ``malformed_action``, ``not_in_battle``, ``bad_hand``, ``card_not_in_hand``."""
    if state.phase != RIVER:
        raise IllegalAction("wrong_phase", "the cards to keep are chosen at the river (5.3.2.4)")
    if not isinstance(keep, Mapping) or len(keep) > MAX_ITEMS:
        raise IllegalAction("malformed_action", "'keep' must be an object of land id -> 2 card ids")
    chosen = {}
    for key, cards in keep.items():
        land = _land_key(key)
        if land not in live or land in folds:
            raise IllegalAction("not_in_battle", f"you have no live hand on land {land}")
        hand = state.battles[land].hands[seat]
        if len(hand) != 4:
            raise IllegalAction("bad_hand", "only a 4-card hand (double_hand) chooses cards to keep")
        if not isinstance(cards, list) or len(cards) != 2 or not all(isinstance(t, str) for t in cards) \
                or cards[0] == cards[1]:
            raise IllegalAction("bad_hand", "keep exactly 2 different card ids of the hand")
        by_token = {dealt[1]: dealt for dealt in hand}
        if cards[0] not in by_token or cards[1] not in by_token:
            raise IllegalAction("card_not_in_hand", "that card is not in your hand on this table")
        chosen[land] = (by_token[cards[0]], by_token[cards[1]])
    return tuple(sorted(chosen.items()))


def _land_key(key: Any) -> int:
    if type(key) is int:
        return key
    if isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 4:
        return int(key)
    raise IllegalAction("malformed_action", "land ids must be integers")


_VALIDATORS = {
    "orders": _validate_orders,
    "defend": _validate_defend,
    "assign": _validate_assign,
    "decide": _validate_decide,
}


# --------------------------------------------------------------------------------------------
# Phase machinery
# --------------------------------------------------------------------------------------------

def _enter(st: State, phase: str, required: Iterable[int]) -> None:
    st.phase = phase
    st.phase_id += 1
    st.submissions = {}
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
    """Pay the activations, reveal them to all (2.1, 2.2) and open DEFENCE."""
    mana = st.mana
    submissions = st.submissions
    attacks: dict[int, list[int]] = {}
    for seat in sorted(submissions):
        for land in submissions[seat]:
            mana[seat] -= activation_cost(st, seat, land)
            attacks.setdefault(land, []).append(seat)
    st.attacks = {land: tuple(attacks[land]) for land in sorted(attacks)}
    events.append(Event("activations", {
        "attacks": [{"land": land, "attackers": list(seats)} for land, seats in st.attacks.items()],
        "mana": list(mana),
    }))
    # prompted: seats with an attacked land (``defendable``), mana, and fewer than MAX_BATTLES
    # activations (``attacks_of``: a submission's lands are distinct)
    owner = st.owner
    attacked = {owner[land] for land in attacks}
    required = [seat for seat in range(st.seats)
                if mana[seat] > 0 and seat in attacked
                and len(submissions.get(seat, ())) < (max_battles(st, seat) if st.active else MAX_BATTLES)]
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
        table = tables[land]
        battle = battles[land] = Battle(land, holder, attackers, defender, table.deck, table.fixed)
        for seat in battle.paid:
            lands_of.setdefault(seat, []).append(land)
    st.passed = tuple(passed)
    st.battles = battles
    st.battle_lands = {seat: tuple(lands) for seat, lands in lands_of.items()}
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
    excluded = set()
    for land in lands:
        excluded.update(tables[land].flop)
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
    return tuple(zip(cards, map(st.tokens.token, range(first, st.dealt))))


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
        cards = tables[land].flop
        first = st.dealt
        st.dealt = first + len(cards)
        flop = battle.flop = tuple(zip(cards, map(issue, range(first, st.dealt))))
        holder = battle.holder
        if holder == NEUTRAL:
            # hound (5.3.2.2): a participant sees the neutral's hand, which needs ids now
            hound = bool(st.active) and any(st.has(seat, "hound") for seat in battle.paid)
            battle.hands[NEUTRAL] = tuple(_draw_from_table(st, battle, 2, issue=hound))
            holder = "neutral"
        started.append({"land": land, "holder": holder, "attackers": list(battle.attackers),
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
    board = (flop[0][0], flop[1][0], flop[2][0], battle.turn[0], battle.river[0])
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
        for entry, seat in zip(shown, live):
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
                                       "refunded": dict(zip(map(str, refunded), refunded.values())),
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
    scores = {s: float(counts[s]) for s in range(st.seats)}
    st.result = (ranks, scores, reason)
    st.phase = OVER
    st.phase_id += 1
    st.submissions = {}
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


def outcome(state: State) -> Outcome | None:
    """The match result once over (2.5), else None."""
    if state.result is None:
        return None
    ranks, scores, reason = state.result
    return Outcome(dict(ranks), dict(scores), reason)


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


def special_price(state: State, seat: int, special: str) -> int:
    """The one-time activation cost of ``special`` for ``seat`` (``options.special_costs``, else the
    defaults, section 5): 0 once it is active, and 0 for ``scout`` (paid per table)."""
    if special == "scout" or state.has(seat, special):
        return 0
    return special_cost(state.options.special_costs, special)


def scout_price(state: State, seat: int, land: int) -> int:
    """Mana to scout ``land``'s flop (5.3.1.2): the configured price per table (0 with
    ``big_brother``, 5.3.1.6), plus N on a table another seat shielded with N (5.3.1.1)."""
    base = 0 if state.has(seat, "big_brother") else special_cost(state.options.special_costs, "scout")
    return base + shield_on(state, land, seat)


def _apply_special(state: State, seat: Any, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """``{"type": "special", "special": id, ...}`` (section 5; shapes in docs/games/conquest.md):
    activate a special of the seat's loadout, paying its cost at once, or use one (shield a table,
    scout a table, choose the double_income land, set the joker). Accepted in every phase but the
    end, from a living seat; not a submission (the phase does not move). Raises IllegalAction:
    ``match_over``, ``no_prompt``, ``malformed_action``, ``unknown_special``, ``not_in_loadout``,
    ``already_active``, ``not_enough_mana`` and the per-special codes (``unknown_land``,
    ``not_your_land``, ``bad_shield``, ``already_shielded``, ``already_seen``, ``not_in_battle``,
    ``card_not_in_hand``, ``joker_used``, ``too_many_battles``)."""
    if state.phase == OVER:
        raise IllegalAction("match_over", "the match is over")
    if type(seat) is not int or not 0 <= seat < state.seats or not state.alive(seat):
        raise IllegalAction("no_prompt", f"seat {seat!r} cannot act in this match")
    special = action.get("special")
    if not isinstance(special, str):
        raise IllegalAction("malformed_action", "'special' must be a special id")
    if special not in _SPECIAL_SET:
        raise IllegalAction("unknown_special", f"there is no special {special!r}")
    if special not in state.loadout(seat):
        raise IllegalAction("not_in_loadout", f"you did not bring {special!r} to this match")
    price = special_price(state, seat, special)
    active = state.has(seat, special)
    public: dict[str, Any] = {"seat": seat, "special": special}
    private: dict[str, Any] | None = None
    change = None  # a function applying the effect to the new state
    land: Any = action.get("land")
    if special in ("shield", "scout", "double_income") or (special == "joker" and land is not None):
        if type(land) is not int:
            raise IllegalAction("malformed_action", "'land' must be a land id")
        if not 0 <= land < state.board.size:
            raise IllegalAction("unknown_land", f"there is no land {land}")
    if special == "shield":  # 5.3.1.1
        size = action.get("mana")
        if type(size) is not int or not SHIELD_MIN <= size <= SHIELD_MAX:
            raise IllegalAction("bad_shield", f"a shield holds {SHIELD_MIN}-{SHIELD_MAX} mana")
        if state.owner[land] != seat:
            raise IllegalAction("not_your_land", f"land {land} is not yours")
        if land in state.shields and state.shields[land][0] == seat:
            raise IllegalAction("already_shielded", f"land {land} already has a shield")
        price += size
        public.update(land=land, shield=size)

        def change(st: State) -> None:
            st.shields = {**st.shields, land: (seat, size)}
    elif special == "scout":  # 5.3.1.2
        from app.games.conquest.view import flop_seen, flop_visible  # view.py's rules; no cycle at import
        if flop_visible(state, land, seat) or flop_seen(state, land, seat):
            raise IllegalAction("already_seen", f"you already see the flop of land {land}")
        price = scout_price(state, seat, land)
        private = {"land": land, "flop": [_NAMES[card] for card in state.tables[land].flop]}

        def change(st: State) -> None:
            st.scouted = {**st.scouted, seat: st.scouted.get(seat, frozenset()) | {land}}
    elif special == "double_income":  # 5.3.3.1
        if active:
            raise IllegalAction("already_active", "double_income is already on a land")
        if state.owner[land] != seat:
            raise IllegalAction("not_your_land", f"land {land} is not yours")
        public["land"] = land

        def change(st: State) -> None:
            st.double_land = {**st.double_land, seat: land}
    elif special == "joker" and land is not None:  # 5.3.2.3: once per battle
        battle = state.battles.get(land)
        if battle is None or battle.stage == STAGE_DONE or seat not in battle.hands \
                or battle.status[seat] != LIVE:
            raise IllegalAction("not_in_battle", f"you have no live hand on land {land}")
        if seat in battle.jokers:
            raise IllegalAction("joker_used", "the joker is already set in this battle")
        token = action.get("card")
        if not isinstance(token, str) or token not in {dealt[1] for dealt in battle.hands[seat]}:
            raise IllegalAction("card_not_in_hand", "that card is not in your hand on this table")
        private = {"land": land, "card": token}

        def change(st: State) -> None:
            target = st.battles[land]
            target.jokers = {**target.jokers, seat: token}
    else:
        if active:
            raise IllegalAction("already_active", f"{special} is already active")
        if special in ("double_set", "double_hand"):
            # the battles this round already holds must fit the cap of 7 (2.1)
            if state.phase == ORDERS:
                made = len(state.submissions.get(seat, ()))
            elif state.phase == DEFENCE:
                made = attacks_of(state, seat) + len(state.submissions.get(seat, ()))
            else:
                made = len(state.battle_lands.get(seat, ()))
            if made > MAX_BATTLES_DOUBLE:
                raise IllegalAction("too_many_battles",
                                    f"{special} allows at most {MAX_BATTLES_DOUBLE} battles a round (2.1)")
    if price > state.mana[seat]:
        raise IllegalAction("not_enough_mana", f"this costs {price} mana")
    st = state.clone()  # submissions are copied unchanged: a special is not a submission
    events: list[Event] = []
    st.mana[seat] -= price
    if not active and special != "scout":
        st.active = {**st.active, seat: st.active.get(seat, frozenset()) | {special}}
    if change is not None:
        change(st)
    if special == "hound":  # the neutral's hand in the seat's battles needs ids now (5.3.2.2)
        for battle in st.battles.values():
            hand = battle.hands.get(NEUTRAL)
            if battle.stage != STAGE_DONE and seat in battle.paid and hand and not hand[0][1]:
                battle.hands[NEUTRAL] = tuple(st.deal(card) for card, _ in hand)
    public["cost"] = price
    public["mana"] = list(st.mana)
    if not (special == "joker" and land is not None and price == 0):  # a joker set is private (5.3.2.3)
        events.append(Event("special_used", public))
    if private is not None:
        events.append(Event("special_seen", {"seat": seat, "special": special, **private}, frozenset((seat,))))
    return st, events
