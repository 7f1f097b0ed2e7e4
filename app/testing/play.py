"""Random legal play through the public legality API, as the suites drive a game.

Nothing here reads a game's state: a step picks a prompted seat (now and then any seat), one of its
``legal_actions`` kinds and a random action of that kind from the kind's ``domains``, or the prompt's
default action.
"""
from __future__ import annotations

import random
from typing import Any

from app.games.base import LegalAction

__all__ = ["random_step", "sample", "setup_for_tests"]


def setup_for_tests(game: Any, seats: int, seed: bytes, options: Any = "test") -> Any:
    """``game.setup`` with the game's declared ``test_options`` (``options="test"``), or the given
    options (None: the defaults)."""
    if isinstance(options, str) and options == "test":
        options = dict(game.info.test_options)
    return game.setup(seats, options, seed)


def sample(rng: random.Random, legal: LegalAction) -> dict[str, Any]:
    """A random action of the kind ``legal`` from its domains (the example where a domain is opaque)."""
    action = dict(legal.example)
    for name, domain in legal.domains.items():
        if isinstance(domain, list) and domain:
            action[name] = rng.choice(domain)
        elif isinstance(domain, dict) and "subset_of" in domain:
            pool = list(domain["subset_of"])
            low = domain.get("min", 1)
            high = min(domain.get("max", len(pool)), len(pool))
            if low <= high:
                action[name] = rng.sample(pool, rng.randint(low, high))
        elif isinstance(domain, dict) and "permutation_of" in domain:
            order = list(domain["permutation_of"])
            rng.shuffle(order)
            action[name] = order
    return action


def random_step(game: Any, state: Any, seats: int, rng: random.Random,
                check: Any = None) -> tuple[int, dict[str, Any]] | None:
    """A random legal ``(seat, action)``: a prompted seat's default or a sample of one of its legal
    kinds; now and then a legal action of any seat (actions outside prompts, such as specials).
    None when nobody is prompted. ``check(state, prompts, seat, legal)``, when given, is called
    with what the step looked at (the suites' per-step checks)."""
    prompts = [p for p in game.prompts(state) if not p.submitted]
    if not prompts:
        return None
    seat = rng.choice(prompts).seat if rng.random() < 0.9 else rng.randrange(seats)
    legal = game.legal_actions(state, seat)
    if check is not None:
        check(state, prompts, seat, legal)
    prompt = next((p for p in prompts if p.seat == seat), None)
    if prompt is not None and (not legal or rng.random() < 0.4):
        return seat, dict(prompt.default_action)
    if not legal:
        seat = prompts[0].seat
        return seat, dict(prompts[0].default_action)
    kind = rng.choice(legal)
    action = sample(rng, kind)
    return seat, action if game.can_act(state, seat, action) else dict(kind.example)
