"""Making a match: server CPU and wall time per match and per route (lobby, joins or bots, start).

    . .venv/bin/activate && python bench/bench_creation.py --matches 200 --rounds 3
    python bench/bench_creation.py --modes embedded,production --matches 200   # production: Postgres + Redis
    python bench/bench_creation.py --tree /tmp/base --rounds 2   # A/B: /tmp/base = git archive of another commit
    python bench/bench_creation.py --profile 100 --profile-out /tmp/creation.prof  # in-process: SQL per route, cProfile

What it does (results: ``docs/benchmarks/creation.md``):

1. Starts a real ``bannerfall serve`` (``bench_server.Server``: a fresh SQLite file, or with
   ``--modes production`` a fresh Postgres database and Redis prefix, dropped afterwards; bots not
   run, rate limits as configured except that 127.0.0.1 is exempt, as by default).
2. Per round: ``--warmup`` matches, then ``--matches`` matches made **one request at a time**, the
   way ``bench_server.create_matches`` makes them: 4 players registered (``POST /players``), the
   lobby made by the first (``POST /lobbies``, 4 seats), the other three joining one by one
   (``POST /lobbies/{id}/join`` with their seat), the host starting it (``POST .../start``). With
   ``--flow bots`` the host fills the three seats with random bots instead (``POST .../bots``).
3. Server CPU: the whole process's (every thread's: the SQLite driver's and the log committer's
   too) from ``/proc/PID/task/*/schedstat`` (nanoseconds) read before and after every request, so
   each route gets its own; the sum over the round is checked against ``/proc/PID/stat`` (utime +
   stime, ticks, which counts exited threads too). Wall time per request from the client.
4. Prints per round and mode: server CPU ms per match (lobby..start, what
   ``bench_capacity.py`` calls "the CPU to make one match"), per route (mean), per player
   sign-up, wall ms p50/p99 per route and per match; then the spread over the rounds.

``--profile N``: instead, the app in this process (``httpx.ASGITransport``, lifespan run, SQLite in
a temp dir), N matches made after a warm-up with the SQL statements of each route counted
(SQLAlchemy ``before_cursor_execute``) and the whole run under ``cProfile`` (``--profile-out``
keeps the stats file); prints the statements per route and the top functions.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_matrix as bm  # noqa: E402
import bench_server as bs  # noqa: E402

SEATS = 4
ROUTES = ("players", "lobby", "join", "bots", "start")


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


class Caller:
    """Sequential REST calls, each with the server's CPU (schedstat, all threads) and wall time."""

    def __init__(self, http: httpx.AsyncClient, pid: int | None) -> None:
        self.http = http
        self.pid = pid
        self.cpu: dict[str, list[float]] = defaultdict(list)
        self.wall: dict[str, list[float]] = defaultdict(list)
        self.statements: dict[str, list[int]] = defaultdict(list)
        self.counter: list[int] | None = None  # in-process: SQL statements executed so far

    def _cpu(self) -> float:
        return bs.proc_schedstat(self.pid)[0] if self.pid else 0.0

    async def call(self, route: str, method: str, path: str, token: str | None = None, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        c0, n0, t0 = self._cpu(), self.counter[0] if self.counter else 0, time.perf_counter()
        resp = await self.http.request(method, path, json=body, headers=headers)
        t1, c1 = time.perf_counter(), self._cpu()
        if resp.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
        self.wall[route].append(1000 * (t1 - t0))
        self.cpu[route].append(1000 * (c1 - c0))
        if self.counter is not None:
            self.statements[route].append(self.counter[0] - n0)
        return resp.json()


async def make_match(c: Caller, i: int, prefix: str, flow: str, game: str, options: dict[str, Any]) -> float:
    """One match the way a client makes it; returns its lobby..start wall ms."""
    tokens = [(await c.call("players", "POST", "/players", body={"name": f"{prefix}{i}-{s}"}))["token"]
              for s in range(SEATS if flow == "join" else 1)]
    t0 = time.perf_counter()
    lobby = await c.call("lobby", "POST", "/lobbies", tokens[0], {"game": game, "seats": SEATS, "options": options})
    if flow == "join":
        for s in range(1, SEATS):
            await c.call("join", "POST", f"/lobbies/{lobby['id']}/join", tokens[s], {"seat": s})
    else:
        await c.call("bots", "POST", f"/lobbies/{lobby['id']}/bots", tokens[0], {"kind": "random"})
    started = await c.call("start", "POST", f"/lobbies/{lobby['id']}/start", tokens[0])
    assert started["match_id"], started
    return 1000 * (time.perf_counter() - t0)


def summary(c: Caller, match_walls: list[float], n: int, stat_cpu_s: float | None) -> dict[str, Any]:
    routes = {}
    for r in ROUTES:
        if not c.cpu.get(r):
            continue
        routes[r] = {"calls": len(c.cpu[r]), "cpu_ms_mean": statistics.fmean(c.cpu[r]),
                     "wall_ms_p50": pct(c.wall[r], 0.5), "wall_ms_p99": pct(c.wall[r], 0.99)}
        if c.statements.get(r):
            routes[r]["sql_mean"] = statistics.fmean(c.statements[r])
    make = sum(sum(c.cpu[r]) for r in ("lobby", "join", "bots", "start") if r in c.cpu) / n
    return {"matches": n, "cpu_ms_per_match": make,
            "cpu_ms_players_per_match": sum(c.cpu.get("players", [])) / n,
            "cpu_ms_proc_stat_per_match": None if stat_cpu_s is None else 1000 * stat_cpu_s / n,
            "wall_ms_match_p50": pct(match_walls, 0.5), "wall_ms_match_p99": pct(match_walls, 0.99),
            "routes": routes}


async def run_round(url: str, pid: int, args: argparse.Namespace, prefix: str) -> dict[str, Any]:
    options = bm.GAME_OPTIONS[args.game]
    async with httpx.AsyncClient(base_url=url + "/api/v1", timeout=60) as http:
        warm = Caller(http, pid)
        for i in range(args.warmup):
            await make_match(warm, i, prefix + "w", args.flow, args.game, options)
        c = Caller(http, pid)
        walls = []
        cpu0 = bs.proc_cpu_seconds(pid)
        for i in range(args.matches):
            walls.append(await make_match(c, i, prefix, args.flow, args.game, options))
        cpu1 = bs.proc_cpu_seconds(pid)
    return summary(c, walls, args.matches, cpu1 - cpu0)


def print_round(mode: str, k: int, s: dict[str, Any]) -> None:
    parts = [f"{r} {v['cpu_ms_mean']:.2f} ms (wall p50 {v['wall_ms_p50']:.1f} / p99 {v['wall_ms_p99']:.1f})"
             for r, v in s["routes"].items()]
    print(f"  {mode} round {k}: make a match {s['cpu_ms_per_match']:.2f} ms CPU "
          f"(/proc/stat incl. sign-ups {s['cpu_ms_proc_stat_per_match']:.1f}), sign-ups "
          f"{s['cpu_ms_players_per_match']:.2f} ms; match wall p50 {s['wall_ms_match_p50']:.1f} / p99 "
          f"{s['wall_ms_match_p99']:.1f} ms\n    " + "; ".join(parts), flush=True)


def spread(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def mm(values: list[float]) -> dict[str, float]:
        return {"min": min(values), "median": statistics.median(values), "max": max(values)}

    out: dict[str, Any] = {"cpu_ms_per_match": mm([r["cpu_ms_per_match"] for r in rounds]),
                           "cpu_ms_players_per_match": mm([r["cpu_ms_players_per_match"] for r in rounds]),
                           "wall_ms_match_p50": mm([r["wall_ms_match_p50"] for r in rounds]),
                           "wall_ms_match_p99": mm([r["wall_ms_match_p99"] for r in rounds]), "routes": {}}
    for route in rounds[0]["routes"]:
        out["routes"][route] = {"cpu_ms_mean": mm([r["routes"][route]["cpu_ms_mean"] for r in rounds]),
                                "wall_ms_p50": mm([r["routes"][route]["wall_ms_p50"] for r in rounds])}
    return out


def serve_cmd(tree: Path | None) -> list[str] | None:
    """``bannerfall serve`` of this checkout (None: bench_server's default) or of another ``tree``."""
    if tree is None:
        return None
    boot = f"import sys; sys.path.insert(0, {str(tree.resolve())!r}); from app.cli import main; main()"
    return [sys.executable, "-c", boot, "serve"]


def run_mode(mode: str, args: argparse.Namespace, tmp: Path, tree: Path | None = None) -> dict[str, Any]:
    prod = bm.Production(args.database_url, args.redis_url) if mode == "production" else None
    server = None
    label = mode if tree is None else f"{mode}@{tree.name}"
    try:
        env: dict[str, str] = {}
        if prod:
            env.update(prod.create())
            db_url = env.pop("BANNERFALL_DATABASE_URL")
        else:
            db_url = f"sqlite+aiosqlite:///{tmp / (label.replace('@', '-') + '.db')}"
        server = bs.Server(db_url, args.server_core, env, tmp / f"{label}-server.log", cmd=serve_cmd(tree)).start()
        spy = None
        if args.py_spy:  # the server's stacks over every round (collapsed: one line per stack and its samples)
            import subprocess

            spy = subprocess.Popen(["py-spy", "record", "-p", str(server.pid), "-f", "raw", "-r", "250", "-o",
                                    str(args.py_spy.with_suffix(f".{mode}.txt"))], stdout=subprocess.DEVNULL)
        rounds = []
        for k in range(args.rounds):
            s = asyncio.run(run_round(server.url, server.pid, args, f"c{mode[0]}{k}-"))
            print_round(label, k, s)
            rounds.append(s)
        if spy is not None:
            import signal

            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        return {"mode": label, "rounds": rounds, "spread": spread(rounds)}
    finally:
        if server is not None:
            server.stop()
        if prod is not None:
            prod.drop()


# ---------------------------------------------------------------------------- in-process profile
async def profile(args: argparse.Namespace, tmp: Path) -> None:
    from sqlalchemy import event

    from app.config import Settings
    from app.main import create_app

    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp}/profile.db", node_id="profile", run_bots=False)
    app = create_app(settings)
    options = bm.GAME_OPTIONS[args.game]
    async with app.router.lifespan_context(app):
        count = [0]

        def counted(*_a: Any) -> None:
            count[0] += 1

        event.listen(app.state.repo.engine.sync_engine, "before_cursor_execute", counted)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 1234))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench/api/v1") as http:
            warm = Caller(http, None)
            for i in range(args.warmup):
                await make_match(warm, i, "pw", args.flow, args.game, options)
            c = Caller(http, None)
            c.counter = count
            prof = cProfile.Profile()
            t0 = time.process_time()
            prof.enable()
            for i in range(args.profile):
                await make_match(c, i, "p", args.flow, args.game, options)
            prof.disable()
            cpu = time.process_time() - t0
    print(f"in-process (client included, under cProfile): {1000 * cpu / args.profile:.1f} ms CPU per match "
          "with its sign-ups")
    for r in ROUTES:
        if c.statements.get(r):
            print(f"  {r}: {statistics.fmean(c.statements[r]):.1f} SQL statements, "
                  f"{statistics.fmean(c.wall[r]):.2f} ms wall (profiled)")
    if args.profile_out:
        prof.dump_stats(args.profile_out)
    st = pstats.Stats(prof).strip_dirs()
    st.sort_stats("cumulative").print_stats(45)
    st.sort_stats("tottime").print_stats(30)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--modes", default="embedded", help="embedded, production (Postgres + Redis), comma-separated")
    ap.add_argument("--matches", type=int, default=200, help="matches measured per round")
    ap.add_argument("--warmup", type=int, default=20, help="matches made before each round's measured ones")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per mode (the spread is printed)")
    ap.add_argument("--flow", choices=("join", "bots"), default="join",
                    help="join: 3 players join one by one; bots: the host fills 3 seats with bots")
    ap.add_argument("--game", default="provinces", choices=sorted(bm.GAME_OPTIONS))
    ap.add_argument("--server-core", type=int, default=None, help="taskset core for the server (default: none)")
    ap.add_argument("--database-url", default="postgresql://127.0.0.1:5432/test")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--tree", type=Path, help="another checkout (e.g. `git archive` of a commit) run by turns with this one")
    ap.add_argument("--alternations", type=int, default=2, help="with --tree: servers of each checkout started in turn")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--py-spy", type=Path, help="record the server with py-spy (raw collapsed stacks): FILE.MODE.txt")
    ap.add_argument("--profile", type=int, default=0, help="N matches in-process under cProfile instead")
    ap.add_argument("--profile-out", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bf-creation-") as d:
        tmp = Path(d)
        if args.profile:
            asyncio.run(profile(args, tmp))
            return
        info = bs.machine_info()
        print(f"git {info['git_head']} (app changes: {len(info['app_uncommitted'])}), {info['hot_paths']}, "
              f"load {info['loadavg']}", flush=True)
        results = []
        for m in (m for m in args.modes.split(",") if m):
            # with --tree: this checkout and the other one by turns, a fresh server each time, so both
            # see the same neighbours on a shared machine
            for _ in range(args.alternations if args.tree else 1):
                results.append(run_mode(m, args, tmp))
                if args.tree:
                    results.append(run_mode(m, args, tmp, args.tree))
    for r in results:
        sp = r["spread"]
        print(f"{r['mode']}: make a match {sp['cpu_ms_per_match']['median']:.2f} ms CPU (rounds "
              f"{sp['cpu_ms_per_match']['min']:.2f}..{sp['cpu_ms_per_match']['max']:.2f}); sign-ups "
              f"{sp['cpu_ms_players_per_match']['median']:.2f} ms; "
              + "; ".join(f"{k} {v['cpu_ms_mean']['median']:.2f}" for k, v in sp["routes"].items()))
    if args.json_out:
        args.json_out.write_text(json.dumps({"machine": info, "args": {k: str(v) for k, v in vars(args).items()},
                                             "results": results}, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
