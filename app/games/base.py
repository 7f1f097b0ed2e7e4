"""The game contract every rules engine implements (see ``shared/DESIGN.md``, "The game contract").

Nothing in ``app.games`` imports FastAPI, SQL or Redis. A game is one object with:

- ``setup(seats, options, seed) -> state``: deterministic from ``seed`` (32 bytes).
- ``prompts(state) -> list[Prompt]``: who must act now.
- ``apply(state, seat, action) -> (state, events)``: validates or raises :class:`IllegalAction`;
  never mutates its input state.
- ``view(state, viewer) -> dict``: the only path from state to the wire.
- ``outcome(state) -> Outcome | None``.

Randomness comes only from :class:`Rng` kept inside the state; card ids sent to clients come
only from :class:`CardTokens`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, MutableSequence, Protocol, Sequence, TypeVar

from pydantic import BaseModel

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


@dataclass(frozen=True, slots=True)
class Prompt:
    """One seat's pending decision.

    - ``seat``: who must act.
    - ``kind``: the decision's name, e.g. ``"turn"``, ``"orders"``, ``"decision"``.
    - ``phase_id``: an integer that changes every time a new decision point begins. Deadlines are
      keyed by it: a deadline that fires for a ``phase_id`` no longer pending does nothing.
      Prompts of one simultaneous phase share a ``phase_id``.
    - ``deadline_seconds``: how long the seat has, from when this ``phase_id`` first appeared.
    - ``default_action``: the action the server applies as this seat when the deadline passes
      (only for prompts with ``submitted`` False).
    - ``simultaneous``: True in a simultaneous phase (submissions replaceable until it ends).
    - ``submitted``: in a simultaneous phase, True once the seat has a submission on file.
    """

    seat: int
    kind: str
    phase_id: int
    deadline_seconds: float
    default_action: Mapping[str, Any]
    simultaneous: bool = False
    submitted: bool = False


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


class Game(Protocol):
    """A rules engine. Implementations are stateless singletons; all match data lives in ``state``."""

    id: ClassVar[str]
    title: ClassVar[str]
    min_seats: ClassVar[int]
    max_seats: ClassVar[int]
    #: pydantic model of the lobby options, every field with its default; its JSON schema is published.
    Options: ClassVar[type[BaseModel]]

    def setup(self, seats: int, options: BaseModel, seed: bytes) -> Any: ...

    def prompts(self, state: Any) -> list[Prompt]: ...

    def apply(self, state: Any, seat: int, action: Mapping[str, Any]) -> tuple[Any, list[Event]]: ...

    def view(self, state: Any, viewer: int) -> dict[str, Any]: ...

    def outcome(self, state: Any) -> Outcome | None: ...


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
