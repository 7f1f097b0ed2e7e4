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

Think mode (human pace, ``genbase.ThinkPacer``): each seat plays as its own client would. When its
own socket's document shows it an unsubmitted prompt (and holds the version its last ack brought),
the seat starts thinking (a think time drawn from its own seeded generator); when the think is over
the bot decides from that socket's document as it is then, and sends. Seats think side by side, so in
a Conquest simultaneous phase several seats are prompted at once and each answers after its own think;
in a Warrior attack the defender's decision is prompted to the defender alone. Every seat may have
one action in flight.

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
        # per seat: (seat, seq, sent at, scheduled at) of its action in flight; closed and open loop
        # keep at most one in flight per match, think mode one per seat
        self.flights: list[tuple[int, int, float, float] | None] = [None] * n
        self.need = [0] * n  # think mode: the version seat s's socket must hold before it thinks again
        self.timers: list[Any] = [None] * n  # think mode: each seat's pending think
        self.rngs = [random.Random(cfg.get("bot_seed", 1) * 1_000_003 + index * 10 + s) for s in range(n)]
        self.ended = False
        self.queued = False
        self.live = False  # set once every seat socket is connected (genbase.serve / refill)
        self.slot = index
        self.actions = 0  # acked in this match
        self.rr = index
        self.failures = 0

    @property
    def in_flight(self) -> tuple[int, int, float, float] | None:
        """An action of this match in flight (the first seat's), or None."""
        for f in self.flights:
            if f is not None:
                return f
        return None

    def _prompt(self, seat: int) -> dict[str, Any] | None:
        """The unsubmitted prompt seat ``seat``'s own socket shows it, if its document is usable."""
        sd = self.docs[seat]
        if sd.resyncing or "view" not in sd.doc:
            return None
        for pr in sd.prompts:
            if pr["seat"] == seat and not pr.get("submitted"):
                return pr
        return None

    def prompted(self) -> int:
        """Seats whose own socket shows them a prompt now (think mode's first guess of seats thinking)."""
        return sum(self._prompt(seat) is not None for seat in range(len(self.tokens)))

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
        self._send(*choice, sched)
        return True

    def _send(self, seat: int, action: dict[str, Any], sched: float | None = None) -> None:
        self.seqs[seat] += 1
        seq = self.seqs[seat]
        t = now()
        self.flights[seat] = (seat, seq, t, sched if sched is not None else t)
        text = orjson.dumps({"type": "act", "seq": seq, "action": action, "version": self.docs[seat].version}).decode()
        gb.send(self.sockets[seat], text)
        if gb.phase:
            gb.phase.sent += 1
            gb.phase.by_type[action["type"]] = gb.phase.by_type.get(action["type"], 0) + 1

    # ------------------------------------------------------------------ think mode
    def think(self, seat: int) -> None:
        """Think mode: seat ``seat`` starts thinking if its own socket shows it a prompt and it has
        nothing in flight, no think pending, and the version its last ack brought."""
        p = gb.phase
        if (p is None or not p.sending or p.mode != "think" or not self.live or self.ended
                or self.timers[seat] is not None or self.flights[seat] is not None
                or self.docs[seat].version < self.need[seat] or self._prompt(seat) is None):
            return
        assert gb.pacer is not None
        self.timers[seat] = gb.pacer.schedule(self.rngs[seat], lambda: self._answer(seat))

    def _answer(self, seat: int) -> None:
        """Seat ``seat``'s think is over: the bot decides from its socket's document as it is now."""
        self.timers[seat] = None
        assert gb.pacer is not None
        p = gb.phase
        prompt = self._prompt(seat)
        action = None
        # the prompt may have gone meanwhile (another seat's action): then wait for the next
        if (p is not None and p.sending and p.mode == "think" and not self.ended and self.flights[seat] is None
                and prompt is not None):
            action = self.bots[seat].decide(self.docs[seat].doc["view"], prompt)
            if action is not None:
                self._send(seat, action)
        gb.pacer.end_think(sent=action is not None)

    def dispatch(self) -> None:
        p = gb.phase
        if p is not None and p.mode == "think":
            for seat in range(len(self.tokens)):
                self.think(seat)
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

    def react(self, seat: int) -> None:
        """Something arrived on seat ``seat``'s socket: think mode, that seat may start thinking;
        closed and open loop, the match may send its next action."""
        p = gb.phase
        if p is not None and p.mode == "think":
            self.think(seat)
        else:
            self.dispatch()

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
            self.react(seat)
        elif kind == "delta":
            if p:
                p.count_update("delta", len(text))
            if not sd.on_delta(msg):
                if p:
                    p.resumes += 1
                gb.resume(self.sockets[seat], sd)
            elif sd.doc.get("status") not in (None, "running"):
                self.over()
            self.react(seat)
        elif kind == "ack":
            if p:
                p.msgs["ack"] += 1
            f = self.flights[seat]
            if f and f[1] == msg["seq"]:
                t = now()
                if p:
                    p.acked += 1
                    if t <= p.t_end:
                        p.acked_in_window += 1
                    if p.t0 <= f[2] <= p.t_end:
                        p.lat.append((t - f[2]) * 1000)
                        if p.mode == "open":
                            p.sched_lat.append((t - f[3]) * 1000)
                self.flights[seat] = None
                self.failures = 0
                self.actions += 1
                self.last_actor, self.need_version = seat, msg["version"]
                self.need[seat] = msg["version"]
                self.react(seat)
        elif kind == "ended":  # the last message of this socket (after the final ack): close it
            if p:
                p.msgs["ended"] += 1
            self.over()
            gb.close_socket(self.sockets[seat])
        elif kind == "error":
            if p:
                p.count_error(msg["code"])
            f = self.flights[seat]
            if f and f[1] == msg.get("seq"):
                self.flights[seat] = None
                self.failures += 1
                if msg["code"] == "stale_version":
                    gb.resume(self.sockets[seat], sd)
                if self.failures < 20:
                    gb.asyncio.get_running_loop().call_later(0.01, self.react, seat)
        elif p:
            p.msgs["other"] += 1


def reset_failures(m: Any) -> None:
    m.failures = 0


async def main() -> None:
    random.seed(cfg.get("bot_seed", 1))
    await gb.serve([Match(s, i) for i, s in enumerate(cfg["matches"])], before=reset_failures, make=Match)


if __name__ == "__main__":
    gb.main(main)
