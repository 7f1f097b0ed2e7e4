"""Python twin of loadgen.mjs (same config, same stdin/stdout line protocol): asyncio + websockets +
orjson (+ uvloop when installed). Used by ``bench/bench_server.py --generator python`` to measure
whether Python on one core can drive the server; see loadgen.mjs for the protocol."""
from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from collections import deque
from typing import Any

import orjson
from websockets.asyncio.client import connect

MODES = ("evenly", "randomly", "most_unevenly")
cfg = json.loads(open(sys.argv[1]).read())
PARSE = cfg.get("parse", "actor")
DEALING = cfg.get("dealing_per_turn", 1)
now = time.perf_counter


def out(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read_int(s: str, pos: int) -> int:
    end = pos
    while s[end].isdigit():
        end += 1
    return int(s[pos:end])


def scan_state(s: str) -> tuple[int, int | None]:
    v = s.index('"version":')
    version = read_int(s, v + 10)
    p = s.find('"prompts":[', v)
    seat = None
    if p >= 0 and s[p + 11] != "]":
        seat = read_int(s, p + 11 + 8)
    return version, seat


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
        self.by_type: dict[str, int] = {}
        self.backlog: deque[float] = deque()
        self.max_backlog = 0
        self.ended = 0
        self.cpu0 = time.process_time()


phase: Phase | None = None
idle: deque["Match"] = deque()


class Match:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.id = spec["id"]
        self.tokens = spec["tokens"]
        self.sockets: list[Any] = [None] * len(self.tokens)
        self.seqs = [0] * len(self.tokens)
        self.modes = [0] * len(self.tokens)
        self.version = -1
        self.need_version = 0
        self.seat_on_turn: int | None = None
        self.turn_seat: int | None = None
        self.turn_actions = 0
        self.in_flight: tuple[int, int, float, float] | None = None
        self.ended = False
        self.resync = False
        self.queued = False

    def is_idle(self) -> bool:
        return (not self.ended and self.in_flight is None and self.version >= self.need_version
                and self.seat_on_turn is not None)

    def next_action(self) -> dict[str, Any]:
        seat = self.seat_on_turn
        if self.turn_seat != seat:
            self.turn_seat, self.turn_actions = seat, 0
        if self.turn_actions < DEALING:
            self.turn_actions += 1
            self.modes[seat] = (self.modes[seat] + 1) % 3
            return {"type": "set_dealing", "mode": MODES[self.modes[seat]]}
        self.turn_actions, self.turn_seat = 0, None
        return {"type": "end_turn"}

    def send(self, sched: float | None = None) -> None:
        seat = self.seat_on_turn
        action = self.next_action()
        self.seqs[seat] += 1
        seq = self.seqs[seat]
        t = now()
        self.in_flight = (seat, seq, t, sched if sched is not None else t)
        text = orjson.dumps({"type": "act", "seq": seq, "action": action, "version": self.version}).decode()
        asyncio.ensure_future(self.sockets[seat].send(text))
        if phase:
            phase.sent += 1
            phase.by_type[action["type"]] = phase.by_type.get(action["type"], 0) + 1

    def dispatch(self) -> None:
        p = phase
        if p is None or not p.sending or not self.is_idle():
            return
        if p.mode == "closed":
            self.send()
        elif p.backlog:
            self.send(p.backlog.popleft())
        elif not self.queued:
            self.queued = True
            idle.append(self)

    def on_message(self, seat: int, text: str) -> None:
        p = phase
        if p:
            p.bytes += len(text)
        c = text[9]
        if c == "s":
            if PARSE == "all" or (PARSE == "actor" and self.in_flight is None and seat == self.seat_on_turn):
                msg = orjson.loads(text)
                version = msg["version"]
                prompt_seat = msg["prompts"][0]["seat"] if msg["prompts"] else None
            else:
                version, prompt_seat = scan_state(text)
            if p:
                p.msgs["state"] += 1
                p.state_bytes += len(text)
            if version > self.version or self.resync:
                self.resync = False
                self.version, self.seat_on_turn = version, prompt_seat
                self.dispatch()
            return
        if c == "a":
            msg = orjson.loads(text)
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
                self.need_version = msg["version"]
                self.dispatch()
            return
        if c == "e" and text[10] == "n":
            if p:
                p.msgs["ended"] += 1
                p.ended += 1
            self.ended = True
            return
        msg = orjson.loads(text)
        if msg.get("type") == "error":
            if p:
                p.msgs["error"] += 1
                p.errors[msg["code"]] = p.errors.get(msg["code"], 0) + 1
            f = self.in_flight
            if f and f[0] == seat and f[1] == msg.get("seq"):
                self.in_flight = None
                self.resync = True
                self.turn_seat = None
                asyncio.ensure_future(self.sockets[seat].send(
                    orjson.dumps({"type": "resume", "since_version": max(self.version, 0)}).decode()))
        elif p:
            p.msgs["other"] += 1


async def connect_one(m: Match, seat: int) -> None:
    ws = await connect(f"{cfg['url']}/ws/matches/{m.id}", compression="deflate" if cfg.get("deflate") else None,
                       max_size=2**24, open_timeout=60)
    await ws.send(orjson.dumps({"type": "hello", "token": m.tokens[seat]}).decode())
    first = orjson.loads(await ws.recv())
    if first.get("type") != "state" or first.get("seat") != seat:
        raise RuntimeError(f"hello answered with {str(first)[:200]}")
    if first["version"] > m.version:
        m.version = first["version"]
        m.seat_on_turn = first["prompts"][0]["seat"] if first["prompts"] else None
    m.sockets[seat] = ws
    if any(getattr(e, "name", "") == "permessage-deflate" for e in ws.protocol.extensions):
        deflated[0] += 1

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
                m = None
                while idle:
                    cand = idle.popleft()
                    cand.queued = False
                    if cand.is_idle():
                        m = cand
                        break
                if m:
                    m.send(sched)
                else:
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
            "mean_state_bytes": state_bytes / max(1, msgs["state"]), "latency": summary(p.lat),
            "sched_latency": summary(p.sched_lat) if p.mode == "open" else None, "max_backlog": p.max_backlog,
            "matches_ended": p.ended, "in_flight_left": busy, "loadgen_cpu_s": cpu,
            "loadgen_event_loop_utilization": None}


quitting = False
deflated = [0]


async def main() -> None:
    global quitting
    matches = [Match(s) for s in cfg["matches"]]
    t0 = now()
    sem = asyncio.Semaphore(cfg.get("connect_concurrency", 32))

    async def guarded(m: Match, seat: int) -> None:
        async with sem:
            await connect_one(m, seat)

    await asyncio.gather(*(guarded(m, s) for m in matches for s in range(len(m.tokens))))
    out({"event": "ready", "sockets": sum(len(m.tokens) for m in matches), "connect_s": now() - t0,
         "deflate_negotiated": deflated[0]})
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
