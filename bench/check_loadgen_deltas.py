"""Checks the load generators' delta path end to end before the server sends deltas.

    python bench/check_loadgen_deltas.py            # node + python on Provinces, botgen on all three games

Starts a ``bannerfall serve`` (SQLite in a temp dir, not pinned), makes 4 matches of the game (and
for botgen on Conquest and Warrior 24 spares, which take the slot of a match that ended), puts
``bench/loadgen/delta_proxy.py`` in front of it (states turned into deltas, every 20th delta with a
wrong ``base``), and runs each generator through it with 3 spectator sockets: 3 s closed loop and
2 s open loop. It prints, per generator and game, the actions acked, deltas and states received,
resumes (seat sockets and spectators) and errors, and exits 1 if a run acked nothing, got an error,
or left an action in flight. Once the server sends deltas itself, ``bench_matrix.py --quick`` shows
the same counters (``messages_in_window.delta``, ``resumes``) against the real thing.
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_server as bs
from bench_matrix import GAME_OPTIONS, MATCH_ACTIONS

RUNS = (("node", "provinces"), ("python", "provinces"), ("bots", "provinces"), ("bots", "conquest"),
        ("bots", "warrior"))


def check(kind: str, game: str, tmp: Path) -> bool:
    work = tmp / f"{kind}-{game}"
    work.mkdir()
    server = bs.Server(f"sqlite+aiosqlite:///{work / 'bench.db'}", None, {}, work / "server.log").start()
    proxy = gen = None
    try:
        specs = asyncio.run(bs.create_matches(server.url, 4, 4, GAME_OPTIONS[game], game=game))
        # games whose matches end: spares keep the 4 slots playing (botgen opens them through the proxy too)
        spares = (asyncio.run(bs.create_matches(server.url, 24, 4, GAME_OPTIONS[game], game=game, prefix="spare"))
                  if kind == "bots" and game in MATCH_ACTIONS else [])
        port = bs.free_port()
        proxy = subprocess.Popen([sys.executable, str(bs.LOADGEN_DIR / "delta_proxy.py"), server.url.replace("http", "ws"),
                                  str(port), "20"], stdout=subprocess.DEVNULL, stderr=open(work / "proxy.log", "wb"))
        deadline = time.time() + 20
        while not _port_open(port):
            if time.time() > deadline or proxy.poll() is not None:
                raise RuntimeError("the proxy did not start: " + (work / "proxy.log").read_text()[-1000:])
            time.sleep(0.1)
        cfg = {"url": f"ws://127.0.0.1:{port}", "matches": specs, "spares": spares, "game": game, "parse": "actor",
               "dealing_per_turn": 1, "bot_seed": 1,
               "spectators": {"match": specs[0]["id"], "tokens": specs[-1]["tokens"], "count": 3}}  # seated elsewhere
        gen = bs.Generator(kind, cfg, None, work, 0)
        gen.read_event("ready")
        gen.command({"cmd": "run", "mode": "closed", "seconds": 3})
        closed = gen.read_event("result")
        gen.command({"cmd": "run", "mode": "open", "seconds": 2, "rate": 30})
        opened = gen.read_event("result")
        ok = True
        for name, r in (("closed", closed), ("open", opened)):
            msgs = r["messages_in_window"]
            good = not r["errors"] and not r["in_flight_left"] and (r["acked"] > 0 or r["matches_ended"] > 0)
            ok = ok and good
            print(f"{kind:6} {game:9} {name:6}: acked {r['acked']}, deltas {msgs.get('delta')}, states {msgs.get('state')}, "
                  f"resumes {r.get('resumes')}, spectator messages {r.get('spectator_messages_in_window')} "
                  f"resumes {r.get('spectator_resumes')}, ended {r['matches_ended']}, spares opened {r.get('refills', '–')}, "
                  f"idle slots {r.get('idle_slots', '–')}, errors {r['errors'] or 'none'}: "
                  f"{'ok' if good else 'FAILED'}", flush=True)
        return ok
    finally:
        if gen is not None:
            gen.quit()
        if proxy is not None:
            proxy.terminate()
            proxy.wait(10)
        server.stop()


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bannerfall-deltacheck-"))
    try:
        ok = all([check(kind, game, tmp) for kind, game in RUNS])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
