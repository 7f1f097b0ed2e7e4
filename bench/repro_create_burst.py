"""Make many matches over REST at once against a fresh ``bannerfall serve`` and count what went wrong.

The flow of :func:`bench_server.create_matches` (register the players of a match at once, create a
lobby, join the other seats one by one, start), ``--matches`` matches with ``--concurrency``
requests in flight. Every answer is counted by status (no retries; a 503 names its ``Retry-After``),
the server's log is scanned for warnings and errors (``lost the lease``, database errors,
tracebacks), the event loop's worst lag and the GC pauses are read (``bench_server.GC_WRAPPER``),
and the server's view is checked afterwards: every match started answers ``GET /matches/{id}`` as
running, and the live matches and recoveries are read from ``/metrics``.

``--pause S --pause-at T`` stops the server (SIGSTOP) for S seconds, T seconds into the burst: an
event loop stalled past the lease's budget (docs/decisions.md, "One process keeps its leases").
``--core N`` pins the server and this client to one core.

    .venv/bin/python bench/repro_create_burst.py --matches 256 --concurrency 128
    .venv/bin/python bench/repro_create_burst.py --matches 256 --concurrency 128 --pause 31 --pause-at 28
    .venv/bin/python bench/repro_create_burst.py --database-url postgresql://root@127.0.0.1:5432 \\
        --redis-url redis://127.0.0.1:6379/0

Embedded mode (a temporary SQLite file) unless ``--database-url`` names a Postgres server (a fresh
database is made and dropped; with ``--redis-url`` production mode under a fresh key prefix).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_server as bs  # noqa: E402


async def burst(url: str, count: int, seats: int, concurrency: int, game: str,
                options: dict[str, Any]) -> dict[str, Any]:
    """``count`` matches made at once; returns the answers counted by ``"METHOD route status"``,
    the 5xx bodies seen, the matches started and the wall seconds."""
    sem = asyncio.Semaphore(concurrency)
    statuses: Counter[str] = Counter()
    errors: list[str] = []
    retry_after: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url + "/api/v1", timeout=120, limits=limits) as http:

        async def call(method: str, route: str, path: str, token: str | None = None, body: Any = None) -> Any:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with sem:
                try:
                    resp = await http.request(method, path, json=body, headers=headers)
                except httpx.HTTPError as exc:  # the connection failed: no answer at all
                    statuses[f"{method} {route} {type(exc).__name__}"] += 1
                    raise RuntimeError(f"{method} {route}: {exc!r}") from None
            statuses[f"{method} {route} {resp.status_code}"] += 1
            if resp.status_code >= 500:
                errors.append(f"{method} {route}: {resp.status_code} {resp.text[:200]}")
            if "retry-after" in resp.headers:
                retry_after[resp.headers["retry-after"]] += 1
            if resp.status_code >= 400:
                raise RuntimeError(f"{method} {route}: {resp.status_code}")
            return resp.json()

        async def one(i: int) -> tuple[str, str] | None:
            try:
                players = await asyncio.gather(*(call("POST", "/players", "/players", body={"name": f"b{i}-{s}"})
                                                 for s in range(seats)))
                tokens = [p["token"] for p in players]
                lobby = await call("POST", "/lobbies", "/lobbies", tokens[0],
                                   {"game": game, "seats": seats, "options": options})
                for s in range(1, seats):
                    await call("POST", "/lobbies/{id}/join", f"/lobbies/{lobby['id']}/join", tokens[s], {"seat": s})
                lobby = await call("POST", "/lobbies/{id}/start", f"/lobbies/{lobby['id']}/start", tokens[0])
                return lobby["match_id"], tokens[0]
            except RuntimeError:
                return None

        t0 = time.monotonic()
        made = await asyncio.gather(*(one(i) for i in range(count)))
        wall = time.monotonic() - t0
        ids = [m for m in made if m]
        # the server's view afterwards: every match started is there and running
        not_running = 0
        for match_id, token in ids:
            async with sem:
                resp = await http.get(f"/matches/{match_id}", headers={"Authorization": f"Bearer {token}"})
            if resp.status_code != 200 or resp.json().get("status") != "running":
                not_running += 1
    return {"statuses": dict(sorted(statuses.items())), "server_errors": errors[:10],
            "retry_after": dict(retry_after), "matches_started": len(ids), "matches_failed": count - len(ids),
            "started_not_running": not_running, "wall_s": round(wall, 2)}


def scan_log(text: str) -> dict[str, int]:
    """Warning and error lines of the server's log, by kind (ids and numbers blanked)."""
    kinds: Counter[str] = Counter()
    for line in text.splitlines():
        if re.search(r"\b(WARNING|ERROR|CRITICAL)\b|Traceback", line):
            kind = re.sub(r"[0-9a-f]{32}", "<id>", line)
            kind = re.sub(r"^\S+ \S+ ", "", kind)  # a leading timestamp
            kind = re.sub(r"\d+(\.\d+)?", "N", kind)
            kinds[kind[:160]] += 1
    return dict(kinds.most_common(20))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--seats", type=int, default=4)
    ap.add_argument("--game", default="provinces")
    ap.add_argument("--database-url", default=None, help="a Postgres server (default: a temporary SQLite file)")
    ap.add_argument("--redis-url", default=None)
    ap.add_argument("--settle", type=float, default=3.0, help="seconds to keep the server up after the burst")
    ap.add_argument("--core", type=int, default=None,
                    help="pin the server and this client to one core (CPU starvation, as on a busy machine)")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="SIGSTOP the server this many seconds (a stalled event loop), --pause-at s into the burst")
    ap.add_argument("--pause-at", type=float, default=5.0)
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server")
    ap.add_argument("--keep-log", type=Path, default=None, help="copy the server's log here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bf-burst-") as tmp:
        work = Path(tmp)
        pg = None
        env: dict[str, str] = dict(kv.split("=", 1) for kv in args.env)
        if args.database_url:
            pg = bs.Postgres(args.database_url)
            db_url = pg.create()
        else:
            db_url = f"sqlite+aiosqlite:///{work / 'burst.db'}"
        prefix = f"bfburst{secrets.token_hex(4)}:"
        if args.redis_url:
            env.update({"BANNERFALL_REDIS_URL": args.redis_url, "BANNERFALL_REDIS_PREFIX": prefix})
        env.update({"BENCH_GC_LOG": str(work / "gc.log"), "BENCH_LAG_LOG": str(work / "lag.log")})
        if args.core is not None:
            os.sched_setaffinity(0, {args.core})
        server = bs.Server(db_url, args.core, env, work / "server.log",
                           cmd=[sys.executable, "-c", bs.GC_WRAPPER, "log"])
        try:
            server.start()
            pauser = None
            if args.pause:
                def pause() -> None:
                    time.sleep(args.pause_at)
                    os.kill(server.pid, signal.SIGSTOP)
                    time.sleep(args.pause)
                    os.kill(server.pid, signal.SIGCONT)

                pauser = threading.Thread(target=pause, daemon=True)
                pauser.start()
            result = asyncio.run(burst(server.url, args.matches, args.seats, args.concurrency, args.game,
                                       {"turn_seconds": 3600}))
            if pauser is not None:
                pauser.join()
            time.sleep(args.settle)
            m = server.metrics()
            result["server"] = {k: m.get(k) for k in ("bannerfall_matches_live", "bannerfall_match_recoveries_total",
                                                      "bannerfall_log_failures_total")}
        finally:
            server.stop()
            if pg is not None:
                pg.drop()
            if args.redis_url:
                import redis

                r = redis.Redis.from_url(args.redis_url)
                keys = list(r.scan_iter(match=prefix + "*"))
                if keys:
                    r.delete(*keys)
                r.close()
        text = (work / "server.log").read_text(errors="replace")
        if args.keep_log is not None:
            args.keep_log.write_text(text)
        result["log"] = scan_log(text)
        result["lost_the_lease"] = text.count("lost the lease")
        lags = [float(line.split()[1]) for line in (work / "lag.log").read_text().splitlines() if line.strip()]
        result["loop_lag_ms"] = {"worst": round(max(lags, default=0.0)),
                                 "half_seconds_over_1s": sum(1 for x in lags if x > 1000)}
        gcs = [line.split() for line in (work / "gc.log").read_text().splitlines() if line.strip()]
        result["gc_pause_ms"] = {f"gen{g}": round(max((float(x[2]) for x in gcs if x[1] == str(g)), default=0.0))
                                 for g in (0, 1, 2)}
        result["mode"] = ("production" if args.redis_url else "postgres") if args.database_url else "embedded"
        result["loadavg_before_end"] = os.getloadavg()
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
