"""Warrior rules: setup, the flow of rounds and attacks, action validation and ``apply``.

The flow is a small state machine. Automatic steps (``_STEPS``, keyed by name) run inside ``apply``
until the match reaches a decision point, which opens a phase (``state.phase``) with the seats whose
answer it needs (``state.waiting``). Every phase change increments ``state.phase_id``.

Clause references are to ``shared/rules/warrior.md``.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from app.games.base import (
    Event,
    IllegalAction,
    LegalAction,
    Outcome,
    Prompt,
    Rng,
    action_type,
    require,
)
from app.games.warrior.attack import (
    _act_end_attack,
    _act_go_on,
    _act_lose,
    _act_reattack,
    _act_stop,
    _act_target,
    _step_after_exchange,
    _step_end_check,
    _step_exchange,
    _step_finish_attack,
    _step_next_attack,
    _step_post_exchange,
    _step_target,
    default_losses,
    default_target,
)
from app.games.warrior.cards import (
    ATTACK,
    CREATURE,
    INITIAL_HAND,
    ROUND_DEAL,
    ROUND_KEEP,
    ROUNDS,
    SIEGE_ENGINE,
    VICTORY_CARD_POINTS,
    WIZARD,
    CardSet,
)
from app.games.warrior.common import (
    Events,
    _cards_from,
    _draw,
    _largest,
    _mapping,
    _nation_sizes,
    _open,
    _race_arg,
    _reshuffle_discards,
    _token_list,
    face,
    submitted_event,
)
from app.games.warrior.siege import _act_siege
from app.games.warrior.state import (
    CONTINUE,
    KEEP,
    LOSE,
    OVER,
    PLACE_WIZARDS,
    REATTACK,
    SIEGE,
    SIMULTANEOUS,
    TARGET,
    KeepChoice,
    MatchTokens,
    Timing,
    WarriorState,
    replaced,
)


# ---------------------------------------------------------------------------------------------
# Setup (2.1-2.3)
# ---------------------------------------------------------------------------------------------
def new_match(seats: int, timing: Timing, seed: bytes, card_set: CardSet) -> WarriorState:
    """Shuffle, deal 11 each, replace attack cards (2.1), lay out nations (2.2), then open the wizard
    placement phase (2.3) or, with no wizard to place, round 1's keep phase."""
    n = len(card_set.cards)
    s = WarriorState.empty(seats, timing, card_set, Rng(seed), MatchTokens(seed))
    pile = list(range(n))
    s.draw_rng().shuffle(pile)
    ev: Events = []
    cards = card_set.cards
    hands: list[list[int]] = [[] for _ in range(seats)]
    drawn: list[int] = []  # every card dealt, in dealing order: each gets a new token
    for _ in range(INITIAL_HAND):
        for seat in range(seats):
            drawn.append(pile.pop())
            hands[seat].append(drawn[-1])
    aside: list[int] = []
    for seat in range(seats):  # served in seat order, repeatedly until no attack card is held
        while True:
            attacks = [c for c in hands[seat] if cards[c].kind == ATTACK]
            if not attacks:
                break
            for c in attacks:
                hands[seat].remove(c)
                aside.append(c)
            for _ in attacks:
                drawn.append(pile.pop())
                hands[seat].append(drawn[-1])
    s.issue_tokens(drawn)
    s.clear_tokens(aside)  # set aside, back into the pile
    pile.extend(aside)
    s.draw_rng().shuffle(pile)
    s.pile = tuple(pile)
    s.creatures = tuple(tuple(c for c in hands[seat] if cards[c].kind == CREATURE) for seat in range(seats))
    s.engines = tuple(tuple(c for c in hands[seat] if cards[c].kind == SIEGE_ENGINE) for seat in range(seats))
    s.hands = tuple(tuple(c for c in hands[seat] if cards[c].kind == WIZARD) for seat in range(seats))  # to place
    waiting = []
    for seat in range(seats):
        wizards = s.hands[seat]
        if not wizards:
            continue
        nations = s.races_of(seat)
        if len(wizards) >= len(nations):  # forced: every nation gets one, the rest are discarded
            _place_wizards(s, seat, _default_wizard_map(s, seat, list(wizards), ()), ev)
            s.hands = replaced(s.hands, seat, ())
        else:
            waiting.append(seat)
    if waiting:
        _open(s, PLACE_WIZARDS, tuple(waiting))
    else:
        _run(s, ev, "start_round")
    return s


def _default_wizard_map(
    s: WarriorState, seat: int, wizards: list[int], extra: tuple[int, ...], taken: tuple[int, ...] = ()
) -> list[tuple[int, int | None]]:
    """Each wizard to the largest unprotected nation left (2.3 house); None when none is left."""
    sizes = _nation_sizes(s, seat, extra)
    free = {r for r in sizes if not s.protected(seat, r)} - set(taken)
    out: list[tuple[int, int | None]] = []
    for w in wizards:
        r = _largest(sizes, free)
        out.append((w, r))
        if r is not None:
            free.discard(r)
    return out


def _wizard_choice(
    s: WarriorState, seat: int, wizards: list[int], raw: Any, extra: tuple[int, ...]
) -> list[tuple[int, int | None]]:
    """Validate a ``{wizard id: race | null}`` placement (2.3): own, unprotected, distinct nations; null
    only when no unprotected nation is left. Missing wizards get the default placement."""
    mapping = _mapping(raw, "wizards")
    by_token = {s.tokens[w]: w for w in wizards}
    sizes = _nation_sizes(s, seat, extra)
    free = {r for r in sizes if not s.protected(seat, r)}
    chosen: dict[int, int | None] = {}
    for token, race_name in mapping.items():
        if token not in by_token:
            raise IllegalAction("unknown_card", f"{token!r} is not one of your wizards to place")
        if race_name is None:
            chosen[by_token[token]] = None
            continue
        r = _race_arg(s, race_name)
        if r not in sizes:
            raise IllegalAction("not_your_nation", f"you have no {race_name} nation")
        if r not in free:
            raise IllegalAction("nation_protected", f"your {race_name} nation already has a wizard")
        if r in chosen.values():
            raise IllegalAction("nation_protected", f"two wizards on your {race_name} nation")
        chosen[by_token[token]] = r
    taken = tuple(r for r in chosen.values() if r is not None)
    rest = [w for w in wizards if w not in chosen]
    placed = dict(_default_wizard_map(s, seat, rest, extra, taken))
    placed.update(chosen)
    left = free - {r for r in placed.values() if r is not None}
    require(
        not (left and any(r is None for r in placed.values())),
        "wizard_must_be_placed",
        "a wizard may only be discarded when every nation already has one",
    )
    return [(w, placed[w]) for w in wizards]


def _place_wizards(s: WarriorState, seat: int, placement: list[tuple[int, int | None]], ev: Events) -> None:
    out: list[dict[str, Any]] = []
    for w, r in placement:
        if r is None:
            s.discards += (w,)
            out.append({"wizard": face(s, w), "nation": None})
        else:
            s.wizards = replaced(s.wizards, seat, s.wizards[seat] + ((w, r),))
            out.append({"wizard": face(s, w), "nation": s.card_set.races[r]})
    ev.append(Event("wizards_placed", {"seat": seat, "wizards": out}))


def _act_place_wizards(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    placement = _wizard_choice(s, seat, list(s.hands[seat]), action.get("wizards"), ())
    ev.append(submitted_event(s, seat, PLACE_WIZARDS))
    s.choices = replaced(s.choices, seat, tuple(placement))
    if any(s.choices[w] is None for w in s.waiting):
        return None
    for w in s.waiting:
        _place_wizards(s, w, list(s.choices[w]), ev)
        s.hands = replaced(s.hands, w, ())
    return "start_round"


def default_place_wizards(s: WarriorState, seat: int) -> dict[str, Any]:
    races = s.card_set.races
    return {
        "type": "place_wizards",
        "wizards": {
            s.tokens[w]: (races[r] if r is not None else None)
            for w, r in _default_wizard_map(s, seat, list(s.hands[seat]), ())
        },
    }


# ---------------------------------------------------------------------------------------------
# Rounds and the keep phase (3.1-3.4)
# ---------------------------------------------------------------------------------------------
def _step_start_round(s: WarriorState, ev: Events) -> str | None:
    """Deal 7 each (round 3: earlier discards shuffled in first), open the keep phase (3.1, 3.2)."""
    if s.round == ROUNDS and s.discards:
        _reshuffle_discards(s, ev)
    hands: list[list[int]] = [[] for _ in range(s.seats)]
    drawn: list[int] = []
    for _ in range(ROUND_DEAL):
        for seat in range(s.seats):
            card = _draw(s, ev)
            if card is None:
                break
            hands[seat].append(card)
            drawn.append(card)
    s.issue_tokens(drawn)
    s.hands = tuple(tuple(h) for h in hands)
    s.keep_counts = tuple(min(ROUND_KEEP[s.round - 1], len(h)) for h in hands)
    ev.append(Event("round_started", {"round": s.round, "dealt": [len(h) for h in hands], "keep": list(s.keep_counts)}))
    for seat in range(s.seats):
        if hands[seat]:
            ev.append(Event("dealt", {"cards": [face(s, c) for c in hands[seat]]}, frozenset((seat,))))
    waiting = tuple(seat for seat in range(s.seats) if hands[seat])
    _open(s, KEEP, waiting)
    if not waiting:
        return _resolve_keep(s, ev)
    return None


def default_keep(s: WarriorState, seat: int) -> KeepChoice:
    kept = tuple(s.hands[seat][: s.keep_counts[seat]])
    return _keep_choice(s, seat, kept, None, None)


def _keep_choice(s: WarriorState, seat: int, kept: tuple[int, ...], raw_attacks: Any, raw_wizards: Any) -> KeepChoice:
    cards = s.card_set.cards
    creatures = tuple(c for c in kept if cards[c].kind == CREATURE)
    attack_cards = [c for c in kept if cards[c].kind == ATTACK]
    wizards = [c for c in kept if cards[c].kind == WIZARD]
    sizes = _nation_sizes(s, seat, creatures)
    default_nation = _largest(sizes, sizes)
    attacks_map = _mapping(raw_attacks, "attacks")
    by_token = {s.tokens[c]: c for c in attack_cards}
    chosen: dict[int, int | None] = {}
    for token, race_name in attacks_map.items():
        if token not in by_token:
            raise IllegalAction("unknown_card", f"{token!r} is not a kept attack card")
        card = by_token[token]
        if cards[card].mercenaries:
            chosen[card] = None  # a mercenary attack is made by no one nation
            continue
        if race_name is None:
            require(not sizes, "nation_required", "a nation attack card must lie in front of one of your nations")
            chosen[card] = None
            continue
        r = _race_arg(s, race_name)
        if r not in sizes:
            raise IllegalAction("not_your_nation", f"you have no {race_name} nation")
        chosen[card] = r
    attacks = tuple(
        (c, chosen[c] if c in chosen else (None if cards[c].mercenaries else default_nation)) for c in attack_cards
    )
    placement = _wizard_choice(s, seat, wizards, raw_wizards, creatures)
    return KeepChoice(kept=kept, attacks=attacks, wizards=tuple(placement))


def keep_choice_to_action(s: WarriorState, choice: KeepChoice) -> dict[str, Any]:
    races = s.card_set.races
    name = lambda r: races[r] if r is not None else None  # noqa: E731
    return {
        "type": "keep",
        "cards": [s.tokens[c] for c in choice.kept],
        "attacks": {s.tokens[c]: name(r) for c, r in choice.attacks},
        "wizards": {s.tokens[c]: name(r) for c, r in choice.wizards},
    }


def _act_keep(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    tokens = _token_list(action.get("cards"), "cards")
    need = s.keep_counts[seat]
    if len(tokens) != need:
        raise IllegalAction("wrong_count", f"keep exactly {need} cards")
    picked = set(_cards_from(s, tokens, s.hands[seat]))
    kept = tuple(c for c in s.hands[seat] if c in picked)  # dealt order
    choice = _keep_choice(s, seat, kept, action.get("attacks"), action.get("wizards"))
    ev.append(submitted_event(s, seat, KEEP))
    s.choices = replaced(s.choices, seat, choice)
    if any(s.choices[w] is None for w in s.waiting):
        return None
    return _resolve_keep(s, ev)


def _resolve_keep(s: WarriorState, ev: Events) -> str:
    """Reveal every choice together and lay the kept cards out (3.2); queue the attacks (3.3)."""
    cards = s.card_set.cards
    races = s.card_set.races
    queue: list[tuple[int, int, int | None]] = []
    for seat in range(s.seats):
        choice: KeepChoice | None = s.choices[seat]
        if choice is None:
            continue
        kept = set(choice.kept)
        discarded = [c for c in s.hands[seat] if c not in kept]
        s.discards += tuple(discarded)
        s.creatures = replaced(s.creatures, seat,
                               s.creatures[seat] + tuple(c for c in choice.kept if cards[c].kind == CREATURE))
        s.engines = replaced(s.engines, seat,
                             s.engines[seat] + tuple(c for c in choice.kept if cards[c].kind == SIEGE_ENGINE))
        for c, r in choice.wizards:
            if r is None:
                s.discards += (c,)
            else:
                s.wizards = replaced(s.wizards, seat, s.wizards[seat] + ((c, r),))
        for c, r in choice.attacks:
            queue.append((c, seat, r))
        ev.append(Event("kept", {
            "seat": seat,
            "kept": [face(s, c) for c in choice.kept],
            "discarded": [face(s, c) for c in discarded],
            "wizards": [{"wizard": s.tokens[c], "nation": races[r] if r is not None else None}
                        for c, r in choice.wizards],
            "attacks": [{"card": s.tokens[c], "nation": races[r] if r is not None else None}
                        for c, r in choice.attacks],
        }))
    queue.sort(key=lambda q: cards[q[0]].number)
    s.queue = tuple(queue)
    s.hands = ((),) * s.seats
    s.choices = (None,) * s.seats
    return "next_attack"


def _step_end_round(s: WarriorState, ev: Events) -> str:
    """Rounds 1 and 2: wizards and siege engines in play are discarded (3.4). Round 3: scoring."""
    if s.round < ROUNDS:
        for seat in range(s.seats):
            s.discards += tuple(w for w, _ in s.wizards[seat]) + s.engines[seat]
        s.wizards = ((),) * s.seats
        s.engines = ((),) * s.seats
        ev.append(Event("round_ended", {"round": s.round}))
        s.round += 1
        return "start_round"
    ev.append(Event("round_ended", {"round": s.round}))
    return "game_over"


# ---------------------------------------------------------------------------------------------
# Scoring (6)
# ---------------------------------------------------------------------------------------------
def score(s: WarriorState) -> tuple[list[int], list[dict[str, Any]]]:
    """Points per seat (6.1, 6.2) and, per race, who holds the majority (ties: all tied, 1+ creature)."""
    cs = s.card_set
    points = [VICTORY_CARD_POINTS * len(v) for v in s.victory]
    majorities = []
    counts = [_nation_sizes(s, seat) for seat in range(s.seats)]
    for r, name in enumerate(cs.races):
        best = max(c.get(r, 0) for c in counts)
        holders = [seat for seat in range(s.seats) if best > 0 and counts[seat].get(r, 0) == best]
        for seat in holders:
            points[seat] += cs.majority_points[r]
        majorities.append({"race": name, "creatures": best, "seats": holders, "points": cs.majority_points[r]})
    return points, majorities


def _step_game_over(s: WarriorState, ev: Events) -> None:
    points, majorities = score(s)
    keys = [(points[seat], len(s.victory[seat])) for seat in range(s.seats)]
    ranks = {seat: 1 + sum(1 for k in keys if k > keys[seat]) for seat in range(s.seats)}
    scores = {seat: points[seat] for seat in range(s.seats)}
    s.result = Outcome(ranks=ranks, scores=scores, reason="three_rounds_played")
    s.phase = OVER
    s.phase_id += 1
    s.waiting = ()
    s.choices = (None,) * s.seats
    ev.append(Event("match_over", {
        "scores": {str(k): v for k, v in s.result.scores.items()},
        "ranks": {str(k): v for k, v in ranks.items()},
        "victory_piles": [len(v) for v in s.victory],
        "majorities": majorities,
    }))
    return None


# ---------------------------------------------------------------------------------------------
# The step machine and apply
# ---------------------------------------------------------------------------------------------
_STEPS: dict[str, Callable[[WarriorState, Events], str | None]] = {
    "start_round": _step_start_round,
    "next_attack": _step_next_attack,
    "target": _step_target,
    "exchange": _step_exchange,
    "post_exchange": _step_post_exchange,
    "after_exchange": _step_after_exchange,
    "end_check": _step_end_check,
    "finish_attack": _step_finish_attack,
    "end_round": _step_end_round,
    "game_over": _step_game_over,
}


def _run(s: WarriorState, ev: Events, step: str | None) -> None:
    while step is not None:
        step = _STEPS[step](s, ev)


_ACTIONS: dict[str, tuple[str, Callable[[WarriorState, int, Mapping[str, Any], Events], str | None]]] = {
    "place_wizards": (PLACE_WIZARDS, _act_place_wizards),
    "keep": (KEEP, _act_keep),
    "siege": (SIEGE, _act_siege),
    "target": (TARGET, _act_target),
    "lose": (LOSE, _act_lose),
    "go_on": (CONTINUE, _act_go_on),
    "stop": (CONTINUE, _act_stop),
    "reattack": (REATTACK, _act_reattack),
    "end_attack": (REATTACK, _act_end_attack),
}


def apply(state: WarriorState, seat: int, action: Mapping[str, Any]) -> tuple[WarriorState, Events]:
    """Validate and apply ``action`` for ``seat``; returns (new state, events). Never mutates ``state``.
    Raises IllegalAction: malformed_action, unknown_action, invalid_seat, match_over, wrong_phase,
    not_your_turn, and the action-specific codes listed in docs/games/warrior.md."""
    if type(action) is dict and type(action.get("type")) is str:  # fast path; action_type for the rest
        kind = action["type"]
    else:
        kind = action_type(action)
    require(isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < state.seats,
            "invalid_seat", "no such seat")
    require(state.phase != OVER, "match_over", "the match is over")
    entry = _ACTIONS.get(kind)
    if entry is None:
        raise IllegalAction("unknown_action", f"unknown action type {kind!r}")
    phase, handler = entry
    if state.phase != phase:
        raise IllegalAction("wrong_phase", f"{kind!r} is not an action of the {state.phase} phase")
    require(seat in state.waiting, "not_your_turn", "nothing is asked of this seat now")
    s = state.clone()
    ev: Events = []
    try:
        step = handler(s, seat, action, ev)
    except IllegalAction:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # defensive: odd input shapes
        raise IllegalAction("malformed_action", f"malformed action: {exc}") from None
    _run(s, ev, step)
    return s, ev


# ---------------------------------------------------------------------------------------------
# Prompts, deadline defaults and public legality
# ---------------------------------------------------------------------------------------------
#: The action types accepted in each phase (2.3, 3.2, 4.1–4.7, 5.2).
PHASE_ACTIONS: dict[str, tuple[str, ...]] = {}
for _kind, (_phase, _) in _ACTIONS.items():
    PHASE_ACTIONS.setdefault(_phase, ())
    PHASE_ACTIONS[_phase] += (_kind,)


def default_action(state: WarriorState, seat: int) -> dict[str, Any]:
    """The action applied for ``seat`` when its deadline passes (2.3, 3.2, 4.8, 5.2)."""
    phase = state.phase
    if phase == KEEP:
        return keep_choice_to_action(state, default_keep(state, seat))
    if phase == PLACE_WIZARDS:
        return default_place_wizards(state, seat)
    if phase == SIEGE:
        return {"type": "siege", "shots": []}
    if phase == TARGET:
        return default_target(state)
    if phase == LOSE:
        return {"type": "lose", "cards": [state.tokens[c] for c in default_losses(state, seat)]}
    if phase == CONTINUE:
        return {"type": "go_on"}
    if phase == REATTACK:
        return {"type": "end_attack"}
    return {}


def prompts(state: WarriorState) -> list[Prompt]:
    """One prompt per seat in ``state.waiting``, ``kind`` the phase; [] once the match is over.
    Deadlines: ``timing.phase`` for keep and wizard placement, ``timing.siege`` for a siege window,
    ``timing.decision`` inside an attack (seconds; 3.2, 4.8, 5.2)."""
    phase = state.phase
    if phase == OVER:
        return []
    if phase in (KEEP, PLACE_WIZARDS):
        deadline = state.timing.phase
    elif phase == SIEGE:
        deadline = state.timing.siege
    else:
        deadline = state.timing.decision
    simultaneous = phase in SIMULTANEOUS
    return [
        Prompt(
            seat=seat,
            kind=phase,
            phase_id=state.phase_id,
            deadline_seconds=deadline,
            default_action=default_action(state, seat),
            simultaneous=simultaneous,
            submitted=state.choices[seat] is not None,
        )
        for seat in state.waiting
    ]


def check_action(state: WarriorState, seat: int, action: Mapping[str, Any]) -> None:
    """Raise the IllegalAction :func:`apply` would raise for ``action`` by ``seat``; None if legal.
    The checks are ``apply``'s own (they run on a copy: the input state is never mutated)."""
    apply(state, seat, action)


def legal_actions(state: WarriorState, seat: int) -> list[LegalAction]:
    """The legal kinds of action for ``seat`` now: every action type of the phase (``PHASE_ACTIONS``)
    that is legal in some form, with the deadline default (or the simplest form) as example. The
    parameters (cards to keep or lose, targets, siege shots) are listed in the seat's view (``you``,
    ``attack``, ``siege``) and docs/games/warrior.md. ``[]`` if nothing is asked of the seat."""
    if state.phase == OVER or seat not in state.waiting:
        return []
    default = default_action(state, seat)
    out = []
    for kind in PHASE_ACTIONS.get(state.phase, ()):
        example = default if default.get("type") == kind else {"type": kind}
        try:
            apply(state, seat, example)
        except IllegalAction:
            continue
        out.append(LegalAction(kind, example))
    return out

#: Every action type of the game.
PHASE_ACTIONS_ALL = frozenset(_ACTIONS)
