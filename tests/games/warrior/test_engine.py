"""Warrior engine properties: fuzzing, prompts and defaults, whole bot matches. The generic contract
checks (determinism, replay, purity, views, seat counts) are in ``tests/games/test_conformance.py``."""
from __future__ import annotations

import json
import random
import re

import pytest

from app.games.base import IllegalAction
from app.games.warrior import GAME, attack
from app.games.warrior.bots import CaptainBot, RandomBot
from app.games.warrior.state import OVER, SIMULTANEOUS

from .helpers import BOT_CLASSES, fingerprint, play_match, prompt_dict


def _junk(rng: random.Random, s, seat):
    """Malformed or hostile actions built around the current legal default."""
    prompts = [p for p in GAME.prompts(s) if p.seat == seat]
    base: dict = dict(prompts[0].default_action) if prompts else {"type": "keep", "cards": []}
    junk_values: list = [None, -1, 10**12, -(10**12), 3.5, True, "", "x" * 5000, [], {}, ["a"] * 100000,
                   [[1]], {"a": {"b": []}}, [None], [-1], float("nan"), "elves", {"seat": "1", "race": 4}]
    out: list = [
        None, 5, "keep", [], {}, {"type": None}, {"type": 7}, {"type": "explode"}, {"type": "keep"},
        {"type": "keep", "cards": "abc"}, {"type": "keep", "cards": [1, 2, 3, 4]},
        {"type": "keep", "cards": ["x"] * 10000}, {"type": "lose", "cards": None},
        {"type": "target"}, {"type": "target", "target": [1, "elves"]},
        {"type": "target", "target": {"seat": -1, "race": "elves"}},
        {"type": "target", "target": {"seat": True, "race": "elves"}},
        {"type": "target", "target": {"seat": 1, "race": ["elves"]}}, {"type": "target", "nation": {}},
        {"type": "siege", "shots": [{"engine": None, "target": 3}]}, {"type": "siege", "shots": [[1, 2]]},
        {"type": "siege", "shots": [{}] * 50}, {"type": "reattack", "face_down": 0},
        {"type": "reattack", "face_down": ["a"]}, {"type": "place_wizards", "wizards": ["a"]},
        {"type": "place_wizards", "wizards": {"a": 1}}, {"type": "keep", "cards": [], "attacks": [1]},
    ]
    for _ in range(12):
        mutated = dict(base)
        key = rng.choice(sorted(mutated) + ["cards", "target", "force", "nation", "wizards", "attacks", "shots"])
        mutated[key] = rng.choice(junk_values)
        out.append(mutated)
    if isinstance(base.get("cards"), list) and base["cards"]:
        out.append({**base, "cards": base["cards"][:-1] + [base["cards"][0]]})
        out.append({**base, "cards": base["cards"] + ["zzzzzzzzzzzz"]})
    if isinstance(base.get("wizards"), dict) and base["wizards"]:
        out.append({**base, "wizards": {k: 12 for k in base["wizards"]}})
    if isinstance(base.get("attacks"), dict) and base["attacks"]:
        out.append({**base, "attacks": {k: "orcs" for k in base["attacks"]}})
    return out


def test_fuzz_only_illegal_action_and_state_unchanged():
    rng = random.Random(1234)
    accepted = rejected = 0
    for seed in range(6):
        seats = 2 + seed % 3
        s = GAME.setup(seats, None, bytes([seed + 40]) * 32)
        bots = [RandomBot(seed * 10 + i) for i in range(seats)]
        while s.phase != OVER:
            before = fingerprint(s)
            for seat in (rng.randrange(seats), rng.choice([-5, seats, 99, True, "0", None])):
                valid_seat = isinstance(seat, int) and 0 <= seat < seats
                for action in _junk(rng, s, seat) if valid_seat else [{"type": "go_on"}]:
                    try:
                        GAME.apply(s, seat, action)
                        accepted += 1
                    except IllegalAction as exc:
                        assert re.fullmatch(r"[a-z_]+", exc.code)
                        rejected += 1
            assert fingerprint(s) == before  # no junk action touched the state
            p = next(p for p in GAME.prompts(s) if not p.submitted)
            s, _ = GAME.apply(s, p.seat, bots[p.seat].decide(GAME.view(s, p.seat), prompt_dict(p)))
    assert rejected > 1000


def test_prompts_invariants_and_defaults_always_legal():
    for seed in range(6):
        seats = 2 + seed % 3
        last_phase_id = -1

        def check(s, events):
            nonlocal last_phase_id
            prompts = GAME.prompts(s)
            if s.phase == OVER:
                assert prompts == [] and GAME.outcome(s) is not None
                return
            assert prompts and GAME.outcome(s) is None
            assert s.phase_id >= last_phase_id
            last_phase_id = s.phase_id
            assert all(p.phase_id == s.phase_id and p.kind == s.phase for p in prompts)
            assert all(p.simultaneous == (s.phase in SIMULTANEOUS) for p in prompts)
            view = GAME.view(s, prompts[0].seat)
            assert view["phase_id"] == s.phase_id and view["phase"] == s.phase
            if s.phase == "target":  # the cached options are the options computed afresh
                fresh = s.clone()
                fresh.target_cache = None
                assert attack.target_options(fresh) == attack.target_options(s)
            # applying every unsubmitted default ends the phase
            t = s
            for p in prompts:
                if not p.submitted:
                    t, _ = GAME.apply(t, p.seat, dict(p.default_action))
            assert t.phase_id != s.phase_id

        play_match(seed + 100, seats, BOT_CLASSES[seed % 2], on_step=check)


@pytest.mark.parametrize("bot_cls", [RandomBot, CaptainBot, (CaptainBot, RandomBot)],
                         ids=["random", "captain", "mixed"])
def test_seeded_bot_matches_end_with_an_outcome(bot_cls):
    for seed in range(40):
        seats = 2 + seed % 3
        s, steps, _ = play_match(seed, seats, bot_cls)
        out = GAME.outcome(s)
        assert out is not None and out.reason == "three_rounds_played"
        assert sorted(out.ranks) == list(range(seats)) and min(out.ranks.values()) == 1
        assert json.dumps(out.to_wire())
        # conservation: every card is somewhere
        total = len(s.pile) + len(s.discards) + sum(len(x) for x in s.creatures) + sum(len(x) for x in s.victory) \
            + sum(len(x) for x in s.wizards) + sum(len(x) for x in s.engines) + sum(len(x) for x in s.hands)
        assert total == 90


def test_captain_beats_random_more_often_than_not():
    wins = 0
    games = 30
    for seed in range(games):
        s, _, _ = play_match(seed + 500, 2, (CaptainBot, RandomBot) if seed % 2 == 0 else (RandomBot, CaptainBot))
        captain = 0 if seed % 2 == 0 else 1
        if GAME.outcome(s).ranks[captain] == 1:
            wins += 1
    assert wins > games // 2


