"""warrior.md section 7: what each player sees; opaque tokens; the engine-level leak test."""
from __future__ import annotations

import json
import re

from app.games.base import ADMIN, SPECTATOR
from app.games.warrior import GAME
from app.games.warrior.positions import position
from app.games.warrior.state import KEEP, OVER

from .helpers import BOT_CLASSES, act, defaults, play_match, visible_json

HAND0 = ["elves:I", "elves:A", "trolls:I", "dwarves:K", "siege_engine", "wizard", "attack:2"]
HAND1 = ["trolls:A", "trolls:K", "goblins:I", "undead:I", "undead:A", "barbarians:I", "attack:14"]


def _keep_position():
    return position(nations={0: {"elves": "II"}, 1: {"trolls": "II"}}, hands={0: HAND0, 1: HAND1})


def test_7_dealt_cards_are_private_to_their_seat_during_the_keep_phase():
    s, _ = _keep_position()
    h0 = [s.tokens[c] for c in s.hands[0]]
    h1 = [s.tokens[c] for c in s.hands[1]]
    seat1 = json.dumps(GAME.view(s, 1))
    spectator = json.dumps(GAME.view(s, SPECTATOR))
    assert not any(t in seat1 or t in spectator for t in h0)
    assert not any(t in spectator for t in h1)
    own = GAME.view(s, 0)
    assert [c["id"] for c in own["decision"]["hand"]] == h0 and own["decision"]["keep"] == 4
    assert GAME.view(s, 1)["seats"][0]["hand_size"] == 7  # how many, not which
    assert GAME.hidden_tokens(s, 1) == set(h0) and GAME.hidden_tokens(s, SPECTATOR) == set(h0 + h1)
    assert GAME.hidden_tokens(s, ADMIN) == set()


def test_7_the_choice_stays_private_until_the_phase_ends_then_everything_is_public():
    s, _ = _keep_position()
    h0 = [s.tokens[c] for c in s.hands[0]]
    h1 = [s.tokens[c] for c in s.hands[1]]
    s, ev = act(s, 0, {"type": "keep", "cards": h0[:4]})
    assert not any(t in json.dumps([e.to_wire() for e in ev]) for t in h0)
    assert not any(t in json.dumps(GAME.view(s, 1)) for t in h0)
    assert GAME.view(s, 0)["decision"]["submission"]["cards"] == h0[:4]
    assert GAME.view(s, 1)["seats"][0]["submitted"] is True
    s, ev = act(s, 1, {"type": "keep", "cards": h1[:4]})
    public = json.dumps(GAME.view(s, SPECTATOR)) + json.dumps([e.to_wire() for e in ev if e.audience is None])
    assert all(t in public for t in h0 + h1)  # kept cards laid out, discards face up
    assert not GAME.hidden_tokens(s, SPECTATOR) & set(h0 + h1)


def test_7_deal_events_go_only_to_the_dealt_seat():
    s = GAME.setup(3, None, b"deal-events" * 3)
    while s.phase != OVER and not (s.phase == KEEP and s.round == 2):
        s, ev = defaults(s)
    dealt = [e for e in ev if e.type == "dealt"]
    assert len(dealt) == 3 and [sorted(e.audience) for e in dealt] == [[0], [1], [2]]
    public = [e for e in ev if e.type == "round_started"][0]
    assert public.audience is None and public.data["dealt"] == [7, 7, 7]


def test_7_pile_order_is_hidden_from_everyone():
    s, _ = _keep_position()
    assert all(s.tokens[c] is None for c in s.pile)
    v = GAME.view(s, SPECTATOR)
    assert v["pile_size"] == len(s.pile) and "pile" not in v
    admin = GAME.view(s, ADMIN)
    assert len(admin["pile"]) == len(s.pile) and all(c["hidden"] and "id" not in c for c in admin["pile"])


def test_7_admin_sees_hands_marked_hidden():
    s, _ = _keep_position()
    admin = GAME.view(s, ADMIN)
    assert [c["id"] for c in admin["hands"][0]] == [s.tokens[c] for c in s.hands[0]]
    assert all(c["hidden"] for hand in admin["hands"] for c in hand)
    assert admin["decisions"][0]["kind"] == "keep"


def test_7_dice_and_losses_are_public_events():
    s, events = position(nations={0: {"elves": "I"}, 1: {"trolls": "I"}}, attacks=[(0, 9, "elves")], dice=[4, 4])
    for e in events:
        if e.type in ("exchange", "card_destroyed", "attack_started", "attack_ended", "target_chosen"):
            assert e.audience is None


def test_7_card_ids_are_opaque_tokens_new_at_every_deal():
    s = GAME.setup(2, None, b"opaque" * 6)
    seen: dict[int, str] = {}
    renamed = 0
    while s.phase != OVER:
        if s.phase == KEEP:
            for hand in s.hands:
                for c in hand:
                    token = s.tokens[c]
                    assert re.fullmatch(r"[a-z2-7]{12}", token)
                    if c in seen and seen[c] != token:
                        renamed += 1
                    assert c not in seen or seen[c] != token  # a card dealt again never keeps its old id
                    seen[c] = token
        s, _ = defaults(s)
    assert renamed > 0
    v = json.dumps(GAME.view(s, SPECTATOR))
    assert '"index"' not in v  # card table indexes never reach the wire


def test_7_leak_test_over_seeded_bot_matches():
    """After every action, for every seat and the spectator, neither the view nor any event they can
    see contains a token ``hidden_tokens`` says they must not see."""
    checked_hidden = 0
    for seed in range(30):
        seats = 2 + seed % 3

        def check(state, events, seats=seats, seed=seed):
            nonlocal checked_hidden
            for viewer in (*range(seats), SPECTATOR):
                hidden = GAME.hidden_tokens(state, viewer)
                if not hidden:
                    continue
                checked_hidden += 1
                text = visible_json(state, events, viewer)
                for token in hidden:
                    assert token not in text, (seed, viewer, token)

        play_match(seed, seats, BOT_CLASSES[seed % 2], on_step=check)
    assert checked_hidden > 100


def test_7_match_tokens_equal_the_contract_card_tokens():
    """The engine's MatchTokens (HMAC key schedule done once) issue exactly CardTokens(seed).token(n)."""
    from app.games.base import CardTokens
    from app.games.warrior.state import MatchTokens

    for seed in (b"a" * 32, b"short", bytes(range(64)), b"\x00" * 100):
        fast, reference = MatchTokens(seed), CardTokens(seed)
        assert all(fast.token(n) == reference.token(n) for n in range(1500))
    s = GAME.setup(2, None, b"tokens" * 6)
    reference = CardTokens(b"tokens" * 6)
    issued = {reference.token(n) for n in range(s.token_count)}
    assert {t for t in s.tokens if t is not None} <= issued
