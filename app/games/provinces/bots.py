"""Provinces bots. They see only their seat's view and their prompt (``app.games.base.Bot``).

- :class:`RandomBot`: a few random legal actions per turn, then ``end_turn``.
- :class:`GreedyBot`: sorts and attacks where a simulated battle against the visible garrison
  wins, moves cards from the interior to the front, then ends the turn.

Both end their turn after a bounded number of actions, so a match between bots always ends. They
use the rules' own battle (:func:`app.games.provinces.rules.battle_result`) and constants
(``state.MAX_GARRISON``, ``state.DEALING_MODES``); nothing of the rules is copied here.
"""
from __future__ import annotations

import random
from typing import Any

from app.games.provinces.rules import battle_result
from app.games.provinces.state import DEALING_MODES, MAX_GARRISON


def simulate(attacking: list[int | None], defending: list[int | None], tie_rule: str) -> tuple[bool, int]:
    """(conquered, attacker survivors) of a battle on the values a bot can see (None = joker): the
    engine's own battle, :func:`app.games.provinces.rules.battle_result` (rules 3.2–3.7)."""
    return battle_result(attacking, defending, tie_rule)


class _TurnBot:
    """Shared bookkeeping: which phase we are in and how many actions we sent in it."""

    max_actions = 40

    def __init__(self, seed: int | str | bytes | None = None) -> None:
        self.rng = random.Random(seed)
        self._phase: int | None = None
        self._count = 0

    def _my_turn(self, view: dict[str, Any], prompt: dict[str, Any]) -> bool:
        if prompt.get("kind") != "turn" or view.get("phase") != "turn":
            return False
        if view.get("current_seat") != view.get("viewer"):
            return False
        phase = prompt.get("phase_id")
        if phase != self._phase:
            self._phase = phase
            self._count = 0
            self._new_turn(view)
        return True

    def _new_turn(self, view: dict[str, Any]) -> None:
        pass

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        if not self._my_turn(view, prompt):
            return None
        self._count += 1
        if self._count > self.max_actions:
            return {"type": "end_turn"}
        return self._choose(view) or {"type": "end_turn"}

    def _choose(self, view: dict[str, Any]) -> dict[str, Any] | None:  # pragma: no cover
        raise NotImplementedError


class RandomBot(_TurnBot):
    """Random legal actions: up to a random budget per turn, then ``end_turn``."""

    def _new_turn(self, view: dict[str, Any]) -> None:
        self._budget = self.rng.randint(0, 8)

    def _choose(self, view: dict[str, Any]) -> dict[str, Any] | None:
        if self._count > self._budget:
            return None
        me = view["viewer"]
        provinces = view["provinces"]
        options: list[tuple[str, Any, Any, Any]] = []
        for p in provinces:
            if p["owner"] != me or not p["garrison"]:
                continue
            tokens = [c["id"] for c in p["garrison"]]
            for other_id in p["adjacent"]:
                other = provinces[other_id]
                if other["owner"] != me:
                    if not p["attacked"] and not p["received"]:
                        options.append(("attack", p, other, tokens))
                elif not p["received"] and other["size"] < MAX_GARRISON:
                    options.append(("move", p, other, tokens))
            if p["frontline"]:
                options.append(("sort", p, None, tokens))
        options.append(("set_dealing", None, None, None))
        kind, p, other, tokens = options[self.rng.randrange(len(options))]
        if kind == "set_dealing":
            return {"type": "set_dealing", "mode": self.rng.choice(DEALING_MODES)}
        if kind == "sort":
            order = tokens[:]
            self.rng.shuffle(order)
            return {"type": "sort", "province": p["id"], "order": order}
        limit = len(tokens) if kind == "attack" else MAX_GARRISON - other["size"]
        count = self.rng.randint(1, min(len(tokens), limit))
        cards = self.rng.sample(tokens, count)
        return {"type": kind, "from": p["id"], "to": other["id"], "cards": cards}


class GreedyBot(_TurnBot):
    """Attacks where a simulated battle against the visible garrison is won with cards to spare
    (sorting the garrison first when another order wins better), brings interior cards to the
    front, and always ends its turn."""

    def _new_turn(self, view: dict[str, Any]) -> None:
        self._sorted: set[int] = set()
        if self.rng.random() < 0.2:
            self._pending_mode: str | None = self.rng.choice(DEALING_MODES)
        else:
            self._pending_mode = None

    def _choose(self, view: dict[str, Any]) -> dict[str, Any] | None:
        if self._pending_mode is not None:
            mode, self._pending_mode = self._pending_mode, None
            if mode != view.get("dealing_mode"):
                return {"type": "set_dealing", "mode": mode}
        return self._best_attack(view) or self._best_move(view)

    def _best_attack(self, view: dict[str, Any]) -> dict[str, Any] | None:
        me = view["viewer"]
        tie_rule = view["options"]["tie_rule"]
        provinces = view["provinces"]
        best = None
        for p in provinces:
            if p["owner"] != me or p["attacked"] or p["received"] or not p["garrison"]:
                continue
            cards = p["garrison"]
            orders = [cards]
            if p["id"] not in self._sorted:
                orders.append(sorted(cards, key=lambda c: -(99 if c["value"] is None else c["value"])))
                orders.append(sorted(cards, key=lambda c: (99 if c["value"] is None else c["value"])))
            for other_id in p["adjacent"]:
                other = provinces[other_id]
                if other["owner"] == me:
                    continue
                defending = [c["value"] for c in other["garrison"]]
                for rank, order in enumerate(orders):
                    won, left = simulate([c["value"] for c in order], defending, tie_rule)
                    if not won or left < 2 and defending:
                        continue
                    score = (left, -len(defending), -rank)
                    if best is None or score > best[0]:
                        best = (score, p, other, order)
        if best is None:
            return None
        _, p, other, order = best
        tokens = [c["id"] for c in order]
        if tokens != [c["id"] for c in p["garrison"]]:
            self._sorted.add(p["id"])
            return {"type": "sort", "province": p["id"], "order": tokens}
        return {"type": "attack", "from": p["id"], "to": other["id"], "cards": tokens}

    def _best_move(self, view: dict[str, Any]) -> dict[str, Any] | None:
        me = view["viewer"]
        provinces = view["provinces"]
        for p in provinces:
            if p["owner"] != me or p["frontline"] or p["received"] or not p["garrison"]:
                continue
            targets = [
                provinces[o] for o in p["adjacent"]
                if provinces[o]["owner"] == me and provinces[o]["size"] < MAX_GARRISON
            ]
            targets.sort(key=lambda t: (not t["frontline"], t["size"], t["id"]))
            for target in targets:
                if not target["frontline"] and self.rng.random() < 0.5:
                    continue
                room = MAX_GARRISON - target["size"]
                tokens = [c["id"] for c in p["garrison"]][:room]
                return {"type": "move", "from": p["id"], "to": target["id"], "cards": tokens}
        return None
