"""Warrior attacks (warrior.md 3.3, 4): choosing the attack, the exchange of dice, losses, going on,
the knights' re-attack and the end of an attack.
"""
from __future__ import annotations

from typing import Any, Mapping

from app.games.base import Event, IllegalAction, require
from app.games.warrior.common import (
    Events,
    _cards_from,
    _destroy,
    _is_mapping,
    _largest,
    _nation_sizes,
    _open,
    _other_seats,
    _race_arg,
    _token_list,
    face,
    submitted_event,
)
from app.games.warrior.dice import Force, dice_counts, exchange, roll
from app.games.warrior.siege import _open_siege
from app.games.warrior.state import (
    CONTINUE,
    LOSE,
    REATTACK,
    TARGET,
    Attack,
    WarriorState,
    replaced,
)


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
            ev.append(Event("attack_unused",
                            {"seat": atk.seat, "card": s.tokens[atk.card], "reason": "no_legal_target"}))
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
            assert nation is not None, "an attack card that is not mercenary names its nation"
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
    raw_target: Any = action.get("target")  # client JSON, checked by require() below
    require(_is_mapping(raw_target), "malformed_action", "'target' must be {seat, race}")
    t_seat = raw_target.get("seat")
    require(isinstance(t_seat, int) and not isinstance(t_seat, bool), "malformed_action",
            "target seat must be an integer")
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
    waiting = tuple(sorted(seat for seat, n, from_att in losses
                           if n < (len(atk.force) if from_att else len(defending))))
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
    chosen = tuple(_cards_from(s, tokens, lose_candidates(s, from_att), "not_losable"))
    ev.append(submitted_event(s, seat, LOSE))
    s.choices = replaced(s.choices, seat, chosen)
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
    s.choices = (None,) * s.seats


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
    token: Any = action.get("face_down")  # client JSON, checked by require() below
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
