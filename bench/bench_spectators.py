"""Spectator fan-out: server CPU per action with S spectators on one match (issue 11 item 2).

    . .venv/bin/activate && (cd bench/loadgen && npm ci) && python bench/bench_spectators.py
    python bench/bench_spectators.py --spectators 10,1000 --seconds 20 --json-out /tmp/spectators.json

Target: "1,000 spectators on one match cost at most 2× the server CPU per action of 10 spectators".

For each spectator count S (``--spectators``, default ``10,1000``), one after the other:

1. a fresh ``bannerfall serve`` pinned to core 0 (``taskset``; SQLite in a temp dir, or a fresh
   Postgres database with ``--database-url``), bots off, ``BANNERFALL_SPECTATOR_PATCH_SECONDS`` set
   to ``--patch-seconds`` (the most one spectator delta per that many seconds; a server that does
   not know the setting ignores it);
2. ``--matches`` K Provinces matches of 4 seats over REST (deadlines out of reach); only the first is
   played, the others are live matches the server holds;
3. the load generator on core 1 (``loadgen.mjs``, or ``--generator python``) opens the played
   match's 4 seat sockets and S spectator sockets on it (``"as": "spectator"`` in ``hello``; any
   registered player may watch; ``ceil(S / 8)`` extra players are registered so that no player
   holds more than ``MAX_SOCKETS_PER_PLAYER`` = 8 sockets), all asking for deltas unless
   ``--full-states``; the spectators read every message (version kept, resume on a gap);
4. warm-up, then a closed loop for ``--seconds``: the seat on turn plays ``set_dealing`` then
   ``end_turn`` as fast as acks allow (one action in flight);
5. server CPU (utime + stime from ``/proc``) over the phase ÷ actions acked → **server CPU ms per
   action**; spectator bytes ÷ S ÷ actions → **bytes per spectator per action**.

It prints one line per S and the ratio of the largest S to the smallest with pass/fail (≤ 2.0).
Only ratios within one run count (the machine may be shared: the load average and the share of the
server's core other processes took are printed).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_server as bs

TARGET_RATIO = 2.0


async def register_players(url: str, count: int) -> list[str]:
    """``count`` fresh guest players' tokens."""
    async with httpx.AsyncClient(base_url=url + "/api/v1", timeout=60) as http:
        async def one(i: int) -> str:
            resp = await http.post("/players", json={"name": f"watcher{i}"})
            resp.raise_for_status()
            return str(resp.json()["token"])

        sem = asyncio.Semaphore(16)

        async def guarded(i: int) -> str:
            async with sem:
                return await one(i)

        return list(await asyncio.gather(*(guarded(i) for i in range(count))))


def measure(args: argparse.Namespace, spectators: int, work: Path) -> dict[str, Any]:
    """One server with ``spectators`` sockets on one played match; the closed-loop phase's figures."""
    work.mkdir(parents=True, exist_ok=True)
    pg = bs.Postgres(args.database_url) if args.database_url else None
    server: bs.Server | None = None
    gen: bs.Generator | None = None
    try:
        db_url = pg.create() if pg else f"sqlite+aiosqlite:///{work / 'bench.db'}"
        env = {"BANNERFALL_WS_COMPRESSION": "false", "BANNERFALL_SPECTATOR_PATCH_SECONDS": str(args.patch_seconds)}
        server = bs.Server(db_url, args.server_core, env, work / "server.log").start()
        specs = asyncio.run(bs.create_matches(server.url, args.matches, 4, {"turn_seconds": 3600, "max_rounds": 1000}))
        watchers = asyncio.run(register_players(server.url, max(1, math.ceil(spectators / 8))))
        kind = args.generator
        if kind == "node" and not (bs.LOADGEN_DIR / "node_modules" / "ws").is_dir():
            kind = "python"
        cfg = {"url": server.url.replace("http://", "ws://"), "matches": specs[:1], "deflate": False,
               "parse": "actor", "dealing_per_turn": 1, "connect_concurrency": 32, "full_states": args.full_states,
               "spectators": {"match": specs[0]["id"], "tokens": watchers, "count": spectators}}
        rss0 = bs.proc_rss_kb(server.pid)
        gen = bs.Generator(kind, cfg, args.generator_core, work, spectators)
        ready = gen.read_event("ready")
        time.sleep(0.3)
        rss1 = bs.proc_rss_kb(server.pid)
        if args.warmup:
            bs.run_phase(server, [gen], {"cmd": "run", "mode": "closed", "seconds": args.warmup})
        ph = bs.run_phase(server, [gen], {"cmd": "run", "mode": "closed", "seconds": args.seconds}, args.wait_quiet)
        acked = max(1, ph["acked"])
        spec_msgs = ph.get("spectator_messages_in_window") or {}
        return {
            "spectators": ready.get("spectators", spectators), "generator": kind, "matches": len(specs),
            "full_states": args.full_states, "patch_seconds": args.patch_seconds,
            "actions": ph["acked"], "actions_per_s": ph["acks_per_s"],
            "server_cpu_s": ph["server_cpu_s"], "server_cpu_pct": ph["server_cpu_pct"],
            "server_cpu_ms_per_action": 1000.0 * ph["server_cpu_s"] / acked,
            "actions_per_server_cpu_s": ph["acked_per_server_cpu_s"],
            "generator_cpu_pct": ph["generator_cpu_pct"],
            "spectator_bytes_per_spectator_per_action":
                (ph.get("spectator_bytes_in_window") or 0) / max(1, spectators) / max(1, ph["acked_in_window"]),
            "spectator_messages_per_spectator_per_s":
                sum(spec_msgs.values()) / max(1, spectators) / max(1e-9, ph["seconds"]),
            "spectator_messages": spec_msgs, "spectator_resumes": ph.get("spectator_resumes"),
            "seat_bytes_per_socket_per_action": ph["bytes_in_window"] / 4 / max(1, ph["acked_in_window"]),
            "median_update_bytes": ph.get("median_update_bytes"),
            "p99_ms": ph["latency"]["p99_ms"], "errors": ph["errors"],
            "kb_per_spectator_socket": (rss1 - rss0) / max(1, spectators + 4),
            "loadavg_before": ph["loadavg_before"], "others_on_server_core_pct": ph.get("others_on_server_core_pct"),
            "server_sched_pct": ph["server_sched_pct"],
        }
    finally:
        if gen is not None:
            gen.quit()
        if server is not None:
            server.stop()
        if pg is not None:
            pg.drop()


def run_all(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Every spectator count of ``args.spectators`` (comma-separated); adds the ratio of the CPU per
    action at the largest count to that at the smallest and the target check (≤ 2.0)."""
    counts = sorted(int(x) for x in str(args.spectators).split(",") if x.strip())
    rows = []
    for s in counts:
        try:
            row = measure(args, s, work / f"s{s}")
        except Exception as exc:  # noqa: BLE001 - report the failed count, keep the others
            row = {"spectators": s, "error": repr(exc)}
        rows.append(row)
        print(line(row), flush=True)
    ok = [r for r in rows if "error" not in r]
    ratio = None
    if len(ok) >= 2 and ok[0]["server_cpu_ms_per_action"]:
        ratio = ok[-1]["server_cpu_ms_per_action"] / ok[0]["server_cpu_ms_per_action"]
    result = {"rows": rows, "ratio": ratio, "ratio_of": [ok[0]["spectators"], ok[-1]["spectators"]] if len(ok) >= 2 else None,
              "target": TARGET_RATIO, "pass": (ratio is not None and ratio <= TARGET_RATIO),
              "patch_seconds": args.patch_seconds, "full_states": args.full_states}
    print(summary_line(result), flush=True)
    return result


def line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"spectators {r['spectators']}: failed: {r['error']}"
    return (f"spectators {r['spectators']}: {r['actions_per_s']:.0f} actions/s, server CPU {r['server_cpu_pct']:.0f}% -> "
            f"{r['server_cpu_ms_per_action']:.2f} ms CPU per action; {r['spectator_bytes_per_spectator_per_action']:.0f} "
            f"bytes per spectator per action ({r['spectator_messages_per_spectator_per_s']:.1f} messages per spectator per s, "
            f"{r['spectator_resumes'] or 0} resumes); seat sockets {r['seat_bytes_per_socket_per_action']:.0f} B/action; "
            f"p99 ack {r['p99_ms']} ms; generator CPU {r['generator_cpu_pct']:.0f}%; errors {r['errors'] or 'none'}; "
            f"load avg {r['loadavg_before'][0]:.1f}, others on the server core ~{r.get('others_on_server_core_pct') or 0:.0f}%")


def summary_line(res: dict[str, Any]) -> str:
    if res["ratio"] is None:
        return "spectator fan-out: no ratio (fewer than two counts measured)"
    a, b = res["ratio_of"]
    return (f"spectator fan-out: server CPU per action with {b} spectators = {res['ratio']:.2f} × with {a} "
            f"(target ≤ {res['target']:.1f}: {'PASS' if res['pass'] else 'FAIL'}); "
            f"SPECTATOR_PATCH_SECONDS {res['patch_seconds']}, {'full states' if res['full_states'] else 'deltas requested'}")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options shared with bench_matrix.py."""
    ap.add_argument("--spectators", default="10,1000",
                    help="spectator counts to measure, comma-separated ('' for none)")
    ap.add_argument("--patch-seconds", type=float, default=float(os.environ.get("BANNERFALL_SPECTATOR_PATCH_SECONDS", 0.1)),
                    help="BANNERFALL_SPECTATOR_PATCH_SECONDS given to the server")
    ap.add_argument("--full-states", action="store_true", help="hello with deltas: false (today's full states)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_arguments(ap)
    ap.add_argument("--matches", type=int, default=20, help="live Provinces matches on the server (the first is played)")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--generator", choices=("node", "python"), default="node")
    ap.add_argument("--database-url", default=None, help="a Postgres server URL; default SQLite in a temp dir")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--generator-core", type=int, default=1)
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 4 matches, 1 s warm-up, 3 s")
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.matches, args.warmup, args.seconds = 4, 1.0, 3.0
    bs.SERVER_CORE = args.server_core
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 65536)), hard))
    machine = bs.machine_info()
    print(f"machine: {machine['nproc']} cores, {machine['cpu_model']}; {machine['uptime']}")
    print(f"code: {machine['git_head']}" + (f" + uncommitted {machine['app_uncommitted']}" if machine["app_uncommitted"] else ""))
    tmp = Path(tempfile.mkdtemp(prefix="bannerfall-spectators-"))
    try:
        res = run_all(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json_out:
        args.json_out.write_text(json.dumps({"machine": machine, "args": {k: str(v) for k, v in vars(args).items()},
                                             **res, "loadavg_end": os.getloadavg()}, indent=1, default=str))


if __name__ == "__main__":
    main()
