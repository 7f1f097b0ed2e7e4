"""Bots for Hold'em Conquest. They see only their seat's view and their prompt (``app.games.base.Bot``).

- :class:`RandomBot`: a random legal action for every prompt.
- :class:`SensibleBot`: attacks what it can afford to fight through (activation + turn + river),
  defends the same way, pairs its pool into the strongest-looking hands, and folds hands whose
  Monte-Carlo winning chance (same evaluator as the server, :mod:`app.games.conquest.poker`) is poor.

Both answer a prompt once and return None while their submission is on file.
"""
from __future__ import annotations

import random
from typing import Any

from app.games.conquest import poker

#: Mana set aside per attack: activation 1, turn 1, and the river (2) for about half of them.
ATTACK_BUDGET = 3
#: Mana needed per defended land to get to its turn decision: defence 1, turn 1.
DEFENCE_BUDGET = 2
#: Stay at the turn only with at least this winning chance: staying costs the river (2) and the
#: forgone refund (1), against a land worth several mana a round for the rest of the match.
TURN_THRESHOLD = 0.3
#: Stay at the river only with at least this chance: staying costs only the forgone refund (1).
RIVER_THRESHOLD = 0.1


def _cards(cards: list[dict[str, Any]]) -> list[int]:
    return [poker.parse_card(c["card"]) for c in cards if "card" in c and not c.get("hidden")]


class RandomBot:
    """Random legal actions (a fuzzing partner and a baseline)."""

    def __init__(self, seed: int = 0, fold_chance: float = 0.25) -> None:
        self.rng = random.Random(seed)
        self.fold_chance = fold_chance

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        if prompt.get("submitted"):
            return None
        you = view["you"]
        kind = prompt["kind"]
        rng = self.rng
        if kind == "orders":
            targets = you["attackable"]
            k = rng.randint(0, min(len(targets), you["mana"], you["max_battles"]))
            return {"type": "orders", "attack": rng.sample(targets, k)}
        if kind == "defence":
            lands = you["defendable"]
            k = rng.randint(0, min(len(lands), you["mana"], you["max_battles"] - you.get("attacks_made", 0)))
            return {"type": "defend", "lands": rng.sample(lands, k)}
        if kind == "assign":
            tokens = [c["id"] for c in you["pool"]]
            rng.shuffle(tokens)
            return {"type": "assign",
                    "hands": {str(land): tokens[2 * i:2 * i + 2] for i, land in enumerate(you["battle_lands"])}}
        if kind == "decision":
            return {"type": "decide",
                    "folds": [land for land in you["decision_lands"] if rng.random() < self.fold_chance]}
        return None


def _pair_value(a: int, b: int) -> float:
    """A rough pre-flop strength of a 2-card hand (pairs, high cards, suited, connected)."""
    ra, rb = a >> 2, b >> 2
    hi, lo = max(ra, rb), min(ra, rb)
    value = hi + lo * 0.5
    if ra == rb:
        value += 14 + ra
    if (a & 3) == (b & 3):
        value += 2
    if 0 < hi - lo <= 2:
        value += 1
    return value


class SensibleBot:
    """Plays sensibly: see the module docstring. ``samples``: Monte-Carlo deals per table decision."""

    def __init__(self, seed: int = 0, samples: int = 120) -> None:
        self.rng = random.Random(seed)
        self.samples = samples

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        if prompt.get("submitted"):
            return None
        kind = prompt["kind"]
        if kind == "orders":
            return self._orders(view)
        if kind == "defence":
            return self._defend(view)
        if kind == "assign":
            return self._assign(view)
        if kind == "decision":
            return self._decide(view)
        return None

    def _orders(self, view: dict[str, Any]) -> dict[str, Any]:
        """Attack as many targets as the mana covers for activation, turn and (for about half of
        them) river — 3 mana each — weakest owners first: a seat too poor to defend and pay a turn
        loses its land for the activation alone, a neutral always fights, a rich seat may defend."""
        you = view["you"]
        mana_of = {s["seat"]: s["mana"] for s in view["seats"]}
        owner_of = {land["id"]: land["owner"] for land in view["lands"]}
        afford = min(you["mana"] // ATTACK_BUDGET, you["max_battles"])

        def priority(land: int) -> tuple[float, float]:
            owner = owner_of[land]
            if owner is None:
                return (1.0, self.rng.random())
            return (0.0 if mana_of[owner] < 2 else 2.0, self.rng.random())

        targets = sorted(you["attackable"], key=priority)
        return {"type": "orders", "attack": targets[:afford]}

    def _defend(self, view: dict[str, Any]) -> dict[str, Any]:
        """Defend every attacked land the mana covers (defence + turn: 2 each), after keeping the
        turn payment of each own attack; an undefended land is lost for nothing."""
        you = view["you"]
        made = you.get("attacks_made", 0)
        spare = you["mana"] - made
        limit = you["max_battles"] - made
        lands = list(you["defendable"])
        self.rng.shuffle(lands)
        return {"type": "defend", "lands": lands[:max(0, min(limit, spare // DEFENCE_BUDGET))]}

    def _assign(self, view: dict[str, Any]) -> dict[str, Any]:
        """Greedy: the best-looking pair of the pool goes to the first table, and so on."""
        you = view["you"]
        pool = [(poker.parse_card(c["card"]), c["id"]) for c in you["pool"]]
        hands = {}
        for land in you["battle_lands"]:
            best = None
            for i in range(len(pool)):
                for j in range(i + 1, len(pool)):
                    value = _pair_value(pool[i][0], pool[j][0])
                    if best is None or value > best[0]:
                        best = (value, i, j)
            _, i, j = best
            hands[str(land)] = [pool[i][1], pool[j][1]]
            pool = [c for k, c in enumerate(pool) if k not in (i, j)]
        return {"type": "assign", "hands": hands}

    def equity(self, hand: list[int], board: list[int], opponents: int) -> float:
        """Monte-Carlo chance that ``hand`` wins (ties count by share) against ``opponents`` random
        hands once ``board`` is completed to 5 cards."""
        known = set(hand) | set(board)
        deck = [c for c in range(52) if c not in known]
        missing = 5 - len(board)
        need = missing + 2 * opponents
        rng = self.rng
        won = 0.0
        for _ in range(self.samples):
            drawn = rng.sample(deck, need)
            full = board + drawn[:missing]
            mine = poker.rank7(hand + full)
            best_other = min(poker.rank7(drawn[missing + 2 * k:missing + 2 * k + 2] + full) for k in range(opponents))
            if mine < best_other:
                won += 1.0
            elif mine == best_other:
                won += 0.5
        return won / self.samples

    def _decide(self, view: dict[str, Any]) -> dict[str, Any]:
        """Fold a table whose Monte-Carlo winning chance is below the stage's threshold, and fold
        the weakest turn tables whose river the mana cannot pay (a technical fold would lose the
        turn's mana; a fold gets 1 back)."""
        you = view["you"]
        battles = {b["land"]: b for b in view["battles"]}
        me = you["seat"]
        scored = []
        for land in you["decision_lands"]:
            battle = battles[land]
            mine = next(p for p in battle["participants"] if p["seat"] == me)
            hand = _cards(mine["hand"])
            board = _cards(battle["flop"]) + _cards([c for c in (battle["turn"], battle["river"]) if c])
            opponents = sum(1 for p in battle["participants"] if p["seat"] != me and p["status"] == "live")
            chance = self.equity(hand, board, opponents)
            at_turn = battle["river"] is None
            weak = chance < (TURN_THRESHOLD if at_turn else RIVER_THRESHOLD)
            scored.append((chance, land, weak, at_turn))
        folds = [land for _, land, weak, _ in scored if weak]
        staying = sorted((s for s in scored if not s[2] and s[3]), reverse=True)
        mana = you["mana"] + len([s for s in scored if s[2] and s[3]])
        while staying and 2 * len(staying) > mana:
            _, land, _, _ = staying.pop()
            folds.append(land)
            mana += 1
        return {"type": "decide", "folds": sorted(folds)}
