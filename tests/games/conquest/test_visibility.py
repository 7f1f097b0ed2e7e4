"""Section 4: what each player sees (conquest.md 4.1–4.4), and the engine-level leak test."""
from __future__ import annotations

import json
import re

import pytest

from app.games.base import ADMIN, SPECTATOR
from app.games.conquest import GAME
from app.games.conquest.bots import RandomBot, SensibleBot
from app.games.conquest.state import NEUTRAL

from .support import (
    board_of,
    decide,
    events_json,
    finish_phase,
    fork,
    orders,
    play,
    position,
)
from .test_battle import N1, N2, A, B, duel

TOKEN = re.compile(r"^[a-z2-7]{12}$")


def _tokens(hand) -> set[str]:
    return {d[1] for d in hand}


def test_4_1_public_information_for_spectators():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    view = GAME.view(state, SPECTATOR)
    assert [land["owner"] for land in view["lands"]] == [
        None if o == NEUTRAL else o for o in state.owner]
    assert [(s["mana"], s["tables"]) for s in view["seats"]] == [(8, 1), (8, 1)]
    assert view["attacks"] == [{"land": B, "attackers": [0]}] and view["defences"] == [B]
    battle = view["battles"][0]
    assert [c["card"] for c in battle["flop"]] == ["2c", "7d", "9h"] and battle["turn"]["card"] == "Js"
    assert "you" not in view
    state, _ = finish_phase(state, decide({0: [], 1: []}))
    state, _ = finish_phase(state, decide({0: [], 1: []}))
    battle = GAME.view(state, SPECTATOR)["battles"][0]
    assert battle["river"]["card"] == "4s"
    shown = {p["seat"]: sorted(c["card"] for c in p["hand"]) for p in battle["participants"]}
    assert shown == {0: ["Ac", "Ad"], 1: ["Kc", "Kd"]}  # hands that reached the final


def test_4_1_folds_are_public():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    state, events = finish_phase(state, decide({0: [], 1: [B]}))
    folded = next(e for e in events if e.type == "folds")
    assert folded.audience is None
    statuses = {p["seat"]: p["status"] for p in GAME.view(state, SPECTATOR)["battles"][0]["participants"]}
    assert statuses == {0: "live", 1: "folded_turn"}


def test_4_2_pool_and_hands_are_private():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    battle = state.battles[B]
    mine, theirs = _tokens(battle.hands[0]), _tokens(battle.hands[1])
    view0 = GAME.view(state, 0)
    seen = {p["seat"]: p["hand"] for p in view0["battles"][0]["participants"]}
    assert sorted(c["card"] for c in seen[0]) == ["Ac", "Ad"]
    assert seen[1] == [{"hidden": True}, {"hidden": True}]
    assert theirs <= GAME.hidden_tokens(state, 0) and mine <= GAME.hidden_tokens(state, 1)
    assert (mine | theirs) <= GAME.hidden_tokens(state, SPECTATOR)
    text = json.dumps(GAME.view(state, SPECTATOR))
    assert not any(t in text for t in mine | theirs)
    assert GAME.hidden_tokens(state, ADMIN) == set()


def test_4_2_folded_hand_never_shown():
    board = board_of(3)
    x, a, c = fork(board)
    state = position(seats=3, owner={a: 0, c: 1}, table_decks={x: "2c 7d 9h  3s 4s  Js 5d"},
                     pools={0: "AhAd", 1: "KhKd"})
    state, _ = finish_phase(state, orders({0: [x], 1: [x]}))
    folder = _tokens(state.battles[x].hands[1])
    state, ev1 = finish_phase(state, decide({0: [], 1: []}))
    state, ev2 = finish_phase(state, decide({0: [], 1: [x]}))  # seat 1 folds at the river
    battle = state.battles[x]
    assert battle.finalists == (0, NEUTRAL)
    for viewer in (0, 2, SPECTATOR):
        assert folder <= GAME.hidden_tokens(state, viewer)
        assert not any(t in json.dumps(GAME.view(state, viewer)) for t in folder)
        assert not any(t in events_json(ev1 + ev2, viewer) for t in folder)
    assert folder <= {c["id"] for p in GAME.view(state, 1)["battles"][0]["participants"] if p["seat"] == 1
                      for c in p["hand"]}  # the folder still sees their own hand
    neutral = _tokens(battle.hands[NEUTRAL])
    assert neutral and not neutral & GAME.hidden_tokens(state, 2)  # it reached the final: shown


def test_4_3_unopened_flops_hidden_from_all():
    state = GAME.setup(3, None, b"flops")
    for viewer in (0, 1, 2, SPECTATOR):
        view = GAME.view(state, viewer)
        assert all(land["flop"] == [{"hidden": True}] * 3 for land in view["lands"])
        assert "deck" not in json.dumps(view)
    admin = GAME.view(state, ADMIN)
    for land in admin["lands"]:
        assert all(card["hidden"] is True and "card" in card for card in land["flop"])


def test_4_4_card_ids_are_opaque_per_match_tokens():
    state, _ = duel("2c 7d 9h  Js 4s", "AcAd", "KcKd")
    ids = [d[1] for d in state.battles[B].flop] + [state.battles[B].turn[1]]
    assert all(TOKEN.match(t) for t in ids)
    assert len(set(ids)) == len(ids)
    # the same cards dealt on two tables get different tokens
    state = position(owner={A: 0, B: 1}, table_decks={N1: "2c 3c 4c 5c 6c 7c 8c", N2: "2c 3c 4c 5c 6c 7c 8c"})
    state, _ = finish_phase(state, orders({0: [N1, N2], 1: []}))
    state, _ = finish_phase(state)
    one, two = state.battles[N1], state.battles[N2]
    assert [d[0] for d in one.flop] == [d[0] for d in two.flop]
    assert not {d[1] for d in one.flop} & {d[1] for d in two.flop}


def _must_not_see(state, viewer) -> set[str]:
    """An oracle written from section 4 and the battle's plain facts, independent of view.py:
    other seats' pools; every hand but one's own unless it was live when its battle reached the
    final (folded, technically folded, and neutral hands of battles settled early stay hidden)."""
    hidden = {d[1] for seat, pool in state.pools.items() if seat != viewer for d in pool}
    for battle in state.battles.values():
        reached_final = battle.result in ("final", "tie")
        for who, hand in battle.hands.items():
            if who == viewer and who != NEUTRAL:
                continue
            if reached_final and battle.status[who] == "live":
                continue
            hidden.update(d[1] for d in hand if d[1])
    return hidden


def _leak_check(state, seat, action, events):
    for viewer in list(range(state.seats)) + [SPECTATOR]:
        hidden = GAME.hidden_tokens(state, viewer)
        assert hidden == _must_not_see(state, viewer)
        if not hidden:
            continue
        text = json.dumps(GAME.view(state, viewer)) + events_json(events, viewer)
        found = {t for t in re.findall(r'"([a-z2-7]{12})"', text) if t in hidden}
        assert not found, (viewer, found)


@pytest.mark.parametrize("seats,n", [(2, 0), (3, 1), (4, 2), (2, 3), (3, 4), (4, 5)])
def test_4_no_hidden_card_ever_reaches_a_viewer(seats, n):
    bots = [RandomBot(n * 10 + k) if k % 2 else SensibleBot(n * 10 + k, samples=20) for k in range(seats)]
    final = play(seats, b"leak-%d" % n, bots, on_step=_leak_check)
    assert GAME.outcome(final) is not None


# ---- section 5: the same leak test with every special in play ----------------------------------

def _must_not_see_with_specials(state, viewer) -> set[str]:
    """Section 4's oracle, less what a special shows ``viewer`` (written from the rules table, not
    from view.py): read_hand — the attackers' hands on a land the viewer held (5.3.2.1); hound — the
    neutral's hand in a battle the viewer fights in, once it has ids (5.3.2.2)."""
    hidden = _must_not_see(state, viewer)
    active = state.active.get(viewer, frozenset()) if viewer >= 0 else frozenset()
    for battle in state.battles.values():
        for who, hand in battle.hands.items():
            if who == NEUTRAL:
                shown = "hound" in active and viewer in battle.paid
            else:
                shown = "read_hand" in active and battle.holder == viewer and who in battle.attackers
            if shown:
                hidden -= {d[1] for d in hand}
    return hidden


def _may_peek(state, viewer, land) -> bool:
    """Can ``viewer`` see ``land``'s face-down flop (5.3.1.1-5.3.1.6)?"""
    if viewer < 0:
        return False
    if land in state.scouted.get(viewer, ()):
        return True
    active = state.active.get(viewer, frozenset())
    owner = state.owner[land]
    shield = state.shields.get(land)
    shielded = shield is not None and shield[0] == owner and owner != viewer
    if owner == viewer:
        return bool(active & {"loyalty", "big_brother"})
    if owner == NEUTRAL:
        return bool(active & {"spy", "big_brother"})
    return not shielded and bool(active & {"corruption", "big_brother"})


def _cards_in(value):
    if isinstance(value, dict):
        if "card" in value and ("id" in value or "hidden" in value or "seen" in value):
            yield value
        for item in value.values():
            yield from _cards_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _cards_in(item)


def _leak_check_specials(state, seat, action, events):
    for viewer in list(range(state.seats)) + [SPECTATOR]:
        hidden = GAME.hidden_tokens(state, viewer)
        assert hidden == _must_not_see_with_specials(state, viewer)
        view = GAME.view(state, viewer)
        text = json.dumps(view) + events_json(events, viewer)
        found = {t for t in re.findall(r'"([a-z2-7]{12})"', text) if t in hidden}
        assert not found, (viewer, found)
        # a card face without an id is a face-down flop seen through a special: only its owner's
        for land in view["lands"]:
            for card in land["flop"]:
                if "card" in card and "id" not in card:
                    assert _may_peek(state, viewer, land["id"]), (viewer, land["id"], card)
                    assert card["seen"] in ("scout", "loyalty", "spy", "corruption", "big_brother")
        faceless = [c for c in _cards_in(view["battles"]) if "id" not in c]
        assert not faceless, faceless
        # the joker is seen by others only at the final
        for battle in view["battles"]:
            for part in battle["participants"]:
                if part["seat"] != viewer and part["hand"] and "category" not in part:
                    assert not any("joker" in c for c in part["hand"]), (viewer, battle["land"])
        for event in events:
            if event.type == "special_seen":
                assert event.audience == frozenset({event.data["seat"]})


@pytest.mark.parametrize("seats,n", [(2, 0), (3, 1), (4, 2), (2, 3), (3, 4), (4, 5)])
def test_5_no_hidden_card_reaches_a_viewer_with_every_special_in_play(seats, n):
    from app.games.conquest import SPECIALS

    loadouts = [list(SPECIALS)] * seats
    bots = [RandomBot(n * 10 + k, special_chance=0.4) if k % 2 else SensibleBot(n * 10 + k, samples=10)
            for k in range(seats)]
    used = set()

    def check(state, seat, action, events):
        if action.get("type") == "special":
            used.add(action["special"])
        _leak_check_specials(state, seat, action, events)

    final = play(seats, b"leak-specials-%d" % n, bots, on_step=check,
                 options={"loadouts": loadouts, "max_rounds": 10, "starting_mana": 60})
    assert GAME.outcome(final) is not None
    assert len(used) >= 12, used  # the bots did play (nearly) every special


# ---- traces (protocol.md: nothing you receive counts the actions you could not see) -----------------

def _document(state, viewer):
    prompts = [[p.seat, p.kind, p.phase_id, p.simultaneous, p.submitted] for p in GAME.prompts(state)]
    return {"status": GAME.outcome(state) is None, "prompts": prompts, "view": GAME.view(state, viewer)}


def _special_uses(state, seat):
    """Every special action ``seat`` may send now: activations, a scout of each land, a shield of 1 on
    each of its lands, double_income on each, the joker on each card of each live hand."""
    from app.games.conquest.specials import SPECIALS

    candidates = [{"type": "special", "special": special} for special in SPECIALS]
    for land in range(state.board.size):
        candidates += [{"type": "special", "special": "scout", "land": land},
                       {"type": "special", "special": "shield", "land": land, "mana": 1},
                       {"type": "special", "special": "double_income", "land": land}]
    for land, battle in state.battles.items():
        for _card, token in battle.hands.get(seat, ()):
            candidates.append({"type": "special", "special": "joker", "land": land, "card": token})
    return [action for action in candidates if GAME.can_act(state, seat, action)]


#: what another viewer's document may show of a special used by seat S (paths of the patch)
_PUBLIC_PARTS = re.compile(r"^/view/seats/(?P<seat>\d+)/(mana|specials(/\d+|/-)?|double_income_land)$"
                           r"|^/view/lands/(?P<land>\d+)/shield$|^/view/you/scout_costs/(?P<priced>\d+)$")


@pytest.mark.parametrize("seats", [2, 3])
def test_4_a_special_shows_others_only_its_public_part(seats):
    """Every special, used by any living seat with or without a prompt, at many moments of random
    matches: the other seats and the spectators get only the public part — the seat's mana and its
    list of active specials, a shield's table, the double_income land — and an event of fixed keys
    (``special_used``), never the scouted land, a flop, a hand or the joker's card; a use that costs
    nothing and activates nothing (a scout for free, a joker set) reaches them not at all."""
    from app.delta import diff
    from app.games.conquest.specials import SPECIALS

    options = {"loadouts": [list(SPECIALS)] * seats, "special_costs": {"scout": 0, "hound": 0}}
    state = GAME.setup(seats, options, b"special-traces-%d" % seats)
    bots = [RandomBot(seat) for seat in range(seats)]
    checked = silent = 0
    kinds = set()
    for step in range(240):
        if GAME.outcome(state) is not None:
            break
        if step % 4 == 0:
            for seat in range(seats):
                for action in _special_uses(state, seat):
                    after, events = GAME.apply(state, seat, action)
                    kinds.add((action["special"], state.phase, "land" in action))  # what was covered
                    for viewer in [*range(seats), SPECTATOR]:
                        if viewer == seat:
                            continue
                        patch = diff(_document(state, viewer), _document(after, viewer))
                        for op in patch:
                            match = _PUBLIC_PARTS.match(op["path"])
                            assert match and int(match["seat"] or seat) == seat, (action, viewer, op)
                            shielded = match["land"] or match["priced"]  # a public shield's price
                            assert shielded is None or (action["special"] == "shield"
                                                        and int(shielded) == action["land"]), (action, op)
                        seen = [e for e in events if e.visible_to(viewer)]
                        assert [e.type for e in seen] in ([], ["special_used"]), (action, viewer, seen)
                        for event in seen:
                            keys = {"seat", "special", "cost", "mana"} | (
                                {"land", "shield"} if action["special"] == "shield" else
                                {"land"} if action["special"] == "double_income" else set())
                            assert set(event.data) == keys, (action, event.data)
                        if not patch:
                            assert seen == [], (action, viewer, seen)
                            silent += 1
                        checked += 1
        prompt = next(p for p in GAME.prompts(state) if not p.submitted)
        wire = {"seat": prompt.seat, "kind": prompt.kind, "phase_id": prompt.phase_id,
                "simultaneous": True, "submitted": False}
        action = bots[prompt.seat].decide(GAME.view(state, prompt.seat), wire) or dict(prompt.default_action)
        state, _ = GAME.apply(state, prompt.seat, action)
    assert checked > 1000 and silent > 0, (checked, silent)
    assert {special for special, _phase, _land in kinds} == set(SPECIALS)  # every special was used
    assert {phase for _special, phase, _land in kinds} >= {"orders", "assign", "turn"}
