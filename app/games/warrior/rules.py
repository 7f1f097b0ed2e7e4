"""Warrior rules: setup, the flow of rounds and attacks, action validation and ``apply``.

The flow is a small state machine. Automatic steps (``_STEPS``, keyed by name) run inside ``apply``
until the match reaches a decision point, which opens a phase (``state.phase``) with the seats whose
answer it needs (``state.waiting``). Every phase change increments ``state.phase_id``.

Clause references are to ``shared/rules/warrior.md``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping

from app.games.base import Event, IllegalAction, Outcome, Rng, action_type, require
from app.games.warrior.cards import (
    ATTACK,
    CREATURE,
    INITIAL_HAND,
    ROUND_DEAL,
    ROUND_KEEP,
    ROUNDS,
    SIEGE_ENGINE,
    SIEGE_HIT,
    VICTORY_CARD_POINTS,
    WIZARD,
    CardSet,
)
from app.games.warrior.dice import Force, dice_counts, exchange, roll
from app.games.warrior.state import (
    CONTINUE,
    KEEP,
    LOSE,
    OVER,
    PLACE_WIZARDS,
    REATTACK,
    SIEGE,
    TARGET,
    Attack,
    KeepChoice,
    MatchTokens,
    SiegeShot,
    Timing,
    WarriorState,
)

#: Longest list accepted in any action (far above any legal list; guards against huge inputs).
MAX_LIST = 32

Events = list[Event]


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------
def face(s: WarriorState, card: int) -> dict[str, Any]:
    """The public face of ``card`` with its current token, for events and views."""
    return {"id": s.tokens[card], **s.card_set.faces[card]}


def _other_seats(s: WarriorState, seat: int) -> tuple[int, ...]:
    """Other seats, clockwise from ``seat``."""
    return _clockwise(s.seats, seat)


@lru_cache(maxsize=64)
def _clockwise(seats: int, seat: int) -> tuple[int, ...]:
    return tuple((seat + i) % seats for i in range(1, seats))


def _nation_sizes(s: WarriorState, seat: int, extra: tuple[int, ...] = ()) -> dict[int, int]:
    """Race -> creature count of the seat's nations, with ``extra`` creature cards added."""
    race_of = s.card_set.race_of
    sizes: dict[int, int] = {}
    for c in s.creatures[seat]:
        r = race_of[c]
        sizes[r] = sizes.get(r, 0) + 1
    for c in extra:
        r = race_of[c]
        sizes[r] = sizes.get(r, 0) + 1
    return sizes


def _largest(sizes: Mapping[int, int], allowed) -> int | None:
    """The largest nation among ``allowed`` races (ties: race-table order), or None."""
    best = None
    for r in sorted(allowed):
        if best is None or sizes[r] > sizes[best]:
            best = r
    return best


def _race_arg(s: WarriorState, value: Any) -> int:
    if not (isinstance(value, str) and value in s.card_set.race_index):
        raise IllegalAction("unknown_race", f"unknown race {value!r}")
    return s.card_set.race_index[value]


def _token_list(value: Any, field: str) -> list[str]:
    if not isinstance(value, list):
        raise IllegalAction("malformed_action", f"'{field}' must be a list of card ids")
    if len(value) > MAX_LIST:
        raise IllegalAction("malformed_action", f"'{field}' is too long")
    if not all(isinstance(t, str) for t in value):
        raise IllegalAction("malformed_action", f"'{field}' must hold card ids (strings)")
    if len(set(value)) != len(value):
        raise IllegalAction("duplicate_card", f"'{field}' names a card twice")
    return value


def _cards_from(s: WarriorState, tokens: list[str], allowed: list[int], code: str = "unknown_card") -> list[int]:
    """Map tokens to cards among ``allowed``; IllegalAction ``code`` for any other token."""
    by_token = {s.tokens[c]: c for c in allowed}
    out = []
    for t in tokens:
        if t not in by_token:
            raise IllegalAction(code, f"card {t!r} cannot be used here")
        out.append(by_token[t])
    return out


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # the dict fast path skips the ABC check


def _mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not _is_mapping(value):
        raise IllegalAction("malformed_action", f"'{field}' must be an object of card id -> nation")
    if len(value) > MAX_LIST:
        raise IllegalAction("malformed_action", f"'{field}' is too long")
    if not all(isinstance(k, str) for k in value):
        raise IllegalAction("malformed_action", f"'{field}' keys must be card ids")
    return dict(value)


def _open(s: WarriorState, phase: str, waiting: tuple[int, ...]) -> None:
    """Start a new decision point."""
    s.phase = phase
    s.phase_id += 1
    s.waiting = waiting
    s.choices = [None] * s.seats
    s.target_cache = None


def _draw(s: WarriorState, ev: Events) -> int | None:
    """Top card of the pile, refilled from the face-up discards when empty (3.1 house); None if both empty.
    The caller gives it a fresh token."""
    if not s.pile:
        if not s.discards:
            return None
        _reshuffle_discards(s, ev)
    card = s.pile[-1]
    s.pile = s.pile[:-1]
    return card


def _reshuffle_discards(s: WarriorState, ev: Events) -> None:
    tokens = list(s.tokens)
    for c in s.discards:
        tokens[c] = None
    s.tokens = tuple(tokens)
    pile = [*s.pile, *s.discards]
    ev.append(Event("discards_shuffled", {"cards": len(s.discards), "pile": len(pile)}))
    s.discards = ()
    s.draw_rng().shuffle(pile)
    s.pile = tuple(pile)


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
    for seat in range(seats):
        s.creatures[seat] = tuple(c for c in hands[seat] if cards[c].kind == CREATURE)
        s.engines[seat] = tuple(c for c in hands[seat] if cards[c].kind == SIEGE_ENGINE)
        s.hands[seat] = tuple(c for c in hands[seat] if cards[c].kind == WIZARD)  # awaiting placement
    waiting = []
    for seat in range(seats):
        wizards = s.hands[seat]
        if not wizards:
            continue
        nations = s.races_of(seat)
        if len(wizards) >= len(nations):  # forced: every nation gets one, the rest are discarded
            _place_wizards(s, seat, _default_wizard_map(s, seat, list(wizards), ()), ev)
            s.hands[seat] = ()
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
    out = []
    for w, r in placement:
        if r is None:
            s.discards += (w,)
            out.append({"wizard": face(s, w), "nation": None})
        else:
            s.wizards[seat] += ((w, r),)
            out.append({"wizard": face(s, w), "nation": s.card_set.races[r]})
    ev.append(Event("wizards_placed", {"seat": seat, "wizards": out}))


def _act_place_wizards(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    placement = _wizard_choice(s, seat, list(s.hands[seat]), action.get("wizards"), ())
    s.choices[seat] = tuple(placement)
    ev.append(Event("submitted", {"seat": seat, "phase": PLACE_WIZARDS}))
    if any(s.choices[w] is None for w in s.waiting):
        return None
    for w in s.waiting:
        _place_wizards(s, w, list(s.choices[w]), ev)
        s.hands[w] = ()
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
    s.hands = [tuple(h) for h in hands]
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
    s.choices[seat] = _keep_choice(s, seat, kept, action.get("attacks"), action.get("wizards"))
    ev.append(Event("submitted", {"seat": seat, "phase": KEEP}))
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
        s.creatures[seat] += tuple(c for c in choice.kept if cards[c].kind == CREATURE)
        s.engines[seat] += tuple(c for c in choice.kept if cards[c].kind == SIEGE_ENGINE)
        for c, r in choice.wizards:
            if r is None:
                s.discards += (c,)
            else:
                s.wizards[seat] += ((c, r),)
        for c, r in choice.attacks:
            queue.append((c, seat, r))
        ev.append(Event("kept", {
            "seat": seat,
            "kept": [face(s, c) for c in choice.kept],
            "discarded": [face(s, c) for c in discarded],
            "wizards": [{"wizard": s.tokens[c], "nation": races[r] if r is not None else None} for c, r in choice.wizards],
            "attacks": [{"card": s.tokens[c], "nation": races[r] if r is not None else None} for c, r in choice.attacks],
        }))
    queue.sort(key=lambda q: cards[q[0]].number)
    s.queue = tuple(queue)
    s.hands = [()] * s.seats
    s.choices = [None] * s.seats
    return "next_attack"


def _step_end_round(s: WarriorState, ev: Events) -> str:
    """Rounds 1 and 2: wizards and siege engines in play are discarded (3.4). Round 3: scoring."""
    if s.round < ROUNDS:
        for seat in range(s.seats):
            s.discards += tuple(w for w, _ in s.wizards[seat]) + s.engines[seat]
            s.wizards[seat] = ()
            s.engines[seat] = ()
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
    s.result = Outcome(ranks=ranks, scores={seat: points[seat] for seat in range(s.seats)}, reason="three_rounds_played")
    s.phase = OVER
    s.phase_id += 1
    s.waiting = ()
    s.choices = [None] * s.seats
    ev.append(Event("match_over", {
        "scores": {str(k): v for k, v in s.result.scores.items()},
        "ranks": {str(k): v for k, v in ranks.items()},
        "victory_piles": [len(v) for v in s.victory],
        "majorities": majorities,
    }))
    return None


# ---------------------------------------------------------------------------------------------
# Attacks (3.3, 4)
# ---------------------------------------------------------------------------------------------
def _step_next_attack(s: WarriorState, ev: Events) -> str | None:
    if not s.queue:
        return "end_round"
    card, seat, race = s.queue[0]
    s.queue = s.queue[1:]
    s.attack = Attack(seat=seat, card=card, nation=race, force=(), face_down=())
    ev.append(Event("attack_started", {
        "seat": seat, "card": face(s, card),
        "nation": s.card_set.races[race] if race is not None else None,
    }))
    return _open_siege(s, ev, "target")


def targets_for(s: WarriorState, seat: int, race: int | None) -> list[tuple[int, int]]:
    """Nations seat may attack (4.1, 4.2): other players' unprotected non-empty nations of ``race`` or
    its natural enemy, or any such nation for a mercenary force (``race`` None). Clockwise from seat."""
    out = []
    race_of = s.card_set.race_of
    allowed = None if race is None else {race, s.card_set.enemy[race]}
    for other in _other_seats(s, seat):
        present = {race_of[c] for c in s.creatures[other]}
        if allowed is not None:
            present &= allowed
        if present and s.wizards[other]:
            present -= {r for _, r in s.wizards[other]}
        for r in sorted(present):
            out.append((other, r))
    return out


def target_options(s: WarriorState) -> tuple[dict[int | None, list[tuple[int, int]]], list[int], int]:
    """For the current attack: ({attacking nation (None = mercenaries): [targets]}, mercenary candidates,
    mercenary force size). Only nations with at least one target appear. 4.1, 4.7.
    The result is shared (cached while the TARGET phase is open): callers must not mutate it."""
    if s.target_cache is not None and s.phase == TARGET:
        return s.target_cache
    atk = s.attack
    assert atk is not None
    card = s.card_set.cards[atk.card]
    options: dict[int | None, list[tuple[int, int]]] = {}
    if card.mercenaries:
        candidates: list[int] = []
        size = 0
        if atk.started:
            if atk.force:
                targets = targets_for(s, atk.seat, None)
                if targets:
                    options[None] = targets
        else:
            candidates = list(s.creatures[atk.seat])
            size = min(card.mercenaries, len(candidates))
            targets = targets_for(s, atk.seat, None) if size else []
            if targets:
                options[None] = targets
        return options, candidates, size
    if atk.started:
        if atk.force and atk.nation is not None:
            targets = targets_for(s, atk.seat, atk.nation)
            if targets:
                options[atk.nation] = targets
        return options, [], 0
    sizes = _nation_sizes(s, atk.seat)
    usable = [r for r in sorted(sizes) if not s.protected(atk.seat, r)]
    if atk.nation is not None and atk.nation in usable:
        attackers = [atk.nation]
    else:  # the card's nation is gone or protected: the player picks another (4.1 house)
        attackers = usable
    for r in attackers:
        targets = targets_for(s, atk.seat, r)
        if targets:
            options[r] = targets
    return options, [], 0


def _force_default(s: WarriorState, candidates: list[int], size: int) -> list[int]:
    """Default mercenary force: infantry first, then archers, then knights; earliest placed first."""
    cards = s.card_set.cards
    order = sorted(candidates, key=lambda c: (0 if cards[c].infantry else 1 if cards[c].archer else 2,))
    return order[:size]


def _target_default(s: WarriorState) -> tuple[int | None, tuple[int, int], list[int]]:
    """(attacking nation, target, mercenary force) taken when the attacker does not answer: the card's
    nation if usable, else the largest usable; the smallest target nation (ties: clockwise, race order)."""
    atk = s.attack
    assert atk is not None
    options, candidates, size = target_options(s)
    if atk.nation in options:
        nation = atk.nation
    else:
        sizes = _nation_sizes(s, atk.seat)
        nation = _largest(sizes, [r for r in options if r is not None]) if None not in options else None
    targets = options[nation]
    best = min(targets, key=lambda t: len(s.nation(*t)))
    force = _force_default(s, candidates, size) if candidates else []
    return nation, best, force


def default_target(s: WarriorState) -> dict[str, Any]:
    nation, target, force = _target_default(s)
    races = s.card_set.races
    action: dict[str, Any] = {"type": "target", "target": {"seat": target[0], "race": races[target[1]]}}
    if nation is not None:
        action["nation"] = races[nation]
    if force:
        action["force"] = [s.tokens[c] for c in force]
    return action


def _step_target(s: WarriorState, ev: Events) -> str | None:
    atk = s.attack
    assert atk is not None
    options, candidates, size = target_options(s)
    if not options:
        if not atk.started:
            ev.append(Event("attack_unused", {"seat": atk.seat, "card": s.tokens[atk.card], "reason": "no_legal_target"}))
        return "finish_attack"
    forced = len(options) == 1 and len(next(iter(options.values()))) == 1 and len(candidates) == size
    if forced:
        nation, target, force = _target_default(s)
        if candidates:
            force = list(candidates)
        return _set_target(s, ev, nation, target, force)
    _open(s, TARGET, (atk.seat,))
    s.target_cache = (options, candidates, size)
    return None


def _set_target(s: WarriorState, ev: Events, nation: int | None, target: tuple[int, int], force: list[int]) -> str:
    atk = s.attack
    assert atk is not None
    s.target_cache = None  # the choice is made: the options are stale from here on
    races = s.card_set.races
    if not atk.started:
        atk.started = True
        if s.card_set.cards[atk.card].mercenaries:
            atk.force = tuple(force)
        else:
            atk.nation = nation
            atk.force = tuple(s.nation(atk.seat, nation))  # the whole nation attacks
    atk.target = target
    ev.append(Event("target_chosen", {
        "seat": atk.seat,
        "nation": races[atk.nation] if atk.nation is not None and not s.card_set.cards[atk.card].mercenaries else None,
        "force": [s.tokens[c] for c in atk.force],
        "target": {"seat": target[0], "race": races[target[1]]},
        "reattack": atk.reattacks,
    }))
    return "exchange"


def _act_target(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    atk = s.attack
    assert atk is not None
    options, candidates, size = target_options(s)
    raw_target = action.get("target")
    require(_is_mapping(raw_target), "malformed_action", "'target' must be {seat, race}")
    t_seat = raw_target.get("seat")
    require(isinstance(t_seat, int) and not isinstance(t_seat, bool), "malformed_action", "target seat must be an integer")
    t_race = _race_arg(s, raw_target.get("race"))
    mercenary = None in options
    if mercenary:
        nation = None
    elif "nation" in action and action["nation"] is not None:
        nation = _race_arg(s, action["nation"])
        require(nation in options, "illegal_nation", "that nation cannot make this attack")
    else:
        require(len(options) == 1, "nation_required", "name the attacking 'nation'")
        nation = next(iter(options))
    require((t_seat, t_race) in options[nation], "illegal_target", "that nation cannot be attacked by this force")
    force: list[int] = []
    if candidates:
        raw_force = action.get("force")
        if raw_force is None:
            if len(candidates) != size:
                raise IllegalAction("force_required", f"choose {size} creatures for the mercenary force")
            force = list(candidates)
        else:
            tokens = _token_list(raw_force, "force")
            if len(tokens) != size:
                raise IllegalAction("wrong_count", f"a mercenary force of {size} creatures")
            force = _cards_from(s, tokens, candidates, "not_your_creature")
    return _set_target(s, ev, nation, (t_seat, t_race), force)


def _force_of(s: WarriorState, members, card: int | None = None) -> Force:
    """Face-up creatures ``members`` (plus the attack ``card``'s symbols) as a :class:`Force`."""
    cards = s.card_set.cards
    infantry = archers = 0
    if card is not None:
        infantry, archers = cards[card].infantry, cards[card].archer
    for c in members:
        d = cards[c]
        infantry += d.infantry
        archers += d.archer
    return Force(len(members), infantry, archers)


def _step_exchange(s: WarriorState, ev: Events) -> str | None:
    """One exchange (4.3-4.5): dice from the match rng, losses chosen by the losing sides."""
    atk = s.attack
    assert atk is not None and atk.target is not None
    defending = s.nation(*atk.target)
    attacker = _force_of(s, atk.force, atk.card)
    defender = _force_of(s, defending)
    n_att, n_def = dice_counts(attacker, defender)
    rng = s.draw_rng()
    result = exchange(roll(rng, n_att), roll(rng, n_def), attacker, defender)
    atk.exchanges += 1
    atk.last = result
    ev.append(Event("exchange", {
        "seat": atk.seat,
        "target": {"seat": atk.target[0], "race": s.card_set.races[atk.target[1]]},
        **result.to_wire(),
    }))
    losses = []
    if result.attacker_losses:
        losses.append((atk.seat, result.attacker_losses, True))
    if result.defender_losses:
        losses.append((atk.target[0], result.defender_losses, False))
    s.losses = tuple(losses)
    waiting = tuple(sorted(seat for seat, n, from_att in losses if n < (len(atk.force) if from_att else len(defending))))
    if waiting:
        _open(s, LOSE, waiting)
        return None
    _apply_losses(s, ev)
    return "post_exchange"


def lose_candidates(s: WarriorState, from_attacker: bool) -> list[int]:
    """Cards that may be lost: the attacker's face-up force, or the defending nation (4.5)."""
    atk = s.attack
    assert atk is not None and atk.target is not None
    return list(atk.force) if from_attacker else s.nation(*atk.target)


def loss_entry(s: WarriorState, seat: int) -> tuple[int, int, bool]:
    for entry in s.losses:
        if entry[0] == seat:
            return entry
    raise IllegalAction("not_your_turn", "you have nothing to lose now")


def default_losses(s: WarriorState, seat: int) -> list[int]:
    """4.8: the cards with the fewest symbols, then the most recently placed."""
    _, count, from_att = loss_entry(s, seat)
    cards = s.card_set.cards
    position = {c: i for i, c in enumerate(s.creatures[seat])}
    order = sorted(lose_candidates(s, from_att), key=lambda c: (cards[c].symbol_total, -position[c]))
    return order[:count]


def _act_lose(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    _, count, from_att = loss_entry(s, seat)
    tokens = _token_list(action.get("cards"), "cards")
    if len(tokens) != count:
        raise IllegalAction("wrong_count", f"lose exactly {count} card(s)")
    s.choices[seat] = tuple(_cards_from(s, tokens, lose_candidates(s, from_att), "not_losable"))
    ev.append(Event("submitted", {"seat": seat, "phase": LOSE}))
    if any(s.choices[w] is None for w in s.waiting):
        return None
    _apply_losses(s, ev)
    return "post_exchange"


def _apply_losses(s: WarriorState, ev: Events) -> None:
    atk = s.attack
    assert atk is not None and atk.target is not None
    for seat, count, from_att in s.losses:
        chosen = s.choices[seat] if s.choices[seat] is not None else None
        if chosen is None:
            candidates = lose_candidates(s, from_att)
            chosen = candidates if count >= len(candidates) else default_losses(s, seat)
        winner = atk.target[0] if from_att else atk.seat
        for card in chosen:
            _destroy(s, seat, card, winner, "exchange", ev)
    s.losses = ()
    s.choices = [None] * s.seats


def _destroy(s: WarriorState, seat: int, card: int, by: int, cause: str, ev: Events) -> None:
    """Card of ``seat`` destroyed by ``by``: to by's victory pile (4.5, 5.1). A nation left with no
    creature loses its wizard (discarded face up, house)."""
    cards = s.card_set.cards
    data = {"seat": seat, "card": face(s, card), "by": by, "cause": cause}
    if cards[card].kind == WIZARD:
        data["nation"] = next((s.card_set.races[r] for w, r in s.wizards[seat] if w == card), None)
        s.wizards[seat] = tuple((w, r) for w, r in s.wizards[seat] if w != card)
    else:
        s.creatures[seat] = tuple(c for c in s.creatures[seat] if c != card)
        atk = s.attack
        if atk is not None:
            if card in atk.force:
                atk.force = tuple(c for c in atk.force if c != card)
            if card in atk.face_down:
                atk.face_down = tuple(c for c in atk.face_down if c != card)
        race = cards[card].race
        race_of = s.card_set.race_of
        if race not in {race_of[c] for c in s.creatures[seat]}:
            wizard = s.wizard_of(seat, race)
            if wizard is not None:
                s.wizards[seat] = tuple((w, r) for w, r in s.wizards[seat] if w != wizard)
                s.discards += (wizard,)
                ev.append(Event("wizard_discarded", {"seat": seat, "wizard": s.tokens[wizard], "reason": "nation_gone"}))
    s.victory[by] += (card,)
    ev.append(Event("card_destroyed", data))


def _step_post_exchange(s: WarriorState, ev: Events) -> str | None:
    return _open_siege(s, ev, "after_exchange")


def _attack_over(s: WarriorState) -> bool:
    atk = s.attack
    assert atk is not None and atk.target is not None
    return not atk.force or not s.nation(*atk.target)


def _step_after_exchange(s: WarriorState, ev: Events) -> str | None:
    """4.6: the attack ends by itself when a side is empty; else the attacker may go on or stop."""
    if _attack_over(s):
        return "end_check"
    _open(s, CONTINUE, (s.attack.seat,))  # type: ignore[union-attr]
    return None


def _act_go_on(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str:
    ev.append(Event("attack_goes_on", {"seat": seat}))
    return "exchange"


def _act_stop(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str:
    ev.append(Event("attack_stopped", {"seat": seat}))
    return "end_check"


def can_reattack(s: WarriorState) -> bool:
    """4.7: a knight face up in the force (the card's knight symbol counts, 1.4), a face-up creature to
    turn face down and one left to fight (house), and some legal target."""
    atk = s.attack
    assert atk is not None
    cards = s.card_set.cards
    knights = cards[atk.card].knight + sum(cards[c].knight for c in atk.force)
    if knights < 1 or len(atk.force) < 2:
        return False
    race = None if cards[atk.card].mercenaries else atk.nation
    return bool(targets_for(s, atk.seat, race))


def _step_end_check(s: WarriorState, ev: Events) -> str | None:
    if can_reattack(s):
        _open(s, REATTACK, (s.attack.seat,))  # type: ignore[union-attr]
        return None
    return "finish_attack"


def _act_reattack(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    atk = s.attack
    assert atk is not None
    token = action.get("face_down")
    require(isinstance(token, str), "malformed_action", "'face_down' must be the id of a face-up card of the force")
    (card,) = _cards_from(s, [token], atk.force, "not_in_force")
    atk.force = tuple(c for c in atk.force if c != card)
    atk.face_down += (card,)
    atk.reattacks += 1
    atk.target = None
    ev.append(Event("reattack", {"seat": seat, "face_down": token, "reattack": atk.reattacks}))
    return _open_siege(s, ev, "target")


def _act_end_attack(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str:
    return "finish_attack"


def _step_finish_attack(s: WarriorState, ev: Events) -> str:
    """The attack card is discarded; face-down cards turn face up again (4.7)."""
    atk = s.attack
    assert atk is not None
    s.discards += (atk.card,)
    ev.append(Event("attack_ended", {
        "seat": atk.seat, "card": s.tokens[atk.card], "exchanges": atk.exchanges,
        "reattacks": atk.reattacks, "face_up_again": [s.tokens[c] for c in atk.face_down],
    }))
    s.attack = None
    return "next_attack"


# ---------------------------------------------------------------------------------------------
# Siege engines (5)
# ---------------------------------------------------------------------------------------------
def siege_targets(s: WarriorState, seat: int) -> list[int]:
    """Cards seat's engines may shoot (5.1 house): other players' wizards, and creatures of their
    nations that have no wizard."""
    race_of = s.card_set.race_of
    out: list[int] = []
    for other in _other_seats(s, seat):
        wizards = s.wizards[other]
        if wizards:
            protected = {r for _, r in wizards}
            out.extend(w for w, _ in wizards)
            out.extend(c for c in s.creatures[other] if race_of[c] not in protected)
        else:
            out.extend(s.creatures[other])
    return out


def _open_siege(s: WarriorState, ev: Events, after: str) -> str | None:
    """5.2: a siege window for every engine holder with something to shoot, else go straight on."""
    holders = tuple(seat for seat in range(s.seats) if s.engines[seat] and siege_targets(s, seat))
    if not holders:
        return after
    s.after_siege = after
    _open(s, SIEGE, holders)
    return None


def _act_siege(s: WarriorState, seat: int, action: Mapping[str, Any], ev: Events) -> str | None:
    raw = action.get("shots")
    require(isinstance(raw, list), "malformed_action", "'shots' must be a list of {engine, target}")
    require(len(raw) <= len(s.engines[seat]), "too_many_shots", "one shot per siege engine")
    shots = []
    allowed = siege_targets(s, seat)
    engines_used: set[int] = set()
    targets_used: set[int] = set()
    for shot in raw:
        require(_is_mapping(shot), "malformed_action", "each shot is {engine, target}")
        engine_token, target_token = shot.get("engine"), shot.get("target")
        require(isinstance(engine_token, str) and isinstance(target_token, str), "malformed_action", "engine and target are card ids")
        (engine,) = _cards_from(s, [engine_token], s.engines[seat], "not_your_engine")
        (target,) = _cards_from(s, [target_token], allowed, "illegal_siege_target")
        require(engine not in engines_used, "duplicate_card", "an engine fires once")
        require(target not in targets_used, "duplicate_card", "one shot per target")
        engines_used.add(engine)
        targets_used.add(target)
        shots.append(SiegeShot(engine, target))
    s.choices[seat] = tuple(shots)
    ev.append(Event("submitted", {"seat": seat, "phase": SIEGE}))
    if any(s.choices[w] is None for w in s.waiting):
        return None
    return _resolve_siege(s, ev)


def _owner(s: WarriorState, card: int) -> int | None:
    for seat in range(s.seats):
        if card in s.creatures[seat] or any(w == card for w, _ in s.wizards[seat]):
            return seat
    return None


def _resolve_siege(s: WarriorState, ev: Events) -> str | None:
    """Shots resolve in seat order; a shot whose target is no longer a legal target is not fired and its
    engine stays (house). Each fired engine rolls one die: 4+ destroys (5.1) and is discarded."""
    fired = []
    for seat in s.waiting:
        for shot in s.choices[seat]:
            if shot.target not in siege_targets(s, seat):
                ev.append(Event("siege_void", {"seat": seat, "engine": s.tokens[shot.engine], "target": s.tokens[shot.target]}))
                continue
            (die,) = roll(s.draw_rng(), 1)
            hit = die >= SIEGE_HIT
            s.engines[seat] = tuple(e for e in s.engines[seat] if e != shot.engine)
            s.discards += (shot.engine,)
            owner = _owner(s, shot.target)
            record = {"seat": seat, "engine": s.tokens[shot.engine], "target": face(s, shot.target),
                      "target_seat": owner, "roll": die, "hit": hit}
            ev.append(Event("siege_shot", record))
            fired.append(record)
            if hit and owner is not None:
                _destroy(s, owner, shot.target, seat, "siege", ev)
    s.last_siege = tuple(fired)
    s.choices = [None] * s.seats
    return s.after_siege


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
    require(isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < state.seats, "invalid_seat", "no such seat")
    require(state.phase != OVER, "match_over", "the match is over")
    entry = _ACTIONS.get(kind)
    if entry is None:
        raise IllegalAction("unknown_action", f"unknown action type {kind!r}")
    phase, handler = entry  # type: ignore[misc]
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
