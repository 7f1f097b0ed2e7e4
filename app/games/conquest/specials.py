"""Hold'em Conquest specials (conquest.md section 5): ids, default costs, one-line descriptions.

This module is the interface with the meta-game (inventory, loadout picker, bot seats): the server
fills ``Options.loadouts`` (per seat, the special ids that seat brought) and ``Options.special_costs``
(overrides of :data:`DEFAULT_SPECIAL_COSTS`) at match start. Nothing here imports web, SQL, Redis or
asyncio.

Costs are mana (conquest.md 1.4). Two specials are priced per use rather than once:

- ``shield``: its cost is the activation fee (default 0); placing a shield of N mana (1–10) on one of
  one's tables costs N more (the table: "N").
- ``scout``: its cost is the price of looking at one table (default 1, "1/table"); there is no fee.

Every other special costs its amount once, when activated, and lasts to the end of the match (5.1.3).
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: The 15 special ids in the order of the rules table (conquest.md section 5).
SPECIALS: tuple[str, ...] = (
    "shield", "scout", "loyalty", "spy", "corruption", "big_brother", "read_hand", "hound", "joker",
    "double_hand", "double_set", "double_income", "full_double_income", "insurance", "free_fold",
)

#: Default costs in mana (conquest.md section 5 table); see the module docstring for shield/scout.
DEFAULT_SPECIAL_COSTS: Mapping[str, int] = MappingProxyType({
    "shield": 0,
    "scout": 1,
    "loyalty": 3,
    "spy": 3,
    "corruption": 5,
    "big_brother": 8,
    "read_hand": 4,
    "hound": 2,
    "joker": 6,
    "double_hand": 5,
    "double_set": 4,
    "double_income": 2,
    "full_double_income": 10,
    "insurance": 4,
    "free_fold": 4,
})

#: One line per special, for the inventory and the loadout picker (conquest.md section 5, seed §5.3).
SPECIAL_DESCRIPTIONS: Mapping[str, str] = MappingProxyType({
    "shield": "Put 1-10 mana on one of your tables; anyone else must pay as much more to attack or scout it.",
    "scout": "Look at one table's face-down flop, 1 mana a table.",
    "loyalty": "See the flops of the tables you control (turn and river stay closed).",
    "spy": "See the flops of neutral lands.",
    "corruption": "See the flops of other players' lands.",
    "big_brother": "Look at any table's flop for free, to the end of the match.",
    "read_hand": "See the hands of players attacking your tables.",
    "hound": "See the neutral's hand.",
    "joker": "Once per battle, turn a card of your hand into a joker that becomes your best card at the final.",
    "double_hand": "Get 4 pool cards and a hand of 4 per table; choose the 2 that count at the final.",
    "double_set": "Get 4 pool cards per table you attack instead of 2; the extra cards burn after assigning.",
    "double_income": "One chosen land of yours yields 2 mana a round.",
    "full_double_income": "All your lands yield 2 mana a round.",
    "insurance": "Lose a battle at the final (no fold) and get your stake back.",
    "free_fold": "A fold returns your whole stake in that battle (not a technical fold).",
})

#: Shield size bounds (conquest.md 5.3.1.1: N mana, 1-10).
SHIELD_MIN = 1
SHIELD_MAX = 10

#: The largest activation cost in mana (seed §5.1.4: "activation costs 0 to 10 mana"). The server's
#: configuration (``BANNERFALL_SPECIAL_COSTS``) and a match's ``Options.special_costs`` refuse more.
MAX_SPECIAL_COST = 10


def special_cost(costs: Mapping[str, int], special: str) -> int:
    """The cost in mana of ``special`` under ``costs`` (an ``Options.special_costs``), falling back
    to :data:`DEFAULT_SPECIAL_COSTS`. Raises ``KeyError`` for an unknown id."""
    value = costs.get(special)
    return DEFAULT_SPECIAL_COSTS[special] if value is None else value


__all__ = [
    "DEFAULT_SPECIAL_COSTS", "MAX_SPECIAL_COST", "SHIELD_MAX", "SHIELD_MIN", "SPECIALS",
    "SPECIAL_DESCRIPTIONS", "special_cost",
]
