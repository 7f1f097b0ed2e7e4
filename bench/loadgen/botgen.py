"""Load generator for any game (Provinces, Conquest, Warrior): each seat is played by the game's own
``random`` bot (``app.games.<game>.bots``) from the ``state`` messages of that seat's socket.

Same config and stdin/stdout line protocol as ``loadgen.mjs`` / ``loadgen.py`` (``ready``, ``run``,
``result``, ``quit``), so ``bench/bench_server.py --game conquest|warrior`` measures the other games
with the same phases. Config adds ``"game"`` and ``"bot_seed"``.

Closed loop: each match keeps one action in flight. A match is idle once the ``ack`` of its last
action is in and every seat's socket has the ``state`` of that version (every viewer gets a state per
version today); it then asks the seats that have an unsubmitted prompt, in turn from a rotating start,
for the bot's next action (Conquest's simultaneous phases: several seats are prompted at once and
each submits; Warrior's decisions inside an attack: one seat at a time). Open loop: the same, paced at
``rate`` actions/s over all matches; a send that finds no idle match waits and its latency is also
counted from its scheduled time.

Every message is parsed (the bots need the views), so this generator needs more CPU per action than
``loadgen.mjs``; the benchmark prints the generator's CPU so a saturated generator shows.
"""
from __future__ import annotations

import asyncio
import json
import math
import random
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.games import registry

cfg = json.loads(Path(sys.argv[1]).read_text())
GAME = registry()[cfg["game"]]
BOT = GAME.info.bots["random"]
now = time.perf_counter


def out(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Phase:
    def __init__(self, mode: str, seconds: float, rate: float | None) -> None:
        self.mode, self.seconds, self.rate = mode, seconds, rate or 0.0
        self.t0 = now()
        self.t_end = self.t0 + seconds
        self.sending = True
        self.sent = self.acked = self.acked_in_window = 0
        self.errors: dict[str, int] = {}
        self.lat: list[float] = []
        self.sched_lat: list[float] = []
        self.msgs = {"ack": 0, "state": 0, "error": 0, "ended": 0, "other": 0}
        self.bytes = self.state_bytes = 0
        self.state_sizes: list[int] = []
        self.by_type: dict[str, int] = {}
        self.backlog: deque[float] = deque()
        self.max_backlog = 0
        self.ended = 0
        self.cpu0 = time.process_time()


phase: Phase | None = None
idle: deque[Match] = deque()


class Match:
    def __init__(self, spec: dict[str, Any], index: int) -> None:
        self.id = spec["id"]
        self.tokens = spec["tokens"]
        n = len(self.tokens)
        self.sockets: list[Any] = [None] * n
        self.seqs = [0] * n
        self.versions = [-1] * n
        self.views: list[dict[str, Any] | None] = [None] * n
        self.prompts: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        self.bots = [BOT(seed=cfg.get("bot_seed", 1) * 1000 + index * 10 + s) for s in range(n)]
        self.need_version = 0
        self.in_flight: tuple[int, int, float, float] | None = None
        self.ended = False
        self.queued = False
        self.rr = index
        self.failures = 0

    def _choose(self) -> tuple[int, dict[str, Any]] | None:
        n = len(self.tokens)
        self.rr += 1
        for k in range(n):
            seat = (self.rr + k) % n
            view = self.views[seat]
            if view is None:
                continue
            mine = [p for p in self.prompts[seat] if p["seat"] == seat and not p.get("submitted")]
            if not mine:
                continue
            action = self.bots[seat].decide(view, mine[0])
            if action is not None:
                return seat, action
        return None

    def is_idle(self) -> bool:
        return (not self.ended and self.in_flight is None and min(self.versions) >= self.need_version)

    def send(self, sched: float | None = None) -> bool:
        choice = self._choose()
        if choice is None:
            return False
        seat, action = choice
        self.seqs[seat] += 1
        seq = self.seqs[seat]
        t = now()
        self.in_flight = (seat, seq, t, sched if sched is not None else t)
        text = orjson.dumps({"type": "act", "seq": seq, "action": action, "version": self.versions[seat]}).decode()
        asyncio.ensure_future(self.sockets[seat].send(text))
        if phase:
            phase.sent += 1
            phase.by_type[action["type"]] = phase.by_type.get(action["type"], 0) + 1
        return True

    def dispatch(self) -> None:
        p = phase
        if p is None or not p.sending or not self.is_idle():
            return
        if p.mode == "closed":
            self.send()
        elif p.backlog:
            sched = p.backlog.popleft()
            if not self.send(sched):
                p.backlog.appendleft(sched)
        elif not self.queued:
            self.queued = True
            idle.append(self)

    def on_message(self, seat: int, text: str) -> None:
        p = phase
        if p:
            p.bytes += len(text)
        msg = orjson.loads(text)
        kind = msg.get("type")
        if kind == "state":
            if p:
                p.msgs["state"] += 1
                p.state_bytes += len(text)
                p.state_sizes.append(len(text))
            if msg["version"] >= self.versions[seat]:
                self.versions[seat] = msg["version"]
                self.views[seat] = msg["view"]
                self.prompts[seat] = msg["prompts"]
            if msg.get("status") not in (None, "running"):
                self.ended = True
            self.dispatch()
        elif kind == "ack":
            if p:
                p.msgs["ack"] += 1
            f = self.in_flight
            if f and f[0] == seat and f[1] == msg["seq"]:
                t = now()
                if p:
                    p.acked += 1
                    if t <= p.t_end:
                        p.acked_in_window += 1
                    if p.t0 <= f[2] <= p.t_end:
                        p.lat.append((t - f[2]) * 1000)
                        if p.mode == "open":
                            p.sched_lat.append((t - f[3]) * 1000)
                self.in_flight = None
                self.failures = 0
                self.need_version = msg["version"]
                self.dispatch()
        elif kind == "ended":
            if p:
                p.msgs["ended"] += 1
                p.ended += 1
            self.ended = True
        elif kind == "error":
            if p:
                p.msgs["error"] += 1
                p.errors[msg["code"]] = p.errors.get(msg["code"], 0) + 1
            f = self.in_flight
            if f and f[0] == seat and f[1] == msg.get("seq"):
                self.in_flight = None
                self.failures += 1
                if self.failures < 20:
                    asyncio.get_running_loop().call_later(0.01, self.dispatch)
        elif p:
            p.msgs["other"] += 1


async def connect_one(m: Match, seat: int) -> None:
    ws = await connect(f"{cfg['url']}/ws/matches/{m.id}", compression="deflate" if cfg.get("deflate") else None,
                       max_size=2**24, open_timeout=60)
    await ws.send(orjson.dumps({"type": "hello", "token": m.tokens[seat]}).decode())
    first = orjson.loads(await ws.recv())
    if first.get("type") != "state" or first.get("seat") != seat:
        raise RuntimeError(f"hello answered with {str(first)[:200]}")
    m.versions[seat] = first["version"]
    m.views[seat] = first["view"]
    m.prompts[seat] = first["prompts"]
    m.sockets[seat] = ws

    async def reader() -> None:
        try:
            async for text in ws:
                m.on_message(seat, text)
        except Exception as exc:  # noqa: BLE001
            if not quitting:
                out({"event": "socket_closed", "match": m.id, "seat": seat, "error": repr(exc)})

    asyncio.ensure_future(reader())


def summary(values: list[float]) -> dict[str, Any]:
    s = sorted(values)

    def pct(q: float) -> float | None:
        if not s:
            return None
        return round(s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))], 3)

    return {"n": len(s), "mean_ms": round(sum(s) / len(s), 3) if s else None, "p50_ms": pct(0.5),
            "p90_ms": pct(0.9), "p99_ms": pct(0.99), "p999_ms": pct(0.999), "max_ms": round(s[-1], 3) if s else None}


async def run(cmd: dict[str, Any], matches: list[Match]) -> dict[str, Any]:
    global phase
    p = phase = Phase(cmd["mode"], cmd["seconds"], cmd.get("rate"))
    idle.clear()
    for m in matches:
        m.queued = False
        m.failures = 0
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
    else:
        await asyncio.sleep(p.seconds)
    p.sending = False
    cpu = time.process_time() - p.cpu0
    window = now() - p.t0
    msgs = dict(p.msgs)
    nbytes, state_bytes = p.bytes, p.state_bytes
    sizes = sorted(p.state_sizes)
    drain = now()
    while any(m.in_flight is not None and not m.ended for m in matches) and now() - drain < 10:
        await asyncio.sleep(0.005)
    busy = any(m.in_flight is not None and not m.ended for m in matches)
    phase = None
    return {"event": "result", "mode": p.mode, "seconds": window, "target_rate": p.rate or None,
            "sent": p.sent, "acked": p.acked, "acked_in_window": p.acked_in_window,
            "acks_per_s": p.acked_in_window / window, "sent_per_s": p.sent / window,
            "actions_by_type": p.by_type, "errors": p.errors, "messages_in_window": msgs,
            "messages_per_ack": sum(msgs.values()) / max(1, p.acked_in_window), "bytes_in_window": nbytes,
            "mean_state_bytes": state_bytes / max(1, msgs["state"]),
            "median_state_bytes": sizes[len(sizes) // 2] if sizes else None,
            "latency": summary(p.lat),
            "sched_latency": summary(p.sched_lat) if p.mode == "open" else None, "max_backlog": p.max_backlog,
            "matches_ended": p.ended, "in_flight_left": busy, "loadgen_cpu_s": cpu,
            "loadgen_event_loop_utilization": None}


quitting = False


async def main() -> None:
    global quitting
    random.seed(cfg.get("bot_seed", 1))
    matches = [Match(s, i) for i, s in enumerate(cfg["matches"])]
    t0 = now()
    sem = asyncio.Semaphore(cfg.get("connect_concurrency", 32))

    async def guarded(m: Match, seat: int) -> None:
        async with sem:
            await connect_one(m, seat)

    await asyncio.gather(*(guarded(m, s) for m in matches for s in range(len(m.tokens))))
    out({"event": "ready", "sockets": sum(len(m.tokens) for m in matches), "connect_s": now() - t0,
         "deflate_negotiated": 0})
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
            out(await run(cmd, matches))
        elif cmd["cmd"] == "quit":
            break
    quitting = True
    for m in matches:
        for ws in m.sockets:
            if ws is not None:
                ws.transport.abort()
    out({"event": "bye"})


if __name__ == "__main__":
    try:
        from uvloop import run as run_loop
    except ImportError:
        run_loop = asyncio.run
    try:
        run_loop(main())
    except Exception as exc:  # noqa: BLE001
        import traceback

        out({"event": "fatal", "error": traceback.format_exc() or repr(exc)})
        sys.exit(1)
