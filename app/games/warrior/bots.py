"""Warrior bots. Each sees only its seat's view and its own prompt (``app.games.base.Bot``).

- :class:`RandomBot`: a uniformly random legal action at every prompt.
- :class:`CaptainBot`: a sensible player: keeps creatures that build majorities, attacks the weakest
  reachable nation, goes on while the odds favour it, fires siege engines at wizards and weak spots.
"""
from __future__ import annotations

import itertools
import random
from functools import lru_cache
from typing import Any

from app.games.warrior.cards import DIE_FACES
from app.games.warrior.dice import Force, dice_counts, exchange


def _me(view: dict[str, Any]) -> dict[str, Any]:
    return view["seats"][view["viewer"]]


def _my_nations(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["race"]: n for n in _me(view)["nations"]}


def _nations_after_keep(view: dict[str, Any], kept: list[dict[str, Any]]) -> dict[str, int]:
    sizes = {race: n["size"] for race, n in _my_nations(view).items()}
    for card in kept:
        if card["kind"] == "creature":
            sizes[card["race"]] = sizes.get(card["race"], 0) + 1
    return sizes


def _place(rng: random.Random | None, wizards: list[str], free: list[str], sizes: dict[str, int]) -> dict[str, Any]:
    """Assign wizards to distinct free nations (random order with ``rng``, largest first without)."""
    free = list(free)
    if rng is not None:
        rng.shuffle(free)
    else:
        free.sort(key=lambda r: -sizes.get(r, 0))
    out: dict[str, Any] = {}
    for w in wizards:
        out[w] = free.pop(0) if free else None
    return out


def _keep_action(view, kept: list[dict[str, Any]], rng: random.Random | None) -> dict[str, Any]:
    sizes = _nations_after_keep(view, kept)
    protected = {r for r, n in _my_nations(view).items() if n["wizard"] is not None}
    free = [r for r in sizes if r not in protected]
    attacks: dict[str, Any] = {}
    for card in kept:
        if card["kind"] == "attack" and card.get("attack") == "nation":
            if not sizes:
                attacks[card["id"]] = None
            elif rng is not None:
                attacks[card["id"]] = rng.choice(sorted(sizes))
            else:
                attacks[card["id"]] = max(sorted(sizes), key=lambda r: sizes[r])
    wizards = [c["id"] for c in kept if c["kind"] == "wizard"]
    return {"type": "keep", "cards": [c["id"] for c in kept], "attacks": attacks,
            "wizards": _place(rng, wizards, free, sizes)}


class RandomBot:
    """Random legal play."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        d = view.get("decision")
        if d is None or prompt.get("submitted"):
            return None
        rng = self.rng
        kind = prompt["kind"]
        if kind == "keep":
            return _keep_action(view, rng.sample(d["hand"], d["keep"]), rng)
        if kind == "place_wizards":
            sizes = {r: 1 for r in d["nations"]}
            wizards = [w["id"] for w in d["wizards"]]
            return {"type": "place_wizards", "wizards": _place(rng, wizards, d["nations"], sizes)}
        if kind == "siege":
            shots = []
            targets = list(d["targets"])
            rng.shuffle(targets)
            for engine in d["engines"]:
                if targets and rng.random() < 0.3:
                    shots.append({"engine": engine, "target": targets.pop()})
            return {"type": "siege", "shots": shots}
        if kind == "target":
            option = rng.choice(d["options"])
            target = rng.choice(option["targets"])
            action: dict[str, Any] = {"type": "target", "target": {"seat": target["seat"], "race": target["race"]}}
            if option["nation"] is not None:
                action["nation"] = option["nation"]
            if d["force_candidates"]:
                action["force"] = rng.sample(d["force_candidates"], d["force_size"])
            return action
        if kind == "lose":
            return {"type": "lose", "cards": rng.sample(d["candidates"], d["count"])}
        if kind == "continue":
            return {"type": "go_on"} if rng.random() < 0.7 else {"type": "stop"}
        if kind == "reattack":
            if rng.random() < 0.5:
                return {"type": "reattack", "face_down": rng.choice(d["candidates"])}
            return {"type": "end_attack"}
        return None


@lru_cache(maxsize=None)
def _exchange_edge(att_inf: int, att_arch: int, def_inf: int, def_arch: int) -> float:
    """Expected (defender losses - attacker losses) of one exchange, by enumerating every roll."""
    attacker = Force(9, att_inf, att_arch)
    defender = Force(9, def_inf, def_arch)
    n_att, n_def = dice_counts(attacker, defender)
    total = count = 0
    for a in itertools.product(range(1, DIE_FACES + 1), repeat=n_att):
        for d in itertools.product(range(1, DIE_FACES + 1), repeat=n_def):
            x = exchange(a, d, attacker, defender)
            total += x.defender_losses - x.attacker_losses
            count += 1
    return total / count


def _edge(att: dict[str, int], dfn: dict[str, int]) -> float:
    return _exchange_edge(min(att.get("infantry", 0), 3), min(att.get("archer", 0), 9),
                          min(dfn.get("infantry", 0), 2), min(dfn.get("archer", 0), 9))


def _symbol_value(card: dict[str, Any]) -> float:
    sym = card.get("symbols", {})
    return 1.0 * sym.get("infantry", 0) + 1.1 * sym.get("archer", 0) + 1.3 * sym.get("knight", 0)


class CaptainBot:
    """A sensible player: plain heuristics over its own view only."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    @staticmethod
    def _points(view: dict[str, Any], race: str) -> int:
        for row in view["races"]:
            if row["race"] == race:
                return row["majority_points"]
        return 0

    # -- keep -----------------------------------------------------------------------------------
    def _card_worth(self, view: dict[str, Any], card: dict[str, Any], sizes: dict[str, int]) -> float:
        kind = card["kind"]
        if kind == "creature":
            race = card["race"]
            mine = sizes.get(race, 0)
            best_other = max(
                (n["size"] for s in view["seats"] if s["seat"] != view["viewer"]
                 for n in s["nations"] if n["race"] == race),
                default=0,
            )
            majority = self._points(view, race) / 4.0 if mine + 1 >= best_other else 0.5
            return 2.0 + majority + 0.3 * mine + 0.2 * _symbol_value(card)
        if kind == "attack":
            return 2.2 + (0.4 if card.get("attack") == "nation" and sizes and max(sizes.values()) >= 4 else 0.0)
        if kind == "wizard":
            return 1.5 + (1.5 if sizes and max(sizes.values()) >= 4 else 0.0)
        return 2.4  # siege engine: 2 points on a hit, a wizard breaker

    # -- decisions ------------------------------------------------------------------------------
    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        d = view.get("decision")
        if d is None or prompt.get("submitted"):
            return None
        kind = prompt["kind"]
        if kind == "keep":
            sizes = {race: n["size"] for race, n in _my_nations(view).items()}
            ranked = sorted(d["hand"], key=lambda c: -self._card_worth(view, c, sizes))
            return _keep_action(view, ranked[: d["keep"]], None)
        if kind == "place_wizards":
            sizes = {race: n["size"] for race, n in _my_nations(view).items()}
            wizards = [w["id"] for w in d["wizards"]]
            return {"type": "place_wizards", "wizards": _place(None, wizards, d["nations"], sizes)}
        if kind == "siege":
            return self._siege(view, d)
        if kind == "target":
            return self._target(view, d)
        if kind == "lose":
            return self._lose(view, d)
        if kind == "continue":
            return self._continue(view)
        if kind == "reattack":
            return self._reattack(view, d)
        return None

    def _cards_by_id(self, view: dict[str, Any]) -> dict[str, tuple[int, dict[str, Any], dict[str, Any]]]:
        out = {}
        for s in view["seats"]:
            for n in s["nations"]:
                for c in n["cards"]:
                    out[c["id"]] = (s["seat"], n, c)
                if n["wizard"] is not None:
                    out[n["wizard"]["id"]] = (s["seat"], n, n["wizard"])
        return out

    def _siege(self, view: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
        index = self._cards_by_id(view)
        me = view["viewer"]
        attack = view.get("attack")

        def worth(token: str) -> float:
            seat, nation, card = index[token]
            if card["kind"] == "wizard":
                return 3.0 + nation["size"] * 0.5
            score = _symbol_value(card)
            if attack and attack["seat"] == me and attack["target"] and attack["target"]["seat"] == seat \
                    and attack["target"]["race"] == nation["race"]:
                score += 2.0  # soften the nation we are fighting
            return score

        targets = sorted((t for t in d["targets"] if t in index), key=worth, reverse=True)
        shots = []
        late = view["attack_order"] == [] or len(view["attack_order"]) <= 1
        for engine in d["engines"]:
            if not targets:
                break
            best = targets[0]
            if worth(best) >= 3.0 or late:
                shots.append({"engine": engine, "target": targets.pop(0)})
        return {"type": "siege", "shots": shots}

    def _my_power(self, view: dict[str, Any], option_nation: str | None) -> float:
        if option_nation is None:
            return 3.0
        n = _my_nations(view).get(option_nation)
        return float(n["size"]) if n else 0.0

    def _nation(self, view: dict[str, Any], seat: int, race: str) -> dict[str, Any] | None:
        for n in view["seats"][seat]["nations"]:
            if n["race"] == race:
                return n
        return None

    def _target(self, view: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
        attack = view["attack"]
        card_symbols = attack["card"].get("symbols", {}) if attack else {}
        best = None
        for option in d["options"]:
            if attack and attack["started"]:
                mine = dict(attack["force_symbols"])
                size = len(attack["force"])
            elif option["nation"] is not None:
                own = self._nation(view, view["viewer"], option["nation"])
                assert own is not None, "an option's nation is one of the viewer's own"
                mine = {k: own["symbols"].get(k, 0) + card_symbols.get(k, 0) for k in ("infantry", "archer", "knight")}
                size = own["size"]
            else:
                mine = {"infantry": min(3, d["force_size"]), "archer": 0}
                size = d["force_size"]
            for t in option["targets"]:
                theirs = self._nation(view, t["seat"], t["race"])
                edge = _edge(mine, theirs["symbols"]) if theirs else 0.0
                score = edge * 3 + (size - t["size"]) * 0.3 + self._points(view, t["race"]) * 0.02
                if best is None or score > best[0]:
                    best = (score, option, t)
        assert best is not None
        _, option, t = best
        action: dict[str, Any] = {"type": "target", "target": {"seat": t["seat"], "race": t["race"]}}
        if option["nation"] is not None:
            action["nation"] = option["nation"]
        if d["force_candidates"]:
            index = self._cards_by_id(view)

            def keep_home(token: str) -> float:  # prefer soldiers of small, unprotected-anyway nations
                _, nation, card = index[token]
                return -_symbol_value(card) + 0.1 * nation["size"]

            action["force"] = sorted(d["force_candidates"], key=keep_home)[: d["force_size"]]
        return action

    def _lose(self, view: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
        index = self._cards_by_id(view)
        attacking = view["attack"] is not None and view["attack"]["seat"] == view["viewer"]
        # attacking: infantry rolls and knights re-attack; defending: infantry and archers matter, knights not
        weights = {"infantry": 1.3, "archer": 1.0, "knight": 1.2} if attacking else \
            {"infantry": 1.3, "archer": 1.1, "knight": 0.6}

        def value(token: str) -> float:
            if token not in index:
                return 0.0
            symbols = index[token][2].get("symbols", {})
            return sum(weights.get(k, 1.0) * n for k, n in symbols.items())

        ranked = sorted(d["candidates"], key=value)
        return {"type": "lose", "cards": ranked[: d["count"]]}

    def _continue(self, view: dict[str, Any]) -> dict[str, Any]:
        attack = view["attack"]
        mine = len(attack["force"])
        target = attack["target"]
        theirs = self._nation(view, target["seat"], target["race"])
        if theirs is None:
            return {"type": "stop"}
        edge = _edge(attack["force_symbols"], theirs["symbols"])
        if mine >= 2 and (edge > -0.05 or mine >= theirs["size"] + 2):
            return {"type": "go_on"}
        return {"type": "stop"}

    def _reattack(self, view: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
        attack = view["attack"]
        if len(attack["force"]) < 3:
            return {"type": "end_attack"}
        by_id = {c["id"]: c for c in attack["force"]}
        knights = [c for c in attack["force"] if c.get("symbols", {}).get("knight")]
        candidates = [t for t in d["candidates"] if not (len(knights) == 1 and by_id[t] is knights[0])]
        if not candidates:
            return {"type": "end_attack"}
        token = min(candidates, key=lambda t: _symbol_value(by_id[t]))
        return {"type": "reattack", "face_down": token}


BOTS = {"random": RandomBot, "captain": CaptainBot}
