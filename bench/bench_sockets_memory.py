"""Server memory per connected socket: N spectator sockets on one Provinces match.

    . .venv/bin/activate && python bench/bench_sockets_memory.py --sockets 2000 --idle 30

Starts ``bannerfall serve`` (pinned to core 0, fresh SQLite in a temp dir, bots off), creates one
match of 4 seats over REST and connects its 4 seats plus ``--warm`` spectators (so the code paths
and the allocator are warm), then takes the server's RSS (``/proc/PID/status`` VmRSS) and opens
``--sockets`` more spectator sockets (hello with one spectator's token, ``"as": "spectator"``).
Reported, as (RSS now - RSS before) / N:

- right after the N hellos were answered,
- after ``--idle`` seconds with every socket idle (the server pings every 20 s),
- after ``--broadcasts`` actions by the seat on turn, each sending a ``state`` to every socket.

Runs once with permessage-deflate (``BANNERFALL_WS_COMPRESSION=true`` on the server, asked for by
the clients as browsers do) and once without (``--deflate on|off|both``). The client (asyncio + websockets) runs in this
process, pinned to core 1; ``ulimit -n`` is raised here with ``resource.setrlimit`` (the server
inherits it). Kernel socket buffers are not in RSS.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import Postgres, Server, create_matches, machine_info, proc_rss_kb  # noqa: E402


async def open_socket(url: str, match_id: str, token: str, deflate: bool, hello_extra: dict[str, Any],
                      counts: dict[str, int]):
    ws = await connect(f"{url}/ws/matches/{match_id}", compression="deflate" if deflate else None,
                       max_size=2**24, open_timeout=120, ping_interval=None)
    await ws.send(orjson.dumps({"type": "hello", "token": token, **hello_extra}).decode())
    first = orjson.loads(await ws.recv())
    if first.get("type") != "state":
        raise RuntimeError(f"hello answered with {str(first)[:200]}")
    if any(getattr(e, "name", "") == "permessage-deflate" for e in ws.protocol.extensions):
        counts["deflated"] = counts.get("deflated", 0) + 1

    async def reader() -> None:
        try:
            async for text in ws:
                counts["messages"] += 1
                counts["bytes"] += len(text)
        except Exception:  # noqa: BLE001
            pass

    task = asyncio.ensure_future(reader())
    return ws, task, first


def traced_serve() -> None:
    """``--_serve-traced``: run ``bannerfall serve``; the first SIGUSR1 starts tracemalloc (tracing
    the start-up would take minutes), each SIGUSR1 writes a snapshot to ``$BENCH_SNAPSHOT_DIR/N.snap``
    (N = 0, 1, ...): allocations made after the first one are traced."""
    import signal
    import tracemalloc

    count = [0]

    def dump(*_: Any) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(int(os.environ.get("BENCH_TRACE_FRAMES", "12")))
        snap = tracemalloc.take_snapshot()
        snap.dump(os.path.join(os.environ["BENCH_SNAPSHOT_DIR"], f"{count[0]}.snap"))
        count[0] += 1

    signal.signal(signal.SIGUSR1, dump)
    sys.argv = ["bannerfall", "serve"]
    from app.cli import main as cli_main

    cli_main()


def snapshot(server: Server, directory: Path, index: int) -> Path:
    import signal

    os.kill(server.pid, signal.SIGUSR1)
    path = directory / f"{index}.snap"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists():
            size = path.stat().st_size
            time.sleep(0.5)
            if path.stat().st_size == size:
                return path
        time.sleep(0.2)
    raise RuntimeError("no tracemalloc snapshot")


def diff_snapshots(before: Path, after: Path, sockets: int, top: int = 25) -> list[str]:
    """The allocation sites that grew most between two snapshots, per socket. Each site is named by
    the innermost frames outside the standard library's asyncio internals."""
    import tracemalloc

    a = tracemalloc.Snapshot.load(str(before))
    b = tracemalloc.Snapshot.load(str(after))
    lines = []
    total = sum(s.size_diff for s in b.compare_to(a, "filename"))
    lines.append(f"traced Python allocations grew {total / 1024 / sockets:.1f} KB/socket; by the allocating file:")
    for stat in b.compare_to(a, "filename")[:12]:
        lines.append(f"{stat.size_diff / sockets:8.1f} B/socket  {stat.count_diff / sockets:5.1f} blocks  "
                     f"{_short(stat.traceback[0].filename)}")
    lines.append("by allocation site (innermost frames first):")
    for stat in b.compare_to(a, "traceback")[:top]:
        frames = list(stat.traceback)[::-1][:4]  # innermost first
        where = " <- ".join(f"{_short(f.filename)}:{f.lineno}" for f in frames)
        lines.append(f"{stat.size_diff / sockets:8.1f} B/socket  {stat.count_diff / sockets:5.1f} blocks  {where}")
    return lines


def _short(path: str) -> str:
    for marker in ("site-packages/", "/work/main/", "lib/python3.11/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


async def measure(server: Server, args: argparse.Namespace, deflate: bool) -> dict[str, Any]:
    ws_url = server.url.replace("http://", "ws://")
    [spec] = await create_matches(server.url, 1, 4, {"turn_seconds": 3600, "max_rounds": 1000})
    async with httpx.AsyncClient(base_url=server.url + "/api/v1") as http:
        spectator = (await http.post("/players", json={"name": "watcher"})).json()["token"]
    counts = {"messages": 0, "bytes": 0}
    seats = []
    for token in spec["tokens"]:
        seats.append(await open_socket(ws_url, spec["id"], token, deflate, {}, counts))
    sem = asyncio.Semaphore(args.concurrency)

    async def spectate():
        async with sem:
            return await open_socket(ws_url, spec["id"], spectator, deflate, {"as": "spectator"}, counts)

    warm = [await spectate() for _ in range(args.warm)]
    await asyncio.sleep(2)
    rss0 = proc_rss_kb(server.pid)
    if args.tracemalloc:
        snap0 = await asyncio.to_thread(snapshot, server, args.snapshot_dir, 0)
    t = time.monotonic()
    socks = await asyncio.gather(*(spectate() for _ in range(args.sockets)))
    connect_s = time.monotonic() - t
    await asyncio.sleep(2)
    rss1 = proc_rss_kb(server.pid)
    print(f"  {args.sockets} sockets connected ({counts.get('deflated', 0)} of all with permessage-deflate) in {connect_s:.1f} s; RSS {rss0 / 1024:.1f} -> {rss1 / 1024:.1f} MB "
          f"= {(rss1 - rss0) / args.sockets:.1f} KB/socket")
    await asyncio.sleep(args.idle)
    rss2 = proc_rss_kb(server.pid)
    traced: list[str] = []
    if args.tracemalloc:
        snap1 = await asyncio.to_thread(snapshot, server, args.snapshot_dir, 1)
        traced = diff_snapshots(snap0, snap1, args.sockets)
        print("  tracemalloc, connected + idle vs before:\n    " + "\n    ".join(traced))
    print(f"  after {args.idle:.0f} s idle: RSS {rss2 / 1024:.1f} MB = {(rss2 - rss0) / args.sockets:.1f} KB/socket")
    # broadcasts: the seat on turn plays set_dealing / end_turn; every socket gets a state each time
    before = counts["messages"]
    version = None
    async with httpx.AsyncClient(base_url=server.url + "/api/v1",
                                 headers={"Authorization": f"Bearer {server.admin_token}"}) as admin:
        for i in range(args.broadcasts):
            state = (await admin.get(f"/admin/matches/{spec['id']}")).json()
            turn = state["prompts"][0]["seat"]
            action = {"type": "end_turn"} if i % 2 else {"type": "set_dealing", "mode": "randomly"}
            await seats[turn][0].send(orjson.dumps({"type": "act", "seq": i + 1, "action": action}).decode())
            want = before + (i + 1) * (args.sockets + args.warm + 4)
            deadline = time.monotonic() + 60
            while counts["messages"] < want and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        version = (await admin.get(f"/admin/matches/{spec['id']}")).json()["version"]
    await asyncio.sleep(1)
    rss3 = proc_rss_kb(server.pid)
    received = counts["messages"] - before
    print(f"  after {args.broadcasts} broadcasts (version {version}, {received} states received, "
          f"{counts['bytes'] / max(1, counts['messages']):.0f} B each on the wire after decompression): "
          f"RSS {rss3 / 1024:.1f} MB = {(rss3 - rss0) / args.sockets:.1f} KB/socket")
    for ws, task, _ in socks + warm + seats:
        task.cancel()
        ws.transport.abort()
    await asyncio.sleep(2)
    rss4 = proc_rss_kb(server.pid)
    print(f"  after closing them: RSS {rss4 / 1024:.1f} MB")
    return {"deflate": deflate, "deflate_negotiated": counts.get("deflated", 0), "sockets": args.sockets, "warm": args.warm, "connect_s": connect_s,
            "rss_kb": {"before": rss0, "connected": rss1, "idle": rss2, "after_broadcasts": rss3, "closed": rss4},
            "kb_per_socket": {"connected": (rss1 - rss0) / args.sockets, "idle": (rss2 - rss0) / args.sockets,
                              "after_broadcasts": (rss3 - rss0) / args.sockets},
            "idle_s": args.idle, "broadcasts": args.broadcasts, "states_received": received,
            "tracemalloc": traced}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--sockets", type=int, default=2000)
    ap.add_argument("--warm", type=int, default=20, help="spectator sockets opened before the baseline")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds the sockets stay idle")
    ap.add_argument("--broadcasts", type=int, default=4, help="actions (each a state to every socket) at the end")
    ap.add_argument("--deflate", choices=("on", "off", "both"), default="both")
    ap.add_argument("--concurrency", type=int, default=100, help="sockets being opened at once")
    ap.add_argument("--database-url", default=None, help="Postgres server URL (default: SQLite in a temp dir)")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--client-core", type=int, default=1)
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--tracemalloc", action="store_true",
                    help="run the server under tracemalloc (slower; RSS includes tracemalloc's own overhead) "
                         "and list the allocation sites that grew per socket")
    ap.add_argument("--_serve-traced", dest="serve_traced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_traced:
        traced_serve()
        return

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.sockets * 2 + 1000
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, need)), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < need:
        raise SystemExit(f"ulimit -n is {resource.getrlimit(resource.RLIMIT_NOFILE)} but {need} are needed")
    if args.client_core is not None:
        os.sched_setaffinity(0, {args.client_core})
    info = machine_info()
    print(f"machine: {info['nproc']} cores, {info['cpu_model']}; uptime: {info['uptime']}")
    report: dict[str, Any] = {"command": " ".join(["python"] + sys.argv), "machine": info, "runs": []}
    for deflate in {"on": [True], "off": [False], "both": [True, False]}[args.deflate]:
        tmp = Path(tempfile.mkdtemp(prefix="bannerfall-mem-"))
        pg = Postgres(args.database_url) if args.database_url else None
        db_url = pg.create() if pg else f"sqlite+aiosqlite:///{tmp / 'mem.db'}"
        cmd = None
        env: dict[str, str] = {"BANNERFALL_WS_COMPRESSION": "true" if deflate else "false"}
        if args.tracemalloc:
            args.snapshot_dir = tmp
            cmd = [sys.executable, str(Path(__file__).resolve()), "--_serve-traced"]
            env["BENCH_SNAPSHOT_DIR"] = str(tmp)
        server = Server(db_url, args.server_core, env, tmp / "server.log", cmd=cmd).start()
        try:
            print(f"permessage-deflate {'on (server offers, clients ask)' if deflate else 'off'}; server pid {server.pid}")
            report["runs"].append(asyncio.run(measure(server, args, deflate)))
        finally:
            server.stop()
            if pg:
                pg.drop()
            shutil.rmtree(tmp, ignore_errors=True)
    report["machine"]["loadavg_end"] = os.getloadavg()
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))
        print(f"wrote {args.json_out}")


if __name__ == "__main__":
    main()
