"""The steps of a match socket that do not depend on how its frames travel, shared by both
transports (``app/transport/asgi.py``, ``app/transport/fast.py``): the ``hello``, admission (who,
which match, which viewer, the socket limits), joining the match here or through a link to its
node, routing every later message, and the per-socket message budget. Protocol: ``docs/protocol.md``."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from app.api.deps import player_for_token
from app.api.limits import admit_socket
from app.games.base import ADMIN, SPECTATOR
from app.runtime.interfaces import Link, MatchDirectory
from app.runtime.match import MatchRunner, Peer
from app.runtime.protocol import (
    CLOSE_BAD_REQUEST,
    CLOSE_FORBIDDEN,
    CLOSE_NOT_FOUND,
    CLOSE_TRY_AGAIN,
    CLOSE_UNAUTHORIZED,
    Hello,
    ProtocolError,
    decode_text,
    parse_hello,
    route,
)
from app.runtime.rows import MatchRow
from app.runtime.wire import error

log = logging.getLogger("bannerfall.ws")

__all__ = ["Admitted", "Budget", "BudgetRules", "Refused", "act_seq", "admit", "attach", "detach", "forward",
           "read_hello", "viewer_for"]

#: the path of the match socket (``/ws/matches/{match_id}``; the id is one path segment)
PATH_PREFIX = "/ws/matches/"


def match_id_of(path: str) -> str | None:
    """The match id of a socket path (already percent-decoded), or None for any other path."""
    if not path.startswith(PATH_PREFIX):
        return None
    rest = path[len(PATH_PREFIX):]
    return rest if rest and "/" not in rest else None


class Refused(Exception):
    """The socket is refused: send ``message``, then close with ``code``."""

    def __init__(self, message: dict[str, Any], code: int) -> None:
        super().__init__(message["code"])
        self.message = message
        self.code = code


class _Unavailable(Exception):
    pass


@dataclass
class Admitted:
    """Who connects to which match, and where the match runs (``runner`` here, else ``owner``)."""

    player: dict[str, Any]
    viewer: int
    runner: MatchRunner | None
    owner: str | None


def read_hello(text: str | bytes | None, match_id: str, settings: Any, metrics: Any) -> Hello:
    """Step 1: the first message (``text``: a text frame's ``str``, a binary frame's ``bytes``) must be a
    valid ``hello``. Raises :class:`Refused`: ``message_too_large`` (4401), ``invalid_text`` (a NUL
    in the message or the match id: 4400), ``hello_required`` / ``bad_hello`` (4401)."""
    nul = "\x00" in match_id
    value: Any = None
    if isinstance(text, str):
        try:
            value = decode_text(text, settings.max_message_bytes)
        except ProtocolError as exc:
            if exc.code == "message_too_large" and not nul:  # said as such, before hello too (protocol.md)
                metrics.errors.labels("message_too_large").inc()
                raise Refused(error(exc.code, exc.message), CLOSE_UNAUTHORIZED) from None
            value = None  # not JSON: answered as a missing hello
            nul = nul or exc.code == "invalid_text"
    if nul:
        metrics.errors.labels("invalid_text").inc()
        raise Refused(error("invalid_text", "text may not contain NUL (\\u0000) characters"), CLOSE_BAD_REQUEST)
    try:
        return parse_hello(value)
    except ProtocolError as exc:
        raise Refused(error(exc.code, exc.message), exc.close or CLOSE_UNAUTHORIZED) from None


async def _guarded(awaitable: Any, seconds: float, what: str, match_id: str) -> Any:
    """``await awaitable`` within ``seconds``; a storage failure or a timeout becomes one log line
    and :class:`_Unavailable` (answered ``storage_unavailable`` + 1013)."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        log.warning("socket for match %s refused: %s took over %g s", match_id, what, seconds)
    except Exception as exc:  # the database or Redis is down: one line, no traceback
        log.warning("socket for match %s refused: %s failed (%s)", match_id, what, type(exc).__name__)
    raise _Unavailable(what)


def viewer_for(meta: MatchRow, player: dict[str, Any], as_: str | None) -> int | None:
    """The viewer a player connects as: its seat, else (``as``) a spectator or the admin view; None
    if it asks for the admin view without the admin role. An unseated admin without ``as`` watches
    as a spectator (docs/protocol.md, "Your role": the admin view only when asked for, so an admin's
    screen shows no hidden card by accident)."""
    seats = [i for i, s in enumerate(meta["seats"]) if s.get("player_id") == player["id"]]
    if as_ == "admin":
        return ADMIN if player["role"] == "admin" else None
    if as_ == "spectator":
        return SPECTATOR
    if seats:
        return seats[0]
    return SPECTATOR


async def admit(sock: Any, match_id: str, hello: Hello) -> Admitted:
    """Step 2: who asks (the token), where the match runs, as which viewer, within the socket
    limits; every lookup bounded by ``socket_setup_seconds``. ``sock`` has ``app`` (the FastAPI
    app) and is the key of the player's socket slot (given back with
    ``app.state.socket_slots.give_back``). Raises :class:`Refused`: ``unauthorized`` (4401),
    ``not_found`` (4404), ``match_unavailable`` / ``storage_unavailable`` (1013), ``forbidden``,
    ``seated_admin`` (4403), ``too_many_sockets`` (4429)."""
    state = sock.app.state
    settings, repo = state.settings, state.repo
    matches: MatchDirectory = state.manager
    setup = settings.socket_setup_seconds
    retry_after = max(1, round(settings.lease_seconds))
    try:
        player = await _guarded(player_for_token(repo, hello.token), setup, "player lookup", match_id)
        if player is None:
            raise Refused(error("unauthorized", "unknown token"), CLOSE_UNAUTHORIZED)
        runner, owner = await _guarded(matches.locate(match_id), setup, "locating the match", match_id)
        meta = runner.meta if runner is not None else (
            None if owner is None else await _guarded(repo.match(match_id), setup, "match lookup", match_id))
        if meta is None:
            raise Refused(error("not_found", "no such match"), CLOSE_NOT_FOUND)
        if runner is None and not await _guarded(matches.node_alive(owner), setup,
                                                 "checking the match's node", match_id):
            # the owner died and its lease has not run out yet: say so now, not after the lease
            raise Refused(error("match_unavailable", "the node running this match is gone; another "
                                "takes it over shortly: reconnect after retry_after seconds",
                                retry_after=retry_after), CLOSE_TRY_AGAIN)
    except _Unavailable:
        state.metrics.errors.labels("storage_unavailable").inc()
        raise Refused(error("storage_unavailable", "storage is unavailable; reconnect after retry_after "
                            "seconds", retry_after=retry_after), CLOSE_TRY_AGAIN) from None
    viewer = viewer_for(meta, player, hello.as_)
    if viewer is None:
        raise Refused(error("forbidden", "admins only"), CLOSE_FORBIDDEN)
    refused = admit_socket(sock, player, meta, hello.as_)  # seated admin, sockets per player
    if refused is not None:
        raise Refused(error(refused[0], refused[1]), refused[2])
    return Admitted(player=player, viewer=viewer, runner=runner, owner=owner)


def attach(peer: Peer, match_id: str, admitted: Admitted, hello: Hello, settings: Any,
           matches: MatchDirectory) -> tuple[MatchRunner | None, Link | None]:
    """Step 3: attach ``peer`` to the match's runner here (it is sent its ``state``), or link it to
    the owner node. Returns ``(runner, None)`` or ``(None, link)``: where its messages go from now."""
    runner = admitted.runner
    if runner is not None:
        runner.attach(peer, since_version=hello.since_version, from_hello=True)
        return runner, None
    link: Link = matches.open_link(peer, match_id, admitted.owner or "", hello.since_version,
                                   answer_seconds=settings.link_answer_seconds,
                                   retry_after=max(1, round(settings.lease_seconds)))
    return None, link


def forward(matches: MatchDirectory, match_id: str, runner: MatchRunner | None, link: Link | None, peer: Peer,
            msg: dict[str, Any]) -> None:
    """Step 4, per message: a checked client message to the match's runner (the current one, if
    the match was rebuilt here since) or through the link."""
    if runner is not None:
        route(matches.live(match_id) or runner, peer, msg)
    elif link is not None:
        link.forward(msg)


def detach(matches: MatchDirectory, match_id: str, runner: MatchRunner | None, link: Link | None,
           peer: Peer) -> None:
    """The socket closed: it leaves its runner (and a rebuilt one) or closes its link."""
    if runner is not None:
        current = matches.live(match_id)
        if current is not None and current is not runner:
            current.detach(peer)
        runner.detach(peer)
    elif link is not None:
        link.close()


class BudgetRules:
    """A socket's budget of client messages (a token bucket): ``rate`` messages a second on
    average, up to ``burst`` at once (``SOCKET_MESSAGES_PER_SECOND``, ``SOCKET_MESSAGE_BURST``;
    ``rate`` 0: no budget). :meth:`take` says whether one more message may be served now; a message
    over the budget gets ``too_many_messages`` and is not served, and ``burst`` of them in a row
    close the socket (4429). The state lives in the object (:class:`Budget`, or a socket that is its
    own budget, ``app.transport.fast``)."""

    if TYPE_CHECKING:  # the state's slots are the subclass's (a mixin's own would clash with other bases')
        __slots__: tuple[str, ...] = ("burst", "over", "rate", "stamp", "tokens")
    else:
        __slots__ = ()

    burst: float
    over: int
    rate: float
    stamp: float
    tokens: float

    def reset_budget(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = max(1.0, burst)
        self.tokens = self.burst
        self.stamp = now
        #: messages refused in a row
        self.over = 0

    def take(self, now: float) -> bool:
        """True (and one message spent) when the budget allows a message at ``now`` (seconds, monotonic)."""
        if self.rate <= 0:
            return True
        tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if tokens >= 1.0:
            self.tokens = tokens - 1.0
            self.over = 0
            return True
        self.tokens = tokens
        self.over += 1
        return False

    def exhausted(self) -> bool:
        """Whether ``burst`` messages in a row were over the budget (the socket is then closed)."""
        return self.over >= self.burst

    def retry_after(self) -> float:
        """Seconds until one more message fits."""
        return max(0.0, (1.0 - self.tokens) / self.rate) if self.rate > 0 else 0.0


class Budget(BudgetRules):
    """A :class:`BudgetRules` of its own."""

    __slots__ = ("burst", "over", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.reset_budget(rate, burst, now)


def act_seq(text: str | bytes | None) -> int | None:
    """The ``seq`` of an ``act`` refused before it was checked (over the socket's message budget,
    or for its text: a NUL), echoed as every answer to an act is (docs/protocol.md, "Error codes
    on the socket"), so the client knows which act to resend: an int in [0, 2**62), or None for
    anything else (a binary frame, not JSON, not an ``act``, no valid ``seq``). Only on those
    refusals' paths: the frame, already bounded by ``MAX_MESSAGE_BYTES``, is parsed again."""
    if not isinstance(text, str):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    seq = value.get("seq") if isinstance(value, dict) and value.get("type") == "act" else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq < 2**62 else None
