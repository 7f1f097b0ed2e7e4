"""Python twin of loadgen.mjs (same config, same stdin/stdout line protocol): asyncio + websockets +
orjson (+ uvloop when installed). Used by ``bench/bench_server.py --generator python`` to measure
whether Python on one core can drive the server; see loadgen.mjs for the workload and
``genbase.py`` for what the Python generators share (deltas, versions, resume, spectators).

Provinces only: the seat on turn plays ``set_dealing`` (cycling the modes) ``dealing_per_turn``
times, then ``end_turn``. Each seat's socket keeps its own audience version and prompts (from its
``state`` and ``delta`` messages); a match is idle when the ``ack`` of its last action is in, the
actor's socket holds that version, and the seat on turn has seen its own prompt on its own socket.
Think mode (``genbase.ThinkPacer``): the seat on turn answers after a seeded think time.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genbase as gb

MODES = ("evenly", "randomly", "most_unevenly")
cfg = gb.load_config(sys.argv[1])
PARSE = cfg.get("parse", "actor")
DEALING = cfg.get("dealing_per_turn", 1)
now = gb.now


def read_int(s: str, pos: int) -> int:
    end = pos
    while s[end].isdigit():
        end += 1
    return int(s[pos:end])


def scan_state(s: str) -> tuple[int, int | None]:
    """(version, seat of the first prompt) of a ``state`` from its raw text (the key order is fixed)."""
    v = s.index('"version":')
    version = read_int(s, v + 10)
    p = s.find('"prompts":[', v)
    seat = None
    if p >= 0 and s[p + 11] != "]":
        seat = read_int(s, p + 11 + 8)
    return version, seat


class Match:
    def __init__(self, spec: dict[str, Any], index: int = 0) -> None:
        self.id = spec["id"]
        self.tokens = spec["tokens"]
        n = len(self.tokens)
        self.sockets: list[Any] = [None] * n
        self.docs = [gb.SocketDoc(keep="prompts") for _ in range(n)]
        self.seqs = [0] * n
        self.modes = [0] * n
        self.last_actor = 0
        self.need_version = 0
        self.turn_seat: int | None = None
        self.turn_actions = 0
        self.in_flight: tuple[int, int, float, float] | None = None
        self.ended = False
        self.queued = False
        self.actions = 0  # acked in this match
        self.live, self.slot = False, 0  # set by genbase.serve (this generator plays no spares)
        self.timer: Any = None  # think mode: the pending think of the seat on turn
        self.rng = random.Random(gb.CFG.get("bot_seed", 1) * 1_000_003 + index * 10)

    def on_turn(self, seat: int) -> int | None:
        """The seat on turn as seat ``seat``'s socket last saw it."""
        prompts = self.docs[seat].prompts
        return prompts[0]["seat"] if prompts else None

    def actor(self) -> int | None:
        for seat in range(len(self.tokens)):
            if self.on_turn(seat) == seat:
                return seat
        return None

    def is_idle(self) -> bool:
        return (not self.ended and self.in_flight is None
                and self.docs[self.last_actor].version >= self.need_version and self.actor() is not None)

    def next_action(self, seat: int) -> dict[str, Any]:
        if self.turn_seat != seat:
            self.turn_seat, self.turn_actions = seat, 0
        if self.turn_actions < DEALING:
            self.turn_actions += 1
            self.modes[seat] = (self.modes[seat] + 1) % 3
            return {"type": "set_dealing", "mode": MODES[self.modes[seat]]}
        self.turn_actions, self.turn_seat = 0, None
        return {"type": "end_turn"}

    def send(self, sched: float | None = None) -> bool:
        seat = self.actor()
        if seat is None:
            return False
        action = self.next_action(seat)
        self.seqs[seat] += 1
        seq = self.seqs[seat]
        t = now()
        self.in_flight = (seat, seq, t, sched if sched is not None else t)
        text = orjson.dumps({"type": "act", "seq": seq, "action": action, "version": self.docs[seat].version}).decode()
        gb.send(self.sockets[seat], text)
        if gb.phase:
            gb.phase.sent += 1
            gb.phase.by_type[action["type"]] = gb.phase.by_type.get(action["type"], 0) + 1
        return True

    def think(self) -> None:
        """Think mode (genbase.ThinkPacer): the seat on turn, as its own socket shows it, starts
        thinking; when the think is over it sends if the match is still idle."""
        p = gb.phase
        if p is None or not p.sending or p.mode != "think" or self.timer is not None or not self.is_idle():
            return
        assert gb.pacer is not None
        self.timer = gb.pacer.schedule(self.rng, self._answer)

    def _answer(self) -> None:
        self.timer = None
        assert gb.pacer is not None
        p = gb.phase
        sent = p is not None and p.sending and p.mode == "think" and self.is_idle() and self.send()
        gb.pacer.end_think(sent=bool(sent))

    def dispatch(self) -> None:
        p = gb.phase
        if p is not None and p.mode == "think":
            self.think()
            return
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
            gb.idle.append(self)

    def on_first(self, seat: int, msg: dict[str, Any]) -> None:
        self.docs[seat].on_state(msg)

    def on_message(self, seat: int, text: str) -> None:
        p = gb.phase
        if p:
            p.bytes += len(text)
        c = text[9]
        sd = self.docs[seat]
        if c == "s":  # state: always resets this socket's version and prompts
            if p:
                p.count_update("state", len(text))
            if PARSE == "all" or gb.deltas_wanted() or (PARSE == "actor" and self.in_flight is None
                                                         and seat == self.on_turn(seat)):
                sd.on_state(orjson.loads(text))
            else:
                version, prompt_seat = scan_state(text)
                sd.version, sd.resyncing = version, False
                sd.doc = {"prompts": [{"seat": prompt_seat}] if prompt_seat is not None else []}
            self.dispatch()
            return
        if c == "d":  # delta
            if p:
                p.count_update("delta", len(text))
            if not sd.on_delta(orjson.loads(text)):
                if p:
                    p.resumes += 1
                gb.resume(self.sockets[seat], sd)
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
                self.actions += 1
                self.last_actor, self.need_version = seat, msg["version"]
                self.dispatch()
            return
        if c == "e" and text[10] == "n":
            if p:
                p.msgs["ended"] += 1
            if not self.ended:  # every seat socket gets it: counted once per match
                self.ended = True
                gb.match_over(self)
            return
        msg = orjson.loads(text)
        if msg.get("type") == "error":
            if p:
                p.count_error(msg["code"])
            f = self.in_flight
            if f and f[0] == seat and f[1] == msg.get("seq"):
                # our picture of the match was wrong: ask for a fresh state and go on from it
                self.in_flight = None
                self.turn_seat = None
                gb.resume(self.sockets[seat], sd)
        elif p:
            p.msgs["other"] += 1


async def main() -> None:
    await gb.serve([Match(s, i) for i, s in enumerate(cfg["matches"])])


if __name__ == "__main__":
    gb.main(main)
