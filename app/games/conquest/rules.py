"""Hold'em Conquest rules: prompts, ``apply`` with its validators, public legality, the ``special`` action.

The other parts live beside it: ``setup`` (conquest.md 1), ``costs`` (costs, refunds and income,
the hooks of section 5), ``queries`` (read-only questions about a state), ``round`` (the phase
resolvers, the turn and river steps and the final).

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

from typing import Any, Mapping, NoReturn

from app.games.base import (
    Event,
    IllegalAction,
    LegalAction,
    Outcome,
    Prompt,
    action_type,
)
from app.games.conquest.costs import (
    _SPECIAL_SET,
    ACTION_OF_PHASE,
    ACTION_TYPES,
    KIND_OF_PHASE,
    MAX_BATTLES_DOUBLE,
    MAX_ITEMS,
    activation_cost,
    available_mana,
    defence_cost,
    hand_size,
    max_battles,
    shield_on,
)
from app.games.conquest.poker import NAMES as _NAMES
from app.games.conquest.queries import (
    attackable,
    attacks_of,
    decision_lands,
    defendable,
    seat_battle_lands,
)
from app.games.conquest.round import _run
from app.games.conquest.specials import SHIELD_MAX, SHIELD_MIN, special_cost
from app.games.conquest.state import (
    ASSIGN,
    DEFENCE,
    FLOP,
    LIVE,
    NEUTRAL,
    ORDERS,
    OVER,
    RIVER,
    STAGE_DONE,
    TURN,
    Dealt,
    State,
)

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
# apply
# --------------------------------------------------------------------------------------------

def apply(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    """Apply ``seat``'s ``action`` (shapes in docs/games/conquest.md). Stores the submission of the
    current simultaneous phase (replacing an earlier one) and resolves the phase once every required
    seat has submitted. The ``submitted`` event is public for the seat's first submission of the
    phase and the seat's own for a replacement (section 4: a replacement is not countable).
    Raises IllegalAction (the input state is never changed):
    ``match_over``, ``malformed_action``, ``unknown_action``, ``fold_before_paid``, ``no_prompt``,
    ``wrong_phase`` and the per-action codes of the validators (all from :func:`checked`)."""
    kind, submission = checked(state, seat, action)
    if kind is None:
        return _apply_special(state, seat, action)
    phase = state.phase
    submissions = state.submissions
    # only the first submission of a phase is public: a replacement changes nothing the others may
    # see, so it reaches the seat alone (protocol.md: nothing counts the actions you could not see)
    events = [Event("submitted", {"seat": seat, "phase_id": state.phase_id, "kind": KIND_OF_PHASE[phase]},
                    frozenset((seat,)) if seat in submissions else None)]
    if len(submissions) + (seat not in submissions) < len(state.required):
        # a plain submission changes only ``submissions`` (and the orders' reserved prices)
        st = state.clone_submission()
        st.submissions[seat] = submission
        _reserve(st, state, seat, submission)
        return st, events
    # the last one resolves the phase, which may change everything: a full copy (open battles too)
    st = state.clone()
    st.submissions[seat] = submission
    _reserve(st, state, seat, submission)
    _run(st, events)
    return st, events


def _reserve(st: State, state: State, seat: int, submission: Any) -> None:
    """Record, on the new state ``st``, what the orders just stored cost now (conquest.md 1.4,
    2.1): that mana is reserved until the phase ends (:func:`~app.games.conquest.costs.reserved_mana`)
    and is what they are charged, plus a later shield's N (``round._resolve_orders``)."""
    if state.phase == ORDERS:
        st.order_prices = {**state.order_prices,
                           seat: tuple(activation_cost(state, seat, land) for land in submission)}


def checked(state: State, seat: int, action: Mapping[str, Any]) -> tuple[str | None, Any]:
    """The legality checks of a phase action, in ``apply``'s order: returns ``(kind, submission)``
    (the validated submission ``apply`` stores), or ``(None, None)`` for a ``special`` action, whose
    checks are those of :func:`_apply_special`. Raises IllegalAction as :func:`apply` does."""
    # a plain dict with a string type is the common case: skip the generic Mapping check
    kind = action.get("type") if type(action) is dict else None
    if type(kind) is not str:
        kind = action_type(action)
    if kind != ACTION_OF_PHASE.get(state.phase):  # over, or not this phase's action
        if kind == "special":
            return None, None
        _reject(state, seat, kind)
    if type(seat) is not int or seat not in state.required:
        raise IllegalAction("no_prompt", f"seat {seat!r} has nothing to decide now")
    return kind, _VALIDATORS[kind](state, seat, action)


def check_action(state: State, seat: int, action: Mapping[str, Any]) -> None:
    """Raise the IllegalAction :func:`apply` would raise for ``action`` by ``seat``; None if legal.
    Phase actions run :func:`checked` only (no resolution); a ``special`` runs its own checks on a
    copy (:func:`_apply_special` never mutates its input)."""
    kind, _ = checked(state, seat, action)
    if kind is None:
        _apply_special(state, seat, action)


def legal_actions(state: State, seat: int) -> list[LegalAction]:
    """The legal kinds of action for ``seat`` now: the phase's action (conquest.md 2.1–2.3, 3.4)
    with the deadline default as example and its domains (``attack``: ``subset_of`` the attackable
    lands, ``max`` the battle cap; ``lands``: the defendable ones; ``hands``: the seat's battle lands,
    its pool tokens and the cards per hand; ``folds``: the lands where it still decides), then one
    ``special`` entry per special of its loadout it can activate now (section 5; the uses on a land
    are in docs/games/conquest.md). ``[]`` once the match is over or for a seat that is out."""
    if state.phase == OVER or type(seat) is not int or not 0 <= seat < state.seats or not state.alive(seat):
        return []
    out: list[LegalAction] = []
    if seat in state.required:
        kind = ACTION_OF_PHASE[state.phase]
        domains: dict[str, Any]
        if kind == "orders":
            domains = {"attack": {"subset_of": attackable(state, seat), "min": 0, "max": max_battles(state, seat)}}
        elif kind == "defend":
            domains = {"lands": {"subset_of": defendable(state, seat), "min": 0}}
        elif kind == "assign":
            domains = {"hands": {"lands": seat_battle_lands(state, seat), "cards": [d[1] for d in state.pools[seat]],
                                 "per_hand": hand_size(state, seat)}}
        else:
            domains = {"folds": {"subset_of": decision_lands(state, seat), "min": 0}}
        out.append(LegalAction(kind, default_action(state, seat), domains))
    for special in state.loadout(seat):
        entry = _special_legal(state, seat, special)
        if entry is not None:
            out.append(entry)
    return out


def _legal_special(state: State, seat: int, action: dict[str, Any]) -> bool:
    try:
        _apply_special(state, seat, action)
    except IllegalAction:
        return False
    return True


def _special_legal(state: State, seat: int, special: str) -> LegalAction | None:
    """The ``special`` entry of :func:`legal_actions` for ``special`` of ``seat``'s loadout, or None
    when no use of it is legal now. The uses on a land list the lands where they are legal now
    (``land``): ``shield`` (5.3.1.1) with ``mana`` 1 up to what the seat can pay (10 at most),
    ``scout`` (5.3.1.2), ``double_income`` (5.3.3.1); the joker (5.3.2.3), once it can be set, the
    lands of the seat's live hands and their cards (``card``: a card of *that* land's hand), else
    its plain activation."""
    base: dict[str, Any] = {"type": "special", "special": special}
    size = state.board.size
    if special in ("scout", "double_income"):
        lands = [land for land in range(size) if _legal_special(state, seat, {**base, "land": land})]
        if not lands:
            return None
        return LegalAction("special", {**base, "land": lands[0]}, {"special": [special], "land": lands})
    if special == "shield":
        lands = [land for land in range(size)
                 if _legal_special(state, seat, {**base, "land": land, "mana": SHIELD_MIN})]
        if not lands:
            return None
        most = min(SHIELD_MAX, available_mana(state, seat) - special_price(state, seat, special))
        return LegalAction("special", {**base, "land": lands[0], "mana": SHIELD_MIN},
                           {"special": [special], "land": lands, "mana": list(range(SHIELD_MIN, most + 1))})
    if special == "joker":
        cards: dict[int, list[str]] = {}
        for land, battle in state.battles.items():
            hand = battle.hands.get(seat)
            if hand and _legal_special(state, seat, {**base, "land": land, "card": hand[0][1]}):
                cards[land] = [dealt[1] for dealt in hand]
        if cards:
            first = min(cards)
            return LegalAction("special", {**base, "land": first, "card": cards[first][0]},
                               {"special": [special], "land": sorted(cards),
                                "card": {"by_land": {str(land): tokens for land, tokens in sorted(cards.items())}}})
    if not _legal_special(state, seat, base):
        return None
    return LegalAction("special", base, {"special": [special]})


def _reject(state: State, seat: Any, kind: str) -> NoReturn:
    """Raise the IllegalAction for an action ``kind`` that is not the current phase's, checking in
    this order: ``match_over``, ``unknown_action``, ``fold_before_paid``, ``no_prompt``, ``wrong_phase``."""
    phase = state.phase
    if phase == OVER:
        raise IllegalAction("match_over", "the match is over")
    if kind not in ACTION_TYPES:
        raise IllegalAction("unknown_action", f"unknown action type {kind!r}")
    if kind == "decide" and phase != TURN and phase != RIVER:
        raise IllegalAction("fold_before_paid",
                            "a fold is possible only once a stage is paid and its card is open (3.4)")
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


def outcome(state: State) -> Outcome | None:
    """The match result once over (2.5), else None."""
    if state.result is None:
        return None
    ranks, scores, reason = state.result
    return Outcome(dict(ranks), dict(scores), reason)


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
    activate a special of the seat's loadout, paying its cost at once from the mana not held for its
    submission on file (:func:`~app.games.conquest.costs.available_mana`, conquest.md 1.4), or use
    one (shield a table,
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
        from app.games.conquest.view import (  # view.py's rules; no cycle at import
            flop_seen,
            flop_visible,
        )
        if flop_visible(state, land, seat) or flop_seen(state, land, seat):
            raise IllegalAction("already_seen", f"you already see the flop of land {land}")
        price = scout_price(state, seat, land)
        private = {"land": land, "flop": [_NAMES[card] for card in state.tables[land][FLOP]]}

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
    free = available_mana(state, seat)
    if price > free:
        held = state.mana[seat] - free
        raise IllegalAction("not_enough_mana", f"this costs {price} mana; you have {state.mana[seat]}"
                            + (f", {held} of them held for your submission (charged when the phase ends)"
                               if held else ""))
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
    # public only when it changes something public (section 4): the mana paid or the seat's active
    # specials; a free use of an active special (a joker set, 5.3.2.3; a scout at no price) shows
    # nothing to others, so they get nothing (protocol.md: nothing counts the actions you could not see)
    if price > 0 or (not active and special != "scout"):
        events.append(Event("special_used", public))
    if private is not None:
        events.append(Event("special_seen", {"seat": seat, "special": special, **private}, frozenset((seat,))))
    return st, events
