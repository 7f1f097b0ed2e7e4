"""Bannerfall beside the reference card rooms, in one invocation (issue 11 item 4).

    . .venv/bin/activate && ../shared/perf/setup.sh && (cd bench/loadgen && npm ci)
    python bench/bench_matrix.py                 # all three games, embedded and production, + FastAPI + Colyseus
    python bench/bench_matrix.py --quick         # the same matrix, tiny (~2 min): a smoke test of the harness
    python bench/bench_matrix.py --transports lean,asgi   # every cell once per socket transport

One run measures, on the same machine and within minutes of each other:

* the **reference rooms** of ``/work/shared/perf`` (``--perf-dir``): the FastAPI card room and the
  Colyseus 0.17 card room, each pinned to core 0 and driven by their own ``loadgen.js`` on core 1
  (closed loop, no think time, ``--rooms`` rooms of 4). Their code and dependencies stay where
  ``setup.sh`` put them (``/tmp/perf-venv``, ``/tmp/perf-node``); nothing of them is committed here.
* **Bannerfall** for each game (Provinces, Conquest, Warrior) and each mode: ``embedded`` (SQLite in a
  temp dir, in-process backends) and ``production`` (a fresh Postgres database and a fresh Redis key
  prefix on the machine's servers, both removed afterwards). ``bannerfall serve`` is pinned to core 0;
  the load generator to core 1 (Provinces: ``loadgen.mjs``; Conquest and Warrior: ``botgen.py``, the
  games' own random bots playing every seat from their sockets' states, so Conquest's simultaneous
  phases and Warrior's decisions inside attacks are played as a client plays them). Phases as in
  ``bench_server.py``: warm-up, closed loop (the maximum), open loop at half of that.

**Transports.** ``--transports`` (default ``auto``, the server's own choice) names socket transports
(``BANNERFALL_SOCKET_TRANSPORT``: ``lean``, ``asgi``); every game and mode is measured once per
transport, each with servers started under it, and its rows are named ``… embedded (asgi)``.

**Match slots and spares.** M matches (``--matches``) are made over REST and played; Conquest and
Warrior matches end (a few hundred actions; ~107), so before the phases a pool of **spare matches**
is made over REST too (``--spares``: Provinces 0, Conquest and Warrior enough for the warm-up, closed
and open loop at the expected rate, see :func:`spares_for`) and given to ``botgen.py``. When a match
ends, its slot takes the next spare, opens its 4 seat sockets (``hello``, first ``state``; this is in
the measured server CPU, as players arriving) and plays it: M matches keep playing. A pool that runs
out is printed (``pool_dry``) and every result counts the slots left idle and their idle seconds.
The REST set-up (players, lobby, joins, start) is not in the measured phases; its server CPU is shown
as **set-up CPU ms per match** (server CPU while making the matches and spares ÷ their number).

The load generators ask for deltas (``"deltas": true`` in ``hello``; ``--full-states`` asks for full
states) and keep each socket's audience version (docs/protocol.md "Deltas, audiences and versions");
a server without deltas sends full states, which they take as before.

Per game and mode it prints: actions per server CPU-second and its ratio to each reference room,
bytes per socket per action (mean over the closed loop: bytes the match's 4 seat sockets got ÷ 4 ÷
actions; and the median size of the ``state``/``delta`` messages, the message a socket gets for one
action), p99 action->ack at half of Bannerfall's own maximum, the event loop's worst lag and the
worst cyclic-GC pause over the measured phases, server memory per idle socket and per live match
(``bench_memory.py``'s measurement, see **Memory** below), the set-up CPU per match, the matches
completed in the measured phases and their mean length in actions, the spares taken and the idle
slots, the machine's load average. Then ``bench_spectators.py`` (``--spectators``, default
10 and 1,000 spectators on one Provinces match, embedded mode): server CPU per action and its ratio.
Last, every target of issue 11 item 5 (and item 2's spectator ratio) with PASS/FAIL (see
:data:`TARGETS`). Only ratios within one run count: the machine may be shared.

**Memory.** The two memory columns (and their targets) are ``bench_memory.py``'s measurement, run
per game and mode **after** that mode's throughput phases (its server stopped first): a fresh
``bannerfall serve`` per game (a fresh Postgres database and Redis prefix in production mode),
``--memory-warm-matches`` matches made, connected and played first, then RSS growth from making
``--memory-matches`` more matches (÷ matches: KB per live match) and from connecting their 4 seat
sockets each (÷ sockets: KB per idle socket); ``--memory-matches 0`` skips it (columns "–"). Its row is
kept under ``memory`` in the JSON. The old figures, the RSS growth while the throughput run made its
M matches (warm-up included) and connected their sockets, stay in the JSON as
``kb_per_live_match_setup`` and ``kb_per_idle_socket_setup``. ``--quick`` measures 20 matches (80
sockets) after a short warm-up unless told otherwise. Fewer than 200 matches give rough figures,
biased high (what grows once and stays, such as SQLite's page caches, is spread over few matches):
the output and the targets table say so.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_memory
import bench_server as bs
import bench_spectators

ROOT = bs.ROOT
CLK_TCK = os.sysconf("SC_CLK_TCK")

#: lobby options that keep every deadline out of the run (no default actions, no timeouts)
GAME_OPTIONS: dict[str, dict[str, Any]] = {
    "provinces": {"turn_seconds": 3600, "max_rounds": 1000},
    "conquest": {"phase_seconds": 3600, "decision_seconds": 3600, "max_rounds": 1000},
    "warrior": {"phase_seconds": 3600, "decision_seconds": 600, "siege_seconds": 600},
}

#: actions a match lasts, per game whose matches end within a run (4 seats, the random bots, the
#: options above): the mean of 20 seeded matches played in-process, 1 Dec 2026 (Warrior 107, range
#: 87–125; Conquest 269, range 117–563). Provinces (``max_rounds`` 1000) does not end in a run.
MATCH_ACTIONS: dict[str, float] = {"conquest": 270.0, "warrior": 107.0}
#: the closed-loop rate ``--spares auto`` plans for: at most this many actions/s on the server's core
#: (with 4 bot generators, 1 Dec 2026: Warrior 2,250/s, Conquest 2,000/s; with one generator, the
#: generator was the limit: 650–770/s) ...
EXPECTED_RATE = 2500.0
#: ... and at most this many per match (one action in flight per match: up to 177/s seen with 4 matches)
EXPECTED_RATE_PER_MATCH = 250.0
#: spares = margin × the matches the phases are expected to finish (match lengths vary, see above)
SPARES_MARGIN = 1.5


#: ``--quick``'s memory measurement (``bench_memory.py`` options with the ``memory-`` prefix), for each
#: option left at its default: small, so the figures are rough
QUICK_MEMORY: dict[str, float] = {"memory_matches": 20, "memory_warm_matches": 2, "memory_warm_seconds": 0.5,
                                  "memory_play_seconds": 0.0, "memory_settle": 0.25}
#: fewer measured matches than this (``bench_memory.py``'s default) make the memory figures rough
MEMORY_MATCHES_DEFINED = 200

#: issue 11 item 5 (and item 2): (key, label, limit); checked per game and mode by :func:`targets`
TARGETS = (
    ("cpu_ratio", "actions per server CPU-s ≥ 1.0× FastAPI (embedded), ≥ 0.8× (production)", None),
    ("bytes", "median bytes per socket per action ≤ 1.5 KB (1,500 B; Provinces)", 1500.0),
    ("p99", "p99 action→ack at half load ≤ 10 ms", 10.0),
    ("lag", "event loop: no stall over 20 ms (worst lag)", 20.0),
    ("socket", "≤ 25 KB per idle socket", 25.0),
    ("match", "≤ 100 KB per live match", 100.0),
)


def spares_for(game: str, args: argparse.Namespace) -> int:
    """The size of ``game``'s pool of spare matches: ``--spares`` (``N`` for every game whose matches
    end, or ``game=N,...``; ``auto`` or a game not named: the estimate). The estimate lasts the warm-up, the
    closed loop and the open loop (at half the rate) at the expected rate (:data:`EXPECTED_RATE`,
    at most :data:`EXPECTED_RATE_PER_MATCH` per match), × :data:`SPARES_MARGIN`; 0 for a game whose
    matches do not end (Provinces)."""
    given: dict[str, int] = {}
    for part in (p.strip() for p in args.spares.split(",")):
        if not part or part == "auto":
            continue
        name, _, n = part.rpartition("=")
        if name:
            given[name] = int(n)
        else:
            given = {g: int(n) for g in MATCH_ACTIONS}
    if game in given:
        return given[game]
    if game not in MATCH_ACTIONS:
        return 0
    rate = min(EXPECTED_RATE, EXPECTED_RATE_PER_MATCH * args.matches)
    actions = rate * (args.warmup + args.seconds) + 0.5 * rate * args.open_seconds
    return math.ceil(SPARES_MARGIN * actions / MATCH_ACTIONS[game])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---------------------------------------------------------------------------- reference rooms
def run_reference(kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """One reference room (``fastapi`` or ``colyseus``) under its own load generator; returns its
    loadgen.js JSON line plus ``actions_per_server_cpu_s`` and ``kb_per_socket``."""
    perf = args.perf_dir
    port = bs.free_port()
    env = {**os.environ, "PERF_NODE_DIR": args.perf_node_dir}
    log = open(tmp / f"{kind}.log", "wb")  # noqa: SIM115 - closed in finally
    if kind == "fastapi":
        py = Path(args.perf_venv) / "bin" / "python"
        cmd = ["taskset", "-c", str(args.server_core), str(py), "-m", "uvicorn", "fastapi_room:app",
               "--app-dir", str(perf), "--host", "127.0.0.1", "--port", str(port), "--loop", "uvloop",
               "--http", "httptools", "--ws", "websockets-sansio", "--ws-per-message-deflate", "false",
               "--no-access-log", "--log-level", "warning", "--backlog", "2048"]
        url, proto = f"ws://127.0.0.1:{port}/ws/{{room}}/{{seat}}", "plain"
    else:
        cmd = ["taskset", "-c", str(args.server_core), "node", str(perf / "colyseus_room" / "server.js"),
               "--port", str(port)]
        url, proto = f"ws://127.0.0.1:{port}", "colyseus"
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 30
        while not port_open(port):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"{kind} room did not start: {(tmp / f'{kind}.log').read_text()[-2000:]}")
            time.sleep(0.1)
        rss0 = bs.proc_rss_kb(proc.pid)
        gen = ["taskset", "-c", str(args.generator_core), "node", str(perf / "loadgen.js"), "--protocol", proto,
               "--url", url, "--rooms", str(args.rooms), "--duration", str(args.ref_seconds),
               "--warmup", str(args.ref_warmup), "--think-ms", "0", "--server-pid", str(proc.pid),
               "--clk-tck", str(CLK_TCK), "--label", kind]
        if kind == "colyseus":
            gen.append("--fast-views")
        load = os.getloadavg()
        res = subprocess.run(gen, env=env, capture_output=True, text=True, check=False, timeout=args.ref_seconds + args.ref_warmup + 120)
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"{kind} loadgen failed: {res.stderr[-2000:]}")
        out = json.loads(lines[-1])
        out["loadavg_before"] = load
        cpu = out.get("server_cpu") or 0
        out["actions_per_server_cpu_s"] = out["actions_per_s"] / cpu if cpu else None
        if out.get("server_rss_mb") and out.get("connections"):
            out["kb_per_socket"] = (out["server_rss_mb"] * 1024 - rss0) / out["connections"]
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# ---------------------------------------------------------------------------- Bannerfall
class Production:
    """A fresh Postgres database and Redis key prefix, removed afterwards."""

    def __init__(self, database_url: str, redis_url: str) -> None:
        self.pg = bs.Postgres(database_url)
        self.redis_url = redis_url
        self.prefix = f"bfbench{secrets.token_hex(5)}:"

    def create(self) -> dict[str, str]:
        url = self.pg.create()
        return {"BANNERFALL_DATABASE_URL": url, "BANNERFALL_REDIS_URL": self.redis_url,
                "BANNERFALL_REDIS_PREFIX": self.prefix}

    def drop(self) -> None:
        self.pg.drop()
        import redis

        r = redis.Redis.from_url(self.redis_url)
        try:
            keys = list(r.scan_iter(match=self.prefix + "*", count=1000))
            for i in range(0, len(keys), 500):
                r.delete(*keys[i:i + 500])
        finally:
            r.close()


def run_mode(mode: str, games: list[str], args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    """One ``bannerfall serve`` for ``mode``; the games measured one after the other on it (each with
    its own matches and load generator, closed before the next game starts)."""
    work = tmp / mode
    work.mkdir(parents=True)
    t_begin = time.monotonic()
    prod = Production(args.database_url, args.redis_url) if mode == "production" else None
    server: bs.Server | None = None
    rows: list[dict[str, Any]] = []
    try:
        env = {"BANNERFALL_WS_COMPRESSION": "false", "BENCH_GC_LOG": str(work / "gc.log"),
               "BENCH_LAG_LOG": str(work / "lag.log")}
        if args.stall_dump_ms:  # every stall of the loop longer than this: all threads' stacks
            args.stall_dump_dir.mkdir(parents=True, exist_ok=True)
            env.update({"BENCH_STALL_DUMP_MS": str(args.stall_dump_ms),
                        "BENCH_STALL_DUMP_PATH": str(args.stall_dump_dir / f"stalls-{mode}.txt")})
        if args.slow_callback_ms:  # asyncio debug mode: every callback longer than this, logged
            args.stall_dump_dir.mkdir(parents=True, exist_ok=True)
            env.update({"BENCH_SLOW_CALLBACK_MS": str(args.slow_callback_ms),
                        "BENCH_SLOW_CALLBACK_PATH": str(args.stall_dump_dir / f"slow-callbacks-{mode}.txt")})
        if prod:
            env.update(prod.create())
            db_url = env.pop("BANNERFALL_DATABASE_URL")
        else:
            db_url = f"sqlite+aiosqlite:///{work / 'bench.db'}"
        server = bs.Server(db_url, args.server_core, env, work / "server.log",
                           cmd=[sys.executable, "-c", bs.GC_WRAPPER, "log"]).start()
        started = round(time.monotonic() - t_begin, 1)
        for game in games:
            try:
                row = measure_game(server, game, mode, args, work)
                row["setup_s"]["server_start"] = started
            except Exception as exc:  # noqa: BLE001 - one failed cell must not lose the others
                row = {"game": game, "mode": mode, "error": repr(exc), "loadavg_before": os.getloadavg()}
            rows.append(row)
            print(f"bannerfall {game} {mode}: " + (row.get("error") or
                  f"{row['actions_per_s']:.0f} actions/s, {fmt(row['actions_per_server_cpu_s'])} per server CPU-s, "
                  f"generator CPU {row['generator_cpu_pct']:.0f}%, errors {row['errors'] or 'none'}, "
                  f"set-up {row['setup_s']} ({row['setup_cpu_ms_per_match']:.1f} ms server CPU per match made); "
                  f"{row['matches_completed_measured']} matches completed in the measured phases "
                  f"(mean {fmt(row['mean_actions_per_match'])} actions), spares taken {row['spares_taken'] or 0} "
                  f"of {row['spares']}, idle slot-s {row['idle_slot_s']}"
                  + (f"; FastAPI beside {fmt(row['fastapi_beside'].get('actions_per_server_cpu_s'))} per server CPU-s "
                     f"(drift {fmt(row['fastapi_beside'].get('drift'), '.2f')}x): "
                     f"{fmt(fastapi_ratio(row, {}), '.2f')}x" if row.get("fastapi_beside") else "")
                  + (f", POOL RAN DRY ({row['pool_dry']}, {row['idle_slots_at_end']} slots idle at the end)"
                     if row["pool_dry"] else "")), flush=True)
    except Exception as exc:  # noqa: BLE001
        rows.extend({"game": g, "mode": mode, "error": repr(exc), "loadavg_before": os.getloadavg()}
                    for g in games if g not in {r["game"] for r in rows})
    finally:
        if server is not None:
            server.stop()
        if prod is not None:
            prod.drop()
    return rows


def fill_memory(row: dict[str, Any], mem: dict[str, Any] | None, error: str | None = None) -> None:
    """Put ``bench_memory.py``'s row ``mem`` (or the ``error`` that stopped it) into the matrix's row
    for the same game and mode: ``kb_per_idle_socket`` and ``kb_per_live_match`` (KB of server RSS;
    None without a measurement, so the targets show "no value") and the whole row under ``memory``."""
    if mem is not None:
        row["memory"] = mem
        row["kb_per_idle_socket"], row["kb_per_live_match"] = mem["kb_per_idle_socket"], mem["kb_per_live_match"]
    else:
        row["memory"] = {"error": error} if error else None
        row["kb_per_idle_socket"] = row["kb_per_live_match"] = None


def add_memory(row: dict[str, Any], args: argparse.Namespace, tmp: Path) -> None:
    """``bench_memory.py``'s measurement (:func:`bench_memory.run_one`, the ``--memory-*`` options) for
    ``row``'s game and mode on a fresh server, into ``row`` (:func:`fill_memory`). Call it once the
    mode's throughput server is stopped. A failure is kept in the row and printed, not raised."""
    game, mode = row["game"], row["mode"]
    work = tmp / "memory"
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        mem = bench_memory.run_one(game, mode, bench_memory.options(args, "memory-"), work)
    except Exception as exc:  # noqa: BLE001 - one failed cell must not lose the others
        fill_memory(row, None, repr(exc))
        print(f"bannerfall {game} {mode} memory: failed: {exc!r}"[:3000], flush=True)
        return
    mem["wall_s"] = round(time.monotonic() - t0, 1)
    fill_memory(row, mem)
    print(f"bannerfall {game} {mode} memory (bench_memory.py, fresh server, {mem['wall_s']} s"
          + (", rough: few matches" if args.memory_matches < MEMORY_MATCHES_DEFINED else "") + "): ", end="")
    bench_memory.show(mem)


def measure_modes(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    """Every mode of ``--modes`` in turn: its throughput run (:func:`run_mode`, all games on one
    server, stopped at the end), then the memory measurement of each game that ran
    (:func:`add_memory`; skipped with ``--memory-matches 0``)."""
    games = [g for g in args.games.split(",") if g]
    rows: list[dict[str, Any]] = []
    for transport in [t for t in args.transports.split(",") if t]:
        saved = os.environ.get("BANNERFALL_SOCKET_TRANSPORT")
        if transport != "auto":  # every server this cell starts (throughput and memory) inherits it
            os.environ["BANNERFALL_SOCKET_TRANSPORT"] = transport
        try:
            for mode in [m for m in args.modes.split(",") if m]:
                mode_rows = run_mode(mode, games, args, tmp / transport)
                for row in mode_rows:
                    row["transport"] = transport
                    if "error" in row:
                        continue
                    if args.memory_matches > 0:
                        add_memory(row, args, tmp / transport)
                    else:
                        fill_memory(row, None)
                rows.extend(mode_rows)
        finally:
            if saved is None:
                os.environ.pop("BANNERFALL_SOCKET_TRANSPORT", None)
            else:
                os.environ["BANNERFALL_SOCKET_TRANSPORT"] = saved
    return rows


def memory_note(args: argparse.Namespace) -> str:
    """The line under the table saying where its memory columns come from."""
    if args.memory_matches <= 0:
        return ("KB per idle socket and per live match: not measured (--memory-matches 0); the RSS growth of "
                "the throughput set-up is in the JSON (kb_per_*_setup).")
    return (f"KB per idle socket and per live match: bench_memory.py after each mode's phases, a fresh server per "
            f"game and mode, {args.memory_warm_matches} warm-up matches played {args.memory_warm_seconds:g} s, then "
            f"RSS growth over {args.memory_matches} more matches and their {4 * args.memory_matches} sockets"
            + (f" (ROUGH figures, biased high: what grows once and stays, such as SQLite's page caches and the "
               f"allocator's first arenas, is spread over few matches; the defined measurement is "
               f"{MEMORY_MATCHES_DEFINED} matches)" if args.memory_matches < MEMORY_MATCHES_DEFINED else "") + ".")


def create(server: bs.Server, game: str, count: int, args: argparse.Namespace, prefix: str
           ) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """``count`` matches of ``game`` over REST (:func:`bench_server.create_matches`), with the server's
    CPU seconds and the wall seconds it took."""
    if not count:
        return [], {"count": 0, "cpu_s": 0.0, "wall_s": 0.0}
    cpu0, t0 = bs.proc_cpu_seconds(server.pid), time.monotonic()
    specs = asyncio.run(bs.create_matches(server.url, count, 4, GAME_OPTIONS[game], game=game,
                                          concurrency=args.create_concurrency, prefix=prefix))
    return specs, {"count": count, "cpu_s": bs.proc_cpu_seconds(server.pid) - cpu0, "wall_s": time.monotonic() - t0}


def measure_game(server: bs.Server, game: str, mode: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    gens: list[bs.Generator] = []
    try:
        kind = "bots" if game != "provinces" else ("node" if (bs.LOADGEN_DIR / "node_modules" / "ws").is_dir() else "python")
        n_spares = spares_for(game, args)
        if n_spares and kind != "bots":
            raise ValueError(f"--spares for {game}: its generator ({kind}) plays no spares (its matches do not end)")
        t0 = time.monotonic()
        rss_start = bs.proc_rss_kb(server.pid)
        specs, made = create(server, game, args.matches, args, "bench")
        rss_matches = bs.proc_rss_kb(server.pid)  # before the spares: KB per live match stays the playing ones'
        spares, made_spares = create(server, game, n_spares, args, "spare")
        rss_spares = bs.proc_rss_kb(server.pid)
        t_created = time.monotonic()
        print(f"  {game} {mode}: {len(specs)} matches + {len(spares)} spares made in {t_created - t0:.1f} s, "
              f"server CPU {made['cpu_s'] + made_spares['cpu_s']:.1f} s", flush=True)
        cfg = {"url": server.url.replace("http://", "ws://"), "matches": specs, "spares": spares, "game": game,
               "deflate": False, "parse": "actor", "dealing_per_turn": 1, "connect_concurrency": 32, "bot_seed": 1,
               "full_states": args.full_states}
        n_gens = max(1, min(args.bot_generators, len(specs))) if kind == "bots" else 1
        for i in range(n_gens):  # each its share of the matches and spares, all on the generator core
            part = {**cfg, "matches": specs[i::n_gens], "spares": spares[i::n_gens], "bot_seed": 1 + i}
            gens.append(bs.Generator(kind, part, args.generator_core, work, hash(game) % 1000 + i))
        readies = [g.read_event("ready") for g in gens]
        ready = {**readies[0], "sockets": sum(r["sockets"] for r in readies)}
        time.sleep(0.3)
        rss_sockets = bs.proc_rss_kb(server.pid)
        t_connected = time.monotonic()
        phases: dict[str, Any] = {}
        beside: dict[str, Any] = {}
        if args.ref_beside:  # the FastAPI room right before and right after this cell's closed loop
            beside["before"] = run_reference("fastapi", args, work)
        if args.warmup:
            phases["warmup"] = bs.run_phase(server, gens, {"cmd": "run", "mode": "closed", "seconds": args.warmup})
        phases["closed"] = bs.run_phase(server, gens, {"cmd": "run", "mode": "closed", "seconds": args.seconds})
        if args.ref_beside:
            beside["after"] = run_reference("fastapi", args, work)
        rate = 0.5 * phases["closed"]["acks_per_s"]
        if args.open_seconds and rate > 0:
            phases["open"] = bs.run_phase(server, gens, {"cmd": "run", "mode": "open", "seconds": args.open_seconds,
                                                         "rate": rate})
        profile = (profile_cell(server, gens, game, mode, args, work, phases["closed"]["acks_per_s"])
                   if args.profile else None)
        c = phases["closed"]
        sockets = ready["sockets"]
        measured = [p for k, p in phases.items() if k != "warmup"]
        completed = sum(p.get("matches_ended", 0) for p in measured)
        completed_actions = sum(p.get("ended_actions") or 0 for p in measured)
        last = list(phases.values())[-1]
        created = made["count"] + made_spares["count"]
        lags = [p["loop_lag"]["max_ms"] for p in measured if p.get("loop_lag")]
        gc_max = max((g["max_ms"] for p in measured for g in (p.get("gc") or {}).values()), default=None)
        gc_total = sum(g["total_ms"] for p in measured for g in (p.get("gc") or {}).values())
        return {
            "game": game, "mode": mode, "generator": kind, "matches": len(specs), "sockets": sockets,
            "actions_per_s": c["acks_per_s"], "server_cpu_pct": c["server_cpu_pct"],
            "generator_cpu_pct": c["generator_cpu_pct"],
            "actions_per_server_cpu_s": c["acked_per_server_cpu_s"],
            # each action reaches the 4 sockets of its own match
            "bytes_per_socket_per_action": c["bytes_in_window"] / 4 / max(1, c["acked_in_window"]),
            "median_state_bytes": c.get("median_state_bytes"), "mean_state_bytes": c.get("mean_state_bytes"),
            # the median state/delta message: what one socket gets for one action it hears of
            "median_update_bytes": c.get("median_update_bytes"), "mean_delta_bytes": c.get("mean_delta_bytes"),
            "messages_in_window": c.get("messages_in_window"), "resumes": c.get("resumes"),
            "measured_seconds": sum(p["seconds"] for p in measured),
            "p99_ms_closed": c["latency"]["p99_ms"],
            "open_rate": rate if "open" in phases else None,
            "fastapi_beside": bracket(beside["before"], beside["after"]) if beside else None,
            "p99_ms_half_load": phases["open"]["latency"]["p99_ms"] if "open" in phases else None,
            "p99_ms_half_load_from_schedule": (phases["open"].get("sched_latency") or {}).get("p99_ms") if "open" in phases else None,
            # the server's own histogram at half load (bannerfall_action_durable_seconds: record queued ->
            # its delta and ack sent; bucket upper bounds): the server's part of the p99 above
            "server_durable_half_load": phases["open"].get("server_durable") if "open" in phases else None,
            "loop_lag_max_ms": max(lags) if lags else None,
            # the generators' own loop lag at half load: how much of p99_ms_half_load is theirs
            "generators": len(gens),
            "loadgen_loop_lag_half_load": phases["open"].get("loadgen_loop_lag") if "open" in phases else None,
            "loop_half_seconds_over_20ms": sum(p["loop_lag"]["half_seconds_over_20ms"] for p in measured if p.get("loop_lag")),
            "gc_max_pause_ms": gc_max, "gc_total_ms": round(gc_total, 1),
            # the memory columns: bench_memory.py's measurement, after the mode's phases (add_memory)
            "kb_per_live_match": None, "kb_per_idle_socket": None,
            # RSS growth from making the M matches played first ÷ M (warm-up included), read before the
            # spares are made; from connecting their sockets ÷ sockets, after the spares
            "kb_per_live_match_setup": (rss_matches - rss_start) / max(1, len(specs)),
            "kb_per_spare_match": (rss_spares - rss_matches) / len(spares) if spares else None,
            "kb_per_idle_socket_setup": (rss_sockets - rss_spares) / max(1, sockets),
            "setup_cpu_ms_per_match": 1000 * (made["cpu_s"] + made_spares["cpu_s"]) / max(1, created),
            "setup_wall_ms_per_match": 1000 * (made["wall_s"] + made_spares["wall_s"]) / max(1, created),
            "setup_create": {"matches": made, "spares": made_spares, "concurrency": args.create_concurrency},
            "errors": {k: v for p in measured for k, v in (p.get("errors") or {}).items()},
            "matches_ended": sum(p.get("matches_ended", 0) for p in phases.values()),
            "spares": len(spares), "spares_taken": last.get("spares_taken_total"), "spares_left": last.get("spares_left"),
            "matches_completed_measured": completed,
            "mean_actions_per_match": completed_actions / completed if completed else None,
            "idle_slot_s": {k: p.get("idle_slot_s") for k, p in phases.items()},
            "idle_slots_at_end": last.get("idle_slots"),
            "pool_dry": next((f"{k} at {p['pool_dry_at_s']} s" for k, p in phases.items()
                              if p.get("pool_dry_at_s") is not None), None),
            "refill_ms_mean": c.get("refill_ms_mean"),
            "refill_failed": last.get("refill_failed_total"),
            "actions_by_type": c.get("actions_by_type"),
            "loadavg_before": c["loadavg_before"], "others_on_server_core_pct": c.get("others_on_server_core_pct"),
            "commits_per_s": c["commits_per_s"], "mean_batch": c["mean_batch"],
            "setup_s": {"matches": round(made["wall_s"], 1), "spares": round(made_spares["wall_s"], 1),
                        "sockets": round(t_connected - t_created, 1)},
            "phases": phases,
            "profile": profile,
        }
    finally:
        for g in gens:
            g.quit()


def profile_cell(server: bs.Server, gens: list[bs.Generator], game: str, mode: str,
                 args: argparse.Namespace, work: Path, closed_rate: float) -> dict[str, Any] | None:
    """``--profile S``: one more closed-loop phase of S seconds with ``py-spy record`` on the server
    (not counted in the row's figures); prints the top frames and returns the summary (or None)."""
    out = Path(tempfile.gettempdir()) / f"bannerfall-{game}-{mode}.speedscope.json"
    spy = bs.start_py_spy(server.pid, args.profile, out, rate=args.profile_rate, native=args.profile_native,
                          idle=args.profile_idle)
    cmd: dict[str, Any] = {"cmd": "run", "mode": args.profile_phase, "seconds": args.profile + 2}
    if args.profile_phase == "open":  # at the open phase's rate: half the closed loop's
        cmd["rate"] = 0.5 * closed_rate
    bs.run_phase(server, gens, cmd)
    spy.wait(60)
    if not out.exists():
        print(f"  py-spy wrote nothing: {spy.stderr.read() if spy.stderr else ''}", flush=True)
        return None
    prof = bs.summarize_speedscope(out)
    bs.print_profile(out, prof, self_rows=25, indent="  ")
    return {"file": str(out), **prof}


# ---------------------------------------------------------------------------- report
def fmt(v: Any, spec: str = ".0f") -> str:
    return "–" if v is None else format(v, spec)


def bracket(first: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """A reference room measured before and after Bannerfall's cells: the first run's fields, with
    ``actions_per_server_cpu_s`` the mean of both runs, ``runs`` both runs' figure and ``drift`` the
    second over the first (how much the machine's speed moved while Bannerfall was measured)."""
    a, b = first.get("actions_per_server_cpu_s"), last.get("actions_per_server_cpu_s")
    if not a or not b:
        return first
    return {**first, "actions_per_server_cpu_s": (a + b) / 2, "runs": [a, b], "drift": b / a,
            "second": last}


def fastapi_ratio(r: dict[str, Any], refs: dict[str, dict[str, Any]], ref: str = "fastapi") -> float | None:
    """``r``'s actions per server CPU-s over the reference room's: for FastAPI, the room measured beside
    ``r``'s own closed loop (``--ref-beside``) when there is one, else the matrix-wide reference."""
    v = (r.get("fastapi_beside") if ref == "fastapi" else None) or refs.get(ref) or {}
    if v.get("actions_per_server_cpu_s") and r.get("actions_per_server_cpu_s"):
        return float(r["actions_per_server_cpu_s"]) / float(v["actions_per_server_cpu_s"])
    return None


def targets(refs: dict[str, dict[str, Any]], rows: list[dict[str, Any]],
            spectators: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every target of :data:`TARGETS` per measured game and mode: ``{"game", "mode", "target",
    "value", "limit", "pass"}`` (``pass`` None when there is no value to judge), then the spectator
    ratio (issue 11 item 2: 1,000 spectators ≤ 2× the server CPU per action of 10)."""
    out: list[dict[str, Any]] = []
    for r in rows:
        if "error" in r:
            continue
        for key, label, limit in TARGETS:
            value: float | None
            if key == "cpu_ratio":
                value, limit = fastapi_ratio(r, refs), (1.0 if r["mode"] == "embedded" else 0.8)
                ok = None if value is None else value >= limit
            else:
                if key == "bytes" and r["game"] != "provinces":
                    continue
                value = {"bytes": r.get("median_update_bytes"), "p99": r.get("p99_ms_half_load"),
                         "lag": r.get("loop_lag_max_ms"), "socket": r.get("kb_per_idle_socket"),
                         "match": r.get("kb_per_live_match")}[key]
                ok = None if value is None else value <= (limit or 0)
            check = {"game": r["game"], "mode": r["mode"] + _transport(r), "target": label, "key": key, "value": value,
                     "limit": limit, "pass": ok}
            if key in ("socket", "match") and value is not None:
                check["rough"] = (r.get("memory") or {}).get("matches", 0) < MEMORY_MATCHES_DEFINED
            out.append(check)
    if spectators and spectators.get("rows"):
        a_b = spectators.get("ratio_of") or ["?", "?"]
        out.append({"game": "provinces", "mode": "embedded", "key": "spectators",
                    "target": f"server CPU per action, {a_b[1]} spectators ≤ 2× {a_b[0]} "
                              f"(SPECTATOR_PATCH_SECONDS {spectators.get('patch_seconds')})",
                    "value": spectators.get("ratio"), "limit": spectators.get("target"),
                    "pass": None if spectators.get("ratio") is None else spectators.get("pass")})
    return out


def targets_table(checks: list[dict[str, Any]]) -> str:
    lines = ["| target | game, mode | measured | limit | result |", "|---|---|---|---|---|"]
    for c in checks:
        v = c["value"]
        shown = "–" if v is None else (f"{v:.2f}×" if c["key"] in ("cpu_ratio", "spectators") else f"{v:,.1f}")
        verdict = "no value" if c["pass"] is None else ("PASS" if c["pass"] else "**FAIL**")
        if c.get("rough"):
            verdict += " (rough: few matches)"
        lines.append(f"| {c['target']} | {c['game']} {c['mode']} | {shown} | {'–' if c['limit'] is None else format(c['limit'], 'g')} | {verdict} |")
    return "\n".join(lines)


def spectators_table(res: dict[str, Any] | None) -> str:
    if not res or not res.get("rows"):
        return ""
    lines = ["| spectators on one Provinces match | actions/s | server CPU % | server CPU ms per action | "
             "bytes per spectator per action | messages per spectator per s | seat bytes/socket/action | "
             "generator CPU % | load avg |", "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        if "error" in r:
            lines.append(f"| {r['spectators']} | failed: {r['error'][:80]} |" + " |" * 7)
            continue
        lines.append(f"| {r['spectators']} | {fmt(r['actions_per_s'])} | {fmt(r['server_cpu_pct'])} | "
                     f"{fmt(r['server_cpu_ms_per_action'], '.2f')} | {fmt(r['spectator_bytes_per_spectator_per_action'])} | "
                     f"{fmt(r['spectator_messages_per_spectator_per_s'], '.1f')} | {fmt(r['seat_bytes_per_socket_per_action'])} | "
                     f"{fmt(r['generator_cpu_pct'])} | {r['loadavg_before'][0]:.1f} |")
    return "\n".join(lines) + "\n\n" + bench_spectators.summary_line(res)


def _transport(r: dict[str, Any]) -> str:
    """" (asgi)" for a row measured with a transport asked for by name, "" for the server's default."""
    t = r.get("transport", "auto")
    return "" if t == "auto" else f" ({t})"


def table(refs: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    lines = [("| server | actions/s | actions per server CPU-s | × FastAPI | × Colyseus | set-up CPU ms per match "
              "| bytes/socket/action (mean; median state/delta message) "
              "| p99 ack at half load ms (server's p99 after the rules) | loop worst lag ms | GC worst pause ms | KB per idle socket | KB per live match | load avg |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in refs.items():
        if "error" in r:
            lines.append(f"| {name} room | failed: {r['error'][:80]} |" + " |" * 11)
            continue
        runs = r.get("runs")
        cpu_s = fmt(r.get("actions_per_server_cpu_s")) + (
            f" (mean of {fmt(runs[0])} before, {fmt(runs[1])} after)" if runs else "")
        lines.append(f"| {name} room ({r.get('connections')} sockets) | {fmt(r.get('actions_per_s'))} | "
                     f"{cpu_s} | | | – | {fmt(r.get('view_bytes_avg'))} | "
                     f"(p99 at max {fmt(r.get('p99_ms'), '.1f')}) | – | – | {fmt(r.get('kb_per_socket'), '.1f')} | – | "
                     f"{r['loadavg_before'][0]:.1f} |")
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['game']} {r['mode']}{_transport(r)} | failed: {r['error'][:80]} |" + " |" * 11)
            continue
        ratio = {k: fastapi_ratio(r, refs, k) for k in refs}
        if "fastapi" not in ratio and r.get("fastapi_beside"):
            ratio["fastapi"] = fastapi_ratio(r, refs)
        lines.append(
            f"| Bannerfall {r['game']} {r['mode']}{_transport(r)} ({r['sockets']} sockets) | {fmt(r['actions_per_s'])} | "
            f"{fmt(r['actions_per_server_cpu_s'])} | {fmt(ratio.get('fastapi'), '.2f')} | {fmt(ratio.get('colyseus'), '.2f')} | "
            f"{fmt(r.get('setup_cpu_ms_per_match'), '.1f')} | {fmt(r['bytes_per_socket_per_action'])}; {fmt(r.get('median_update_bytes', r.get('median_state_bytes')))} | {fmt(r['p99_ms_half_load'], '.1f')} ({fmt((r.get('server_durable_half_load') or {}).get('p99_ms'), '.1f')}) | "
            f"{fmt(r['loop_lag_max_ms'], '.1f')} | {fmt(r['gc_max_pause_ms'], '.1f')} | {fmt(r['kb_per_idle_socket'], '.1f')} | "
            f"{fmt(r['kb_per_live_match'], '.1f')} | {r['loadavg_before'][0]:.1f} |")
    return "\n".join(lines)


def pool_state(r: dict[str, Any]) -> str:
    """How the pool of spares did: lasted, ran dry (when; slots idle), or matches ended that a
    generator without spares (loadgen.mjs, loadgen.py) left unreplaced."""
    if r.get("pool_dry"):
        return f"**ran dry** ({r['pool_dry']}; {r.get('idle_slots_at_end')} slots idle at the end)"
    if r.get("refill_failed"):
        return f"**{r['refill_failed']} spares failed to open** (slots idle)"
    if r.get("spares_taken") is None and r.get("matches_ended"):
        return f"**{r['matches_ended']} matches ended, not replaced** ({r['generator']} plays no spares)"
    return "lasted" if r.get("spares") else "none needed (no match ended)" if not r.get("matches_ended") else "–"


def slots_table(rows: list[dict[str, Any]]) -> str:
    """Per game and mode: the match slots kept playing (M), the spares made and taken, the matches
    completed in the measured phases and their mean length, and the slots left idle for want of a
    spare (slot-seconds per phase; never silent)."""
    lines = ["| game, mode | match slots | spares made / taken | matches completed (measured phases) | "
             "mean actions per completed match | slot-s idle (warm-up / closed / open) | pool | "
             "set-up CPU ms per match (wall ms) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            continue
        idle = r.get("idle_slot_s") or {}
        lines.append(f"| {r['game']} {r['mode']}{_transport(r)} | {r['matches']} | {r.get('spares', 0)} / {r.get('spares_taken') or 0} | "
                     f"{r.get('matches_completed_measured', 0)} | {fmt(r.get('mean_actions_per_match'))} | "
                     + " / ".join(fmt(idle.get(k), ".1f") for k in ("warmup", "closed", "open")) + " | "
                     + pool_state(r) + " | "
                     f"{fmt(r.get('setup_cpu_ms_per_match'), '.1f')} ({fmt(r.get('setup_wall_ms_per_match'), '.1f')}) |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``argv``, default ``sys.argv[1:]``), with ``--quick``'s sizes applied."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--games", default="provinces,conquest,warrior")
    ap.add_argument("--modes", default="embedded,production")
    ap.add_argument("--transports", default="auto",
                    help="socket transports to measure, each with every game and mode (BANNERFALL_SOCKET_TRANSPORT: "
                         "auto, lean, asgi; e.g. lean,asgi)")
    ap.add_argument("--references", default="fastapi,colyseus", help="reference rooms to run ('' for none)")
    ap.add_argument("--matches", type=int, default=50, help="Bannerfall matches of 4 seats per game and mode")
    ap.add_argument("--spares", default="auto",
                    help="spare matches per game, made over REST before the phases; an ended match's slot takes "
                         "the next one: N (Conquest and Warrior), game=N,... or auto (Provinces 0; Conquest and Warrior: "
                         "enough for the phases at the expected rate, see MATCH_ACTIONS)")
    ap.add_argument("--create-concurrency", type=int, default=16,
                    help="REST requests in flight while making matches (32 and 64 were slower: SQLite lock waits)")
    ap.add_argument("--bot-generators", type=int, default=4,
                    help="Conquest and Warrior: bot generator processes (Python), each with its share of the matches, "
                         "all on the generator core; more processes keep one bot's decision from delaying other "
                         "matches' acks (their own loop lag is reported: loadgen_loop_lag)")
    ap.add_argument("--stall-dump-ms", type=float, default=0.0,
                    help="write every thread's stack whenever the server's event loop stalls longer than this "
                         "(faulthandler's watchdog, which needs no GIL: collections and long C calls too; "
                         "at least 20); 0: off")
    ap.add_argument("--slow-callback-ms", type=float, default=0.0,
                    help="asyncio debug mode on the server: log every callback longer than this to "
                         "--stall-dump-dir/slow-callbacks-MODE.txt (slows the server: diagnosis only)")
    ap.add_argument("--stall-dump-dir", type=Path, default=Path("/tmp/bannerfall-stalls"),
                    help="where --stall-dump-ms writes stalls-<mode>.txt (appended)")
    ap.add_argument("--rooms", type=int, default=50, help="reference rooms of 4 clients")
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--seconds", type=float, default=20.0, help="closed-loop measurement")
    ap.add_argument("--open-seconds", type=float, default=20.0, help="open loop at half the closed-loop rate")
    ap.add_argument("--ref-again", action=argparse.BooleanOptionalAction, default=True,
                    help="run every reference room again after Bannerfall's cells; the ratios use the mean of "
                         "the two runs (this machine's speed drifts by 10-30 %% within minutes: the two runs "
                         "bracket the cells and show the drift)")
    ap.add_argument("--ref-beside", action=argparse.BooleanOptionalAction, default=True,
                    help="run the FastAPI room right before and right after each Bannerfall cell's closed loop "
                         "(while its server idles) and take that cell's ratio to FastAPI against the mean of the "
                         "two: the fairest ratio on a machine whose speed drifts (~1 min apart instead of up to "
                         "20); the matrix-wide references still give the Colyseus ratio")
    ap.add_argument("--ref-seconds", type=float, default=20.0)
    ap.add_argument("--ref-warmup", type=float, default=5.0)
    ap.add_argument("--quick", action="store_true", help="tiny runs of the whole matrix (~2 min; memory: 20 matches, rough)")
    ap.add_argument("--perf-dir", type=Path, default=ROOT.parent / "shared" / "perf")
    ap.add_argument("--perf-venv", default=os.environ.get("PERF_VENV", "/tmp/perf-venv"))
    ap.add_argument("--perf-node-dir", default=os.environ.get("PERF_NODE_DIR", "/tmp/perf-node"))
    ap.add_argument("--database-url", default="postgresql://root@127.0.0.1:5432",
                    help="Postgres server for production mode (a fresh database is made and dropped)")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0",
                    help="Redis for production mode (a fresh key prefix, its keys deleted afterwards)")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--generator-core", type=int, default=1)
    ap.add_argument("--profile", type=float, default=0.0, metavar="SECONDS",
                    help="after each cell's phases, py-spy the server for this long under closed-loop load")
    ap.add_argument("--profile-native", action="store_true", help="py-spy --native (C frames too)")
    ap.add_argument("--profile-phase", choices=("closed", "open"), default="closed",
                    help="the load under py-spy: closed loop, or open loop at half the closed loop's rate")
    ap.add_argument("--profile-rate", type=int, default=100, help="py-spy samples per second")
    ap.add_argument("--profile-idle", action="store_true",
                    help="py-spy --idle: idle samples too (in order, so runs of busy samples show the loop's stalls)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the work directory (server logs, GC and lag logs)")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--md-out", type=Path, default=None, help="write the table as markdown here too")
    bench_spectators.add_arguments(ap)
    ap.add_argument("--spectator-seconds", type=float, default=20.0, help="closed loop per spectator count")
    ap.add_argument("--spectator-matches", type=int, default=20,
                    help="live Provinces matches on the spectator runs' server (one is played)")
    bench_memory.add_arguments(ap.add_argument_group(
        "memory columns", "bench_memory.py's measurement, per game and mode after the mode's throughput phases, "
        "on a fresh server (--memory-matches 0: skipped)"), "memory-")
    args = ap.parse_args(argv)
    if 0 < args.stall_dump_ms < 20:
        ap.error("--stall-dump-ms below 20 dumps at nearly every tick (5 ms made the server refuse sockets)")
    if args.quick:
        args.matches, args.rooms = 4, 10
        args.warmup, args.seconds, args.open_seconds = 0.0, 1.5, 1.0
        args.ref_seconds, args.ref_warmup = 1.5, 0.5
        args.spectator_seconds, args.spectator_matches = 2.0, 4
        for name, value in QUICK_MEMORY.items():  # the memory options not given
            if getattr(args, name) == ap.get_default(name):
                setattr(args, name, value)
    return args


def main() -> None:
    args = parse_args()
    bs.SERVER_CORE = args.server_core
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 65536)), hard))
    t_start = time.monotonic()
    machine = bs.machine_info()
    print(f"machine: {machine['nproc']} cores, {machine['cpu_model']}; {machine['uptime']}")
    print(f"code: {machine['git_head']}" + (f" + uncommitted {machine['app_uncommitted']}" if machine["app_uncommitted"] else "")
          + f"; hot paths: {machine['hot_paths']}")
    tmp = Path(tempfile.mkdtemp(prefix="bannerfall-matrix-"))
    refs: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    spectators: dict[str, Any] | None = None
    try:
        for kind in [k for k in args.references.split(",") if k]:
            try:
                refs[kind] = run_reference(kind, args, tmp)
            except Exception as exc:  # noqa: BLE001 - one failed cell must not lose the others
                refs[kind] = {"error": repr(exc), "loadavg_before": os.getloadavg()}
            r = refs[kind]
            print(f"{kind} room: {fmt(r.get('actions_per_s'))} actions/s, {fmt(r.get('actions_per_server_cpu_s'))} "
                  f"per server CPU-s, generator CPU {fmt((r.get('loadgen_cpu') or 0) * 100)}% {r.get('error', '')}")
        rows = measure_modes(args, tmp)
        if args.ref_again:
            for kind in [k for k in refs if "error" not in refs[k]]:
                try:
                    again = run_reference(kind, args, tmp)
                except Exception as exc:  # noqa: BLE001 - the first run stands alone then
                    print(f"{kind} room, second run failed: {exc!r}")
                    continue
                refs[kind] = bracket(refs[kind], again)
                r = refs[kind]
                print(f"{kind} room again: {fmt(again.get('actions_per_server_cpu_s'))} per server CPU-s "
                      f"(drift {fmt(r.get('drift'), '.2f')}×); the ratios use the mean, "
                      f"{fmt(r.get('actions_per_server_cpu_s'))}")
        if args.spectators.strip():
            sargs = argparse.Namespace(spectators=args.spectators, patch_seconds=args.patch_seconds,
                                       full_states=args.full_states, matches=args.spectator_matches,
                                       warmup=0.0 if args.quick else 3.0, seconds=args.spectator_seconds,
                                       generator="node", database_url=None, server_core=args.server_core,
                                       generator_core=args.generator_core, wait_quiet=0.0)
            spectators = bench_spectators.run_all(sargs, tmp / "spectators")
    finally:
        if args.keep_tmp:
            print(f"kept {tmp} (server logs, GC and lag logs)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    checks = targets(refs, rows, spectators)
    md = table(refs, rows)
    if rows:
        md += "\n\n" + memory_note(args) + "\n\n" + slots_table(rows)
    if spectators:
        md += "\n\n" + spectators_table(spectators)
    md += "\n\nTargets (issue 11 items 2 and 5; ratios within this run):\n\n" + targets_table(checks)
    print()
    print(md)
    print(f"\nload average at the end {os.getloadavg()}; whole run {time.monotonic() - t_start:.0f} s")
    if args.md_out:
        args.md_out.write_text(md + "\n")
    if args.json_out:
        args.json_out.write_text(json.dumps({"machine": machine, "args": {k: str(v) for k, v in vars(args).items()},
                                             "references": refs, "bannerfall": rows, "spectators": spectators,
                                             "targets": checks,
                                             "loadavg_end": os.getloadavg()}, indent=1, default=str))


if __name__ == "__main__":
    main()
