"""Server benchmark: actions/s per server core, action->ack latency, messages per action, group commit.

    . .venv/bin/activate && (cd bench/loadgen && npm ci) && python bench/bench_server.py --matches 300

What it does (results: ``docs/benchmarks/server.md``):

1. Starts a real ``bannerfall serve`` pinned to one core (``taskset -c 0``) on a fresh SQLite file in
   a temp dir (or a uniquely named Postgres database with ``--database-url``, dropped afterwards),
   with ``BANNERFALL_RUN_BOTS=false``.
2. Creates M Provinces matches of 4 seats over REST (4 players registered per match, lobby created,
   joined, started; options ``turn_seconds`` 3600 and ``max_rounds`` 1000 so no deadline fires and
   no match ends during the run).
3. Starts the load generator pinned to the other core (``taskset -c 1``): by default
   ``bench/loadgen/loadgen.mjs`` (Node.js + ws), or ``--generator python`` (same protocol, asyncio +
   websockets) to show whether Python could drive it. It opens 4 sockets per match (hello with each
   seat's token and ``"deltas": true``, or false with ``--full-states``; each socket keeps its own
   audience version from ``state``/``delta`` messages and resumes on a gap); the seat on turn sends
   ``set_dealing`` (cycling modes) ``--dealing-per-turn`` times, then ``end_turn``; the other seats
   only receive.
4. Phases: warm-up; **closed loop** (every match keeps one action in flight: the maximum rate);
   **open loop** at ``--open-fraction`` (default 0.5) of the measured closed-loop rate, paced sends,
   for the latency at half load. For each phase: actions acked/s, latency percentiles, messages
   received per action, server CPU (``/proc/PID/stat``) -> actions per server-core-second,
   generator CPU, per-core busy % sampled each second (is the generator core saturated?), and the
   group commit counters from ``/metrics`` (commits/s, records/s, mean batch).
5. ``--profile S``: one more closed-loop phase with ``py-spy record -f speedscope`` on the server
   for S seconds; the top frames by cumulative and self % are printed.

Everything is printed and, with ``--json-out``, written as JSON.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
LOADGEN_DIR = ROOT / "bench" / "loadgen"
CLK_TCK = os.sysconf("SC_CLK_TCK")
SERVER_CORE = 0


# ---------------------------------------------------------------------------- machine and /proc
def hot_paths() -> str:
    """What the server started from this checkout runs: ``compiled``, or ``source: <why>``
    (``app/_native.py``: the same check the server makes at start, with the environment it inherits)."""
    sys.path.insert(0, str(ROOT / "app"))
    try:
        import _native  # app/_native.py imports nothing of app
    finally:
        sys.path.pop(0)
    why = _native.why_source()
    return "compiled" if why is None else f"source: {why}"


#: the installed distributions whose versions a benchmark's figures depend on (the server's socket,
#: HTTP and database paths and the load generators' clients), recorded with every run: the project
#: has no lock file, so each fresh install may resolve newer releases
VERSIONED = ("uvicorn", "uvloop", "httptools", "websockets", "starlette", "fastapi", "pydantic", "pydantic-core",
             "orjson", "sqlalchemy", "aiosqlite", "asyncpg", "redis", "httpx", "httpx-ws", "anyio", "mypy")


def dependency_versions() -> dict[str, str | None]:
    """The installed version of each of :data:`VERSIONED` (None: not installed)."""
    from importlib import metadata
    out: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine_info() -> dict[str, Any]:
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        node = None
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--short", "app"], capture_output=True, text=True, cwd=ROOT).stdout.split("\n")
    return {"git_head": git, "app_uncommitted": [d.strip() for d in dirty if d.strip()],
            "hot_paths": hot_paths(), "nproc": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
            "node": node, "kernel": platform.release(), "loadavg": os.getloadavg(),
            "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
            "versions": dependency_versions()}


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_schedstat(pid: int) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for a CPU) summed over the process's threads
    (/proc/PID/task/*/schedstat): the second says whether the process was starved by neighbours."""
    run = wait = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                a, b, _ = f.read().split()
        except (OSError, ValueError):
            continue
        run += int(a)
        wait += int(b)
    return run / 1e9, wait / 1e9


def proc_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def core_times() -> dict[str, tuple[int, int]]:
    """cpuN -> (busy, total) jiffies from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *vals = line.split()
                v = list(map(int, vals))
                idle = v[3] + v[4]
                total = sum(v[:8])
                out[name] = (total - idle, total)
    return out


def wait_until_quiet(max_wait: float, busy_pct: float = 25.0, window: float = 3.0) -> float | None:
    """Wait (at most ``max_wait`` s) for a ``window`` in which the whole machine is under
    ``busy_pct`` % busy; returns the busy % seen last (None if it never got quiet)."""
    deadline = time.monotonic() + max_wait
    while True:
        a = core_times()
        time.sleep(window)
        b = core_times()
        busy = sum(b[k][0] - a[k][0] for k in b) / max(1, sum(b[k][1] - a[k][1] for k in b)) * 100
        if busy < busy_pct:
            return busy
        if time.monotonic() > deadline:
            print(f"  machine still {busy:.0f}% busy after waiting {max_wait:.0f} s: measuring anyway")
            return None


class CoreSampler(threading.Thread):
    """Per-core busy % every ``interval`` seconds, plus the two processes' CPU % over the same slices."""

    def __init__(self, pids: dict[str, int], interval: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pids = pids
        self.interval = interval
        self.samples: list[dict[str, float]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        prev_cores = core_times()
        prev_p = {k: proc_cpu_seconds(p) for k, p in self.pids.items()}
        prev_t = time.monotonic()
        while not self._halt.wait(self.interval):
            cores = core_times()
            now = time.monotonic()
            sample: dict[str, float] = {}
            for name, (busy, total) in cores.items():
                pb, pt = prev_cores.get(name, (busy, total))
                sample[name] = 100.0 * (busy - pb) / max(1, total - pt)
            for k, pid in self.pids.items():
                try:
                    c = proc_cpu_seconds(pid)
                except OSError:
                    continue
                sample[k] = 100.0 * (c - prev_p[k]) / (now - prev_t)
                prev_p[k] = c
            prev_cores, prev_t = cores, now
            self.samples.append(sample)

    def stop(self) -> dict[str, dict[str, float]]:
        self._halt.set()
        self.join()
        keys = sorted({k for s in self.samples for k in s})
        return {k: {"min": round(min(s[k] for s in self.samples if k in s), 1),
                    "mean": round(sum(s[k] for s in self.samples if k in s) / max(1, sum(k in s for s in self.samples)), 1),
                    "max": round(max(s[k] for s in self.samples if k in s), 1)}
                for k in keys if any(k in s for s in self.samples)}


# ---------------------------------------------------------------------------- server
class Postgres:
    """A uniquely named database on the server of ``admin_url`` (created here, dropped afterwards)."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url.replace("postgresql+asyncpg://", "postgresql://", 1)
        base = self.admin_url.rstrip("/")
        if base.count("/") > 2:  # strip a database name
            base = base.rsplit("/", 1)[0]
        self.name = f"bf_bench_{uuid.uuid4().hex[:12]}"
        self.url = base.replace("postgresql://", "postgresql+asyncpg://", 1) + "/" + self.name
        self._exec_url = base + "/postgres"

    async def _exec(self, sql: str) -> None:
        import asyncpg

        conn = await asyncpg.connect(self._exec_url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    def create(self) -> str:
        asyncio.run(self._exec(f'CREATE DATABASE "{self.name}"'))
        return self.url

    def drop(self) -> None:
        asyncio.run(self._exec(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))


class Server:
    def __init__(self, database_url: str, core: int | None, env: dict[str, str], log_path: Path,
                 cmd: list[str] | None = None, nice: int = 0) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_token = secrets.token_urlsafe(24)
        cmd = cmd or [sys.executable, "-m", "app.cli", "serve"]
        if core is not None:
            cmd = ["taskset", "-c", str(core)] + cmd
        if nice:
            cmd = ["nice", "-n", str(nice)] + cmd
        self.cmd = cmd
        self.env = {**os.environ, "BANNERFALL_PORT": str(self.port), "BANNERFALL_DATABASE_URL": database_url,
                    "BANNERFALL_ADMIN_TOKEN": self.admin_token, "BANNERFALL_LOG_LEVEL": "warning",
                    "BANNERFALL_RUN_BOTS": "false", "PYTHONUNBUFFERED": "1", **env}
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 90.0) -> Server:
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}: {self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=0.5).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not start: " + self.log_path.read_text()[-3000:])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()

    def metrics(self) -> dict[str, float]:
        text = httpx.get(self.url + "/metrics", timeout=10).text
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("bannerfall_") and not line.startswith("#"):
                m = re.match(r"^(\S+?)(\{[^}]*\})?\s+(\S+)$", line)
                if m:
                    out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        return out


def histogram_quantiles(m0: dict[str, float], m1: dict[str, float], name: str,
                        qs: tuple[float, ...] = (0.5, 0.9, 0.99)) -> dict[str, float | int | None]:
    """Quantiles (ms, each the upper bound of its bucket) of what the server's Prometheus histogram
    ``name`` observed between two ``/metrics`` reads (``Server.metrics``), and the count."""
    prefix = name + '_bucket{le="'
    bounds = sorted((float(k[len(prefix):-2]), k) for k in m1 if k.startswith(prefix))
    cum = [(b, m1[k] - m0.get(k, 0.0)) for b, k in bounds]
    total = cum[-1][1] if cum else 0.0
    out: dict[str, float | int | None] = {"n": int(total)}
    for q in qs:
        found = next((b for b, c in cum if c >= q * total), None) if total else None
        out[f"p{round(q * 100):d}_ms"] = None if found is None else found * 1000
    return out


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- matches over REST
async def create_matches(url: str, count: int, seats: int, options: dict[str, Any],
                         concurrency: int = 16, game: str = "provinces", prefix: str = "bench") -> list[dict[str, Any]]:
    """``count`` matches of ``game``, each with ``seats`` freshly registered players (named
    ``{prefix}{i}-{seat}``): players registered at once, lobby made, the other seats joined one by
    one (joins of one lobby wait for its row lock), started. At most ``concurrency`` requests in flight. Returns
    ``[{"id": match_id, "tokens": [token of seat 0, ...]}]`` in order."""
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url + "/api/v1", timeout=60, limits=limits) as http:

        async def call(method: str, path: str, token: str | None = None, body: Any = None) -> Any:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            for _attempt in range(20):  # a 503 storage_busy is retried after its Retry-After, as clients do
                async with sem:
                    resp = await http.request(method, path, json=body, headers=headers)
                if resp.status_code != 503:
                    break
                await asyncio.sleep(float(resp.headers.get("Retry-After") or 1))
            if resp.status_code >= 400:
                raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
            return resp.json()

        async def one(i: int) -> dict[str, Any]:
            players = await asyncio.gather(*(call("POST", "/players", body={"name": f"{prefix}{i}-{s}"})
                                             for s in range(seats)))
            tokens = [p["token"] for p in players]
            lobby = await call("POST", "/lobbies", tokens[0], {"game": game, "seats": seats, "options": options})
            for s in range(1, seats):  # one by one: joins of one lobby wait for its row lock (Postgres)
                await call("POST", f"/lobbies/{lobby['id']}/join", tokens[s], {"seat": s})
            lobby = await call("POST", f"/lobbies/{lobby['id']}/start", tokens[0])
            return {"id": lobby["match_id"], "tokens": tokens}

        return list(await asyncio.gather(*(one(i) for i in range(count))))


# ---------------------------------------------------------------------------- load generators
class Generator:
    """One load generator process speaking the loadgen line protocol (see bench/loadgen/loadgen.mjs)."""

    def __init__(self, kind: str, config: dict[str, Any], core: int | None, workdir: Path, index: int,
                 nice: int = 0) -> None:
        cfg_path = workdir / f"loadgen-{index}.json"
        cfg_path.write_text(json.dumps(config))
        if kind == "bots":
            cmd = [sys.executable, str(LOADGEN_DIR / "botgen.py"), str(cfg_path)]
        elif kind == "node":
            if not (LOADGEN_DIR / "node_modules" / "ws").is_dir():
                raise SystemExit("bench/loadgen/node_modules is missing: run `npm ci` in bench/loadgen first")
            cmd = ["node", str(LOADGEN_DIR / "loadgen.mjs"), str(cfg_path)]
        else:
            cmd = [sys.executable, str(LOADGEN_DIR / "loadgen.py"), str(cfg_path)]
        if core is not None:
            cmd = ["taskset", "-c", str(core)] + cmd
        if nice:
            cmd = ["nice", "-n", str(nice)] + cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     cwd=ROOT)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read_event(self, want: str) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"load generator exited ({self.proc.poll()})")
            msg = json.loads(line)
            if msg.get("event") == want:
                return msg
            if msg.get("event") == "fatal":
                raise RuntimeError(f"load generator failed: {msg.get('error')}")
            print(f"  [loadgen] {line.strip()}", file=sys.stderr)

    def command(self, cmd: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def quit(self) -> None:
        try:
            self.command({"cmd": "quit"})
            self.proc.wait(20)
        except Exception:
            self.proc.kill()


def genbase_summary(values: list[float]) -> dict[str, Any]:
    """:func:`bench/loadgen/genbase.summary` (the generators' latency summary) over merged samples."""
    if str(LOADGEN_DIR) not in sys.path:
        sys.path.insert(0, str(LOADGEN_DIR))
    from genbase import summary  # type: ignore[import-not-found]  # noqa: PLC0415 - the generators' module

    return summary(values)


def merge_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum counters of several generators; latency percentiles from all their samples (the worst
    generator's when one sent no samples: the Node generator). The samples are dropped from the result."""
    samples = {key: [r.pop(f"{key}_samples", None) for r in results] for key in ("latency", "sched_latency")}
    out = dict(results[0])
    if len(results) == 1:
        return out
    for key in ("sent", "acked", "acked_in_window", "acks_per_s", "sent_per_s", "bytes_in_window",
                "matches_ended", "loadgen_cpu_s", "max_backlog"):
        out[key] = sum(r[key] for r in results)
    for key in ("resumes", "spectators", "spectator_bytes_in_window", "spectator_resumes", "ended_actions",
                "refills", "spares_left", "spares_taken_total", "idle_slots", "idle_slot_s", "refill_failed_total"):
        if all(key in r for r in results):
            out[key] = sum(r[key] or 0 for r in results)
    if out.get("ended_actions") is not None:
        out["mean_actions_per_ended_match"] = out["ended_actions"] / out["matches_ended"] if out["matches_ended"] else None
    for key in ("refill_ms_mean",):  # means of different counts: the largest
        vals = [r[key] for r in results if r.get(key) is not None]
        out[key] = max(vals) if vals else None
    for key in ("pool_dry_at_s",):  # the first generator to run out
        vals = [r[key] for r in results if r.get(key) is not None]
        out[key] = min(vals) if vals else None
    for key in ("median_state_bytes", "median_update_bytes"):  # medians do not merge: the largest
        vals = [r[key] for r in results if r.get(key) is not None]
        out[key] = max(vals) if vals else None
    for key in ("actions_by_type", "errors", "messages_in_window", "spectator_messages_in_window"):
        if key not in results[0]:
            continue
        c: Counter = Counter()
        for r in results:
            c.update(r[key])
        out[key] = dict(c)
    total = sum(out["messages_in_window"].values())
    out["messages_per_ack"] = total / max(1, out["acked_in_window"])
    for key in ("latency", "sched_latency"):
        if out.get(key) and all(s is not None for s in samples[key]):  # exact percentiles of all samples
            out[key] = genbase_summary([x for s in samples[key] for x in s or ()])
        elif out.get(key):
            out[key] = max((r[key] for r in results), key=lambda s: s.get("p99_ms") or 0)
            out[key]["note"] = "worst of the generators"
    lags = [r["loadgen_loop_lag"] for r in results if r.get("loadgen_loop_lag")]
    if lags:
        out["loadgen_loop_lag"] = {"max_ms": max(g["max_ms"] or 0 for g in lags),
                                   "p99_ms": max(g["p99_ms"] or 0 for g in lags),
                                   "over_10ms": sum(g["over_10ms"] for g in lags), "generators": len(lags)}
    gcs = [r["loadgen_gc"] for r in results if r.get("loadgen_gc")]
    if gcs:  # the generators' own collections (genbase.GcPauses): the worst generator's max
        out["loadgen_gc"] = {k: (sum if k in ("count", "total_ms") else max)(g.get(k) or 0 for g in gcs)
                             for k in gcs[0]}
    return out


# ---------------------------------------------------------------------------- phases
#: ``python -c GC_WRAPPER log|off``: ``bannerfall serve`` with its cyclic-GC collections timed (one line
#: "epoch generation wall_ms tracked_objects(-1 unless gen 2) cpu_ms collected" per collection in $BENCH_GC_LOG),
#: or with the GC disabled (collections are then not logged). Diagnosis only, from the environment:
#: ``BENCH_GC_REFS=K`` appends, every K-th young collection, what it walks (objects and the references
#: it follows, by type) to ``$BENCH_GC_LOG.refs``; ``BENCH_SWITCH_INTERVAL=S`` sets
#: ``sys.setswitchinterval(S)`` (how long a thread waiting for the GIL, such as SQLite's log
#: committer, lets the event loop run before it asks for it).
GC_WRAPPER = """
import gc, os, sys, time
mode = sys.argv[1]
if os.environ.get('BENCH_SWITCH_INTERVAL'):
    sys.setswitchinterval(float(os.environ['BENCH_SWITCH_INTERVAL']))
if mode == 'off':
    gc.disable()
out = open(os.environ['BENCH_GC_LOG'], 'a', buffering=1)
start = [0.0, 0.0, -1]
sizes = os.environ.get('BENCH_GC_SIZES') == '1'
def cb(phase, info):
    if phase == 'start':
        # BENCH_GC_SIZES=1: the objects the collection walks (every generation up to its own; counting
        # them walks them once more, so only for diagnosis)
        start[2] = sum(len(gc.get_objects(g)) for g in range(info['generation'] + 1)) if sizes else -1
        if sizes and info['generation'] == int(os.environ.get('BENCH_GC_DUMP_GEN') or 0) and start[2] > int(os.environ.get('BENCH_GC_DUMP_OVER') or 10**9) and not start[3:]:
            import collections
            young = [o for g in range(info['generation'] + 1) for o in gc.get_objects(g)]
            kinds = collections.Counter(type(o).__module__ + '.' + type(o).__qualname__ for o in young)
            if not info['generation']:
                start.append(1)  # once (young collections are many); each older one is dumped
            with open(os.environ['BENCH_GC_LOG'] + '.dump', 'a') as dump:
                dump.write('%.3f: %d objects in generations 0..%d\\n' % (time.time(), len(young), info['generation']))
                for kind, n in kinds.most_common(30):
                    dump.write('%8d %s\\n' % (n, kind))
                for o in [o for o in young if type(o) is tuple][:20]:
                    dump.write(('tuple %r' % (o,))[:300] + '\\n')
        if refs_every and info['generation'] == 0:
            refs_seen[0] += 1
            if refs_seen[0] % refs_every == 0:
                # BENCH_GC_REFS=K: every K-th young collection, what it walks: objects and the
                # references it follows (tp_traverse visits), by type
                import collections
                young = gc.get_objects(0)
                visits = collections.Counter()
                counts = collections.Counter()
                for o in young:
                    kind = type(o).__module__ + '.' + type(o).__qualname__
                    counts[kind] += 1
                    visits[kind] += len(gc.get_referents(o))
                with open(os.environ['BENCH_GC_LOG'] + '.refs', 'a') as dump:
                    dump.write('%.3f: %d objects, %d references\\n' % (time.time(), len(young), sum(visits.values())))
                    for kind, n in visits.most_common(25):
                        dump.write('%8d refs %6d objs %s\\n' % (n, counts[kind], kind))
                del young
        start[0] = time.perf_counter()
        start[1] = time.thread_time()
    else:
        ms = (time.perf_counter() - start[0]) * 1000
        cpu_ms = (time.thread_time() - start[1]) * 1000
        # the objects this collection walked and kept (not the frozen ones): a list of every tracked
        # object here, with the GIL held, would stall the loop as long as a collection
        tracked = start[2] if sizes else (len(gc.get_objects(2)) if info['generation'] == 2 else -1)
        out.write('%.3f %d %.3f %d %.3f %d\\n' % (time.time(), info['generation'], ms, tracked, cpu_ms,
                                                  info['collected']))
refs_every = int(os.environ.get('BENCH_GC_REFS') or 0)
refs_seen = [0]
gc.callbacks.append(cb)
census_path = os.environ.get('BENCH_CENSUS_PATH')
if census_path:
    # SIGUSR2: one JSON line in $BENCH_CENSUS_PATH of where the memory is (RSS; glibc malloc's in-use
    # and free-but-kept KB; pymalloc's arenas; the tracked objects by type with their shallow sizes;
    # with BENCH_TRACEMALLOC=1, Python allocations by source line grown since the census before)
    import signal, json, ctypes, collections, tempfile
    if os.environ.get('BENCH_TRACEMALLOC') == '1':
        import tracemalloc
        tracemalloc.start(1)
    last_snapshot = []
    def census(signum, frame):
        rec = {'t': time.time()}
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith(('VmRSS', 'RssAnon', 'RssFile')):
                    k, v = line.split(':')
                    rec[k] = int(v.split()[0])
        try:
            class MallInfo2(ctypes.Structure):
                _fields_ = [(n, ctypes.c_size_t) for n in ('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd',
                                                          'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]
            libc = ctypes.CDLL('libc.so.6')
            libc.mallinfo2.restype = MallInfo2
            mi = libc.mallinfo2()
            rec['malloc_kb'] = {n: getattr(mi, n) // 1024 for n, _ in MallInfo2._fields_}
        except Exception as exc:
            rec['malloc_kb'] = repr(exc)
        fd, name = tempfile.mkstemp()
        saved = os.dup(2)
        os.dup2(fd, 2)
        try:
            sys._debugmallocstats()
            ctypes.CDLL(None).fflush(None)  # C's stderr may be buffered here
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(fd)
        with open(name) as f:
            text = f.read()
        os.unlink(name)
        rec['pymalloc'] = [' '.join(l.split()) for l in text.splitlines()
                           if ' = ' in l and ('arena' in l or l.startswith(('Total', '# bytes')))]
        objs = gc.get_objects()
        counts, sizes = collections.Counter(), collections.Counter()
        for o in objs:
            k = type(o).__module__ + '.' + type(o).__qualname__
            counts[k] += 1
            sizes[k] += sys.getsizeof(o)
        del objs
        rec['gc_tracked'] = sum(counts.values())
        rec['types'] = [[k, counts[k], sizes[k] // 1024] for k, _ in sizes.most_common(40)]
        owners_of = [t for t in (os.environ.get('BENCH_CENSUS_OWNERS') or '').split(',') if t]
        if owners_of:
            # BENCH_CENSUS_OWNERS=type,...: who holds the objects of these types (module.qualname):
            # for up to 200 of each, the referrer's type, and for a dict or list its own referrer's,
            # so that what keeps them alive is named (diagnosis only: it walks the heap again)
            objs = gc.get_objects()
            own = {}
            def kind(o):
                return type(o).__module__ + '.' + type(o).__qualname__
            for t in owners_of:
                chains = collections.Counter()
                sample = [o for o in objs if kind(o) == t][:200]
                mine = (objs, sample)
                for o in sample:
                    for r in gc.get_referrers(o):
                        if any(r is m for m in mine) or type(r).__name__ in ('frame', 'list_iterator'):
                            continue
                        name = kind(r)
                        if isinstance(r, (dict, list, set, tuple)):
                            up = [kind(u) for u in gc.get_referrers(r)
                                  if not any(u is m for m in mine) and type(u).__name__ not in ('frame', 'list_iterator')][:2]
                            name += ' <- ' + '|'.join(up)
                        chains[name] += 1
                del sample, mine
                own[t] = chains.most_common(8)
            del objs
            rec['owners'] = own
        if os.environ.get('BENCH_TRACEMALLOC') == '1':
            snap = tracemalloc.take_snapshot().filter_traces((
                tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, '<frozen importlib._bootstrap>')))
            rec['traced_kb'] = tracemalloc.get_traced_memory()[0] // 1024
            if last_snapshot:
                rec['grown_by_line'] = [[str(d.traceback), d.size_diff // 1024, d.count_diff]
                                        for d in snap.compare_to(last_snapshot[0], 'lineno')[:40]]
            last_snapshot[:] = [snap]
        with open(census_path, 'a') as f:
            f.write(json.dumps(rec) + '\\n')
    signal.signal(signal.SIGUSR2, census)
fullgc_path = os.environ.get('BENCH_FULLGC_PATH')
if fullgc_path:
    # SIGUSR1: two timed full collections, one JSON line in $BENCH_FULLGC_PATH: what a collection of
    # the old generation costs with everything live now in it (the first also promotes the younger
    # generations; the second is a full collection of a settled heap), and the objects it walked
    import signal, json
    def fullgc(signum, frame):
        t0 = time.perf_counter()
        first = gc.collect()
        t1 = time.perf_counter()
        second = gc.collect()
        t2 = time.perf_counter()
        tracked = len(gc.get_objects())
        with open(fullgc_path, 'a') as f:
            f.write(json.dumps({'t': time.time(), 'first_ms': (t1 - t0) * 1000, 'second_ms': (t2 - t1) * 1000,
                                'tracked': tracked, 'frozen': gc.get_freeze_count(),
                                'collected': [first, second]}) + '\\n')
    signal.signal(signal.SIGUSR1, fullgc)
lag_path = os.environ.get('BENCH_LAG_LOG')
if lag_path:
    import asyncio, uvicorn
    lag_out = open(lag_path, 'a', buffering=1)
    dump_ms = float(os.environ.get('BENCH_STALL_DUMP_MS') or 0)
    if dump_ms:
        # every tick re-arms faulthandler's watchdog: a loop that does not come back within dump_ms
        # gets every thread's stack written by a thread that needs no GIL (so a collection or a long
        # C call is caught too, which a Python watchdog thread cannot see)
        import faulthandler
        dump_out = open(os.environ['BENCH_STALL_DUMP_PATH'], 'a', buffering=1)
    async def _lag_monitor():
        # every 10 ms asks to be woken; how late it wakes is the event loop's lag. One line per 0.5 s:
        # "epoch worst_ms_in_the_last_0.5_s"
        worst, last = 0.0, time.perf_counter()
        while True:
            if dump_ms:
                faulthandler.dump_traceback_later(dump_ms / 1000, file=dump_out)
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            lag = (time.perf_counter() - t - 0.01) * 1000
            worst = max(worst, lag)
            if time.perf_counter() - last >= 0.5:
                lag_out.write('%.3f %.3f\\n' % (time.time(), worst))
                worst, last = 0.0, time.perf_counter()
    _serve = uvicorn.Server.serve
    slow_ms = float(os.environ.get('BENCH_SLOW_CALLBACK_MS') or 0)
    async def serve(self, sockets=None):
        if slow_ms:
            # asyncio's (and uvloop's) debug mode logs every callback that ran longer than this,
            # with its handle (which task, which protocol callback): one long callback or a burst
            import logging
            h = logging.FileHandler(os.environ['BENCH_SLOW_CALLBACK_PATH'])
            h.setFormatter(logging.Formatter('%(created).3f %(message)s'))
            logging.getLogger('asyncio').addHandler(h)
            loop = asyncio.get_running_loop()
            loop.set_debug(True)
            loop.slow_callback_duration = slow_ms / 1000
        task = asyncio.ensure_future(_lag_monitor())
        try:
            await _serve(self, sockets=sockets)
        finally:
            task.cancel()
    uvicorn.Server.serve = serve
sys.argv = ['bannerfall', 'serve']
from app.cli import main
main()
"""


def _signal_for_line(pid: int, signum: int, path: Path, timeout: float, what: str) -> dict[str, Any]:
    """Send ``signum`` to the server at ``pid`` and return the JSON line its GC_WRAPPER handler then
    appends to ``path``; TimeoutError naming ``what`` when none comes within ``timeout`` seconds."""
    before = path.read_text().count("\n") if path.exists() else 0
    os.kill(pid, signum)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) > before and lines[-1].endswith("}"):
            return json.loads(lines[-1])
        time.sleep(0.2)
    raise TimeoutError(f"no {what} from {pid} within {timeout:.0f} s")


def take_census(pid: int, path: Path, timeout: float = 120.0) -> dict[str, Any]:
    """Ask the server at ``pid`` (started with ``BENCH_CENSUS_PATH=path``) for a memory census
    (GC_WRAPPER, SIGUSR2) and return it: the line it appends to ``path``."""
    return _signal_for_line(pid, signal.SIGUSR2, path, timeout, "census")


def full_collection(pid: int, path: Path, timeout: float = 120.0) -> dict[str, Any]:
    """Ask the server at ``pid`` (started with ``BENCH_FULLGC_PATH=path``) for two timed full
    collections (GC_WRAPPER, SIGUSR1) and return the line it appends to ``path``: ``first_ms``,
    ``second_ms``, ``tracked`` (objects the collector walks), ``frozen``, ``collected``."""
    return _signal_for_line(pid, signal.SIGUSR1, path, timeout, "full collection")


def gc_pauses(path: Path, t0: float, t1: float) -> dict[str, Any] | None:
    """Collections logged by GC_WRAPPER between t0 and t1 (epoch s): count and pauses per generation."""
    if not path.exists():
        return None
    out: dict[str, Any] = {}
    for line in path.read_text().splitlines():
        t, gen, ms, *rest = line.split()
        if t0 <= float(t) <= t1:
            g = out.setdefault(f"gen{gen}", {"count": 0, "total_ms": 0.0, "max_ms": 0.0})
            if rest and int(rest[0]) >= 0:
                g["tracked_objects"] = int(rest[0])
            if len(rest) > 1:  # CPU time of the collecting thread (excludes waiting for a CPU)
                g["max_cpu_ms"] = max(g.get("max_cpu_ms", 0.0), float(rest[1]))
            if len(rest) > 2:  # objects found unreachable (cyclic garbage) and freed
                g["collected"] = g.get("collected", 0) + int(rest[2])
            g["count"] += 1
            g["total_ms"] = round(g["total_ms"] + float(ms), 1)
            g["max_ms"] = max(g["max_ms"], float(ms))
    return out


def loop_lag(path: Path, t0: float, t1: float) -> dict[str, Any] | None:
    """The event loop's worst lag (ms) logged by GC_WRAPPER's monitor between t0 and t1 (epoch s)."""
    if not path.exists():
        return None
    worst = [float(ms) for t, ms in (line.split() for line in path.read_text().splitlines()) if t0 <= float(t) <= t1]
    if not worst:
        return None
    worst.sort()
    return {"max_ms": round(worst[-1], 1), "p99_of_half_seconds_ms": round(worst[min(len(worst) - 1, int(0.99 * len(worst)))], 1),
            "half_seconds_over_20ms": sum(w > 20 for w in worst), "samples": len(worst)}


def run_phase(server: Server, gens: list[Generator], cmd: dict[str, Any], wait_quiet: float = 0.0) -> dict[str, Any]:
    quiet = wait_until_quiet(wait_quiet) if wait_quiet else None
    load_before = os.getloadavg()
    m0 = server.metrics()
    epoch0 = time.time()
    cpu0 = proc_cpu_seconds(server.pid)
    sched0 = proc_schedstat(server.pid)
    gcpu0 = sum(proc_cpu_seconds(g.pid) for g in gens)
    sampler = CoreSampler({"server": server.pid, **{f"gen{i}": g.pid for i, g in enumerate(gens)}})
    t0 = time.monotonic()
    sampler.start()
    per_gen = dict(cmd)
    if cmd.get("rate"):
        per_gen["rate"] = cmd["rate"] / len(gens)
    for g in gens:
        g.command(per_gen)
    results = [g.read_event("result") for g in gens]
    wall = time.monotonic() - t0
    cores = sampler.stop()
    cpu = proc_cpu_seconds(server.pid) - cpu0
    sched1 = proc_schedstat(server.pid)
    ran, waited = sched1[0] - sched0[0], sched1[1] - sched0[1]
    gcpu = sum(proc_cpu_seconds(g.pid) for g in gens) - gcpu0
    m1 = server.metrics()
    res = merge_results(results)
    commits = m1.get("bannerfall_log_commits_total", 0) - m0.get("bannerfall_log_commits_total", 0)
    records = m1.get("bannerfall_log_records_total", 0) - m0.get("bannerfall_log_records_total", 0)
    res.update({
        "wall_s_incl_drain": wall,
        "server_cpu_s": cpu,
        "server_cpu_pct": 100.0 * cpu / wall,
        # of the wall time: on a CPU / runnable but waiting for one / neither (blocked: I/O, idle)
        "server_sched_pct": {"running": 100.0 * ran / wall, "waiting_for_cpu": 100.0 * waited / wall,
                             "blocked_or_idle": max(0.0, 100.0 * (wall - ran - waited) / wall)},
        "acked_per_server_cpu_s": res["acked"] / cpu if cpu else None,
        "generator_cpu_s": gcpu,
        "generator_cpu_pct": 100.0 * gcpu / wall,
        "cores_busy_pct": cores,
        "log_commits": commits,
        "log_records": records,
        "commits_per_s": commits / wall,
        "records_per_s": records / wall,
        "mean_batch": records / commits if commits else None,
        # the server's own view (bucket upper bounds): log record queued -> its delta and ack sent,
        # and each group commit (app/metrics.py)
        "server_durable": histogram_quantiles(m0, m1, "bannerfall_action_durable_seconds"),
        "server_commit": histogram_quantiles(m0, m1, "bannerfall_log_commit_seconds"),
        "server_rss_mb": proc_rss_kb(server.pid) / 1024,
        "loadavg_before": load_before,
        "gc": gc_pauses(Path(server.env["BENCH_GC_LOG"]), epoch0, time.time()) if "BENCH_GC_LOG" in server.env else None,
        "loop_lag": loop_lag(Path(server.env["BENCH_LAG_LOG"]), epoch0, time.time()) if "BENCH_LAG_LOG" in server.env else None,
        "machine_busy_pct_before": quiet,
    })
    srv_core = f"cpu{SERVER_CORE}"
    if srv_core in cores and "server" in cores:
        res["others_on_server_core_pct"] = round(cores[srv_core]["mean"] - cores["server"]["mean"], 1)
    return res


def fmt_opt(v: float | None, spec: str = ".0f") -> str:
    return "–" if v is None else format(v, spec)


def bytes_per_socket_per_action(r: dict[str, Any], seats: int = 4) -> float:
    """Bytes the seat sockets received in the window ÷ seats per match ÷ actions acked in it (every
    action is one match's; its ``seats`` sockets are the ones that may hear of it)."""
    return r["bytes_in_window"] / seats / max(1, r["acked_in_window"])


def show(name: str, r: dict[str, Any]) -> None:
    lat = r["latency"]
    print(f"\n== {name}: {r['mode']} loop, {r['seconds']:.1f} s" + (f", target {r['target_rate']:.0f}/s" if r.get("target_rate") else ""))
    print(f"  acked {r['acked_in_window']} in window -> {r['acks_per_s']:.0f} actions/s; "
          f"{r['acked_per_server_cpu_s']:.0f} actions per server CPU-second "
          f"(server CPU {r['server_cpu_pct']:.0f}%, generator CPU {r['generator_cpu_pct']:.0f}%)")
    print(f"  latency send->ack ms: p50 {lat['p50_ms']} p90 {lat['p90_ms']} p99 {lat['p99_ms']} "
          f"p99.9 {lat['p999_ms']} max {lat['max_ms']} (n={lat['n']})")
    if r.get("sched_latency"):
        s = r["sched_latency"]
        print(f"  latency scheduled->ack ms: p50 {s['p50_ms']} p99 {s['p99_ms']} max {s['max_ms']}; "
              f"max backlog {r['max_backlog']}")
    print(f"  messages per ack {r['messages_per_ack']:.2f} {r['messages_in_window']}, mean state "
          f"{r['mean_state_bytes']:.0f} B, mean delta {fmt_opt(r.get('mean_delta_bytes'))} B, median state/delta "
          f"{fmt_opt(r.get('median_update_bytes'))} B, bytes per socket per action {bytes_per_socket_per_action(r):.0f}, "
          f"resumes {r.get('resumes', 0)}, actions {r['actions_by_type']}, errors {r['errors'] or 'none'}")
    sp = r["server_sched_pct"]
    print(f"  server time: running {sp['running']:.0f}%, waiting for a CPU {sp['waiting_for_cpu']:.0f}%, "
          f"blocked/idle {sp['blocked_or_idle']:.0f}% (summed over threads, from schedstat)")
    if r.get("gc"):
        print("  cyclic GC: " + "; ".join(f"{g} {v['count']}x, total {v['total_ms']:.0f} ms, max {v['max_ms']:.1f} ms"
                                          + (f" (CPU max {v['max_cpu_ms']:.1f} ms)" if "max_cpu_ms" in v else "")
                                          + (f" ({v['tracked_objects']:,} objects tracked)" if "tracked_objects" in v else "")
                                          for g, v in sorted(r["gc"].items())))
    print(f"  group commit: {r['commits_per_s']:.0f} commits/s for {r['records_per_s']:.0f} records/s "
          f"(mean batch {r['mean_batch'] or 0:.1f})")
    cores = r["cores_busy_pct"]
    print("  busy % (min/mean/max per 1 s): " + "; ".join(
        f"{k} {v['min']:.0f}/{v['mean']:.0f}/{v['max']:.0f}" for k, v in cores.items())
        + f"; others on the server core ~{r.get('others_on_server_core_pct', 0):.0f}%; load avg before "
        + " ".join(f"{x:.2f}" for x in r["loadavg_before"]))


# ---------------------------------------------------------------------------- profile summary
def start_py_spy(pid: int, seconds: float, out: Path, *, rate: int = 100, native: bool = False,
                 idle: bool = False) -> subprocess.Popen:
    """``py-spy record`` of process ``pid`` for ``seconds`` into the speedscope file ``out``;
    ``native``: C frames too (the process is stopped at each sample), else ``--nonblocking``;
    ``idle``: idle samples too."""
    return subprocess.Popen(["py-spy", "record", "-p", str(pid), "-d", str(int(seconds)), "-r", str(rate),
                             "-f", "speedscope", "-o", str(out)]
                            + (["--native"] if native else ["--nonblocking"]) + (["--idle"] if idle else []),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def print_profile(out: Path, prof: dict[str, Any], self_rows: int = 20, indent: str = "") -> None:
    """Print :func:`summarize_speedscope`'s ``prof`` of the file ``out``: the top frames."""
    print(f"{indent}profile {out}; % of samples by thread: {prof['threads']}")
    print(f"{indent}top frames by cumulative % of the event-loop thread ({prof['main_thread']}):")
    for name, pct in prof["cumulative"]:
        print(f"{indent}  {pct:5.1f}%  {name}")
    print(f"{indent}top frames by self %:")
    for name, pct in prof["self"][:self_rows]:
        print(f"{indent}  {pct:5.1f}%  {name}", flush=True)


def summarize_speedscope(path: Path, top: int = 30) -> dict[str, Any]:
    """Cumulative (frame anywhere on the stack, counted once per sample) and self (leaf) shares of
    the samples, per function (name + file), over the event loop thread (the one with most samples)
    and over all threads."""
    data = json.loads(path.read_text())
    frames = data["shared"]["frames"]

    def key(i: int) -> str:
        f = frames[i]
        file = f.get("file") or ""
        for marker in ("site-packages/", "/work/main/", "lib/python3.11/"):
            if marker in file:
                file = file.split(marker, 1)[1]
                break
        return f"{f['name']} ({file})"

    per_thread = []
    for prof in data["profiles"]:
        cum: Counter = Counter()
        self_: Counter = Counter()
        total = 0.0
        for stack, w in zip(prof["samples"], prof["weights"], strict=True):
            total += w
            for k in {key(i) for i in stack}:
                cum[k] += w
            if stack:
                self_[key(stack[-1])] += w
        per_thread.append({"thread": prof.get("name"), "samples": total, "cum": cum, "self": self_})
    per_thread.sort(key=lambda t: -t["samples"])
    main = per_thread[0]

    def table(counter: Counter, total: float, skip_root: bool = False) -> list[tuple[str, float]]:
        items = counter.most_common()
        if skip_root and items:  # the bootstrap frames (cli, uvicorn, asyncio.run) under everything
            root = items[0][1]
            items = [(k, v) for k, v in items if v < root * 0.995]
        return [(k, round(100.0 * v / total, 1)) for k, v in items[:top]]

    everything = sum(t["samples"] for t in per_thread)
    return {"threads": [(t["thread"], round(100.0 * t["samples"] / everything, 1)) for t in per_thread],
            "main_thread": main["thread"],
            "cumulative": table(main["cum"], main["samples"], skip_root=True),
            "self": table(main["self"], main["samples"])}


# ---------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--matches", type=int, default=300, help="matches of 4 seats (4 sockets each)")
    ap.add_argument("--seats", type=int, default=4)
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds of closed loop before measuring")
    ap.add_argument("--seconds", type=float, default=20.0, help="closed-loop measurement")
    ap.add_argument("--open-seconds", type=float, default=20.0, help="open-loop measurement (0: skip)")
    ap.add_argument("--open-fraction", type=float, default=0.5, help="open-loop rate as a fraction of the closed-loop rate")
    ap.add_argument("--open-rate", type=float, default=None, help="open-loop rate in actions/s (overrides --open-fraction)")
    ap.add_argument("--dealing-per-turn", type=int, default=1, help="set_dealing actions before each end_turn")
    ap.add_argument("--generator", choices=("node", "python"), default="node")
    ap.add_argument("--generators", type=int, default=1, help="generator processes (all on the generator core)")
    ap.add_argument("--parse", choices=("actor", "all", "scan"), default="actor",
                    help="what the generator JSON-parses (see loadgen.mjs)")
    ap.add_argument("--full-states", action="store_true",
                    help='hello with "deltas": false: a full state per change, as before the deltas '
                         "(default: ask for deltas; a server without them sends states anyway)")
    ap.add_argument("--deflate", action=argparse.BooleanOptionalAction, default=False,
                    help="permessage-deflate: the server offers it (BANNERFALL_WS_COMPRESSION=true) and the "
                         "clients ask for it, as browsers do; off by default like the server")
    ap.add_argument("--database-url", default=None,
                    help="a Postgres server URL (postgresql://root@127.0.0.1:5432): a fresh database is made on it "
                         "and dropped afterwards; default: SQLite in a temp dir")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--generator-core", type=int, default=1)
    ap.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the server (e.g. BANNERFALL_COMMIT_WINDOW_MS=0)")
    ap.add_argument("--profile", type=float, default=0.0, metavar="SECONDS",
                    help="after the measurements, py-spy the server for this long under closed-loop load")
    ap.add_argument("--profile-phase", choices=("closed", "open"), default="closed",
                    help="the load while profiling: closed loop (max) or open loop at the --open-fraction rate")
    ap.add_argument("--profile-native", action="store_true",
                    help="py-spy --native: C frames too (uvloop, orjson, the interpreter's own work)")
    ap.add_argument("--profile-out", type=Path, default=None, help="speedscope file (default: in the temp dir)")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--keep-tmp", action="store_true")
    ap.add_argument("--gc", choices=("default", "log", "off"), default="default",
                    help="log: the server logs every collection of Python's cyclic GC and its pause (to find "
                         "latency spikes); off: the server runs with gc.disable() (an experiment, not a setting)")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the server and the generator at this nice value (e.g. -5, as root) so that "
                         "neighbours' jobs take less of the two cores; 0: normal priority")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="before each phase, wait up to this long for the machine to be under 25%% busy "
                         "(other people's jobs share it)")
    args = ap.parse_args()
    global SERVER_CORE
    SERVER_CORE = args.server_core

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 65536))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    report: dict[str, Any] = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                              "command": " ".join(["python"] + sys.argv), "machine": machine_info()}
    print(f"machine: {report['machine']['nproc']} cores, {report['machine']['cpu_model']}, "
          f"python {report['machine']['python']}, node {report['machine']['node']}")
    print(f"uptime: {report['machine']['uptime']}")
    print(f"code: {report['machine']['git_head']}" + (f" + uncommitted {report['machine']['app_uncommitted']}"
                                                      if report['machine']['app_uncommitted'] else "")
          + f"; hot paths: {report['machine']['hot_paths']}")

    tmp = Path(tempfile.mkdtemp(prefix="bannerfall-bench-"))
    pg: Postgres | None = None
    server: Server | None = None
    gens: list[Generator] = []
    try:
        if args.database_url:
            pg = Postgres(args.database_url)
            db_url = pg.create()
            print(f"database: postgres {pg.name}")
        else:
            db_url = f"sqlite+aiosqlite:///{tmp / 'bench.db'}"
            print(f"database: sqlite {tmp / 'bench.db'}")
        env = {"BANNERFALL_WS_COMPRESSION": "true" if args.deflate else "false"}
        env.update(kv.split("=", 1) for kv in args.server_env)
        cmd = None
        if args.gc != "default":
            gc_log = tmp / "gc.log"
            env["BENCH_GC_LOG"] = str(gc_log)
            cmd = [sys.executable, "-c", GC_WRAPPER, args.gc]
        server = Server(db_url, args.server_core, env, tmp / "server.log", cmd=cmd, nice=args.nice).start()
        print(f"server pid {server.pid} on core {args.server_core}: {server.url}")

        t = time.monotonic()
        specs = asyncio.run(create_matches(server.url, args.matches, args.seats,
                                           {"turn_seconds": 3600, "max_rounds": 1000}))
        print(f"{len(specs)} matches created in {time.monotonic() - t:.1f} s")
        rss_before_sockets = proc_rss_kb(server.pid)

        ws_url = server.url.replace("http://", "ws://")
        chunks = [specs[i::args.generators] for i in range(args.generators)]
        for i, chunk in enumerate(chunks):
            cfg = {"url": ws_url, "matches": chunk, "deflate": args.deflate, "parse": args.parse,
                   "dealing_per_turn": args.dealing_per_turn, "connect_concurrency": 32,
                   "full_states": args.full_states}
            gens.append(Generator(args.generator, cfg, args.generator_core, tmp, i, nice=args.nice))
        ready = [g.read_event("ready") for g in gens]
        report["sockets_with_deflate"] = sum(r.get("deflate_negotiated", 0) for r in ready)
        print(f"{sum(r['sockets'] for r in ready)} sockets ({report['sockets_with_deflate']} with permessage-deflate) connected in {max(r['connect_s'] for r in ready):.1f} s "
              f"by {len(gens)} {args.generator} generator(s) on core {args.generator_core}; "
              f"server RSS {rss_before_sockets / 1024:.0f} -> {proc_rss_kb(server.pid) / 1024:.0f} MB")

        phases: dict[str, Any] = {}
        if args.warmup:
            phases["warmup"] = run_phase(server, gens, {"cmd": "run", "mode": "closed", "seconds": args.warmup})
        phases["closed"] = run_phase(server, gens, {"cmd": "run", "mode": "closed", "seconds": args.seconds},
                                     args.wait_quiet)
        show("max throughput", phases["closed"])
        if args.open_seconds:
            rate = args.open_rate or args.open_fraction * phases["closed"]["acks_per_s"]
            phases["open"] = run_phase(server, gens, {"cmd": "run", "mode": "open", "seconds": args.open_seconds,
                                                      "rate": rate}, args.wait_quiet)
            show(f"open loop at {rate:.0f}/s", phases["open"])
        if args.profile:
            out = args.profile_out or tmp / "server.speedscope.json"
            spy = start_py_spy(server.pid, args.profile, out, native=args.profile_native)
            pcmd: dict[str, Any] = {"cmd": "run", "mode": args.profile_phase, "seconds": args.profile + 2}
            if args.profile_phase == "open":
                pcmd["rate"] = args.open_rate or args.open_fraction * phases["closed"]["acks_per_s"]
            phases["profiled"] = run_phase(server, gens, pcmd)
            spy.wait(60)
            show(f"under py-spy ({args.profile_phase} loop)", phases["profiled"])
            if out.exists():
                prof = summarize_speedscope(out)
                report["profile"] = {"file": str(out), **prof}
                print()
                print_profile(out, prof)
            else:
                print(f"py-spy wrote nothing: {spy.stderr.read() if spy.stderr else ''}")
        report["phases"] = phases
        acked = sum(p["acked"] for p in phases.values())
        records = server.metrics().get("bannerfall_log_records_total", 0)
        report["durability_check"] = {"acks_received": acked, "records_committed": records, "ok": acked <= records}
        print(f"\nacks received in all phases {acked} <= log records committed {records:.0f}: {acked <= records}")
        report["server_rss_mb_end"] = proc_rss_kb(server.pid) / 1024
        report["machine"]["loadavg_end"] = os.getloadavg()
        print(f"\nload average at the end: {report['machine']['loadavg_end']}")
        if args.json_out:
            args.json_out.write_text(json.dumps(report, indent=1, default=str))
            print(f"wrote {args.json_out}")
    finally:
        for g in gens:
            g.quit()
        if server is not None:
            server.stop()
        if pg is not None:
            pg.drop()
        if not args.keep_tmp and not args.profile_out and not args.profile:
            shutil.rmtree(tmp, ignore_errors=True)
        elif not args.keep_tmp:
            for p in tmp.glob("*.db*"):
                p.unlink()


if __name__ == "__main__":
    main()
