"""The game contract every rules engine implements (see ``shared/DESIGN.md``, "The game contract").

Nothing in ``app.games`` imports FastAPI, SQL or Redis. A game is one object with:

- ``setup(seats, options, seed) -> state``: deterministic from ``seed`` (32 bytes).
- ``prompts(state) -> list[Prompt]``: who must act now.
- ``apply(state, seat, action) -> (state, events)``: validates or raises :class:`IllegalAction`;
  never mutates its input state.
- ``view(state, viewer) -> dict``: the only path from state to the wire; ``views(state, viewers)``
  the same for several viewers at once (the runtime's per-record path; shares work between them).
- ``outcome(state) -> Outcome | None``.
- ``check_action`` / ``can_act`` / ``legal_actions``: public legality (bots and tests use it).
- ``hidden_tokens(state, viewer)``: what ``viewer`` must not see; ``info``: :class:`GameInfo`.

The full contract with every method's shapes and errors is :class:`Game`; how to add a game is in
``docs/games/README.md``.

Randomness comes only from :class:`Rng` kept inside the state; card ids sent to clients come
only from :class:`CardTokens`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import (
    Any,
    ClassVar,
    Generic,
    Mapping,
    MutableSequence,
    Protocol,
    Sequence,
    TypeVar,
    cast,
)

import orjson
from pydantic import BaseModel

from app.parts import ViewParts, encode_view

#: Viewer ids other than seats (seats are 0..n-1).
SPECTATOR = -1
ADMIN = -2

T = TypeVar("T")


class IllegalAction(Exception):
    """An action that the rules reject. ``code`` is a stable snake_case identifier sent to the client.

    Raised by ``Game.apply`` *before* any change is visible; the input state is never touched.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"IllegalAction({self.code!r}, {self.message!r})"


class Prompt:
    """One seat's pending decision.

    - ``seat``: who must act.
    - ``kind``: the decision's name, e.g. ``"turn"``, ``"orders"``, ``"decision"``.
    - ``phase_id``: an integer that changes every time a new decision point begins. Deadlines are
      keyed by it: a deadline that fires for a ``phase_id`` no longer pending does nothing.
      Prompts of one simultaneous phase share a ``phase_id``.
    - ``deadline_seconds``: how long the seat has, from when this ``phase_id`` first appeared.
    - ``default_action``: the action the server applies as this seat when the deadline passes
      (only for prompts with ``submitted`` False): a JSON object, as a client would send it. It is
      kept encoded (JSON bytes, in its own key order), so a live match's prompts hold no dict or list for
      the cyclic collector to walk; reading it decodes a fresh ``dict`` (the value a replay of the
      logged action sees). A value JSON cannot encode is kept as given.
    - ``simultaneous``: True in a simultaneous phase (submissions replaceable until it ends).
    - ``submitted``: in a simultaneous phase, True once the seat has a submission on file.

    Immutable; equal when every field is (the default action compared as encoded).
    """

    __slots__ = ("seat", "kind", "phase_id", "deadline_seconds", "_default", "simultaneous", "submitted")
    __match_args__ = ("seat", "kind", "phase_id", "deadline_seconds", "default_action", "simultaneous", "submitted")

    seat: int
    kind: str
    phase_id: int
    deadline_seconds: float
    _default: Any
    simultaneous: bool
    submitted: bool

    def __init__(self, seat: int, kind: str, phase_id: int, deadline_seconds: float,
                 default_action: Mapping[str, Any], simultaneous: bool = False, submitted: bool = False) -> None:
        try:
            encoded: Any = orjson.dumps(default_action)
        except TypeError:
            encoded = default_action
        setter = object.__setattr__
        setter(self, "seat", seat)
        setter(self, "kind", kind)
        setter(self, "phase_id", phase_id)
        setter(self, "deadline_seconds", deadline_seconds)
        setter(self, "_default", encoded)
        setter(self, "simultaneous", simultaneous)
        setter(self, "submitted", submitted)

    @property
    def default_action(self) -> Mapping[str, Any]:
        kept = self._default
        if type(kept) is bytes:
            return cast("Mapping[str, Any]", orjson.loads(kept))
        return cast("Mapping[str, Any]", kept)

    def _key(self) -> tuple[Any, ...]:
        return (self.seat, self.kind, self.phase_id, self.deadline_seconds, self._default, self.simultaneous,
                self.submitted)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Prompt:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        return (Prompt, (self.seat, self.kind, self.phase_id, self.deadline_seconds, self.default_action,
                         self.simultaneous, self.submitted))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Prompt is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Prompt is immutable: cannot delete {name!r}")

    def __repr__(self) -> str:
        return (f"Prompt(seat={self.seat!r}, kind={self.kind!r}, phase_id={self.phase_id!r}, "
                f"deadline_seconds={self.deadline_seconds!r}, default_action={self.default_action!r}, "
                f"simultaneous={self.simultaneous!r}, submitted={self.submitted!r})")


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened, for the wire.

    ``audience`` None means everyone (players and spectators); otherwise only those seats (admins
    always see every event). An event must already be redacted for its audience: an engine emits
    one event per distinct audience when different seats may know different things.
    """

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    audience: frozenset[int] | None = None

    def visible_to(self, viewer: int) -> bool:
        return self.audience is None or viewer == ADMIN or viewer in self.audience

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.type, **self.data}


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished match. ``ranks``: seat -> 1-based rank (equal ranks are a draw between them);
    ``scores``: seat -> a number the game reports (provinces held, points, tables); ``reason``: why it ended."""

    ranks: Mapping[int, int]
    scores: Mapping[int, float]
    reason: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "ranks": {str(k): v for k, v in self.ranks.items()},
            "scores": {str(k): v for k, v in self.scores.items()},
            "reason": self.reason,
        }


#: The state type of a game (an engine-private object; only the engine reads it).
StateT = TypeVar("StateT")
#: The action type a game accepts: a JSON object as received from the client (``{"type": ...}``).
ActionT = TypeVar("ActionT", bound=Mapping[str, Any], contravariant=True)  # noqa: PLC0105 - the name the issue uses


#: The chance devices a game may declare in :attr:`GameInfo.chance`.
CHANCE_KINDS = frozenset(("cards", "dice"))


@dataclass(frozen=True, slots=True)
class GameInfo:
    """A game's metadata, declared as data: everything the server knows of a game comes from here
    (the registry, the lobby, ``GET /games``, the bots, the web client, the runtime and the suites).

    - ``id``: the game id on the wire and in URLs (``"provinces"``; ``[a-z][a-z0-9_]{0,31}``).
    - ``title``: the human name.
    - ``min_seats``, ``max_seats``: the seat counts a lobby may have (inclusive).
    - ``options``: the pydantic model of the lobby options, every field with its default; its JSON
      schema is published by ``GET /games``.
    - ``phases``: the prompt kinds / phase names the game uses, in their order of play (documentation
      and the conformance suite: every prompt's ``kind`` is one of them).
    - ``action_types``: every action ``type`` the game accepts.
    - ``bots``: lobby bot kind (``"random"``, ``"smart"``, any name) -> the :class:`Bot` class, in the
      order ``GET /games`` lists them; the bot catalogue (``app.runtime.bots.bot_class``) reads only this.
    - ``max_actions``: a bound on a match's length, in log records (actions applied, deadline defaults
      included): the engine ends every match well within it, and the runtime aborts a match that
      reaches it (reason ``max_actions``).
    - ``hidden_information``: some seat may not see something another seat or the admin sees (cards
      in hands, a hidden joker); the suites then require a non-empty hidden set in every random match.
    - ``simultaneous_moves``: some phase prompts several seats at once (``Prompt.simultaneous``).
    - ``chance``: the chance devices of the rules, a subset of ``{"cards", "dice"}`` (empty: the
      seed changes nothing).
    - ``actions``, ``events``: one type per action and per event type (a pydantic model or a frozen
      dataclass whose ``type`` field is a ``Literal`` of its name); ``view``: the type of a view.
      Bannerfall publishes their JSON Schemas (``GET /games/{id}/schema``, ``docs/schemas/games/``).
    - ``board``: the web board module, a path inside the game's package (``"web/board.js"``), served
      with the files beside it at ``/games/{id}/web/``; None: the client shows the raw view.
    - ``wording``: the event wording (``events.json``'s language), a JSON file inside the package.
    - ``compiled``: the game's modules that its build compiles (mypyc), by dotted name.
    - ``test_options``: the lobby options the suites play the game with (short matches).
    - ``doc``: the game's documentation (options, actions, view, an ``## Events`` table), a path
      inside the package; None for a game documented in Bannerfall's ``docs/games/<id>.md``.
    - ``unprompted_actions``: the action types a seat may send at any moment, without a prompt
      (Conquest's ``special``, seed 5.1.3); they are never a phase's submission. The runtime passes
      them to ``apply`` whether or not the seat is prompted, and the engine alone decides which seat
      may (its ``no_prompt`` code for a seat that may not act at all). Every other action needs a
      prompt (``not_your_turn``).
    - ``rules_version``: the version of the rules this engine plays, from 1; raised by one on any
      change of what a log replays to (a rule, the dealing, any use of the RNG). Every match stores
      the version it started under and is replayed only by an engine of that version
      (``app.games.versions``; ``docs/games/README.md``, "Changing the rules").
    - ``earlier_rules``: rules version -> the module whose ``GAME`` plays that earlier version, kept
      importable so the matches started under it run to their end and verify (empty: none kept).
    """

    id: str
    title: str
    min_seats: int
    max_seats: int
    options: type[BaseModel]
    phases: tuple[str, ...]
    action_types: frozenset[str]
    bots: Mapping[str, type[Any]] = field(default_factory=dict)
    max_actions: int = 10_000
    hidden_information: bool = False
    simultaneous_moves: bool = False
    chance: frozenset[str] = frozenset()
    actions: tuple[type[Any], ...] = ()
    events: tuple[type[Any], ...] = ()
    view: type[Any] | None = None
    board: str | None = None
    wording: str | None = None
    compiled: tuple[str, ...] = ()
    test_options: Mapping[str, Any] = field(default_factory=dict)
    doc: str | None = None
    unprompted_actions: frozenset[str] = frozenset()
    rules_version: int = 1
    earlier_rules: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LegalAction:
    """One legal *kind* of action for a seat now, with its parameter domains (``Game.legal_actions``).

    - ``type``: the action type (``"attack"``).
    - ``example``: one concrete action of this kind that is legal now (``check_action`` accepts it).
    - ``domains``: parameter name -> the values it may take, as plain data (a list of candidates,
      or ``{"subset_of": [...], "min": 1, "max": 7}`` for a list parameter, or
      ``{"permutation_of": [...]}``). Enough for a bot or a test to build other legal actions; some
      combinations of individually valid values may still be illegal (``check_action`` decides).
    """

    type: str
    example: Mapping[str, Any]
    domains: Mapping[str, Any] = field(default_factory=dict)


class Game(Protocol[StateT, ActionT]):
    """A rules engine: a stateless singleton; all match data lives in ``state`` (type ``StateT``).

    Every game implements every method; ``tests/games/test_conformance.py`` checks the contract for
    each game of the ``bannerfall.games`` entry points (``app.games.registry``). Nothing here may
    block, do I/O or read the clock.
    """

    #: the game's metadata (seats, options, phases, action types, bots)
    info: ClassVar[GameInfo]
    # The same as ``info.id`` etc., kept for the call sites that read them directly.
    id: ClassVar[str]
    title: ClassVar[str]
    min_seats: ClassVar[int]
    max_seats: ClassVar[int]
    #: pydantic model of the lobby options (``info.options``).
    Options: ClassVar[type[BaseModel]]

    def setup(self, seats: int, options: BaseModel | Mapping[str, Any] | None, seed: bytes) -> StateT:
        """A new match for ``seats`` players (``info.min_seats``..``info.max_seats``), deterministic from
        ``seed`` (32 bytes). ``options``: an ``Options`` instance, a dict of its fields or None for the
        defaults. Raises ValueError for a bad seat count, pydantic ``ValidationError`` for bad options
        (lobby bugs, not client input: the lobby validates both first)."""
        ...

    def prompts(self, state: StateT) -> list[Prompt]:
        """Who must act now: one :class:`Prompt` per seat with a pending decision (``[]`` once over).
        Every prompt's ``default_action`` passes :meth:`check_action` for its seat."""
        ...

    def check_action(self, state: StateT, seat: int, action: ActionT) -> None:
        """Raise :class:`IllegalAction` (``code``, ``message``) if ``seat`` may not send ``action`` now,
        with the code ``apply`` would raise; return None if it is legal. Never changes ``state``."""
        ...

    def can_act(self, state: StateT, seat: int, action: ActionT) -> bool:
        """``check_action`` as a bool: True if ``action`` by ``seat`` is legal now."""
        ...

    def legal_actions(self, state: StateT, seat: int) -> list[LegalAction]:
        """The legal kinds of action for ``seat`` now, each with a legal example and its parameter
        domains (``[]`` when the seat may do nothing). For action spaces too large to enumerate
        (subsets and orders of cards) this is a generator of kinds, not of every action."""
        ...

    def apply(self, state: StateT, seat: int, action: ActionT) -> tuple[StateT, list[Event]]:
        """Apply ``seat``'s ``action``; returns ``(new_state, events)``. Runs the same checks as
        :meth:`check_action` first and raises its :class:`IllegalAction` before any change; never
        mutates ``state``. ``seat``: 0..seats-1 (anything else is refused, not a crash)."""
        ...

    def view(self, state: StateT, viewer: int) -> dict[str, Any]:
        """The state as ``viewer`` (a seat, :data:`SPECTATOR` or :data:`ADMIN`) may see it: a JSON-ready
        dict, the only path from state to the wire. Contains no token of :meth:`hidden_tokens`."""
        ...

    def views(self, state: StateT, viewers: Sequence[int]) -> list[dict[str, Any]]:
        """``[self.view(state, v) for v in viewers]``, equal as exact JSON, built at once: the runtime
        calls it once per log record for every audience (``AudienceBook``). An engine may share the
        work and immutable sub-objects between the viewers and with earlier views; every view stays
        its own top-level dict, and no view, nor any part of one, may be changed once returned.
        Raises what :meth:`view` raises (e.g. for an unknown viewer)."""
        ...

    def view_parts(self, state: StateT, viewers: Sequence[int]) -> list[ViewParts]:
        """Every viewer's view as encoded parts (``app/parts.py``: ``(key, JSON bytes)`` per member
        of the view object, a list member as a tuple of its items' JSON): what the runtime keeps of
        each audience and diffs. Equal, as JSON, to :meth:`views`; an engine builds it from the parts
        that changed (:class:`GameBase` derives it from :meth:`views`)."""
        ...

    def hidden_tokens(self, state: StateT, viewer: int) -> set[str]:
        """The card tokens in play that ``viewer`` must not be able to identify now (what the leak
        tests and the admin view's ``hidden_from`` use): none of them may appear in ``viewer``'s view
        or in the events ``viewer`` receives."""
        ...

    def outcome(self, state: StateT) -> Outcome | None:
        """None while the match runs; then :class:`Outcome` with a rank for every seat."""
        ...


class GameBase(Generic[StateT]):
    """Shared plumbing for the three engines: the ``info`` mirrors, :meth:`can_act` and the default
    :meth:`views`.

    ``check_action`` is the engine's own validation (the first step of its ``apply``)."""

    info: ClassVar[GameInfo]
    id: ClassVar[str]
    title: ClassVar[str]
    min_seats: ClassVar[int]
    max_seats: ClassVar[int]
    Options: ClassVar[type[BaseModel]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        info = cls.__dict__.get("info")
        if info is not None:
            cls.id, cls.title = info.id, info.title
            cls.min_seats, cls.max_seats = info.min_seats, info.max_seats
            cls.Options = info.options

    def check_action(self, state: StateT, seat: int, action: Mapping[str, Any]) -> None:  # pragma: no cover
        raise NotImplementedError

    def view(self, state: StateT, viewer: int) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def views(self, state: StateT, viewers: Sequence[int]) -> list[dict[str, Any]]:
        """:meth:`Game.views`, by default one :meth:`view` per viewer (engines override it to share)."""
        view = self.view
        return [view(state, v) for v in viewers]

    def view_parts(self, state: StateT, viewers: Sequence[int]) -> list[ViewParts]:
        """:meth:`Game.view_parts` from :meth:`views`: each view's members encoded (``app.parts.encode_view``)."""
        return [encode_view(view) for view in self.views(state, viewers)]

    def can_act(self, state: StateT, seat: int, action: Mapping[str, Any]) -> bool:
        """True if ``action`` by ``seat`` is legal now (:meth:`check_action` does not raise)."""
        try:
            self.check_action(state, seat, action)
        except IllegalAction:
            return False
        return True


class Rng:
    """The match's deterministic random number generator (the only source of randomness in games).

    A counter-mode generator: block ``i`` is ``BLAKE2b(key=seed, data=i)``. Its whole state is
    ``(seed, counter)``, so :meth:`clone` is O(1) and the same seed always yields the same draws on
    every Python version (no dependence on the stdlib ``random`` algorithms).
    """

    __slots__ = ("_key", "_counter", "_pool", "_bits")

    def __init__(self, seed: bytes, *, _counter: int = 0, _pool: int = 0, _bits: int = 0) -> None:
        if not isinstance(seed, (bytes, bytearray)) or not seed:
            raise ValueError("seed must be non-empty bytes")
        self._key = bytes(seed[:64])
        self._counter = _counter
        self._pool = _pool
        self._bits = _bits

    def clone(self) -> "Rng":
        return Rng(self._key, _counter=self._counter, _pool=self._pool, _bits=self._bits)

    def getrandbits(self, k: int) -> int:
        """A uniformly random integer in ``[0, 2**k)``."""
        while self._bits < k:
            block = hashlib.blake2b(self._counter.to_bytes(8, "little"), key=self._key).digest()
            self._counter += 1
            self._pool |= int.from_bytes(block, "little") << self._bits
            self._bits += 512
        value = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._bits -= k
        return value

    def randbelow(self, n: int) -> int:
        """A uniformly random integer in ``[0, n)`` (rejection sampling, no modulo bias)."""
        if n <= 0:
            raise ValueError("n must be positive")
        k = n.bit_length()
        while True:
            r = self.getrandbits(k)
            if r < n:
                return r

    def randint(self, a: int, b: int) -> int:
        """A uniformly random integer in ``[a, b]``, both ends included (a die: ``randint(1, 6)``)."""
        return a + self.randbelow(b - a + 1)

    def choice(self, seq: Sequence[T]) -> T:
        if not seq:
            raise IndexError("choice from an empty sequence")
        return seq[self.randbelow(len(seq))]

    def shuffle(self, items: MutableSequence[Any]) -> None:
        """Fisher–Yates shuffle in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.randbelow(i + 1)
            items[i], items[j] = items[j], items[i]


class CardTokens:
    """Opaque per-match card identifiers.

    ``token(n)`` names the ``n``-th card dealt in a match: ``BLAKE2b-64(key=K, data="<n>")`` with
    ``K = SHA-256("bannerfall-card-tokens" + seed)``, top 60 bits as 12 base-32 characters. Tokens
    are unpredictable without the seed, all the same length and pattern, and carry nothing of the
    card they name. Give a card a *new* token every time it is dealt from a shoe or deck (keep a
    counter in the state), so a card once revealed cannot be recognised after a reshuffle.
    """

    __slots__ = ("_key",)
    _ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
    #: 10-bit chunk -> its two characters (low 5 bits first), so a token is 6 look-ups
    _PAIRS = tuple("abcdefghijklmnopqrstuvwxyz234567"[c & 31] + "abcdefghijklmnopqrstuvwxyz234567"[c >> 5]
                   for c in range(1024))

    def __init__(self, seed: bytes) -> None:
        self._key = hashlib.sha256(b"bannerfall-card-tokens" + bytes(seed)).digest()

    def token(self, n: int) -> str:
        value = int.from_bytes(hashlib.blake2b(b"%d" % n, key=self._key, digest_size=8).digest(), "big") >> 4
        pairs = self._PAIRS
        return (pairs[value & 1023] + pairs[(value >> 10) & 1023] + pairs[(value >> 20) & 1023]
                + pairs[(value >> 30) & 1023] + pairs[(value >> 40) & 1023] + pairs[(value >> 50) & 1023])


def seed_commitment(seed: bytes) -> str:
    """The public commitment to a match's seed: ``sha256(seed)`` in hex (published at match start)."""
    return hashlib.sha256(seed).hexdigest()


def require(condition: bool, code: str, message: str) -> None:
    """Raise :class:`IllegalAction` when ``condition`` is false (never ``assert`` on client input)."""
    if not condition:
        raise IllegalAction(code, message)


def action_type(action: Mapping[str, Any]) -> str:
    """The ``type`` field of an action, or IllegalAction ``unknown_action`` / ``malformed_action``."""
    if not isinstance(action, Mapping):
        raise IllegalAction("malformed_action", "an action must be a JSON object")
    kind = action.get("type")
    if not isinstance(kind, str):
        raise IllegalAction("malformed_action", "an action needs a string 'type'")
    return kind


class Bot(Protocol):
    """A bot plays through the same client path as a person: it sees only its seat's ``state``
    message (``view`` from :meth:`Game.view` for its seat plus the public ``prompts``) and answers
    with one action at a time. Bots may use their own ``random.Random(seed)`` instance; they are not
    part of the match's determinism (their actions are logged like anyone's).
    """

    def decide(self, view: dict[str, Any], prompt: dict[str, Any]) -> dict[str, Any] | None:
        """``view``: the game view for the bot's seat; ``prompt``: the bot's own pending prompt as sent
        on the wire (``kind``, ``phase_id``, ``submitted``, ...). Return the next action, or None to wait."""
        ...
