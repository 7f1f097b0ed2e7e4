"""Load generator for any game (Provinces, Conquest, Warrior): each seat is played by the game's own
``random`` bot (``app.games.<game>.bots``) from the document its own socket holds.

Same config and stdin/stdout line protocol as ``loadgen.mjs`` / ``loadgen.py`` (``ready``, ``run``,
``result``, ``quit``; shared code in ``genbase.py``), so ``bench/bench_server.py --game
conquest|warrior`` measures the other games with the same phases. Config adds ``"game"`` and
``"bot_seed"``, and takes ``"spares"``: Conquest and Warrior matches end, and an ended match's slot
then plays the next spare (``genbase.py``, "Match slots and spares"), so the slots keep playing.

Each socket keeps the document ``{"status", "prompts", "view"}`` at its audience's version: a
``state`` resets it, a ``delta`` is applied with :func:`app.delta.apply_patch` (a ``base`` other
than the held version, or a patch that does not apply, sends ``resume`` and waits for the state).
Closed loop: each match keeps one action in flight. A match is idle once the ``ack`` of its last
action is in and the actor's socket holds that version (versions are per audience: the other seats'
sockets may hold other numbers); it then asks the seats whose own document shows them an
unsubmitted prompt, in turn from a rotating start, for the bot's next action (Conquest's
simultaneous phases: several seats are prompted at once and each submits; Warrior's decisions
inside an attack: one seat at a time). A seat whose socket has not yet got the change that prompts
it is simply not asked; its delta triggers the next try. Open loop: the same, paced at ``rate``
actions/s over all matches; a send that finds no idle match waits and its latency is also counted
from its scheduled time.

Every message is parsed (the bots need the views), so this generator needs more CPU per action than
``loadgen.mjs``; the benchmark prints the generator's CPU so a saturated generator shows.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genbase as gb

from app.games import registry

cfg = gb.load_config(sys.argv[1])
GAME = registry()[cfg["game"]]
BOT = GAME.info.bots["random"]
now = gb.now


class Match:
    def __init__(self, spec: dict[str, Any], index: int) -> None:
        self.id = spec["id"]
        self.tokens = spec["tokens"]
        n = len(self.tokens)
        self.sockets: list[Any] = [None] * n
        self.seqs = [0] * n
        self.docs = [gb.SocketDoc(keep="all") for _ in range(n)]
        self.bots = [BOT(seed=cfg.get("bot_seed", 1) * 1000 + index * 10 + s) for s in range(n)]
        self.last_actor = 0
        self.need_version = 0
        self.in_flight: tuple[int, int, float, float] | None = None
        self.ended = False
        self.queued = False
        self.live = False  # set once every seat socket is connected (genbase.serve / refill)
        self.slot = index
        self.actions = 0  # acked in this match
        self.rr = index
        self.failures = 0

    def _choose(self) -> tuple[int, dict[str, Any]] | None:
        n = len(self.tokens)
        self.rr += 1
        for k in range(n):
            seat = (self.rr + k) % n
            sd = self.docs[seat]
            if sd.resyncing or "view" not in sd.doc:
                continue
            mine = [p for p in sd.prompts if p["seat"] == seat and not p.get("submitted")]
            if not mine:
                continue
            action = self.bots[seat].decide(sd.doc["view"], mine[0])
            if action is not None:
                return seat, action
        return None

    def is_idle(self) -> bool:
        return (self.live and not self.ended and self.in_flight is None
                and self.docs[self.last_actor].version >= self.need_version)

    def send(self, sched: float | None = None) -> bool:
        choice = self._choose()
        if choice is None:
            return False
        seat, action = choice
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

    def dispatch(self) -> None:
        p = gb.phase
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

    def over(self) -> None:
        """The match has ended (its status, or ``ended``): counted once; its slot takes a spare."""
        if not self.ended:
            self.ended = True
            gb.match_over(self)

    def on_message(self, seat: int, text: str) -> None:
        p = gb.phase
        if p:
            p.bytes += len(text)
        msg = orjson.loads(text)
        kind = msg.get("type")
        sd = self.docs[seat]
        if kind == "state":
            if p:
                p.count_update("state", len(text))
            sd.on_state(msg)
            if msg.get("status") not in (None, "running"):
                self.over()
            self.dispatch()
        elif kind == "delta":
            if p:
                p.count_update("delta", len(text))
            if not sd.on_delta(msg):
                if p:
                    p.resumes += 1
                gb.resume(self.sockets[seat], sd)
            elif sd.doc.get("status") not in (None, "running"):
                self.over()
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
                self.actions += 1
                self.last_actor, self.need_version = seat, msg["version"]
                self.dispatch()
        elif kind == "ended":  # the last message of this socket (after the final ack): close it
            if p:
                p.msgs["ended"] += 1
            self.over()
            gb.close_socket(self.sockets[seat])
        elif kind == "error":
            if p:
                p.count_error(msg["code"])
            f = self.in_flight
            if f and f[0] == seat and f[1] == msg.get("seq"):
                self.in_flight = None
                self.failures += 1
                if msg["code"] == "stale_version":
                    gb.resume(self.sockets[seat], sd)
                if self.failures < 20:
                    gb.asyncio.get_running_loop().call_later(0.01, self.dispatch)
        elif p:
            p.msgs["other"] += 1


def reset_failures(m: Any) -> None:
    m.failures = 0


async def main() -> None:
    random.seed(cfg.get("bot_seed", 1))
    await gb.serve([Match(s, i) for i, s in enumerate(cfg["matches"])], before=reset_failures, make=Match)


if __name__ == "__main__":
    gb.main(main)
