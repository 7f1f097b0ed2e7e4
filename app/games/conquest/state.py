"""Hold'em Conquest match state: plain slots classes of ints, tuples and small dicts.

Copy-on-write discipline: a :class:`State` handed to a caller is never changed again. ``apply``
stores a plain submission on ``state.clone_submission()`` (only ``submissions`` copied) and resolves
a phase on ``state.clone()`` (the containers a resolution changes in place and the open battles
copied, rng cloned). A :data:`Table` (a tuple of atoms) and
:class:`~app.games.conquest.board.Board` are immutable.

A *dealt card* is the pair ``(card, token)``: ``card`` is an int 0..51 (``rank * 4 + suit``, the
encoding of :mod:`app.games.conquest.poker`) and ``token`` the opaque wire id issued when it was
dealt (conquest.md 4.4).
"""
from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from app.games.base import CardTokens, Rng
from app.games.conquest.board import Board
from app.games.conquest.specials import MAX_SPECIAL_COST, SPECIALS

#: The owner of a neutral land, and the neutral's "seat" among a battle's participants.
NEUTRAL = -1

# Phases (``State.phase``). ORDERS, DEFENCE and ASSIGN are section 2's simultaneous phases;
# TURN and RIVER are the decision phases that follow the turn and river cards (3.2–3.4).
ORDERS = "orders"
DEFENCE = "defence"
ASSIGN = "assign"
TURN = "turn"
RIVER = "river"
OVER = "over"

# A participant's status in a battle (``Battle.status``).
LIVE = "live"
FOLD_TURN = "folded_turn"  # folded at the turn decision: 1 mana back (3.2)
FOLD_RIVER = "folded_river"  # folded at the river decision: 1 mana back (3.3)
OUT_TURN = "out_turn"  # technical fold: could not pay the turn (3.2)
OUT_RIVER = "out_river"  # technical fold: could not pay the river (3.3)

# Battle stages (``Battle.stage``).
STAGE_ASSIGN = "assign"  # hands being assigned; the battle has not started
STAGE_TURN = "turn"  # turn paid and open, decision pending
STAGE_RIVER = "river"  # river paid and open, decision pending
STAGE_DONE = "done"  # settled (``Battle.winner``, ``Battle.result``)

#: House cap on battles a seat takes part in per round (conquest.md 2.1).
MAX_BATTLES = 10

Dealt = tuple[int, str]


class Options(BaseModel):
    """Lobby options of a Hold'em Conquest match (conquest.md 1.4, 2, 2.5, 3.4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    starting_mana: int = Field(10, ge=0, le=1000, description="mana each seat starts with (1.4)")
    tables_to_win: int = Field(10, ge=2, le=23, description="tables a seat must control to win (2.5)")
    max_rounds: int = Field(60, ge=1, le=1000,
                            description="rounds before the match is decided on tables, then mana (2.5)")
    phase_seconds: int = Field(60, ge=5, le=3600, description="deadline of the orders, defence and assign phases (2)")
    decision_seconds: int = Field(20, ge=5, le=3600, description="deadline of a stay-or-fold decision (3.4)")
    # Filled by the server at match start (section 5), never by a client in lobby options:
    # ``readOnly`` (JSON Schema): managed by the server; the web lobby form leaves such options out.
    loadouts: list[list[StrictStr]] = Field(
        default_factory=list, max_length=4, json_schema_extra={"readOnly": True},
        description="per seat (index = seat), the special ids that seat brought (section 5); "
                    "an empty list or a missing seat brings none")
    special_costs: dict[str, StrictInt] = Field(
        default_factory=dict, json_schema_extra={"readOnly": True},
        description="overrides of the default special costs in mana (section 5); the server copies "
                    "its configuration here so a match record holds the costs it was played with")

    @field_validator("loadouts")
    @classmethod
    def _check_loadouts(cls, value: list[list[str]]) -> list[list[str]]:
        for seat, loadout in enumerate(value):
            for special in loadout:
                if special not in _SPECIAL_SET:
                    raise ValueError(f"seat {seat}: unknown special {special!r}")
            if len(set(loadout)) != len(loadout):
                raise ValueError(f"seat {seat}: a special listed twice")
        return value

    @field_validator("special_costs")
    @classmethod
    def _check_costs(cls, value: dict[str, int]) -> dict[str, int]:
        for special, cost in value.items():
            if special not in _SPECIAL_SET:
                raise ValueError(f"unknown special {special!r}")
            if not 0 <= cost <= MAX_SPECIAL_COST:
                raise ValueError(f"{special}: cost must be 0-{MAX_SPECIAL_COST} mana")
        return value


_SPECIAL_SET = frozenset(SPECIALS)


#: The table on one land (conquest.md 1.3): an exact tuple ``(flop, deck, fixed)`` (index with
#: :data:`FLOP`, :data:`DECK`, :data:`FIXED`; make one with :func:`table`), immutable. ``flop`` and
#: ``deck`` are ``bytes`` (one byte per card, 0..51: indexing and iterating give the cards as ints),
#: so a table is a tuple of atoms: CPython's cyclic collector untracks it at the first young
#: collection it sees, and a match's tables never reach the older generations
#: (``docs/decisions.md``, "Conquest: state the collector does not walk").
#:
#: - ``flop``: its 3 face-down cards. They get wire tokens only when their battle starts and
#:   they are turned up (3.1); until then nothing about them leaves the server.
#: - ``deck``: the rest of the table's own 52-card deck; ``fixed``: how many of its top cards are in
#:   a set order (only stacked test decks have any). The rest is an unordered remainder from which
#:   each draw takes a uniformly random card: the same distribution as drawing from the top of a
#:   fully shuffled deck, at the cost of the cards actually drawn.
Table = tuple[bytes, bytes, int]
FLOP: Final = 0
DECK: Final = 1
FIXED: Final = 2


def table(flop: bytes, deck: bytes, fixed: int) -> Table:
    """The table ``(flop, deck, fixed)``: ``flop`` and ``deck`` as bytes of cards 0..51."""
    return (flop, deck, fixed)


class Battle:
    """A battle on one land in the current (or, once settled, the last) round (conquest.md 3).

    - ``land``: the land id; ``holder``: its owner before the attack (a seat or NEUTRAL).
    - ``attackers``: seats ascending; ``defender``: the seat that defends, else None.
    - ``seats``: participants in payment order (player seats ascending, then NEUTRAL if the land is
      neutral).
    - ``hands``: participant -> its 2 dealt cards (the neutral's are dealt when the battle starts).
    - ``status``: participant -> LIVE / FOLD_* / OUT_*; ``paid``: seat -> stake paid (turn + river,
      conquest.md 1.5); ``refunded``: seat -> mana given back.
    - ``flop``/``turn``/``river``: dealt cards, ``()``/None until the battle starts / the card opens;
      ``deck``/``fixed``: the table's remaining deck at this point (see :data:`Table`).
    - ``stage``: STAGE_*; ``winner``: the seat (or NEUTRAL) holding the land after the battle;
      ``result``: how it was settled ("final", "tie", "last_standing", "none_left").
    - ``finalists``: participants whose hands reached the final (shown to all, 4.1);
      ``ranks``: finalist -> evaluator rank (lower is stronger).
    - ``view_memo``: not part of the match — this battle's encodings already made, by kind of viewer
      (:func:`app.games.conquest.view.view_parts`; None until the first). A battle handed out in a
      state never changes again (states copy open battles before a resolution), so the memo stays
      valid for as long as the object lives; :meth:`copy` starts without one.
    """

    __slots__ = (
        "land", "holder", "attackers", "defender", "seats", "hands", "status", "paid", "refunded",
        "flop", "turn", "river", "deck", "fixed", "stage", "winner", "result", "finalists", "ranks",
        "view_memo", "jokers", "joker_cards", "kept",
    )

    def __init__(self, land: int, holder: int, attackers: tuple[int, ...], defender: int | None,
                 deck: bytes, fixed: int) -> None:
        self.land = land
        self.holder = holder
        self.attackers = attackers
        self.defender = defender
        players = tuple(sorted(attackers if defender is None else attackers + (defender,)))
        self.seats: tuple[int, ...] = players + (NEUTRAL,) if holder == NEUTRAL else players
        self.hands: dict[int, tuple[Dealt, ...]] = {}
        self.status: dict[int, str] = dict.fromkeys(self.seats, LIVE)
        self.paid: dict[int, int] = dict.fromkeys(players, 0)
        self.refunded: dict[int, int] = dict.fromkeys(players, 0)
        self.flop: tuple[Dealt, ...] = ()
        self.turn: Dealt | None = None
        self.river: Dealt | None = None
        self.deck = deck
        self.fixed = fixed
        self.stage = STAGE_ASSIGN
        self.winner: int | None = None
        self.result: str | None = None
        self.finalists: tuple[int, ...] = ()
        self.ranks: dict[int, int] = {}
        self.view_memo: dict[Any, Any] | None = None  # made by the first view
        # section 5 (empty without specials; replaced, never changed in place):
        self.jokers: dict[int, str] = {}  # seat -> token of the hand card it turned into a joker (5.3.2.3)
        self.joker_cards: dict[int, int] = {}  # seat -> the card its joker became at the final
        self.kept: dict[int, tuple[Dealt, ...]] = {}  # seat -> the 2 of 4 cards chosen (5.3.2.4)

    def copy(self) -> "Battle":
        new = Battle.__new__(Battle)
        new.land = self.land
        new.holder = self.holder
        new.attackers = self.attackers
        new.defender = self.defender
        new.seats = self.seats
        new.hands = dict(self.hands)
        new.status = dict(self.status)
        new.paid = dict(self.paid)
        new.refunded = dict(self.refunded)
        new.flop = self.flop
        new.turn = self.turn
        new.river = self.river
        new.deck = self.deck
        new.fixed = self.fixed
        new.stage = self.stage
        new.winner = self.winner
        new.result = self.result
        new.finalists = self.finalists
        new.ranks = self.ranks
        new.view_memo = None  # the copy is changed by a resolution before anyone sees it
        new.jokers = self.jokers
        new.joker_cards = self.joker_cards
        new.kept = self.kept
        return new

    def live(self) -> list[int]:
        """Participants still in (LIVE), in payment order."""
        return [s for s in self.seats if self.status[s] == LIVE]


class State:
    """A whole match. Fields:

    - ``seats``, ``options`` (:class:`Options`), ``board`` (:class:`Board`, shared, immutable),
      ``tokens`` (:class:`CardTokens`, shared), ``rng`` (:class:`Rng`), ``dealt``: how many card
      tokens have been issued (the next token is ``tokens.token(dealt)``).
    - ``round`` (1-based), ``phase`` (ORDERS…OVER), ``phase_id``.
    - ``owner``: land -> seat or NEUTRAL; ``mana``: seat -> mana; ``out_round``: seat -> the round
      it was eliminated in, else 0.
    - ``tables``: land -> its :data:`Table`.
    - ``required``: seats that must submit in the current phase; ``submissions``: seat -> its
      normalised submission (replaceable until the phase ends).
    - ``attacks``: land -> attacking seats this round (after ORDERS); ``defences``: lands defended
      this round (after DEFENCE); ``passed``: ``(land, from, to)`` of undefended tables that changed
      hands without a battle (2.2).
    - ``battles``: land -> :class:`Battle` of this round (kept, settled, until the next round's
      battles are created, so its folded hands stay accounted for as hidden), in ascending land
      order; ``battle_lands``: seat -> the lands of those battles it fights in, ascending, as bytes
      (one land id a byte: a dict of atoms, which the collector never tracks; derived from
      ``battles`` when they are created; never changed afterwards).
    - ``pools``: seat -> dealt cards during ASSIGN (2.3).
    - ``pool_stack``: test support only (see ``setup.stacked_position``): seat -> cards put on top of
      that seat's next pool deck.
    - ``result``: ``(ranks, scores, reason)`` once the match is over.
    - ``targets``: seat -> lands it may activate this round, ascending, as bytes (computed when the
      round starts, from the ownership at that moment, 2.1).
    - Section 5 (specials), all empty in a match without them and *replaced*, never changed in
      place (clones share them): ``active``: seat -> frozenset of the specials it activated;
      ``scouted``: seat -> frozenset of lands whose current flop it scouted (5.3.1.2; a land leaves
      the set when its table gets a fresh flop); ``shields``: land -> ``(seat, N)`` (5.3.1.1; a
      shield counts only while that seat holds the land); ``double_land``: seat -> the land chosen
      for ``double_income`` (5.3.3.1); ``hand_sizes``: seat -> cards per hand in this round's
      battles (4 with ``double_hand``, 5.3.2.4), only for seats not at 2.
    - ``order_prices``: seat -> the mana each land of its orders on file cost when they were
      submitted (aligned with the submission's ascending lands; conquest.md 1.4, 5.3.1.1): what is
      reserved until the orders phase ends. Replaced, never changed in place; empty outside ORDERS.
    - ``view_memo``: not part of the match — the encoded parts of views already made for this
      position (:func:`app.games.conquest.view.view_parts`: bytes and tuples of bytes). Their inputs
      are every field but ``submissions`` and ``order_prices`` (the pieces that depend on those are
      kept with them), so :meth:`clone_submission` shares the memo and :meth:`clone` starts an empty one.
    """

    __slots__ = (
        "seats", "options", "board", "tokens", "rng", "dealt", "round", "phase", "phase_id",
        "owner", "mana", "out_round", "tables", "required", "submissions", "attacks", "defences",
        "passed", "battles", "battle_lands", "pools", "pool_stack", "result", "targets",
        "view_memo", "active", "scouted", "shields", "double_land", "hand_sizes", "order_prices",
    )

    seats: int
    options: Options
    board: Board
    tokens: CardTokens
    rng: Rng
    dealt: int
    round: int
    phase: str
    phase_id: int
    owner: list[int]
    mana: list[int]
    out_round: list[int]
    tables: list[Table]
    required: frozenset[int]
    submissions: dict[int, Any]
    attacks: dict[int, tuple[int, ...]]
    defences: tuple[int, ...]
    passed: tuple[tuple[int, int, int], ...]
    battles: dict[int, Battle]
    battle_lands: dict[int, bytes]
    pools: dict[int, tuple[Dealt, ...]]
    pool_stack: dict[int, tuple[int, ...]]
    result: tuple[dict[int, int], dict[int, int], str] | None
    targets: dict[int, bytes]
    view_memo: dict[Any, Any]
    active: dict[int, frozenset[str]]
    scouted: dict[int, frozenset[int]]
    shields: dict[int, tuple[int, int]]
    double_land: dict[int, int]
    hand_sizes: dict[int, int]
    order_prices: dict[int, tuple[int, ...]]

    def clone_submission(self) -> "State":
        """A copy that may change only ``submissions`` (everything else is shared with ``self``)."""
        new = State.__new__(State)
        new.seats = self.seats
        new.options = self.options
        new.board = self.board
        new.tokens = self.tokens
        new.rng = self.rng
        new.dealt = self.dealt
        new.round = self.round
        new.phase = self.phase
        new.phase_id = self.phase_id
        new.owner = self.owner
        new.mana = self.mana
        new.out_round = self.out_round
        new.tables = self.tables
        new.required = self.required
        new.submissions = dict(self.submissions)
        new.attacks = self.attacks
        new.defences = self.defences
        new.passed = self.passed
        new.battles = self.battles
        new.battle_lands = self.battle_lands
        new.pools = self.pools
        new.pool_stack = self.pool_stack
        new.result = self.result
        new.targets = self.targets
        new.view_memo = self.view_memo
        new.active = self.active
        new.scouted = self.scouted
        new.shields = self.shields
        new.double_land = self.double_land
        new.hand_sizes = self.hand_sizes
        new.order_prices = self.order_prices
        return new

    def clone(self) -> "State":
        """A copy safe to change as resolutions do: the containers they change in place (owner,
        mana, out_round, tables, submissions) and the open battles are copied; ``attacks``,
        ``pools``, ``pool_stack`` (only ever replaced), settled battles, tables (immutable) and the
        board are shared; the rng is cloned."""
        new = State.__new__(State)
        new.seats = self.seats
        new.options = self.options
        new.board = self.board
        new.tokens = self.tokens
        new.rng = self.rng.clone()
        new.dealt = self.dealt
        new.round = self.round
        new.phase = self.phase
        new.phase_id = self.phase_id
        new.owner = list(self.owner)
        new.mana = list(self.mana)
        new.out_round = list(self.out_round)
        new.tables = list(self.tables)
        new.required = self.required
        new.submissions = dict(self.submissions)
        new.attacks = self.attacks  # attacks, pools and pool_stack are replaced, never changed in place
        new.defences = self.defences
        new.passed = self.passed
        # a settled battle never changes again: only open ones are copied
        battles = {}
        for land, battle in self.battles.items():
            battles[land] = battle if battle.stage == STAGE_DONE else battle.copy()
        new.battles = battles
        new.battle_lands = self.battle_lands
        new.pools = self.pools
        new.pool_stack = self.pool_stack
        new.result = self.result
        new.targets = self.targets
        new.view_memo = {}
        new.active = self.active  # section 5's fields are replaced, never changed in place
        new.scouted = self.scouted
        new.shields = self.shields
        new.double_land = self.double_land
        new.hand_sizes = self.hand_sizes
        new.order_prices = self.order_prices
        return new

    def deal(self, card: int) -> Dealt:
        """Issue a fresh wire token for ``card`` (conquest.md 4.4); mutates this (cloned) state."""
        token = self.tokens.token(self.dealt)
        self.dealt += 1
        return (card, token)

    def alive(self, seat: int) -> bool:
        return self.out_round[seat] == 0

    def has(self, seat: int, special: str) -> bool:
        """Has ``seat`` activated ``special`` (section 5)?"""
        active = self.active.get(seat)
        return active is not None and special in active

    def loadout(self, seat: int) -> list[str]:
        """The specials ``seat`` brought (``options.loadouts``; none for a missing seat)."""
        loadouts = self.options.loadouts
        return loadouts[seat] if seat < len(loadouts) else []

    def lands_of(self, seat: int) -> list[int]:
        return [land for land, owner in enumerate(self.owner) if owner == seat]
