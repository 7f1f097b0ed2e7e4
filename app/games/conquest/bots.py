"""Bots for Hold'em Conquest. They see only their seat's view and their prompt (``app.games.base.Bot``).

- :class:`RandomBot`: a random legal action for every prompt.
- :class:`SensibleBot`: attacks what it can afford to fight through (activation + turn + river),
  defends the same way, pairs its pool into the strongest-looking hands, and folds hands whose
  Monte-Carlo winning chance (same evaluator as the server, :mod:`app.games.conquest.poker`) is poor.

Both answer a prompt once and return None while their submission is on file. With a loadout
(section 5, ``view["you"]["loadout"]``) they may first send ``special`` actions — each changes the
view they get next, and they answer the prompt afterwards: the random bot now and then activates a
random legal special; the sensible one activates the affordable useful ones while keeping mana to
fight, scouts tables it means to attack, sets its joker on a weak card and keeps the best 2 of a
4-card hand. :func:`choose_loadout` picks what a bot seat brings.
"""
from __future__ import annotations

import random
from typing import Any

from app.games.conquest import poker
from app.games.conquest.costs import (
    ACTIVATION_COST,
    DEFENCE_COST,
    RIVER_COST,
    TURN_COST,
)

#: Mana set aside per attack: activation, turn, and the river for about half of them (1 + 1 + 2/2).
ATTACK_BUDGET = ACTIVATION_COST + TURN_COST + RIVER_COST // 2
#: Mana needed per defended land to get to its turn decision: defence and turn (1 + 1).
DEFENCE_BUDGET = DEFENCE_COST + TURN_COST
#: Stay at the turn only with at least this winning chance: staying costs the river (2) and the
#: forgone refund (1), against a land worth several mana a round for the rest of the match.
TURN_THRESHOLD = 0.3
#: Stay at the river only with at least this chance: staying costs only the forgone refund (1).
RIVER_THRESHOLD = 0.1


#: The order in which a bot brings and activates specials: cheap, always-useful ones first.
BOT_PREFERENCE = (
    "free_fold", "insurance", "double_income", "scout", "hound", "joker", "read_hand", "spy",
    "loyalty", "full_double_income", "double_hand", "corruption", "shield", "big_brother", "double_set",
)


def choose_loadout(owned: list[str], max_specials: int = 4, seed: int | None = None) -> list[str]:
    """The specials a bot seat brings to a match (section 5): from ``owned`` (special ids; unknown
    ids and duplicates ignored), at most ``max_specials``, the most useful first
    (:data:`BOT_PREFERENCE`; the same ``owned`` always gives the same loadout). ``seed`` varies the
    choice within each tier of five (a livelier demo) and stays deterministic."""
    mine = [special for special in BOT_PREFERENCE if special in set(owned)]
    if seed is not None:
        random.Random(seed).shuffle(mine)
        mine.sort(key=lambda special: BOT_PREFERENCE.index(special) // 5)  # keep the tiers
    return mine[:max(0, max_specials)]


def _own_lands(view: dict[str, Any], me: int) -> list[dict[str, Any]]:
    return [land for land in view["lands"] if land["owner"] == me]


def _active(view: dict[str, Any], me: int) -> list[str]:
    return view["seats"][me].get("specials", [])


def _joker_action(view: dict[str, Any], prompt: dict[str, Any], rng: random.Random | None) -> dict[str, Any] | None:
    """Set the joker (5.3.2.3) on the weaker card of a live hand at a decision, once per battle."""
    you = view["you"]
    if prompt["kind"] != "decision" or "joker" not in you.get("loadout", ()):
        return None
    me = you["seat"]
    if "joker" not in _active(view, me) and you["special_costs"].get("joker", 99) > _free(you) - 4:
        return None
    battles = {b["land"]: b for b in view["battles"]}
    for land in you["decision_lands"]:
        if land in you.get("jokers", ()):
            continue
        hand = next(p["hand"] for p in battles[land]["participants"] if p["seat"] == me)
        card = min(hand, key=lambda c: poker.parse_card(c["card"])) if rng is None else rng.choice(hand)
        return {"type": "special", "special": "joker", "land": land, "card": card["id"]}
    return None


def _free(you: dict[str, Any]) -> int:
    """Mana a special may use now: the seat's mana less what its submission on file holds
    (``you.reserved``, conquest.md 1.4)."""
    return you["mana"] - you.get("reserved", 0)


def _affordable(view: dict[str, Any], lands: list[int]) -> list[int]:
    """``lands`` (attack targets, in the bot's order) cut so their activations fit the seat's mana:
    a shielded table costs N more (5.3.1.1). Unchanged without shields."""
    extra = {land["id"]: land["shield"] for land in view["lands"]
             if land.get("shield") and land["owner"] != view["you"]["seat"]}
    if not extra:
        return lands
    out, spent = [], 0
    for land in lands:
        cost = ACTIVATION_COST + extra.get(land, 0)
        if spent + cost <= view["you"]["mana"]:
            out.append(land)
            spent += cost
    return out


def _best_two(hand: list[int], board: list[int]) -> tuple[int, int]:
    """The 2 of a 4-card hand (double_hand, 5.3.2.4) that make the best hand with a full board."""
    pairs = [(hand[i], hand[j]) for i in range(len(hand)) for j in range(i + 1, len(hand))]
    return min(pairs, key=lambda pair: poker.rank7(list(pair) + board))


def _cards(cards: list[dict[str, Any]]) -> list[int]:
    return [poker.parse_card(c["card"]) for c in cards if "card" in c and not c.get("hidden")]


class RandomBot:
    """Random legal actions (a fuzzing partner and a baseline)."""

    def __init__(self, seed: int = 0, fold_chance: float = 0.25, special_chance: float = 0.15) -> None:
        self.rng = random.Random(seed)
        self.fold_chance = fold_chance
        self.special_chance = special_chance

    def _special(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        """Now and then a random legal special (section 5): activate one, shield or scout a table,
        set the joker."""
        you = view["you"]
        rng = self.rng
        if rng.random() >= self.special_chance:
            return None
        me = you["seat"]
        mana = _free(you)
        active = _active(view, me)
        options: list[dict[str, Any]] = []
        for special in you["loadout"]:
            cost = you["special_costs"][special]
            if special == "scout":
                options += [{"type": "special", "special": "scout", "land": int(land)}
                            for land, price in you.get("scout_costs", {}).items() if price <= mana][:3]
            elif special == "shield":
                free = [land["id"] for land in _own_lands(view, me) if "shield" not in land]
                if free and cost + 1 <= mana:
                    options.append({"type": "special", "special": "shield", "land": rng.choice(free),
                                    "mana": rng.randint(1, min(3, mana - cost))})
            elif special == "joker":
                use = _joker_action(view, prompt, rng)
                if use is not None and (special in active or cost <= mana):
                    options.append(use)
                elif special not in active and cost <= mana:
                    options.append({"type": "special", "special": "joker"})
            elif special in active or cost > mana:
                continue
            elif special == "double_income":
                own = _own_lands(view, me)
                if own:
                    options.append({"type": "special", "special": special, "land": rng.choice(own)["id"]})
            elif special in ("double_set", "double_hand"):
                if prompt["kind"] == "orders":  # nothing on file yet: the cap of 7 holds
                    options.append({"type": "special", "special": special})
            else:
                options.append({"type": "special", "special": special})
        return rng.choice(options) if options else None

    def anytime(self, view: dict[str, Any]) -> dict[str, Any] | None:
        """Now and then a random special for a seat with nothing to answer (specials are activated at
        any moment, seed 5.1.3); None otherwise, and for a seat that brought none."""
        you = view.get("you") or {}
        if not you.get("loadout") or view["seats"][you["seat"]].get("eliminated"):
            return None
        return self._special(view, {"kind": None})

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        if prompt.get("submitted"):
            return None
        you = view["you"]
        kind = prompt["kind"]
        rng = self.rng
        if you.get("loadout"):
            chosen = self._special(view, prompt)
            if chosen is not None:
                return chosen
        if kind == "orders":
            targets = you["attackable"]
            k = rng.randint(0, min(len(targets), you["mana"], you["max_battles"]))
            return {"type": "orders", "attack": _affordable(view, rng.sample(targets, k))}
        if kind == "defence":
            lands = you["defendable"]
            k = rng.randint(0, min(len(lands), you["mana"], you["max_battles"] - you.get("attacks_made", 0)))
            return {"type": "defend", "lands": rng.sample(lands, k)}
        if kind == "assign":
            tokens = [c["id"] for c in you["pool"]]
            rng.shuffle(tokens)
            size = you.get("hand_size", 2)
            lands = you["battle_lands"]
            hands = {str(land): tokens[size * i:size * i + size] for i, land in enumerate(lands)}
            return {"type": "assign", "hands": hands}
        if kind == "decision":
            action: dict[str, Any] = {
                "type": "decide", "folds": [land for land in you["decision_lands"] if rng.random() < self.fold_chance]}
            if you.get("loadout") and view["phase"] == "river":  # double_hand: a random 2 of 4
                keep = {}
                for battle in view["battles"]:
                    if battle["land"] in you["decision_lands"] and battle["land"] not in action["folds"]:
                        hand = next(p["hand"] for p in battle["participants"] if p["seat"] == you["seat"])
                        if len(hand) == 4:
                            keep[str(battle["land"])] = [c["id"] for c in rng.sample(hand, 2)]
                if keep:
                    action["keep"] = keep
            return action
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
        if view["you"].get("loadout"):
            chosen = self._special(view, prompt)
            if chosen is not None:
                return chosen
        if kind == "orders":
            return self._orders(view)
        if kind == "defence":
            return self._defend(view)
        if kind == "assign":
            return self._assign(view)
        if kind == "decision":
            return self._decide(view)
        return None

    def _special(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        """A useful special it can afford while keeping mana to fight (section 5), else None:
        at the orders, the passive ones in :data:`BOT_PREFERENCE` order with a reserve of 8 mana,
        double_income on its first land, a scout of one neutral target it may attack, a shield of
        2 on a land next to another seat when rich; at a decision, the joker."""
        you = view["you"]
        me = you["seat"]
        mana = _free(you)
        joker = _joker_action(view, prompt, None)
        if joker is not None:
            return joker
        if prompt["kind"] != "orders":
            return None
        active = _active(view, me)
        own = _own_lands(view, me)
        owner_of = {land["id"]: land["owner"] for land in view["lands"]}
        for special in BOT_PREFERENCE:
            if special not in you["loadout"]:
                continue
            cost = you["special_costs"][special]
            if special == "scout":
                costs = you.get("scout_costs", {})
                neutral = [land for land in you["attackable"] if owner_of[land] is None and str(land) in costs]
                if neutral and mana >= costs[str(neutral[0])] + 10:
                    return {"type": "special", "special": "scout", "land": neutral[0]}
                continue
            if special == "shield":
                exposed = [land["id"] for land in own if "shield" not in land and any(
                    owner_of[n] not in (None, me) for n in land["neighbours"])]
                if exposed and mana >= cost + 2 + 14:
                    return {"type": "special", "special": "shield", "land": exposed[0], "mana": 2}
                continue
            if special in active or mana < cost + 8:
                continue
            if special == "full_double_income" and len(own) < 4:
                continue
            if special == "double_income":
                if own:
                    return {"type": "special", "special": special, "land": own[0]["id"]}
                continue
            if special == "joker":
                continue  # activated when first used, at a decision
            return {"type": "special", "special": special}
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
        return {"type": "orders", "attack": _affordable(view, targets[:afford])}

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
        if you.get("hand_size", 2) != 2:  # double_hand: the strongest cards first, 4 a table
            pool.sort(key=lambda c: -(c[0] >> 2))
            size = you["hand_size"]
            return {"type": "assign", "hands": {str(land): [c[1] for c in pool[size * i:size * i + size]]
                                                for i, land in enumerate(you["battle_lands"])}}
        for land in you["battle_lands"]:
            best = None
            for i in range(len(pool)):
                for j in range(i + 1, len(pool)):
                    value = _pair_value(pool[i][0], pool[j][0])
                    if best is None or value > best[0]:
                        best = (value, i, j)
            assert best is not None, "a battle's pool holds two cards at least"
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
        keep = {}
        for land in you["decision_lands"]:
            battle = battles[land]
            mine = next(p for p in battle["participants"] if p["seat"] == me)
            hand = _cards(mine["hand"])
            board = _cards(battle["flop"]) + _cards([c for c in (battle["turn"], battle["river"]) if c])
            if len(hand) > 2:  # double_hand (5.3.2.4): judge, and at the river keep, the best 2
                if len(board) == 5:
                    hand = list(_best_two(hand, board))
                    ids = {poker.parse_card(c["card"]): c["id"] for c in mine["hand"]}
                    keep[str(land)] = [ids[hand[0]], ids[hand[1]]]
                else:
                    hand = sorted(hand, key=lambda c: -(c >> 2))[:2]
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
        action: dict[str, Any] = {"type": "decide", "folds": sorted(folds)}
        keep = {land: cards for land, cards in keep.items() if int(land) not in folds}
        if keep:
            action["keep"] = keep
        return action
