"""Hand ranking for Hold'em Conquest: a thin adapter over `phevaluator` (conquest.md 3.6).

Why phevaluator: see ``docs/benchmarks/poker-libraries.md`` (fastest of the three measured by a
wide margin through its C extension, exact on every check, maintained, already a dependency).

Cards are ints ``rank * 4 + suit`` with ranks ``2..A`` = 0..12 and suits ``c d h s`` = 0..3 —
phevaluator's own card ids, so no translation happens on the hot path. A *rank* here is
phevaluator's: 1 (royal flush) .. 7462 (seven-high); **lower is stronger**; equal ranks are a full
tie (suits never rank).
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Iterable, Sequence

from phevaluator import evaluate_cards as _evaluate_cards

try:  # the C function itself: our cards are already phevaluator ids, so skip its per-card conversion
    from phevaluator._pheval import evaluate_7cards as _evaluate_7cards
except ImportError:  # pragma: no cover - another layout of the package
    from phevaluator import evaluate_7cards as _evaluate_7cards

RANKS = "23456789TJQKA"
SUITS = "cdhs"
DECK = tuple(range(52))
NAMES = tuple(r + s for r in RANKS for s in SUITS)

#: Upper bounds of each category's ranks (Cactus Kev numbering used by phevaluator).
_CATEGORIES = (
    (10, "straight_flush"),
    (166, "four_of_a_kind"),
    (322, "full_house"),
    (1599, "flush"),
    (1609, "straight"),
    (2467, "three_of_a_kind"),
    (3325, "two_pair"),
    (6185, "one_pair"),
    (7462, "high_card"),
)
_BOUNDS = tuple(bound for bound, _ in _CATEGORIES)
_CATEGORY_NAMES = tuple(name for _, name in _CATEGORIES)


def card_name(card: int) -> str:
    """``"Ac"`` for card 48."""
    return NAMES[card]


def parse_card(name: str) -> int:
    """``48`` for ``"Ac"`` (rank ``2-9 T J Q K A``, suit ``c d h s``). Raises ValueError."""
    if not isinstance(name, str) or len(name) != 2 or name[0] not in RANKS or name[1] not in SUITS:
        raise ValueError(f"not a card: {name!r}")
    return RANKS.index(name[0]) * 4 + SUITS.index(name[1])


def parse_cards(names: str | Iterable[str]) -> list[int]:
    """Cards from ``"AcKd"`` / ``"Ac Kd"`` / ``["Ac", "Kd"]``."""
    if isinstance(names, str):
        names = names.replace(" ", "")
        names = [names[i:i + 2] for i in range(0, len(names), 2)]
    return [parse_card(n) for n in names]


class InvalidHand(ValueError):
    """Cards that cannot be one hand: not 7 (or 5–7) cards, a card outside 0..51, or a card twice.
    A ValueError, so callers that caught bad input before still do."""


_DECK_SET = frozenset(DECK)


def rank7(cards: Sequence[int]) -> int:
    """The rank of the best five of exactly 7 distinct cards (ints 0..51: 2 in hand + 5 on the
    board); lower is stronger (conquest.md 3.6). Raises :class:`InvalidHand` for another count, a
    card that is not an int 0..51 (bools included) or a card twice — the evaluator itself would
    rank seven A♥ as a straight flush."""
    distinct = set(cards)
    if len(distinct) != 7 or len(cards) != 7 or not distinct <= _DECK_SET:
        raise InvalidHand(f"not 7 distinct cards 0..51: {list(cards)!r}")
    if True in distinct:  # True == 1 (and False == 0) would pass the set test as 2c / 2d
        if any(type(card) is bool for card in cards):
            raise InvalidHand("a card is an int 0..51, not a bool")
    return _evaluate_7cards(*cards)


def rank_cards(cards: Sequence[int]) -> int:
    """The rank of the best five of 5–7 distinct cards (ints 0..51); lower is stronger. Raises
    :class:`InvalidHand` (a ValueError) on other sizes, cards outside 0..51 or a card twice."""
    distinct = set(cards)
    if not 5 <= len(cards) <= 7 or len(distinct) != len(cards) or not distinct <= _DECK_SET \
            or any(type(card) is bool for card in cards):
        raise InvalidHand(f"not 5-7 distinct cards 0..51: {list(cards)!r}")
    return _evaluate_cards(*cards)


def category(rank: int) -> str:
    """The hand category of a rank: ``"straight_flush"`` … ``"high_card"``."""
    index = bisect_left(_BOUNDS, rank)  # the first bound >= rank
    if index == len(_BOUNDS):
        raise ValueError(f"not a hand rank: {rank}")
    return _CATEGORY_NAMES[index]
