"""Tricks: bots. A bot sees only its seat's view and its own prompt, as a person's client does,
and answers with one action (``app.games.base.Bot``); the view lists the cards it may play."""
from __future__ import annotations

import random
from typing import Any

RANKS = ("9", "10", "J", "Q", "K", "A")


class RandomBot:
    """Plays a random card it may play."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        cards = view.get("playable") or []
        return {"type": "play", "card": self.rng.choice(cards)} if cards else None


class GreedyBot:
    """Leads its strongest card; answering, wins with its cheapest winning card, else throws its
    cheapest card (trumps count above every other suit)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        allowed = set(view.get("playable") or [])
        cards = [c for c in view.get("hand") or [] if c["id"] in allowed]
        if not cards:
            return None
        trump = view["trump"]["suit"]

        def worth(card: dict[str, Any]) -> int:
            return RANKS.index(card["rank"]) + (10 if card["suit"] == trump else 0)

        cards.sort(key=worth)
        if not view["table"]:
            return {"type": "play", "card": cards[-1]["id"]}
        lead = view["table"][0]

        def beats(card: dict[str, Any]) -> bool:
            if card["suit"] == lead["suit"]:
                return RANKS.index(card["rank"]) > RANKS.index(lead["rank"])
            return card["suit"] == trump and lead["suit"] != trump

        winning = [c for c in cards if beats(c)]
        return {"type": "play", "card": (winning[0] if winning else cards[0])["id"]}
