"""Capacity: N live matches of each game at a human pace on one node, beside the FastAPI room (issue 27).

    . .venv/bin/activate && ../shared/perf/setup.sh && (cd bench/loadgen && npm ci)
    python bench/bench_capacity.py --quick                      # smoke test: N=50, 10 s phases
    python bench/bench_capacity.py --matches 1000 --json-out /tmp/capacity.json --md-out /tmp/capacity.md
    python bench/bench_capacity.py --matches 200,1000 --games provinces --modes embedded

For each N of ``--matches`` (default 200,1000,2000,5000), in one invocation:

1. **The FastAPI reference room** of ``../shared/perf`` (``fastapi_room.py`` under uvicorn on core 0,
   its ``loadgen.js`` on core 1) with N rooms of 4 clients, each client acting every
   ``4 / rate-per-match`` seconds (``--think-ms`` of :func:`room_think_ms`), so the room gets the same
   socket count (4N) and the same total rate (N × ``--rate-per-match``) as Bannerfall; the same
   as ``SERVERS=fastapi ROOMS=N THINKS=<ms> DURATION=<s> ../shared/perf/run.sh``. It runs **before**
   Bannerfall's cells and again **after** (``--ref-again``); the ratios use the mean of the two.
2. **Bannerfall**, for each mode (``embedded``: SQLite in a temp dir and in-process backends;
   ``production``: a fresh Postgres database and a fresh Redis key prefix on the machine's servers,
   removed afterwards) one ``bannerfall serve`` on core 0 under ``bench_server.GC_WRAPPER`` (every
   cyclic-GC collection timed, the event loop's worst lag every 0.5 s), and for each game:

   - its spare matches are made over REST first (Conquest and Warrior matches end; an ended match's
     slot takes the next spare, so N stay live: :func:`spares_for`), then the server's RSS is read;
   - N matches are made over REST (``--create-concurrency`` requests in flight, progress printed),
     in two timed stages: registering the 4N players, then lobby + joins + start for each match; the
     server CPU and wall time of each stage ÷ N is **the cost of making one match**;
   - the load generators on core 1 open all 4N seat sockets (deltas) and a few spectator sockets
     (``--spectators-per-match`` on ``--spectator-matches`` of the matches) and play in **think mode**
     (``bench/loadgen/genbase.py`` ``ThinkPacer``): each seat answers its own prompt, as its own socket
     shows it, after a seeded think time (``--think-dist``), the mean set so that the total rate is
     N × ``--rate-per-match`` actions/s. Provinces: ``loadgen.mjs``; Conquest and Warrior: ``botgen.py``
     (the games' random bots from each socket's document: Conquest's simultaneous phases, several
     seats thinking at once; Warrior's decisions inside attacks), in ``--bot-generators`` processes;
   - a warm-up of ``--warmup`` s, then the server's RSS (all matches connected and playing): the
     growth since before the N matches were made ÷ N is the **RSS per live match, sockets included**;
   - the measured phase (``--seconds``, default 60): action→ack from the client (p50, p99, p99.9, max
     over every sample of every generator), the server's own ``bannerfall_action_durable_seconds``
     histogram (bucket upper bounds), the loop's worst lag, the collector's pauses (count, max,
     total), server CPU (cores), the generators' own loop lag (so their tail is not taken for the
     server's: :func:`generator_verdict`), idle match slots.

Then a table per N (markdown), the targets of issue 27 item 2 with PASS/FAIL (:func:`targets`, at
1,000 and 2,000 matches; 5,000 is the moonshot; other N are shown without a verdict), and the JSON
(``--json-out``). Results and method: ``docs/benchmarks/capacity.md``.

Limits checked before each N (:func:`preflight`): the open-files limit (raised to the hard limit for
the children; an N whose server would need more files than the hard limit allows is skipped with the
reason) and the ephemeral ports (more seat sockets than one source address's ports to one server
port: the generators use several source addresses 127.0.0.x, :func:`source_addresses`, which the
server's per-address rate limits are told to exempt).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_matrix as bm
import bench_server as bs

ROOT = bs.ROOT
CLK_TCK = os.sysconf("SC_CLK_TCK")
SEATS = 4

#: issue 27 item 2, judged at these N; :data:`MOONSHOT_N` is judged as the moonshot
TARGET_NS = (1000, 2000)
MOONSHOT_N = 5000
#: (key, label, limit)
TARGETS = (
    ("p99", "p99 ack ≤ 2× the FastAPI room's p99", 2.0),
    ("max", "max ack ≤ 10× the FastAPI room's p99", 10.0),
    ("cpu", "server CPU ≤ 1.5× the FastAPI room's", 1.5),
    ("rss", "≤ 150 KB RSS per live match (its 4 sockets included)", 150.0),
    ("make", "making a match ≤ 10 ms server CPU (lobby + joins + start)", 10.0),
)
#: matches made one at a time before the N (the wall time of one match alone)
LONE_MATCHES = 3
#: the shortest of 20 seeded matches of the random bots (bench_matrix.MATCH_ACTIONS has their mean)
SHORTEST_MATCH: dict[str, float] = {"conquest": 117.0, "warrior": 87.0}
#: spares = margin × the matches expected to end in the warm-up and the measured phase
SPARES_MARGIN = 1.5
#: sockets one spectating player holds at most (the server's MAX_SOCKETS_PER_PLAYER default)
SOCKETS_PER_WATCHER = 8
#: open files a server needs besides its sockets (database, logs, listening socket, Python's own)
FD_MARGIN = 256
#: other processes' share of a core (%) over which a measurement is said to be noisy
NOISY_PCT = 10.0
#: a generator loop lag below this cannot explain a tail that matters (its 5 ms ticker's own jitter)
LAG_FLOOR_MS = 10.0
#: share of the ephemeral port range one source address may use towards one server port
PORT_SHARE = 0.8


# ---------------------------------------------------------------------------- pure helpers
def parse_counts(text: str) -> list[int]:
    """``"200,1000"`` -> ``[200, 1000]`` (each > 0)."""
    out = [int(x) for x in text.split(",") if x.strip()]
    if not out or any(n <= 0 for n in out):
        raise ValueError(f"match counts must be positive integers: {text!r}")
    return out


def room_think_ms(rate_per_match: float, seats: int = SEATS) -> float:
    """The reference room's ``--think-ms`` for the same total rate: each of its ``seats`` × N clients
    acts once every ``seats`` × N ÷ (N × rate) = ``seats`` ÷ rate seconds (latency, ~1 ms, aside)."""
    if rate_per_match <= 0:
        raise ValueError("rate per match must be > 0")
    return 1000.0 * seats / rate_per_match


def spectated_matches(n: int, spec: str) -> int:
    """How many of ``n`` matches get spectators: ``"1%"`` (a share, at least one when > 0) or a count."""
    spec = spec.strip()
    if spec.endswith("%"):
        share = float(spec[:-1]) / 100
        return 0 if share <= 0 else min(n, max(1, round(n * share)))
    return min(n, int(spec))


def spares_for(game: str, n: int, rate_per_match: float, seconds: float,
               match_actions: dict[str, float] = bm.MATCH_ACTIONS, margin: float = SPARES_MARGIN) -> int:
    """Spare matches for ``n`` slots of ``game`` over ``seconds`` of play at ``rate_per_match``, all
    slots starting with a fresh match: when even a fast slot (the actions expected per slot + 4
    standard deviations of a Poisson count) stays below the game's shortest match
    (:data:`SHORTEST_MATCH`), no match is expected to end and a small safety pool is made (2 % of
    ``n`` + 2); else ``margin`` × the matches expected to end (actions played ÷ a match's mean
    length). 0 for a game whose matches do not end in a run (Provinces)."""
    if game not in match_actions:
        return 0
    per_slot = rate_per_match * seconds
    if per_slot + 4 * math.sqrt(per_slot) < SHORTEST_MATCH.get(game, 0):
        return math.ceil(0.02 * n) + 2
    return math.ceil(margin * n * per_slot / match_actions[game])


def spectator_tokens(watchers: list[str], match_index: int, per_match: int,
                     per_watcher: int = 0) -> list[str]:
    """The tokens of the ``per_match`` spectators of the ``match_index``-th watched match: spectator
    g (over all watched matches) watches as ``watchers[g // per_watcher]``, so that no player holds
    more sockets than the server allows one player (``MAX_SOCKETS_PER_PLAYER``, 8)."""
    per_watcher = per_watcher or SOCKETS_PER_WATCHER
    first = match_index * per_match
    return [watchers[(first + j) // per_watcher] for j in range(per_match)]


def source_addresses(connections: int, port_range: tuple[int, int], share: float = PORT_SHARE) -> list[str]:
    """Local addresses (127.0.0.1, 127.0.0.2, ...) for ``connections`` sockets to one server port:
    one per ``share`` of the ephemeral ports (``port_range``, inclusive); one address when they fit."""
    usable = max(1, int((port_range[1] - port_range[0] + 1) * share))
    return [f"127.0.0.{i + 1}" for i in range(max(1, math.ceil(connections / usable)))]


def processes_for(sockets: int, fd_limit: int, margin: int = FD_MARGIN) -> int:
    """Generator processes needed so that none holds more than ``fd_limit`` - ``margin`` sockets."""
    return max(1, math.ceil(sockets / max(1, fd_limit - margin)))


def histogram_quantiles(m0: dict[str, float], m1: dict[str, float], name: str) -> dict[str, Any]:
    """p50, p99, p99.9 and max (ms, each the upper bound of its bucket; ``inf`` past the last bound)
    of what the server's Prometheus histogram ``name`` observed between two ``/metrics`` reads, and
    the count. The max is the bucket of the largest observation."""
    prefix = name + '_bucket{le="'
    bounds = sorted((float(k[len(prefix):-2]), k) for k in m1 if k.startswith(prefix))
    cum = [(b, m1[k] - m0.get(k, 0.0)) for b, k in bounds]
    total = cum[-1][1] if cum else 0.0
    out: dict[str, Any] = {"n": int(total)}
    for key, q in (("p50_ms", 0.5), ("p99_ms", 0.99), ("p999_ms", 0.999), ("max_ms", 1.0)):
        found = next((b for b, c in cum if c >= q * total - 1e-9), None) if total else None
        out[key] = None if found is None else found * 1000
    return out


def gc_summary(gc: dict[str, Any] | None) -> dict[str, Any] | None:
    """``bench_server.gc_pauses`` per generation -> count, max and total pause (ms) over all."""
    if gc is None:
        return None
    return {"count": sum(g["count"] for g in gc.values()),
            "max_ms": round(max((g["max_ms"] for g in gc.values()), default=0.0), 1),
            "total_ms": round(sum(g["total_ms"] for g in gc.values()), 1),
            "by_generation": gc}


def generator_verdict(row: dict[str, Any]) -> list[str]:
    """Why the load generators, not the server, may have made a row's tail (empty: they did not):
    their own loop lag reaching half the client's max (and :data:`LAG_FLOOR_MS`) or p99 ack (and
    half that floor), their core busy ≥ 90 %, or the rate reached off the target by more than 10 %."""
    why: list[str] = []
    lag = row.get("loadgen_loop_lag") or {}
    ack = row.get("ack") or {}
    if (lag.get("max_ms") or 0) >= LAG_FLOOR_MS and ack.get("max_ms") and lag["max_ms"] >= 0.5 * ack["max_ms"]:
        why.append(f"generator loop lag max {lag['max_ms']:.0f} ms ≥ half the max ack ({ack['max_ms']:.0f} ms)")
    if ((lag.get("p99_ms") or 0) >= LAG_FLOOR_MS / 2 and ack.get("p99_ms")
            and lag["p99_ms"] >= 0.5 * ack["p99_ms"]):
        why.append(f"generator loop lag p99 {lag['p99_ms']:.1f} ms ≥ half the p99 ack ({ack['p99_ms']:.1f} ms)")
    busy = row.get("generator_core_busy_pct")
    if busy is not None and busy >= 90:
        why.append(f"generator core {busy:.0f}% busy")
    target, rate = row.get("target_rate"), row.get("actions_per_s")
    if target and rate is not None and rate < 0.9 * target:
        why.append(f"rate {rate:.0f}/s below 90% of the target {target:.0f}/s")
    if target and rate is not None and rate > 1.1 * target:
        why.append(f"rate {rate:.0f}/s above 110% of the target {target:.0f}/s (the server got more than asked)")
    return why


def mean_room(first: dict[str, Any] | None, second: dict[str, Any] | None) -> dict[str, Any] | None:
    """The reference room's figures the ratios use: the mean of its run before and after the cells
    (p99, max, server CPU, KB per room), with both runs kept; one run alone when the other failed."""
    runs = [r for r in (first, second) if r and "error" not in r]
    if not runs:
        return None
    out: dict[str, Any] = {"runs": runs}
    for key in ("p50_ms", "p90_ms", "p99_ms", "max_ms", "server_cpu", "actions_per_s", "kb_per_room",
                "loadgen_cpu", "connections"):
        vals = [r[key] for r in runs if r.get(key) is not None]
        out[key] = sum(vals) / len(vals) if vals else None
    return out


def targets(n: int, rows: list[dict[str, Any]], room: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Issue 27 item 2 for every row (game, mode) at ``n`` matches: ``{"n", "game", "mode", "key",
    "target", "value", "limit", "pass", "kind"}`` where ``value`` is the ratio to the room (p99, max,
    cpu) or the figure itself (rss KB, make ms); ``pass`` is None without a value; ``kind`` is
    ``target`` at :data:`TARGET_NS`, ``moonshot`` at :data:`MOONSHOT_N`, else ``info``."""
    kind = "target" if n in TARGET_NS else "moonshot" if n == MOONSHOT_N else "info"
    room_p99 = (room or {}).get("p99_ms")
    room_cpu = (room or {}).get("server_cpu")
    out: list[dict[str, Any]] = []
    for r in rows:
        if "error" in r or "skipped" in r:
            continue
        ack = r.get("ack") or {}
        values = {
            "p99": ack["p99_ms"] / room_p99 if room_p99 and ack.get("p99_ms") is not None else None,
            "max": ack["max_ms"] / room_p99 if room_p99 and ack.get("max_ms") is not None else None,
            "cpu": r["server_cores"] / room_cpu if room_cpu and r.get("server_cores") is not None else None,
            "rss": r.get("kb_per_live_match"),
            "make": (r.get("make_match") or {}).get("cpu_ms_lobby_to_start"),
        }
        for key, label, limit in TARGETS:
            v = values[key]
            out.append({"n": n, "game": r["game"], "mode": r["mode"], "key": key, "target": label, "value": v,
                        "limit": limit, "pass": None if v is None else v <= limit, "kind": kind,
                        "generator_bound": bool(r.get("generator_bound")) and key in ("p99", "max")})
    return out


def fmt(v: Any, spec: str = ".1f") -> str:
    if v is None:
        return "–"
    if isinstance(v, float) and math.isinf(v):
        return "∞"
    return format(v, spec)


def targets_table(checks: list[dict[str, Any]]) -> str:
    if not checks:
        return "Targets: no cell measured."
    lines = ["| N | game, mode | target | measured | limit | result |", "|---|---|---|---|---|---|"]
    for c in checks:
        v = c["value"]
        shown = "–" if v is None else (f"{v:.2f}×" if c["key"] in ("p99", "max", "cpu") else f"{v:,.1f}")
        if c["pass"] is None:
            verdict = "no value"
        elif c["kind"] == "info":
            verdict = "(within)" if c["pass"] else "(over)"
        else:
            verdict = ("PASS" if c["pass"] else "**FAIL**") + (" (moonshot)" if c["kind"] == "moonshot" else "")
        if c.get("generator_bound"):
            verdict += " (generator-bound: see the table)"
        lines.append(f"| {c['n']:,} | {c['game']} {c['mode']} | {c['target']} | {shown} | {c['limit']:g} | {verdict} |")
    return "\n".join(lines)


def run_table(n: int, rows: list[dict[str, Any]], room: dict[str, Any] | None,
              room_runs: list[dict[str, Any] | None]) -> str:
    """The markdown table of one N: the reference room (each run, and the mean the ratios use), then
    one row per game and mode."""
    head = ("| server (N matches / rooms) | sockets | actions/s (target) | ack p50 / p99 / p99.9 / max ms (client) "
            "| server histogram p50 / p99 / p99.9 / max ms | loop worst lag ms | GC pauses: count, max, total ms "
            "| server CPU cores | KB per live match | generator loop lag max / p99 ms | make a match: server CPU ms "
            "(players + lobby..start); wall ms | idle slot-s | load avg |")
    lines = [head, "|" + "---|" * 14]
    for label, r in [("before", room_runs[0] if room_runs else None),
                     ("after", room_runs[1] if len(room_runs) > 1 else None)]:
        if r is None:
            continue
        if "error" in r:
            lines.append(f"| FastAPI room, {label} | failed: {str(r['error'])[:100]} |" + " |" * 12)
            continue
        lines.append(f"| FastAPI room ({n:,} rooms), {label} | {r.get('connections')} | {fmt(r.get('actions_per_s'), '.0f')} "
                     f"({fmt(r.get('target_rate'), '.0f')}) | {fmt(r.get('p50_ms'), '.2f')} / {fmt(r.get('p99_ms'), '.2f')} / – / "
                     f"{fmt(r.get('max_ms'), '.1f')} | – | – | – | {fmt(r.get('server_cpu'), '.3f')} | "
                     f"{fmt(r.get('kb_per_room'), '.1f')} (per room) | – | – | – | {r['loadavg_before'][0]:.2f} |")
    if room:
        lines.append(f"| FastAPI room, mean (the ratios' base) | | {fmt(room.get('actions_per_s'), '.0f')} | "
                     f"{fmt(room.get('p50_ms'), '.2f')} / **{fmt(room.get('p99_ms'), '.2f')}** / – / {fmt(room.get('max_ms'), '.1f')} "
                     f"| | | | **{fmt(room.get('server_cpu'), '.3f')}** | {fmt(room.get('kb_per_room'), '.1f')} | | | | |")
    for r in rows:
        name = f"Bannerfall {r['game']} {r['mode']}"
        if "skipped" in r or "error" in r:
            lines.append(f"| {name} | {'skipped' if 'skipped' in r else 'failed'}: {str(r.get('skipped') or r.get('error'))[:400]} |"
                         + " |" * 12)
            continue
        a, s, g, lag = r["ack"], r["server_durable"], r.get("gc") or {}, r.get("loadgen_loop_lag") or {}
        mk = r.get("make_match") or {}
        gen = " **generator-bound**" if r.get("generator_bound") else ""
        lines.append(
            f"| {name} ({n:,}) | {r['sockets']:,} + {r.get('spectator_sockets', 0)} spectators | "
            f"{fmt(r['actions_per_s'], '.0f')} ({fmt(r['target_rate'], '.0f')}) | "
            f"{fmt(a.get('p50_ms'), '.2f')} / {fmt(a.get('p99_ms'), '.1f')} / {fmt(a.get('p999_ms'), '.1f')} / {fmt(a.get('max_ms'), '.1f')} | "
            f"≤{fmt(s.get('p50_ms'), 'g')} / ≤{fmt(s.get('p99_ms'), 'g')} / ≤{fmt(s.get('p999_ms'), 'g')} / ≤{fmt(s.get('max_ms'), 'g')} | "
            f"{fmt(r.get('loop_lag_max_ms'), '.1f')} | {g.get('count', '–')}, {fmt(g.get('max_ms'), '.1f')}, {fmt(g.get('total_ms'), '.0f')} | "
            f"{fmt(r['server_cores'], '.3f')} | {fmt(r.get('kb_per_live_match'), '.1f')} | "
            f"{fmt(lag.get('max_ms'), '.1f')} / {fmt(lag.get('p99_ms'), '.1f')}{gen} | "
            f"{fmt(mk.get('cpu_ms_players'), '.1f')} + {fmt(mk.get('cpu_ms_lobby_to_start'), '.1f')}; "
            f"{fmt(mk.get('wall_ms_per_match'), '.1f')} at {mk.get('concurrency')} in flight, {fmt(mk.get('wall_ms_one_match_alone'), '.0f')} alone | "
            f"{fmt(r.get('idle_slot_s'), '.1f')} | {r['loadavg_before'][0]:.2f} |")
    notes = [f"- {r['game']} {r['mode']}: generator-bound ({'; '.join(r['generator_bound'])}): its tail may be the "
             f"generators', not the server's" for r in rows if r.get("generator_bound")]
    notes += [f"- {r['game']} {r['mode']}: the pool of spares ran dry at {r['pool_dry_at_s']} s "
              f"({r.get('idle_slots_at_end')} slots idle at the end)" for r in rows if r.get("pool_dry_at_s") is not None]
    notes += [f"- {r['game']} {r['mode']}: errors {r['errors']}" for r in rows if r.get("errors")]
    notes += [f"- {r['game']} {r['mode']}: other processes took {r['others_on_server_core_pct']:.0f}% of the server's "
              f"core during the measured phase (a noisy machine)" for r in rows
              if "error" not in r and "skipped" not in r and (r.get("others_on_server_core_pct") or 0) >= NOISY_PCT]
    notes += [f"- FastAPI room, {label}: other processes used {r['other_cpu']:.2f} cores during its window (a noisy machine)"
              for label, r in zip(("before", "after"), room_runs, strict=False)
              if r and "error" not in r and (r.get("other_cpu") or 0) >= NOISY_PCT / 100]
    return "\n".join(lines) + ("\n\n" + "\n".join(notes) if notes else "")


# ---------------------------------------------------------------------------- machine limits
def port_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def raise_nofile() -> tuple[int, int]:
    """Raise this process's open-files limit (inherited by the children) to its hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def preflight(n: int, spectators: int, spares: int, fd_limit: int) -> str | None:
    """Why ``n`` matches cannot run here (None: they can): a server holds 4N seat sockets, the
    spectators, the sockets of spares being opened while ended matches close, and its own files."""
    need = SEATS * n + spectators + min(spares, 64) * SEATS + FD_MARGIN
    if need > fd_limit:
        return (f"needs ~{need:,} open files in the server process (4 × {n:,} seat sockets + {spectators} "
                f"spectators + its own files); this machine's hard limit is {fd_limit:,} (ulimit -Hn; "
                f"raising it needs CAP_SYS_RESOURCE): at most ~{largest_n(fd_limit, spectators / n):,} matches fit")
    return None


def largest_n(fd_limit: int, spectators_per_match: float = 0.0) -> int:
    """The most matches whose sockets (4 seats, the spectators, a refill's 4) fit one process's ``fd_limit``."""
    return max(0, math.floor((fd_limit - FD_MARGIN - 64 * SEATS) / (SEATS + spectators_per_match) / 100) * 100)


# ---------------------------------------------------------------------------- the reference room
def run_room(n: int, args: argparse.Namespace, tmp: Path, fd_limit: int) -> dict[str, Any]:
    """The FastAPI room with ``n`` rooms of 4 clients at the think time of :func:`room_think_ms`:
    ``loadgen.js``'s JSON line plus ``target_rate``, ``kb_per_room`` (RSS growth from the started
    server to the end of the window ÷ rooms) and the load average before."""
    need = SEATS * n + FD_MARGIN
    if need > fd_limit:
        return {"error": f"needs ~{need:,} open files per process; hard limit {fd_limit:,}",
                "loadavg_before": os.getloadavg()}
    perf = args.perf_dir
    port = bs.free_port()
    env = {**os.environ, "PERF_NODE_DIR": args.perf_node_dir}
    think = room_think_ms(args.rate_per_match)
    warmup = max(args.warmup, think / 1000 + 2)  # every client has started (a random offset < think)
    log_path = tmp / f"fastapi-{n}-{time.monotonic_ns()}.log"
    py = Path(args.perf_venv) / "bin" / "python"
    cmd = ["taskset", "-c", str(args.server_core), str(py), "-m", "uvicorn", "fastapi_room:app",
           "--app-dir", str(perf), "--host", "127.0.0.1", "--port", str(port), "--loop", "uvloop",
           "--http", "httptools", "--ws", "websockets-sansio", "--ws-per-message-deflate", "false",
           "--no-access-log", "--log-level", "warning", "--backlog", "4096"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 30
            while not bm.port_open(port):
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"FastAPI room did not start: {log_path.read_text()[-2000:]}")
                time.sleep(0.1)
            rss0 = bs.proc_rss_kb(proc.pid)
            gen = ["taskset", "-c", str(args.generator_core), "node", str(perf / "loadgen.js"), "--protocol", "plain",
                   "--url", f"ws://127.0.0.1:{port}/ws/{{room}}/{{seat}}", "--rooms", str(n),
                   "--duration", str(args.seconds), "--warmup", str(warmup), "--think-ms", str(round(think)),
                   "--server-pid", str(proc.pid), "--clk-tck", str(CLK_TCK), "--label", f"fastapi-r{n}",
                   "--connect-concurrency", "64"]
            load = os.getloadavg()
            print(f"  FastAPI room: {n:,} rooms, think {think:.0f} ms, warm-up {warmup:.0f} s + {args.seconds:g} s ...",
                  flush=True)
            res = subprocess.run(gen, env=env, capture_output=True, text=True, check=False,
                                 timeout=args.seconds + warmup + 300)
            lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                raise RuntimeError(f"loadgen.js failed: {res.stderr[-2000:]}")
            out: dict[str, Any] = json.loads(lines[-1])
            out.update({"loadavg_before": load, "think_ms": round(think), "warmup_s": warmup,
                        "target_rate": n * args.rate_per_match,
                        "command": f"SERVERS=fastapi ROOMS={n} THINKS={round(think)} DURATION={args.seconds:g} "
                                   f"WARMUP={warmup:g} ../shared/perf/run.sh"})
            if out.get("server_rss_mb"):
                out["kb_per_room"] = (out["server_rss_mb"] * 1024 - rss0) / n
            return out
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


# ---------------------------------------------------------------------------- making matches
async def make_matches(url: str, count: int, game: str, options: dict[str, Any], concurrency: int,
                       prefix: str, pid: int, label: str = "", quiet: bool = False
                       ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``count`` matches of ``game`` over REST in two stages, each timed (server CPU from /proc and
    wall): the 4 × ``count`` players registered, then per match its lobby made, the other seats
    joined one by one, started (``concurrency`` matches in the making at once, one request each in
    flight). At most ``concurrency`` requests in flight; progress printed every tenth. Returns the
    matches (``[{"id", "tokens"}]``) and the timing."""
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    step = count + 1 if quiet else max(1, count // 10)
    async with httpx.AsyncClient(base_url=url + "/api/v1", timeout=120, limits=limits) as http:

        async def call(method: str, path: str, token: str | None = None, body: Any = None) -> Any:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with sem:
                resp = await http.request(method, path, json=body, headers=headers)
            if resp.status_code >= 400:
                raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
            return resp.json()

        t0, cpu0 = time.monotonic(), bs.proc_cpu_seconds(pid)
        players = await asyncio.gather(*(call("POST", "/players", body={"name": f"{prefix}{i // SEATS}-{i % SEATS}"})
                                         for i in range(SEATS * count)))
        tokens = [p["token"] for p in players]
        t1, cpu1 = time.monotonic(), bs.proc_cpu_seconds(pid)
        if not quiet:
            print(f"    {label}{SEATS * count:,} players registered in {t1 - t0:.1f} s", flush=True)
        done = [0]
        one_match: list[float] = []

        async def one(i: int) -> dict[str, Any]:
            seat_tokens = tokens[SEATS * i:SEATS * (i + 1)]
            ts = time.monotonic()
            lobby = await call("POST", "/lobbies", seat_tokens[0], {"game": game, "seats": SEATS, "options": options})
            for s in range(1, SEATS):  # one by one: joins of one lobby wait for its row lock (Postgres)
                await call("POST", f"/lobbies/{lobby['id']}/join", seat_tokens[s], {"seat": s})
            lobby = await call("POST", f"/lobbies/{lobby['id']}/start", seat_tokens[0])
            one_match.append(time.monotonic() - ts)
            done[0] += 1
            if done[0] % step == 0 or done[0] == count:
                print(f"    {label}{done[0]:,}/{count:,} matches made ({time.monotonic() - t1:.0f} s)", flush=True)
            return {"id": lobby["match_id"], "tokens": seat_tokens}

        specs: list[dict[str, Any]] = [{}] * count
        queue = iter(range(count))

        async def worker() -> None:  # one match at a time each: ``concurrency`` matches in the making
            for i in queue:
                specs[i] = await one(i)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        t2, cpu2 = time.monotonic(), bs.proc_cpu_seconds(pid)
    one_match.sort()
    return specs, {
        "count": count, "concurrency": concurrency,
        "players_wall_s": round(t1 - t0, 2), "players_cpu_s": round(cpu1 - cpu0, 3),
        "lobby_to_start_wall_s": round(t2 - t1, 2), "lobby_to_start_cpu_s": round(cpu2 - cpu1, 3),
        "cpu_ms_players": 1000 * (cpu1 - cpu0) / count, "cpu_ms_lobby_to_start": 1000 * (cpu2 - cpu1) / count,
        "cpu_ms_per_match": 1000 * (cpu2 - cpu0) / count,
        "wall_ms_per_match": 1000 * (t2 - t0) / count,  # throughput at this concurrency
        # the median of one match's lobby..start, with ``concurrency`` matches in the making
        "wall_ms_lobby_to_start_median": 1000 * one_match[len(one_match) // 2] if one_match else None,
    }


async def register(url: str, count: int, prefix: str) -> list[str]:
    """``count`` fresh players' tokens (spectators)."""
    async with httpx.AsyncClient(base_url=url + "/api/v1", timeout=60) as http:
        out = []
        for i in range(count):
            resp = await http.post("/players", json={"name": f"{prefix}{i}"})
            resp.raise_for_status()
            out.append(str(resp.json()["token"]))
        return out


# ---------------------------------------------------------------------------- one cell
def _pymalloc(census: dict[str, Any]) -> dict[str, int]:
    """The numbers of a census's pymalloc lines (``sys._debugmallocstats``), by their label."""
    out: dict[str, int] = {}
    for line in census.get("pymalloc") or ():
        label, _, value = line.rpartition(" = ")
        if value.replace(",", "").isdigit():
            out.setdefault(label, int(value.replace(",", "")))
    return out


def census_growth(before: dict[str, Any], after: dict[str, Any], n: int) -> dict[str, Any]:
    """What grew between two memory censuses (``bench_server.take_census``) around making and playing
    ``n`` matches, per match in KB: RSS; glibc malloc's bytes in use (heap and mmapped blocks) and free
    but kept; the tracked objects by type (count and shallow KB per match, the 25 that grew most);
    pymalloc's arena lines after; with tracemalloc, the source lines whose allocations grew most."""
    def per(a: float, b: float) -> float:
        return round((b - a) / n, 2)

    out: dict[str, Any] = {"rss_kb": per(before["VmRSS"], after["VmRSS"]),
                           "rss_anon_kb": per(before.get("RssAnon", 0), after.get("RssAnon", 0))}
    mb, ma = before.get("malloc_kb"), after.get("malloc_kb")
    if isinstance(mb, dict) and isinstance(ma, dict):
        out["malloc_in_use_kb"] = per(mb["uordblks"] + mb["hblkhd"], ma["uordblks"] + ma["hblkhd"])
        out["malloc_free_kept_kb"] = per(mb["fordblks"], ma["fordblks"])
    old = {k: (c, kb) for k, c, kb in before["types"]}
    grown = [(k, c - old.get(k, (0, 0))[0], kb - old.get(k, (0, 0))[1]) for k, c, kb in after["types"]]
    out["types"] = [[k, round(dc / n, 2), round(dkb / n, 2)] for k, dc, dkb in sorted(grown, key=lambda g: -g[2])[:25]]
    out["gc_tracked_per_match"] = per(before["gc_tracked"], after["gc_tracked"])
    pb, pa = _pymalloc(before), _pymalloc(after)
    if pb and pa:  # pymalloc's own figures (none while tracemalloc hooks the allocator)
        out["pymalloc_in_blocks_kb"] = per(pb["# bytes in allocated blocks"] / 1024, pa["# bytes in allocated blocks"] / 1024)
        out["pymalloc_arenas_kb"] = per(pb["# arenas allocated current"] * 1024, pa["# arenas allocated current"] * 1024)
    out["pymalloc_after"] = after.get("pymalloc")
    if after.get("owners"):  # BENCH_CENSUS_OWNERS: who holds those types' objects (while playing)
        out["owners"] = after["owners"]
    if after.get("grown_by_line"):
        out["lines"] = [[where, round(kb / n, 2), round(count / n, 2)] for where, kb, count in after["grown_by_line"][:30]]
    return out


def measure_cell(server: bs.Server, game: str, mode: str, n: int, args: argparse.Namespace, work: Path,
                 fd_limit: int) -> dict[str, Any]:
    """``n`` live matches of ``game`` on ``server`` at the think pace: one row of the table."""
    gens: list[bs.Generator] = []
    seconds_played = args.warmup + args.seconds
    n_spares = args.spares if args.spares is not None else spares_for(game, n, args.rate_per_match, seconds_played)
    if game not in bm.MATCH_ACTIONS:
        n_spares = 0
    n_watched = spectated_matches(n, args.spectator_matches) if args.spectators_per_match > 0 else 0
    n_spectators = n_watched * args.spectators_per_match
    why = preflight(n, n_spectators, n_spares, fd_limit)
    if why:
        return {"game": game, "mode": mode, "n": n, "skipped": why, "loadavg_before": os.getloadavg()}
    try:
        t0 = time.monotonic()
        options = bm.GAME_OPTIONS[game]
        spares: list[dict[str, Any]] = []
        if n_spares:
            print(f"  {game} {mode}: {n_spares:,} spare matches first ...", flush=True)
            spares, _ = asyncio.run(make_matches(server.url, n_spares, game, options, args.create_concurrency,
                                                 f"spare{game[0]}", server.pid, "spares: "))
        # a few matches made one at a time: the wall time of one match alone (not played)
        _, alone = asyncio.run(make_matches(server.url, LONE_MATCHES, game, options, 1, f"lone{game[0]}",
                                            server.pid, "alone: ", quiet=True))
        full0 = bs.full_collection(server.pid, work / "fullgc.jsonl") if args.full_gc else None
        rss_before = bs.proc_rss_kb(server.pid)
        census0 = bs.take_census(server.pid, work / "census.jsonl") if args.census != "off" else None
        print(f"  {game} {mode}: making {n:,} matches (concurrency {args.create_concurrency}) ...", flush=True)
        specs, made = asyncio.run(make_matches(server.url, n, game, options, args.create_concurrency,
                                               f"cap{game[0]}", server.pid))
        made["alone"] = {k: alone[k] for k in ("count", "cpu_ms_players", "cpu_ms_lobby_to_start", "wall_ms_per_match")}
        made["wall_ms_one_match_alone"] = alone["wall_ms_per_match"]
        rss_made = bs.proc_rss_kb(server.pid)
        watchers = (asyncio.run(register(server.url, math.ceil(n_spectators / SOCKETS_PER_WATCHER), f"watch{game[0]}"))
                    if n_spectators else [])
        t_made = time.monotonic()
        sockets = SEATS * n
        addrs = source_addresses(sockets + n_spectators + SEATS * n_spares, port_range())
        if args.source_addresses:
            addrs = [f"127.0.0.{i + 1}" for i in range(args.source_addresses)]
        kind = "bots" if game != "provinces" else "node"
        if kind == "bots":
            n_gens = max(1, min(args.bot_generators, n), processes_for(sockets // max(1, args.bot_generators), fd_limit))
        else:
            n_gens = processes_for(sockets + n_spectators, fd_limit)
        cfg = {"url": server.url.replace("http://", "ws://"), "game": game, "deflate": False, "parse": "actor",
               "dealing_per_turn": 1, "connect_concurrency": 32, "full_states": False, "samples": True,
               "source_addresses": addrs if len(addrs) > 1 else None}
        for i in range(n_gens):
            mine = specs[i::n_gens]
            watched = [{"match": m["id"], "count": args.spectators_per_match,
                        "tokens": spectator_tokens(watchers, k, args.spectators_per_match)}
                       for k, m in enumerate(specs[:n_watched]) if k % n_gens == i]
            part = {**cfg, "matches": mine, "spares": spares[i::n_gens] if kind == "bots" else [],
                    "spectators": watched, "bot_seed": args.seed + i}
            gens.append(bs.Generator(kind, part, args.generator_core, work, 100 * (hash(game) % 100) + i))
        readies = [g.read_event("ready") for g in gens]
        t_connected = time.monotonic()
        connected = sum(r["sockets"] for r in readies)
        print(f"  {game} {mode}: {connected:,} seat sockets + {sum(r.get('spectators', 0) for r in readies)} spectators "
              f"connected in {t_connected - t_made:.1f} s by {n_gens} {kind} generator(s)"
              + (f" from {len(addrs)} source addresses" if len(addrs) > 1 else ""), flush=True)
        cmd = {"cmd": "run", "mode": "think", "rate_per_match": args.rate_per_match, "think_dist": args.think_dist}
        warm = bs.run_phase(server, gens, {**cmd, "seconds": args.warmup}) if args.warmup else None
        time.sleep(0.2)
        rss_playing = bs.proc_rss_kb(server.pid)
        census = (census_growth(census0, bs.take_census(server.pid, work / "census.jsonl"), n)
                  if census0 is not None else None)
        print(f"  {game} {mode}: warm-up {args.warmup:g} s at {fmt(warm and warm['acks_per_s'], '.0f')} actions/s; "
              f"measuring {args.seconds:g} s ...", flush=True)
        m0 = server.metrics()
        if args.wait_quiet:  # the generators idle meanwhile (no phase: no seat thinks)
            bs.wait_until_quiet(args.wait_quiet)
        # the mean think time the warm-up reached stays: people think at their pace whatever the server
        # does (a pace that follows the seats thinking answers a stall, when they wait for acks, with a burst)
        ph = bs.run_phase(server, gens, {**cmd, "seconds": args.seconds, "think_adapt": not args.warmup})
        m1 = server.metrics()
        full = None
        if full0 is not None:  # after the measured phase: the forced collections change nothing measured
            full1 = bs.full_collection(server.pid, work / "fullgc.jsonl")
            full = {"before_matches": full0, "playing": full1,
                    "tracked_per_match": (full1["tracked"] - full0["tracked"]) / n,
                    "second_ms_per_1000_matches": 1000 * (full1["second_ms"] - full0["second_ms"]) / n}
            print(f"  {game} {mode}: a full collection with the {n:,} matches live: {full1['second_ms']:.1f} ms "
                  f"({full1['tracked']:,} tracked objects; {full0['second_ms']:.1f} ms and {full0['tracked']:,} before "
                  f"they were made: {full['tracked_per_match']:.1f} objects and "
                  f"{full['second_ms_per_1000_matches']:.1f} ms per 1,000 matches)", flush=True)
        cores = ph.get("cores_busy_pct") or {}
        gen_core = cores.get(f"cpu{args.generator_core}", {}).get("mean")
        row: dict[str, Any] = {
            "game": game, "mode": mode, "n": n, "matches": len(specs), "sockets": connected,
            "spectator_sockets": sum(r.get("spectators", 0) for r in readies), "generator": kind, "generators": n_gens,
            "source_addresses": len(addrs),
            "target_rate": n * args.rate_per_match, "actions_per_s": ph["acks_per_s"],
            "ack": ph["latency"], "server_durable": histogram_quantiles(m0, m1, "bannerfall_action_durable_seconds"),
            "loop_lag_max_ms": (ph.get("loop_lag") or {}).get("max_ms"), "loop_lag": ph.get("loop_lag"),
            "gc": gc_summary(ph.get("gc")),
            "server_cores": ph["server_cpu_s"] / ph["wall_s_incl_drain"],
            "server_sched_pct": ph.get("server_sched_pct"),
            "kb_per_live_match": (rss_playing - rss_before) / n, "census": census, "full_collection": full,
            "rss_kb": {"before_matches": rss_before, "matches_made": rss_made, "playing": rss_playing,
                       "end": bs.proc_rss_kb(server.pid)},
            "loadgen_loop_lag": ph.get("loadgen_loop_lag"), "loadgen_gc": ph.get("loadgen_gc"), "generator_core_busy_pct": gen_core,
            "generator_cpu_pct": ph.get("generator_cpu_pct"),
            "make_match": made, "spares": len(spares), "spares_taken": ph.get("spares_taken_total"),
            "matches_ended": ph.get("matches_ended"), "idle_slot_s": ph.get("idle_slot_s"),
            "idle_slots_at_end": ph.get("idle_slots"), "pool_dry_at_s": ph.get("pool_dry_at_s"),
            "errors": ph.get("errors"), "resumes": ph.get("resumes"), "actions_by_type": ph.get("actions_by_type"),
            "think": ph.get("think"), "warmup": warm and {k: warm[k] for k in ("acks_per_s", "latency")},
            "loadavg_before": ph["loadavg_before"], "others_on_server_core_pct": ph.get("others_on_server_core_pct"),
            "setup_s": {"spares_and_matches": round(t_made - t0, 1), "sockets": round(t_connected - t_made, 1)},
            "phase": {k: v for k, v in ph.items() if k not in ("latency_samples", "sched_latency_samples")},
        }
        why_gen = generator_verdict(row)
        row["generator_bound"] = why_gen
        a = row["ack"]
        print(f"  {game} {mode}: {row['actions_per_s']:.0f}/s (target {row['target_rate']:.0f}), ack p50 {fmt(a['p50_ms'], '.2f')} "
              f"p99 {fmt(a['p99_ms'])} p99.9 {fmt(a['p999_ms'])} max {fmt(a['max_ms'])} ms; server p99 ≤{fmt(row['server_durable']['p99_ms'], 'g')} ms; "
              f"loop lag {fmt(row['loop_lag_max_ms'])} ms; GC {row['gc'] and row['gc']['count']}x max {row['gc'] and row['gc']['max_ms']} ms; "
              f"CPU {row['server_cores']:.2f} cores; {row['kb_per_live_match']:.0f} KB/match; "
              f"make {made['cpu_ms_players']:.1f}+{made['cpu_ms_lobby_to_start']:.1f} ms CPU; errors {row['errors'] or 'none'}"
              + (f"; GENERATOR-BOUND: {'; '.join(why_gen)}" if why_gen else ""), flush=True)
        return row
    finally:
        for g in gens:
            g.quit()


def run_mode(mode: str, n: int, args: argparse.Namespace, tmp: Path, fd_limit: int) -> list[dict[str, Any]]:
    """One ``bannerfall serve`` for ``mode``; every game's cell at ``n`` on it in turn."""
    work = tmp / f"{mode}-{n}"
    work.mkdir()
    prod = bm.Production(args.database_url, args.redis_url) if mode == "production" else None
    server: bs.Server | None = None
    rows: list[dict[str, Any]] = []
    games = [g for g in args.games.split(",") if g]
    try:
        extra = max(len(source_addresses(SEATS * n * 2, port_range())), args.source_addresses)
        exempt = ",".join(["127.0.0.1", "::1"] + [f"127.0.0.{i + 1}" for i in range(1, extra)])
        env = {"BANNERFALL_WS_COMPRESSION": "false", "BENCH_GC_LOG": str(work / "gc.log"),
               "BENCH_LAG_LOG": str(work / "lag.log"), "BANNERFALL_RATE_LIMIT_EXEMPT": exempt}
        if args.full_gc:  # timed full collections on SIGUSR1 (bench_server.GC_WRAPPER)
            env["BENCH_FULLGC_PATH"] = str(work / "fullgc.jsonl")
        if args.census != "off":  # memory censuses on SIGUSR2 (bench_server.GC_WRAPPER)
            env["BENCH_CENSUS_PATH"] = str(work / "census.jsonl")
            if args.census == "tracemalloc":
                env["BENCH_TRACEMALLOC"] = "1"
        if prod:
            env.update(prod.create())
            db_url = env.pop("BANNERFALL_DATABASE_URL")
        else:
            db_url = f"sqlite+aiosqlite:///{work / 'bench.db'}"
        server = bs.Server(db_url, args.server_core, env, work / "server.log",
                           cmd=[sys.executable, "-c", bs.GC_WRAPPER, "log"]).start()
        for game in games:
            try:
                rows.append(measure_cell(server, game, mode, n, args, work, fd_limit))
            except Exception as exc:  # noqa: BLE001 - one failed cell must not lose the others
                print(f"  {game} {mode}: FAILED {exc!r}"[:3000], flush=True)
                rows.append({"game": game, "mode": mode, "n": n, "error": repr(exc)[:2000],
                             "loadavg_before": os.getloadavg()})
    except Exception as exc:  # noqa: BLE001
        rows.extend({"game": g, "mode": mode, "n": n, "error": repr(exc)[:2000], "loadavg_before": os.getloadavg()}
                    for g in games if g not in {r["game"] for r in rows})
    finally:
        if server is not None:
            server.stop()
        if prod is not None:
            prod.drop()
    return rows


# ---------------------------------------------------------------------------- main
def default_perf_dir() -> Path:
    """``shared/perf`` beside the checkout (``/work/main``) or beside its worktree folder (``/work/wt/x``)."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "perf" / "fastapi_room.py").exists():
            return base / "shared" / "perf"
    return ROOT.parent / "shared" / "perf"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--matches", default="200,1000,2000,5000", help="live match counts N, comma-separated")
    ap.add_argument("--games", default="provinces,conquest,warrior")
    ap.add_argument("--modes", default="embedded,production")
    ap.add_argument("--rate-per-match", type=float, default=0.5, help="actions/s per match (total: N × this)")
    ap.add_argument("--think-dist", choices=("exp", "uniform"), default="exp",
                    help="think times: exponential, or uniform on 0.5-1.5 × the mean")
    ap.add_argument("--seconds", type=float, default=60.0, help="the measured phase")
    ap.add_argument("--warmup", type=float, default=20.0, help="think-mode play before measuring (and before the RSS read)")
    ap.add_argument("--spectators-per-match", type=int, default=2)
    ap.add_argument("--spectator-matches", default="1%", help="matches with spectators: a share ('1%%') or a count")
    ap.add_argument("--spares", type=int, default=None,
                    help="spare matches per Conquest/Warrior cell (default: 1.5 × those expected to end)")
    ap.add_argument("--create-concurrency", type=int, default=16, help="REST requests in flight while making matches")
    ap.add_argument("--bot-generators", type=int, default=4, help="botgen.py processes for Conquest and Warrior")
    ap.add_argument("--seed", type=int, default=1, help="think times' and bots' seed")
    ap.add_argument("--source-addresses", type=int, default=0,
                    help="the generators' local addresses 127.0.0.1..K (0: as many as the ephemeral ports need)")
    ap.add_argument("--references", default="fastapi", help="'fastapi' or '' (no reference room: no ratios)")
    ap.add_argument("--ref-again", action=argparse.BooleanOptionalAction, default=True,
                    help="run the room again after the cells; the ratios use the mean of both runs")
    ap.add_argument("--perf-dir", type=Path, default=default_perf_dir(),
                    help="../shared/perf of the main checkout (a worktree's is found two levels up)")
    ap.add_argument("--perf-venv", default=os.environ.get("PERF_VENV", "/tmp/perf-venv"))
    ap.add_argument("--perf-node-dir", default=os.environ.get("PERF_NODE_DIR", "/tmp/perf-node"))
    ap.add_argument("--database-url", default="postgresql://root@127.0.0.1:5432",
                    help="Postgres server for production mode (a fresh database is made and dropped)")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0",
                    help="Redis for production mode (a fresh key prefix, its keys deleted afterwards)")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--generator-core", type=int, default=1)
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="before each measured phase (the room's too), wait up to this long for the machine to be "
                         "under 25%% busy (other people's jobs share it)")
    ap.add_argument("--quick", action="store_true", help="smoke test: N=50, 10 s warm-up and 10 s measured")
    ap.add_argument("--census", choices=("off", "objects", "tracemalloc"), default="off",
                    help="a memory census of the server before making the matches and while they play (kept "
                         "under 'census' in the JSON, per match): 'objects' (malloc, pymalloc, objects by type), "
                         "'tracemalloc' (also allocations by source line; slows the server, so no latency figure counts)")
    ap.add_argument("--full-gc", action="store_true",
                    help="time two full collections in the server (SIGUSR1) before the matches are made and after "
                         "the measured phase: what a collection of the old generation costs per live match "
                         "(kept under 'full_collection' in the JSON)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the work directory (server logs, GC and lag logs)")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--md-out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.matches, args.seconds, args.warmup = "50", 10.0, 10.0
    args.counts = parse_counts(args.matches)
    if args.rate_per_match <= 0:
        ap.error("--rate-per-match must be > 0")
    return args


def main() -> None:
    args = parse_args()
    bs.SERVER_CORE = args.server_core
    soft, hard = raise_nofile()
    t_start = time.monotonic()
    machine = bs.machine_info()
    command = " ".join(["python", "bench/bench_capacity.py"] + sys.argv[1:])
    print(f"machine: {machine['nproc']} cores, {machine['cpu_model']}; {machine['uptime']}")
    print(f"code: {machine['git_head']}" + (f" + uncommitted {machine['app_uncommitted']}" if machine["app_uncommitted"] else "")
          + f"; hot paths: {machine['hot_paths']}; open files {soft}/{hard}; ports {port_range()}")
    tmp = Path(tempfile.mkdtemp(prefix="bannerfall-capacity-"))
    runs: list[dict[str, Any]] = []
    md_parts: list[str] = [f"Command: `{command}` (code {machine['git_head']}; {machine['uptime'].split('load average:')[-1].strip()} load average at the start)"]
    try:
        for n in args.counts:
            print(f"\n=== N = {n:,} matches ({SEATS * n:,} seat sockets, {n * args.rate_per_match:g} actions/s)", flush=True)
            room_runs: list[dict[str, Any] | None] = []
            if "fastapi" in args.references:
                try:
                    if args.wait_quiet:
                        bs.wait_until_quiet(args.wait_quiet)
                    room_runs.append(run_room(n, args, tmp, hard))
                except Exception as exc:  # noqa: BLE001
                    room_runs.append({"error": repr(exc)[:2000], "loadavg_before": os.getloadavg()})
                r0 = room_runs[0] or {}
                print(f"  FastAPI room before: {fmt(r0.get('actions_per_s'), '.0f')}/s p99 {fmt(r0.get('p99_ms'), '.2f')} ms "
                      f"max {fmt(r0.get('max_ms'))} ms, CPU {fmt(r0.get('server_cpu'), '.2f')} cores {r0.get('error', '')}", flush=True)
            rows: list[dict[str, Any]] = []
            for mode in [m for m in args.modes.split(",") if m]:
                rows.extend(run_mode(mode, n, args, tmp, hard))
            if "fastapi" in args.references and args.ref_again:
                try:
                    if args.wait_quiet:
                        bs.wait_until_quiet(args.wait_quiet)
                    room_runs.append(run_room(n, args, tmp, hard))
                except Exception as exc:  # noqa: BLE001
                    room_runs.append({"error": repr(exc)[:2000], "loadavg_before": os.getloadavg()})
                r1 = room_runs[-1] or {}
                print(f"  FastAPI room after: {fmt(r1.get('actions_per_s'), '.0f')}/s p99 {fmt(r1.get('p99_ms'), '.2f')} ms "
                      f"max {fmt(r1.get('max_ms'))} ms, CPU {fmt(r1.get('server_cpu'), '.2f')} cores {r1.get('error', '')}", flush=True)
            room = mean_room(room_runs[0] if room_runs else None, room_runs[1] if len(room_runs) > 1 else None)
            checks = targets(n, rows, room)
            runs.append({"n": n, "room_runs": room_runs, "room": room, "bannerfall": rows, "targets": checks})
            md_parts.append(f"### {n:,} live matches ({SEATS * n:,} seat sockets), {n * args.rate_per_match:g} actions/s\n\n"
                            + run_table(n, rows, room, room_runs) + "\n\n" + targets_table(checks))
            print("\n" + md_parts[-1], flush=True)
    finally:
        if args.keep_tmp:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    md = "\n\n".join(md_parts)
    print(f"\nload average at the end {os.getloadavg()}; whole run {time.monotonic() - t_start:.0f} s")
    if args.md_out:
        args.md_out.write_text(md + "\n")
    if args.json_out:
        args.json_out.write_text(json.dumps({"command": command, "machine": machine,
                                             "args": {k: str(v) for k, v in vars(args).items()},
                                             "runs": runs, "loadavg_end": os.getloadavg(),
                                             "wall_s": round(time.monotonic() - t_start)}, indent=1, default=str))
        print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
