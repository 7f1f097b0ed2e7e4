"""What the Python load generators (``loadgen.py``, ``botgen.py``) share: the stdin/stdout line
protocol of ``loadgen.mjs`` (``ready``, ``run`` -> ``result``, ``quit``), the closed/open-loop phase
driver, latency summaries, the per-socket protocol state (full ``state`` or ``delta`` + version,
resume on a gap) and the optional spectator sockets.

Protocol (docs/protocol.md, "Deltas, audiences and versions"): ``hello`` carries ``"deltas": true``
unless the config says ``"full_states": true``. A socket holds its audience's ``version``; a ``state``
always resets it (so the generators work with servers that send only states); a ``delta`` whose
``base`` is the held version moves it to ``delta.version`` (and, where the generator keeps the
document, applies ``patch`` with :func:`app.delta.apply_patch`); any other ``base`` or a patch that
does not apply sends ``{"type":"resume","since_version": held}`` and ignores deltas until the next
``state``.

Config keys used here: ``url``, ``matches`` ([{"id", "tokens"}]), ``deflate``, ``full_states``,
``connect_concurrency``, ``spectators``: ``{"match": id, "tokens": [t, ...], "count": n}`` (or a
list of them, one per watched match) opens ``n`` sockets with ``"as": "spectator"`` on match ``id``
(the tokens are used round-robin); their messages are counted apart (``spectator_*`` in the result)
and they never act; ``spares`` ([{"id", "tokens"}], matches made over REST before the run, not yet
connected); ``source_addresses`` (["127.0.0.1", "127.0.0.2", ...]; default: the system's choice):
the sockets' local addresses, round-robin, so that more sockets than one address's ephemeral ports
can reach one server port; ``samples`` is accepted for symmetry with ``loadgen.mjs`` (the Python
generators always send their latency samples).

Modes of ``run``: ``closed`` (every idle match sends at once), ``open`` (``rate`` sends/s over all
matches) and ``think`` (human pace, :class:`ThinkPacer`): every seat answers its own prompt, as its
own socket shows it, after a seeded think time of its own (``think_dist``: ``exp``, exponential, or
``uniform``, 0.5-1.5 × the mean), so several seats prompted at once (Conquest's simultaneous phases)
think side by side; the mean is set so that the whole generator acts ``rate_per_match`` × its
matches per second (or ``rate``); ``"think_adapt": false`` keeps the mean the previous phase reached,
``"think_tau_s"`` (3) is the smoothing time of the seats thinking, ``"think_retime": false`` leaves the
pending thinks as drawn (a measured phase after a warm-up: a slow pace that a server's stall does not
move, so that people think at their pace whatever the server does).

Match slots and spares: each entry of ``matches`` is a slot. A generator whose matches end calls
:func:`match_over` once per match; if ``serve`` was given a ``make`` function, the slot then takes
the next spare, opens its seat sockets (``hello``, first ``state``) and plays it (the ended match's
sockets are closed by the generator when its ``ended`` arrives). When no spare is left the slot stays
idle: a ``pool_dry`` event is printed the first time, and every result counts the idle slots and
their idle seconds, so a pool that ran out is never silent.
"""
from __future__ import annotations

import asyncio
import gc
import json
import math
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # app.delta, app.games
sys.path.insert(0, str(Path(__file__).resolve().parent))
from leanws import LeanSocket, connect  # noqa: E402

now = time.perf_counter


def out(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def summary(values: list[float]) -> dict[str, Any]:
    """Latency summary in ms: n, mean and percentiles (nearest rank)."""
    s = sorted(values)

    def pct(q: float) -> float | None:
        if not s:
            return None
        return round(s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))], 3)

    return {"n": len(s), "mean_ms": round(sum(s) / len(s), 3) if s else None, "p50_ms": pct(0.5),
            "p90_ms": pct(0.9), "p99_ms": pct(0.99), "p999_ms": pct(0.999), "max_ms": round(s[-1], 3) if s else None}


def median(values: list[int]) -> int | None:
    s = sorted(values)
    return s[len(s) // 2] if s else None


class Phase:
    """Counters of one ``run`` command."""

    def __init__(self, mode: str, seconds: float, rate: float | None) -> None:
        self.mode, self.seconds, self.rate = mode, seconds, rate or 0.0
        self.t0 = now()
        self.t_end = self.t0 + seconds
        self.sending = True
        self.sent = self.acked = self.acked_in_window = 0
        self.errors: dict[str, int] = {}
        self.lat: list[float] = []
        self.sched_lat: list[float] = []
        self.msgs = {"ack": 0, "state": 0, "delta": 0, "error": 0, "ended": 0, "other": 0}
        self.bytes = self.state_bytes = self.delta_bytes = 0
        self.update_sizes: list[int] = []  # every state and delta message (seat sockets)
        self.state_sizes: list[int] = []
        self.resumes = 0
        self.spec_msgs = {"state": 0, "delta": 0, "other": 0}
        self.spec_bytes = 0
        self.spec_resumes = 0
        self.by_type: dict[str, int] = {}
        self.backlog: deque[float] = deque()
        self.max_backlog = 0
        self.ended = 0  # matches that ended (once per match)
        self.ended_actions = 0  # actions acked in those matches, over their whole life
        self.refills = 0  # spares opened into a slot
        self.refill_s = 0.0  # from the end of a match to its slot's spare being connected
        self.dry_at: float | None = None  # when a slot first found no spare left
        self.think: dict[str, Any] | None = None  # think mode: the pace (ThinkPacer) it ran at
        self.cpu0 = time.process_time()

    def count_update(self, kind: str, size: int) -> None:
        self.msgs[kind] += 1
        if kind == "state":
            self.state_bytes += size
            self.state_sizes.append(size)
        else:
            self.delta_bytes += size
        if len(self.update_sizes) < 200_000:
            self.update_sizes.append(size)

    def count_error(self, code: str) -> None:
        self.msgs["error"] += 1
        self.errors[code] = self.errors.get(code, 0) + 1


THINK_DISTS = ("exp", "uniform")


def unit_think(rng: Any, dist: str) -> float:
    """One think time in units of the mean (mean 1): exponential (``exp``) or uniform on [0.5, 1.5]
    (``uniform``), drawn from ``rng`` (a seeded :class:`random.Random`)."""
    if dist == "exp":
        return float(rng.expovariate(1.0))
    if dist == "uniform":
        return float(rng.uniform(0.5, 1.5))
    raise ValueError(f"think_dist must be one of {THINK_DISTS}, not {dist!r}")


def think_mean_s(thinkers: float, rate: float, answered: float = 1.0, floor_s: float = 0.02) -> float:
    """The mean think time (s) that makes ``thinkers`` seats thinking on average send ``rate``
    actions a second in all, when a share ``answered`` of the thinks ends in a send (the others find
    their prompt gone: another seat's action took it): Little's law (L = λ W, thinks ending at L / W
    a second, ``answered`` of them sending), so W = ``answered`` × L / λ; at least ``floor_s``."""
    if rate <= 0:
        raise ValueError("rate must be > 0")
    return max(floor_s, answered * thinkers / rate)


class ThinkPacer:
    """Think mode's pace for one generator. Each seat that its own socket shows a prompt draws a
    think time (:func:`unit_think` × :attr:`mean_s`) and answers when it is over. The mean follows
    Little's law: the seats thinking at once (time-weighted, smoothed over ``tau_s``) ÷ the target
    rate, × the share of thinks that end in a send (smoothed too), so a game where several seats
    think at once (Conquest's simultaneous phases) gets longer thinks than one where one seat is on
    turn (Provinces), and the generator's total rate is the target whatever the game. The draws are
    seeded per seat; only their scale follows the pace."""

    def __init__(self, rate: float, dist: str = "exp", thinkers: float = 1.0, tau_s: float = 3.0,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if dist not in THINK_DISTS:
            raise ValueError(f"think_dist must be one of {THINK_DISTS}, not {dist!r}")
        self.rate, self.dist, self.tau_s, self.clock = rate, dist, tau_s, clock
        self.thinking = 0  # seats whose think timer is pending
        self.thinkers = float(thinkers)  # smoothed time-weighted mean of ``thinking``
        self.answered = 1.0  # smoothed share of thinks that ended in a send
        self._ended = self._sent = 0  # thinks ended / of them sent, since the last tick
        self.mean_s = think_mean_s(self.thinkers, rate)
        self._area = 0.0
        self._t_last = self._t_window = clock()
        self.pending: set[Thought] = set()  # thinks scheduled by :meth:`schedule`
        self._timed_at_mean = self.mean_s  # the mean their timers were last set for
        #: frozen: the mean stays as it is (the smoothed figures go on); a measured phase is played at
        #: a fixed mean, as people think whatever the server does (a stalled server then gets fewer
        #: actions, as the reference room's clients give it), after a warm-up that set it
        self.frozen = False
        #: re-time the pending thinks when the mean moves (off: only new thinks get the new mean)
        self.retime = True

    def set_rate(self, rate: float) -> None:
        self.rate = rate
        if not self.frozen:
            self.mean_s = think_mean_s(self.thinkers, rate, self.answered)
            self._retime()

    def schedule(self, rng: Any, callback: Callable[[], None]) -> Thought:
        """A seat starts thinking: ``callback()`` runs on the running loop when its think is over
        (the callback calls :meth:`end_think`). While it thinks, a change of the mean by more than
        5 % re-times it (its draw × the new mean from its start), so that the thinks pending follow
        the pace at once instead of one think time later."""
        self._account()
        self.thinking += 1
        th = Thought(self.clock(), unit_think(rng, self.dist), callback)
        th.handle = asyncio.get_running_loop().call_later(th.unit * self.mean_s, self._fire, th)
        self.pending.add(th)
        return th

    def _fire(self, th: Thought) -> None:
        self.pending.discard(th)
        th.callback()

    def _retime(self) -> None:
        if not self.retime or not self.pending or abs(self.mean_s / self._timed_at_mean - 1) <= 0.05:
            return
        self._timed_at_mean = self.mean_s
        loop, t = asyncio.get_running_loop(), self.clock()
        for th in self.pending:
            if th.handle is not None:
                th.handle.cancel()
            th.handle = loop.call_later(max(0.0, th.t_start + th.unit * self.mean_s - t), self._fire, th)

    def _account(self) -> None:
        t = self.clock()
        self._area += self.thinking * (t - self._t_last)
        self._t_last = t

    def start_think(self, rng: Any) -> float:
        """A seat starts thinking: its think time in seconds."""
        self._account()
        self.thinking += 1
        return unit_think(rng, self.dist) * self.mean_s

    def end_think(self, sent: bool = True) -> None:
        """A seat's think is over; ``sent``: it sent an action (else its prompt was gone)."""
        self._account()
        self.thinking = max(0, self.thinking - 1)
        self._ended += 1
        self._sent += sent

    def tick(self) -> None:
        """Fold the time-weighted thinkers since the last tick into the smoothed mean; new mean."""
        self._account()
        dt = self._t_last - self._t_window
        if dt <= 0:
            return
        window = self._area / dt
        self._area, self._t_window = 0.0, self._t_last
        alpha = min(1.0, dt / self.tau_s)
        self.thinkers += alpha * (window - self.thinkers)
        if self._ended:
            self.answered += alpha * min(1.0, self._ended / 20) * (self._sent / self._ended - self.answered)
            self._ended = self._sent = 0
        if not self.frozen:
            self.mean_s = think_mean_s(self.thinkers, self.rate, self.answered)
            self._retime()


class Thought:
    """A seat's pending think (:meth:`ThinkPacer.schedule`): its draw in units of the mean, when it
    started, the callback at its end and the loop's timer."""

    __slots__ = ("callback", "handle", "t_start", "unit")

    def __init__(self, t_start: float, unit: float, callback: Callable[[], None]) -> None:
        self.t_start, self.unit, self.callback = t_start, unit, callback
        self.handle: asyncio.TimerHandle | None = None


pacer: ThinkPacer | None = None


class LagMonitor:
    """The generator's own event-loop lag: a 5 ms ticker notes how late it runs. A late tick means
    this process was busy (a bot deciding, a patch applied) while acks may have been waiting in its
    sockets, so its ack latencies include that much of its own delay (reported beside them)."""

    period = 0.005

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._next = 0.0

    def start(self) -> None:
        self._next = now() + self.period
        asyncio.get_running_loop().call_later(self.period, self._tick)

    def _tick(self) -> None:
        t = now()
        self.lags.append(max(0.0, (t - self._next) * 1000))
        self._next = t + self.period
        asyncio.get_running_loop().call_later(self.period, self._tick)

    def take(self) -> dict[str, Any]:
        """Summary (ms) of the lags since the last call; resets."""
        lags, self.lags = self.lags, []
        s = summary(lags)
        return {"max_ms": s["max_ms"], "p99_ms": s["p99_ms"], "over_10ms": sum(1 for x in lags if x > 10)}


lag_monitor = LagMonitor()


class GcPauses:
    """The generator's own collections (``gc.callbacks``): a pause here delays every ack waiting in
    this process's sockets, so it is reported beside the loop lag (``loadgen_gc``)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._t = 0.0

    def start(self) -> None:
        """Hook into ``gc.callbacks`` (the generator does at start, as :meth:`LagMonitor.start`)."""
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.pauses.append((info["generation"], (time.perf_counter() - self._t) * 1000))

    def take(self) -> dict[str, Any]:
        """Count, max and total ms of the collections since the last call (and the max per
        generation); resets."""
        p, self.pauses = self.pauses, []
        by_gen = {f"gen{g}_max_ms": round(max((ms for gg, ms in p if gg == g), default=0.0), 3) for g in range(3)}
        return {"count": len(p), "max_ms": round(max((ms for _, ms in p), default=0.0), 3),
                "total_ms": round(sum(ms for _, ms in p), 3), **by_gen}


gc_pauses = GcPauses()


def settle_heap() -> None:
    """Collect, then freeze what is alive (the sockets, the matches' documents, the spare pool's
    tokens): CPython's automatic collections then walk only what was made since, not the whole heap.
    A full collection of a generator holding ~1,750 spares stalled it 219 ms at half load, and its
    acks then read as server latency."""
    gc.collect()
    gc.freeze()
phase: Phase | None = None
idle: deque[Any] = deque()
quitting = False
CFG: dict[str, Any] = {}


def deltas_wanted() -> bool:
    return not CFG.get("full_states", False)


class SocketDoc:
    """One socket's view of the match: its audience ``version`` and, by ``keep``, nothing
    (``"none"``), the document without the view (``"prompts"``: ``{"status", "prompts"}``; patch
    operations under ``/view`` are skipped) or the whole document ``{"status", "prompts", "view"}``
    of docs/protocol.md (``"all"``), patched by deltas with :func:`app.delta.apply_patch`."""

    def __init__(self, keep: str) -> None:
        self.keep = keep
        self.version = -1
        self.doc: dict[str, Any] = {}
        self.resyncing = False

    @property
    def prompts(self) -> list[dict[str, Any]]:
        return self.doc.get("prompts") or []

    def on_state(self, msg: dict[str, Any]) -> None:
        self.version = msg["version"]
        self.resyncing = False
        if self.keep == "all":
            self.doc = {"status": msg.get("status"), "prompts": msg["prompts"], "view": msg["view"]}
        elif self.keep == "prompts":
            self.doc = {"status": msg.get("status"), "prompts": msg["prompts"]}

    def on_delta(self, msg: dict[str, Any]) -> bool:
        """Apply a delta; False if it does not follow (the caller then resumes)."""
        if self.resyncing:
            return True  # a resume is under way: its state resets everything
        if msg["base"] != self.version:
            return False
        if self.keep != "none":
            from app.delta import PatchError, apply_patch

            ops = msg["patch"]
            if self.keep == "prompts":
                ops = [op for op in ops if not op.get("path", "").startswith("/view")]
            try:
                self.doc = apply_patch(self.doc, ops, in_place=True, copy_values=False)
            except (PatchError, KeyError, TypeError, IndexError):
                return False
        self.version = msg["version"]
        return True


def send(ws: LeanSocket, text: str) -> None:
    """Send ``text`` on ``ws`` now (a failure is reported by the socket's close callback)."""
    ws.send(text)


def resume(ws: Any, sd: SocketDoc) -> None:
    sd.resyncing = True
    send(ws, orjson.dumps({"type": "resume", "since_version": max(sd.version, 0)}).decode())


class GenMatch(Protocol):
    id: str
    tokens: list[str]
    sockets: list[Any]
    in_flight: Any
    ended: bool
    queued: bool
    live: bool  # every seat socket connected (a spare is not played before)
    slot: int  # its index in the slot list
    actions: int  # actions acked in this match so far

    def dispatch(self) -> None: ...
    def is_idle(self) -> bool: ...
    def send(self, sched: float | None = None) -> bool: ...
    def on_message(self, seat: int, text: str) -> None: ...
    def on_first(self, seat: int, msg: dict[str, Any]) -> None: ...


def hello(token: str, spectator: bool = False) -> str:
    msg: dict[str, Any] = {"type": "hello", "token": token, "deltas": deltas_wanted()}
    if spectator:
        msg["as"] = "spectator"
    return orjson.dumps(msg).decode()


opened = [0]  # sockets opened so far: the next one's source address (``source_addresses``)


async def open_socket(match_id: str) -> LeanSocket:
    addrs = CFG.get("source_addresses") or None
    local = None
    if addrs:
        local = addrs[opened[0] % len(addrs)]
        opened[0] += 1
    return await connect(f"{CFG['url']}/ws/matches/{match_id}", compression=bool(CFG.get("deflate")),
                         max_size=2**24, timeout=60, local_host=local)


seat_sockets: list[Any] = []  # every seat socket opened (aborted at ``quit``)


async def connect_seat(m: GenMatch, seat: int) -> bool:
    ws = await open_socket(m.id)
    ws.send(hello(m.tokens[seat]))
    first = orjson.loads(await ws.recv())
    if first.get("type") != "state" or first.get("seat") != seat:
        raise RuntimeError(f"hello answered with {str(first)[:200]}")
    m.on_first(seat, first)
    m.sockets[seat] = ws
    seat_sockets.append(ws)

    def closed(exc: BaseException | None) -> None:
        if exc is not None and not quitting and not m.ended:
            out({"event": "socket_closed", "match": m.id, "seat": seat, "error": repr(exc)})

    def on_message(text: str) -> None:
        try:
            m.on_message(seat, text)
        except Exception as exc:  # noqa: BLE001 - a generator bug: reported, this socket stops
            ws.on_message = None
            closed(exc)
            ws.transport.abort()

    ws.listen(on_message, closed)
    return any(getattr(e, "name", "") == "permessage-deflate" for e in ws.protocol.extensions)


spectator_sockets: list[Any] = []


async def connect_spectator(match_id: str, token: str) -> None:
    """A spectator socket: counts what it gets, keeps its version (not the document), resumes on a gap."""
    ws = await open_socket(match_id)
    ws.send(hello(token, spectator=True))
    first = orjson.loads(await ws.recv())
    if first.get("type") != "state" or first.get("viewer") != "spectator":
        raise RuntimeError(f"spectator hello answered with {str(first)[:200]}")
    sd = SocketDoc(keep="none")
    sd.on_state(first)
    spectator_sockets.append(ws)

    def on_message(text: str) -> None:
        p = phase
        if p:
            p.spec_bytes += len(text)
        kind = text[9:14]
        if kind == "state":
            sd.on_state(orjson.loads(text))
            if p:
                p.spec_msgs["state"] += 1
        elif kind == "delta":
            if p:
                p.spec_msgs["delta"] += 1
            if not sd.on_delta(orjson.loads(text)):
                if p:
                    p.spec_resumes += 1
                resume(ws, sd)
        elif p:
            p.spec_msgs["other"] += 1

    def closed(exc: BaseException | None) -> None:
        if exc is not None and not quitting:
            out({"event": "socket_closed", "match": match_id, "spectator": True, "error": repr(exc)})

    ws.listen(on_message, closed)


# ---------------------------------------------------------------------------- match slots and spares
pool: deque[dict[str, Any]] = deque()  # spare matches ({"id", "tokens"}) not yet played, in order
make_match: Callable[[dict[str, Any], int], GenMatch] | None = None  # spec, index -> a match
slots: list[GenMatch] = []  # the match each slot plays (the list ``run`` is given)
dry_since: dict[int, float] = {}  # slot -> when it found no spare (it stays idle from then on)
made = [0]  # matches made so far (initial + spares): the next match's index (bot seeds)
totals = {"spares_taken": 0, "refill_failed": 0, "dry_reported": 0}


def close_socket(ws: LeanSocket) -> None:
    """Close ``ws`` (a close handshake) without waiting."""
    ws.close()


def match_over(m: GenMatch) -> None:
    """A generator calls this once when match ``m`` has ended (its ``ended``, or a state/delta whose
    status is no longer running): counted in the phase (``matches_ended``, ``ended_actions``); with
    spares, its slot takes the next one (:func:`refill`)."""
    p = phase
    # the action that ended it is usually still in flight (its ack follows the state that ends it)
    actions = m.actions + (m.in_flight is not None)
    if p:
        p.ended += 1
        p.ended_actions += actions
    if make_match is not None and not quitting and slots and slots[m.slot] is m:
        asyncio.ensure_future(refill(m.slot, now()))


async def refill(slot: int, t_end: float) -> None:
    """Give ``slot`` the next spare: connect its seats (``hello``, first ``state``), then play it.
    No spare left: the slot stays idle (``pool_dry`` printed the first time)."""
    assert make_match is not None
    if not pool:
        dry_since[slot] = now()
        p = phase
        if p and p.dry_at is None:
            p.dry_at = now()
        if not totals["dry_reported"]:
            totals["dry_reported"] = 1
            out({"event": "pool_dry", "slot": slot, "spares_taken": totals["spares_taken"],
                 "phase": p.mode if p else None, "at_s": round(now() - p.t0, 2) if p else None})
        return
    spec = pool.popleft()
    totals["spares_taken"] += 1
    new = make_match(spec, made[0])
    made[0] += 1
    new.slot = slot
    try:
        await asyncio.gather(*(connect_seat(new, s) for s in range(len(new.tokens))))
    except Exception as exc:  # noqa: BLE001 - the slot is then idle, and counted as such
        if quitting:
            return
        totals["refill_failed"] += 1
        dry_since[slot] = now()
        out({"event": "refill_failed", "slot": slot, "match": spec["id"], "error": repr(exc)})
        return
    if quitting:
        return
    new.live = True
    slots[slot] = new
    p = phase
    if p:
        p.refills += 1
        p.refill_s += now() - t_end
    new.dispatch()


def slot_counters(p: Phase, t_end: float) -> dict[str, Any]:
    """The slots' side of a result: spares taken and left, slots idle for want of a spare at the end
    of the window and their idle slot-seconds within it, the mean time to refill a slot."""
    idle_s = sum(t_end - max(t, p.t0) for t in dry_since.values() if t < t_end)
    return {"matches_ended": p.ended, "ended_actions": p.ended_actions,
            "mean_actions_per_ended_match": p.ended_actions / p.ended if p.ended else None,
            "refills": p.refills, "refill_ms_mean": 1000 * p.refill_s / p.refills if p.refills else None,
            "spares_left": len(pool), "spares_taken_total": totals["spares_taken"],
            "idle_slots": len(dry_since), "idle_slot_s": round(idle_s, 2),
            "pool_dry_at_s": round(p.dry_at - p.t0, 2) if p.dry_at is not None else None,
            "refill_failed_total": totals["refill_failed"]}


async def run(cmd: dict[str, Any], matches: Sequence[GenMatch], before: Callable[[GenMatch], None] | None = None
              ) -> dict[str, Any]:
    """One phase: closed loop (every idle match sends at once), open loop (``rate`` sends/s, each
    to an idle match; a send that finds none waits in a backlog and is also timed from its
    scheduled time) or think mode (every seat answers its own prompts after its own think time,
    :class:`ThinkPacer`; ``rate_per_match`` × matches, or ``rate``, actions/s in all; the matches'
    ``dispatch`` starts their seats' thinks). Returns the ``result`` event."""
    global phase, pacer
    rate = cmd.get("rate")
    if cmd["mode"] == "think":
        rate = cmd["rate_per_match"] * len(matches) if cmd.get("rate_per_match") else rate
        if not rate or rate <= 0:
            raise ValueError("think mode needs rate_per_match or rate > 0")
        if pacer is None:  # the seats prompted now (a match without ``prompted``: one seat each)
            thinkers = sum(m.prompted() if hasattr(m, "prompted") else 1 for m in matches)
            pacer = ThinkPacer(rate, cmd.get("think_dist", "exp"), thinkers=max(1, thinkers))
        pacer.frozen = False
        pacer.set_rate(rate)
        pacer.frozen = not cmd.get("think_adapt", True)  # False: the mean stays as the last phase left it
        pacer.tau_s = float(cmd.get("think_tau_s", 3.0))
        pacer.retime = bool(cmd.get("think_retime", True))
    p = phase = Phase(cmd["mode"], cmd["seconds"], rate)
    idle.clear()
    for m in matches:
        m.queued = False
        if before:
            before(m)
    for m in matches:
        m.dispatch()
    if p.mode == "open":
        k = 0
        while True:
            t = now()
            if t >= p.t_end:
                break
            while p.t0 + k / p.rate <= t:
                sched = p.t0 + k / p.rate
                k += 1
                sent = False
                while idle and not sent:
                    cand = idle.popleft()
                    cand.queued = False
                    if cand.is_idle():
                        sent = cand.send(sched)
                if not sent:
                    p.backlog.append(sched)
            p.max_backlog = max(p.max_backlog, len(p.backlog))
            await asyncio.sleep(0.001)
    elif p.mode == "think":
        assert pacer is not None
        thinkers, means = [], []
        while now() < p.t_end:
            await asyncio.sleep(min(0.25, max(0.0, p.t_end - now())))
            pacer.tick()
            thinkers.append(pacer.thinkers)
            means.append(pacer.mean_s)
        p.think = {"dist": pacer.dist, "target_rate": p.rate, "mean_think_s": round(pacer.mean_s, 4),
                   "adapted": not pacer.frozen,
                   "answered_share": round(pacer.answered, 3),
                   "mean_think_s_avg": round(sum(means) / len(means), 4) if means else None,
                   "thinkers_avg": round(sum(thinkers) / len(thinkers), 2) if thinkers else None}
    else:
        await asyncio.sleep(p.seconds)
    p.sending = False
    cpu = time.process_time() - p.cpu0
    t_end = now()
    window = t_end - p.t0
    msgs = dict(p.msgs)
    nbytes, state_bytes, delta_bytes = p.bytes, p.state_bytes, p.delta_bytes
    spec_bytes, spec_msgs = p.spec_bytes, dict(p.spec_msgs)
    drain = now()
    while any(m.in_flight is not None and not m.ended for m in matches) and now() - drain < 10:
        await asyncio.sleep(0.005)
    busy = any(m.in_flight is not None and not m.ended for m in matches)
    slot_info = slot_counters(p, t_end)  # matches that ended in the drain count too
    phase = None
    return {"event": "result", "mode": p.mode, "seconds": window, "target_rate": p.rate or None,
            "sent": p.sent, "acked": p.acked, "acked_in_window": p.acked_in_window,
            "acks_per_s": p.acked_in_window / window, "sent_per_s": p.sent / window,
            "actions_by_type": p.by_type, "errors": p.errors, "messages_in_window": msgs,
            "messages_per_ack": sum(msgs.values()) / max(1, p.acked_in_window), "bytes_in_window": nbytes,
            "mean_state_bytes": state_bytes / max(1, msgs["state"]),
            "median_state_bytes": median(p.state_sizes),
            "mean_delta_bytes": delta_bytes / msgs["delta"] if msgs["delta"] else None,
            "median_update_bytes": median(p.update_sizes), "resumes": p.resumes,
            "spectators": len(spectator_sockets), "spectator_bytes_in_window": spec_bytes,
            "spectator_messages_in_window": spec_msgs, "spectator_resumes": p.spec_resumes,
            "latency": summary(p.lat),
            "sched_latency": summary(p.sched_lat) if p.mode == "open" else None, "max_backlog": p.max_backlog,
            # every sample (ms, rounded to µs) so that several generators' percentiles can be merged
            "latency_samples": [round(x, 3) for x in p.lat],
            "sched_latency_samples": [round(x, 3) for x in p.sched_lat] if p.mode == "open" else None,
            "loadgen_loop_lag": lag_monitor.take(),
            "loadgen_gc": gc_pauses.take(),
            "in_flight_left": busy, "loadgen_cpu_s": cpu, "think": p.think,
            "loadgen_event_loop_utilization": None, **slot_info}


async def serve(matches: Sequence[GenMatch], before: Callable[[GenMatch], None] | None = None,
                make: Callable[[dict[str, Any], int], GenMatch] | None = None) -> None:
    """Connect every seat (and the spectators), print ``ready``, then obey stdin commands.
    ``make(spec, index)`` builds a match from a spare of the config (``spares``): given, an ended
    match's slot takes the next spare (:func:`match_over`)."""
    global quitting, make_match
    make_match = make
    if CFG.get("spares") and make is None:
        raise RuntimeError("this generator cannot play spares (config 'spares'): its matches do not end")
    pool.extend(CFG.get("spares") or [])
    slots[:] = matches
    made[0] = len(matches)
    t0 = now()
    sem = asyncio.Semaphore(CFG.get("connect_concurrency", 32))
    deflated = [0]

    async def guarded(m: GenMatch, seat: int) -> None:
        async with sem:
            if await connect_seat(m, seat):
                deflated[0] += 1

    async def guarded_spectator(match_id: str, token: str) -> None:
        async with sem:
            await connect_spectator(match_id, token)

    await asyncio.gather(*(guarded(m, s) for m in matches for s in range(len(m.tokens))))
    specs = CFG.get("spectators") or []
    for spec in [specs] if isinstance(specs, dict) else specs:
        toks = spec["tokens"]
        await asyncio.gather(*(guarded_spectator(spec["match"], toks[i % len(toks)])
                               for i in range(spec.get("count") or 0)))
    for i, m in enumerate(slots):
        m.slot, m.live = i, True
    settle_heap()
    lag_monitor.start()
    gc_pauses.start()
    out({"event": "ready", "sockets": sum(len(m.tokens) for m in matches), "spectators": len(spectator_sockets),
         "connect_s": now() - t0, "deflate_negotiated": deflated[0], "deltas_requested": deltas_wanted(),
         "spares": len(pool)})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break
        if not line.strip():
            continue
        cmd = json.loads(line)
        if cmd["cmd"] == "run":
            lag_monitor.take()
            gc_pauses.take()
            # the generator's own collector is off within a phase: its pauses held the acks in its
            # sockets and read as server latency; a phase makes little cyclic garbage, collected
            # between phases (docs/decisions.md, "The load generators' own collector")
            gc.disable()
            try:
                result = await run(cmd, slots, before)
            finally:
                gc.enable()
            settle_heap()  # between phases, not within one
            out(result)
        elif cmd["cmd"] == "quit":
            break
    quitting = True
    for ws in seat_sockets:
        ws.transport.abort()
    for ws in spectator_sockets:
        ws.transport.abort()
    out({"event": "bye"})


def main(make: Callable[[], Any]) -> None:
    """Run the coroutine ``make()`` under uvloop when installed; a crash prints a ``fatal`` event."""
    try:
        from uvloop import run as run_loop
    except ImportError:
        run_loop = asyncio.run
    try:
        run_loop(make())
    except Exception as exc:  # noqa: BLE001
        import traceback

        out({"event": "fatal", "error": traceback.format_exc() or repr(exc)})
        sys.exit(1)


def load_config(path: str) -> dict[str, Any]:
    CFG.clear()
    CFG.update(json.loads(open(path).read()))
    return CFG
