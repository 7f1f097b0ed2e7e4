"""Tricks: setup, prompts, legality and ``apply`` (rules as built: ``tricks.md``).

Two players, a 24-card deck (9 to ace in four suits). Every hand the deck is shuffled, each seat is
dealt 6 hidden cards and the next card is turned up: its suit is trumps. The leader plays any card;
the other must follow suit when they can, else may play any card. A trick goes to the highest trump
in it, else to the highest card of the suit led; its winner leads the next. After 6 tricks a new
hand is dealt, led by the seat that did not lead the last one. After ``hands`` hands the most tricks
win (equal: a draw).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from app.games.base import CardTokens, Event, IllegalAction, LegalAction, Outcome, Prompt, Rng, action_type

from bannerfall_tricks.state import HAND_SIZE, RANKS, SUITS, Card, Options, State

DECK = tuple((suit, rank) for suit in SUITS for rank in RANKS)


def _deal(state: State, events: list[Event], leader: int) -> State:
    """A new hand: the deck shuffled, 6 cards to each seat (each with a fresh token; only its seat is
    told), the next card turned up as trumps."""
    rng = state.rng.clone()
    deck = list(DECK)
    rng.shuffle(deck)
    dealt = state.dealt
    hands = []
    for seat in range(2):
        hand = []
        for suit, rank in deck[seat * HAND_SIZE:(seat + 1) * HAND_SIZE]:
            hand.append(Card(state.tokens.token(dealt), suit, rank))
            dealt += 1
        hands.append(tuple(hand))
        events.append(Event("dealt", {"seat": seat, "cards": [c.wire for c in hand]}, frozenset((seat,))))
    suit, rank = deck[2 * HAND_SIZE]
    trump = Card(state.tokens.token(dealt), suit, rank)
    events.append(Event("hand_started", {"hand": state.hand + 1, "trump": trump.wire, "leader": leader}))
    return replace(state, rng=rng, dealt=dealt + 1, hand=state.hand + 1, hands=(hands[0], hands[1]),
                   trump=trump, leader=leader, current=leader, tricks=(0, 0), table=())


def setup(seats: int, options: Any, seed: bytes) -> State:
    """A new match for 2 seats, deterministic from ``seed``. Raises ValueError for another seat
    count, pydantic's ValidationError for bad options."""
    if type(seats) is not int or seats != 2:
        raise ValueError("tricks is for 2 seats")
    if not isinstance(options, Options):
        options = Options.model_validate(dict(options or {}))
    tokens = CardTokens(seed)
    state = State(options=options, rng=Rng(seed), tokens=tokens, dealt=0, hand=0, phase_id=1, current=0,
                  leader=0, trump=Card("", "clubs", "9"), hands=((), ()), table=(), tricks=(0, 0), score=(0, 0),
                  last_trick=())
    return _deal(state, [], 0)


def playable(state: State, seat: int) -> list[Card]:
    """The cards ``seat`` may play now: any card when leading, else the cards of the suit led if it
    has one, else any card."""
    hand = state.hands[seat]
    if not state.table:
        return list(hand)
    led = state.table[0][1].suit
    following = [c for c in hand if c.suit == led]
    return following or list(hand)


def prompts(state: State) -> list[Prompt]:
    """The seat to play, with the turn deadline; its default plays its first playable card."""
    if state.result is not None or state.current is None:
        return []
    first = playable(state, state.current)[0]
    return [Prompt(seat=state.current, kind="play", phase_id=state.phase_id,
                   deadline_seconds=float(state.options.turn_seconds),
                   default_action={"type": "play", "card": first.token})]


def check_action(state: State, seat: Any, action: Mapping[str, Any]) -> Card:
    """The card ``action`` plays, or IllegalAction: ``malformed_action``, ``unknown_action``,
    ``match_over``, ``not_your_turn``, ``unknown_card``, ``must_follow_suit``."""
    kind = action_type(action)
    if kind != "play":
        raise IllegalAction("unknown_action", f"unknown action type {kind[:40]!r}")
    if state.result is not None:
        raise IllegalAction("match_over", "the match is over")
    if type(seat) is not int or seat != state.current:
        raise IllegalAction("not_your_turn", "it is not your turn")
    token = action.get("card")
    if not isinstance(token, str):
        raise IllegalAction("malformed_action", "'card' must be a card id")
    card = next((c for c in state.hands[seat] if c.token == token), None)
    if card is None:
        raise IllegalAction("unknown_card", "that card is not in your hand")
    if card not in playable(state, seat):
        raise IllegalAction("must_follow_suit", f"you have {state.table[0][1].suit}: follow suit")
    return card


def legal_actions(state: State, seat: int) -> list[LegalAction]:
    if state.result is not None or seat != state.current:
        return []
    tokens = [c.token for c in playable(state, seat)]
    return [LegalAction("play", {"type": "play", "card": tokens[0]}, {"card": tokens})]


def trick_winner(table: tuple[tuple[int, Card], ...], trump: str) -> int:
    """The seat that wins a full trick: the highest trump, else the highest card of the suit led."""
    led = table[0][1].suit

    def rank(played: tuple[int, Card]) -> tuple[int, int]:
        card = played[1]
        return (2 if card.suit == trump else 1 if card.suit == led else 0, card.strength)

    return max(table, key=rank)[0]


def apply(state: State, seat: int, action: Mapping[str, Any]) -> tuple[State, list[Event]]:
    card = check_action(state, seat, action)
    events = [Event("played", {"seat": seat, "card": card.wire})]
    hands = list(state.hands)
    hands[seat] = tuple(c for c in hands[seat] if c is not card)
    table = (*state.table, (seat, card))
    new = replace(state, hands=(hands[0], hands[1]), table=table, phase_id=state.phase_id + 1)
    if len(table) < 2:
        return replace(new, current=1 - seat), events
    winner = trick_winner(table, state.trump.suit)
    tricks = list(new.tricks)
    tricks[winner] += 1
    score = list(new.score)
    score[winner] += 1
    events.append(Event("trick_won", {"seat": winner, "cards": [{"seat": s, **c.wire} for s, c in table],
                                      "tricks": tricks}))
    new = replace(new, table=(), last_trick=table, tricks=(tricks[0], tricks[1]), score=(score[0], score[1]),
                  leader=winner, current=winner)
    if new.hands[0]:
        return new, events
    events.append(Event("hand_over", {"hand": new.hand, "tricks": tricks, "score": score}))
    if new.hand >= new.options.hands:
        ranks = {s: 1 if score[s] >= score[1 - s] else 2 for s in range(2)}
        result = Outcome(ranks, {s: float(score[s]) for s in range(2)}, "hands_played")
        events.append(Event("match_over", result.to_wire()))
        return replace(new, result=result, current=None), events
    return _deal(new, events, leader=new.hand % 2), events
