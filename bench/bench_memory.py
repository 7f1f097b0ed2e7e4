"""Server memory per live match and per idle socket, after a warm-up (issue 11 item 5).

    . .venv/bin/activate && (cd bench/loadgen && npm ci)
    python bench/bench_memory.py                                   # the three games, embedded, 200 matches each
    python bench/bench_memory.py --games provinces --matches 200 --modes embedded,production
    python bench/bench_memory.py --games conquest --tracemalloc    # where the bytes go (a separate, slower run)
    python bench/bench_memory.py --only-runner --runner-records 300  # a played match's own memory, in-process

Per game and mode, on a **fresh** ``bannerfall serve`` (pinned to core 0; embedded: SQLite in a temp
dir; production: a fresh Postgres database and Redis key prefix, removed afterwards; bots off):

1. **Warm-up**: ``--warm-matches`` matches of the game made over REST, their seat sockets connected
   by the game's load generator (``loadgen.mjs`` for Provinces, ``botgen.py`` otherwise, on core 1)
   and played for ``--warm-seconds`` (closed loop). They stay live and connected, so nothing they
   used is freed for the measured matches to reuse. This runs every lazy import, cache, pool and
   first-match cost (e.g. the first Provinces match builds the board) before the baseline.
2. **Live matches**: server RSS (``/proc/PID/status`` VmRSS) before and after making ``--matches``
   more matches over REST (players registered, lobby made, joined and started: dealt, runner in
   memory, deadlines out of reach): ``kb_per_live_match`` = growth ÷ matches. They are made in two
   halves with a reading between: ``kb_per_live_match_second_half`` is the second half's growth ÷
   its matches (the marginal cost, without what grows once and stays, such as SQLite's page caches;
   reported, the target is judged on the whole growth). A *live match* here is a
   started match held by the node with **no socket connected** and no action played yet: the runner,
   its state, the audience book's documents (4 seats + spectators), its prompts, the lobby and match
   rows it keeps, and whatever the REST calls that made it left behind.
3. **Idle sockets**: RSS before and after a second generator connects the 4 seat sockets of each of
   those matches (``hello`` with ``"deltas": true``, each answered with its full ``state``, then idle):
   ``kb_per_idle_socket`` = growth ÷ sockets.
4. **Played** (reported, not a target): the same matches and sockets played for ``--play-seconds``
   (closed loop); the RSS growth ÷ matches and ÷ actions acked (the history of the last
   ``MatchRunner.HISTORY`` records, the duplicate-seq cache, the newer documents, socket buffers).

``--runner-records K`` (``--only-runner``: nothing else): live ``MatchRunner`` objects in this process,
without server or sockets, measured with tracemalloc just started and after up to K records each
(the random bots play every seat; a match that would end sooner is measured one record before its
end): what a match keeps while it is played, up to its bounds (``MatchRunner.HISTORY`` records of
events for resume, ``RECENT_PER_SEAT`` client seqs per seat for duplicates).

Kernel socket buffers are not in RSS. Every figure is the growth over many matches (default 200, 800
sockets), so page granularity and the allocator's free lists are small beside it.

``--tracemalloc`` (a separate run: tracing costs CPU and memory of its own, so its RSS is not
reported as the figure): the server runs with tracing started at the baseline (SIGUSR1) and a
snapshot after each step (``--trace-collect``: a full cyclic-GC collection before each); the top
allocation sites that grew per match and per socket are printed (and kept under ``tracemalloc`` in
the JSON). Allocations of C libraries outside Python's allocator (OpenSSL, zlib, uvloop's own
buffers) are not traced.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_server as bs

#: lobby options that keep every deadline out of the run (no default actions, no timeouts)
GAME_OPTIONS: dict[str, dict[str, Any]] = {
    "provinces": {"turn_seconds": 3600, "max_rounds": 1000},
    "conquest": {"phase_seconds": 3600, "decision_seconds": 3600, "max_rounds": 1000},
    "warrior": {"phase_seconds": 3600, "decision_seconds": 600, "siege_seconds": 600},
}

#: ``python -c TRACED_WRAPPER``: ``bannerfall serve`` whose first SIGUSR1 starts tracemalloc and
#: writes snapshot 0; each later SIGUSR1 writes the next (``$BENCH_SNAPSHOT_DIR/N.snap``). Only what is
#: allocated after the first signal is traced (tracing the start-up would take minutes).
#: ``$BENCH_TRACE_COLLECT=1``: a full cyclic-GC collection before each snapshot (``--trace-collect``).
TRACED_WRAPPER = """
import gc, os, signal, sys, tracemalloc
count = [0]
def dump(*_):
    if os.environ.get('BENCH_TRACE_COLLECT') == '1':
        gc.collect()
    if not tracemalloc.is_tracing():
        tracemalloc.start(int(os.environ.get('BENCH_TRACE_FRAMES', '16')))
    path = os.path.join(os.environ['BENCH_SNAPSHOT_DIR'], '%d.snap' % count[0])
    tracemalloc.take_snapshot().dump(path + '.tmp')
    os.rename(path + '.tmp', path)
    count[0] += 1
signal.signal(signal.SIGUSR1, dump)
sys.argv = ['bannerfall', 'serve']
from app.cli import main
main()
"""


def settle_rss(pid: int, seconds: float = 1.0) -> int:
    """The server's RSS (KB) once it has been idle ``seconds`` (what is still being sent or committed
    has landed)."""
    time.sleep(seconds)
    return bs.proc_rss_kb(pid)


def snapshot(pid: int, directory: Path, index: int, timeout: float = 120.0) -> Path:
    os.kill(pid, signal.SIGUSR1)
    path = directory / f"{index}.snap"
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("no tracemalloc snapshot")
        time.sleep(0.1)
    return path


def _short(path: str) -> str:
    for marker in ("site-packages/", str(bs.ROOT) + "/", "lib/python3.11/", "lib/python3.12/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def breakdown(before: Path, after: Path, per: int, top: int) -> dict[str, Any]:
    """What grew between two snapshots, ÷ ``per``: the total, by file, by line, and by allocation site
    (the line with its callers)."""
    import tracemalloc

    a = tracemalloc.Snapshot.load(str(before))
    b = tracemalloc.Snapshot.load(str(after))
    by_file = b.compare_to(a, "filename")
    total = sum(s.size_diff for s in by_file)
    lines = b.compare_to(a, "lineno")
    sites = b.compare_to(a, "traceback")
    return {
        "bytes_per": round(total / per),
        "by_file": [{"bytes": round(s.size_diff / per), "blocks": round(s.count_diff / per, 1),
                     "file": _short(s.traceback[0].filename)} for s in by_file[:top]],
        "by_line": [{"bytes": round(s.size_diff / per), "blocks": round(s.count_diff / per, 1),
                     "where": f"{_short(s.traceback[0].filename)}:{s.traceback[0].lineno}"} for s in lines[:top]],
        "by_site": [{"bytes": round(s.size_diff / per), "blocks": round(s.count_diff / per, 1),
                     "where": " <- ".join(f"{_short(f.filename)}:{f.lineno}" for f in list(s.traceback)[::-1][:5])}
                    for s in sites[:top]],
    }


def show_breakdown(title: str, bd: dict[str, Any], unit: str) -> None:
    print(f"  tracemalloc, {title}: {bd['bytes_per'] / 1024:.1f} KB of Python allocations per {unit}")
    print("    by file:")
    for row in bd["by_file"]:
        print(f"      {row['bytes']:8,} B {row['blocks']:6.1f} blocks  {row['file']}")
    print("    by line:")
    for row in bd["by_line"]:
        print(f"      {row['bytes']:8,} B {row['blocks']:6.1f} blocks  {row['where']}")
    print("    by allocation site (innermost first):")
    for row in bd["by_site"][:15]:
        print(f"      {row['bytes']:8,} B {row['blocks']:6.1f} blocks  {row['where']}")


def generator_config(server: bs.Server, game: str, specs: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    kind = "bots" if game != "provinces" else ("node" if (bs.LOADGEN_DIR / "node_modules" / "ws").is_dir() else "python")
    return kind, {"url": server.url.replace("http://", "ws://"), "matches": specs, "game": game, "deflate": False,
                  "parse": "actor", "dealing_per_turn": 1, "connect_concurrency": 32, "bot_seed": 1,
                  "full_states": False}


def measure(server: bs.Server, game: str, args: argparse.Namespace, work: Path,
            snapshots: Path | None = None) -> dict[str, Any]:
    """Steps 1–4 of the module docstring on ``server`` (fresh, nothing made on it yet)."""
    gens: list[bs.Generator] = []
    snaps: list[Path] = []
    try:
        game_options = GAME_OPTIONS[game]
        # traced, the server is several times slower: fewer REST calls at once keep SQLite's writers
        # under its busy timeout
        concurrency = 4 if snapshots else 16
        warm = asyncio.run(bs.create_matches(server.url, args.warm_matches, 4, game_options, concurrency=concurrency,
                                             game=game))
        kind, cfg = generator_config(server, game, warm)
        gens.append(bs.Generator(kind, cfg, args.generator_core, work, 1))
        gens[0].read_event("ready")
        warm_phase = bs.run_phase(server, gens[:1], {"cmd": "run", "mode": "closed", "seconds": args.warm_seconds})

        rss0 = settle_rss(server.pid, args.settle)
        if snapshots:
            snaps.append(snapshot(server.pid, snapshots, 0))
            rss0 = settle_rss(server.pid, args.settle)
        t0 = time.monotonic()
        # in two halves: the second half's growth alone is the marginal cost, without what grows once
        # and stays (SQLite's page caches filling, the allocator's first arenas)
        half = args.matches // 2
        specs = asyncio.run(bs.create_matches(server.url, half, 4, game_options, concurrency=concurrency,
                                              game=game))
        rss_half = settle_rss(server.pid, args.settle)
        specs += asyncio.run(bs.create_matches(server.url, args.matches - half, 4, game_options,
                                               concurrency=concurrency, game=game))
        t_matches = time.monotonic() - t0 - args.settle
        rss1 = settle_rss(server.pid, args.settle)
        if snapshots:
            snaps.append(snapshot(server.pid, snapshots, 1))
            rss1 = settle_rss(server.pid, args.settle)

        _, cfg = generator_config(server, game, specs)
        gens.append(bs.Generator(kind, cfg, args.generator_core, work, 2))
        ready = gens[1].read_event("ready")
        sockets = ready["sockets"]
        rss2 = settle_rss(server.pid, args.settle)
        if snapshots:
            snaps.append(snapshot(server.pid, snapshots, 2))
            rss2 = settle_rss(server.pid, args.settle)

        played: dict[str, Any] | None = None
        rss3 = None
        if args.play_seconds > 0:
            phase = bs.run_phase(server, gens[1:], {"cmd": "run", "mode": "closed", "seconds": args.play_seconds})
            rss3 = settle_rss(server.pid, args.settle)
            if snapshots:
                snaps.append(snapshot(server.pid, snapshots, 3))
            acted = phase["acked"]
            played = {"seconds": args.play_seconds, "actions": acted, "actions_per_match": acted / len(specs),
                      "matches_ended": phase.get("matches_ended", 0), "errors": phase.get("errors"),
                      "kb_per_match": (rss3 - rss2) / len(specs),
                      "bytes_per_action": (rss3 - rss2) * 1024 / max(1, acted)}
        row: dict[str, Any] = {
            "game": game, "matches": len(specs), "sockets": sockets, "generator": kind,
            "warm": {"matches": len(warm), "seconds": args.warm_seconds, "actions": warm_phase["acked"]},
            "rss_kb": {"baseline": rss0, "half": rss_half, "matches": rss1, "sockets": rss2, "played": rss3},
            "kb_per_live_match": (rss1 - rss0) / len(specs),
            "kb_per_live_match_second_half": (rss1 - rss_half) / (len(specs) - half) if len(specs) > half else None,
            "kb_per_idle_socket": (rss2 - rss1) / max(1, sockets),
            "played": played, "setup_s": {"matches": round(t_matches, 1), "sockets": round(ready["connect_s"], 1)},
            "loadavg": os.getloadavg(),
        }
        if snapshots:
            top = args.top
            row["tracemalloc"] = {"per_match": breakdown(snaps[0], snaps[1], len(specs), top),
                                  "per_socket": breakdown(snaps[1], snaps[2], sockets, top)}
            if len(snaps) > 3 and played:
                row["tracemalloc"]["per_played_match"] = breakdown(snaps[2], snaps[3], len(specs), top)
        return row
    finally:
        for g in gens:
            g.quit()


def run_one(game: str, mode: str, args: argparse.Namespace, tmp: Path, traced: bool = False) -> dict[str, Any]:
    """A fresh server for ``game`` in ``mode`` (``embedded`` | ``production``), measured, stopped."""
    work = tmp / f"{game}-{mode}{'-traced' if traced else ''}"
    work.mkdir()
    prod = None
    env: dict[str, str] = {"BANNERFALL_WS_COMPRESSION": "false"}
    if mode == "production":
        from bench_matrix import Production

        prod = Production(args.database_url, args.redis_url)
        env.update(prod.create())
        db_url = env.pop("BANNERFALL_DATABASE_URL")
    else:
        db_url = f"sqlite+aiosqlite:///{work / 'bench.db'}"
    cmd = None
    if traced:
        env["BENCH_SNAPSHOT_DIR"] = str(work)
        env["BENCH_TRACE_FRAMES"] = str(args.trace_frames)
        env["BENCH_TRACE_COLLECT"] = "1" if args.trace_collect else "0"
        cmd = [sys.executable, "-c", TRACED_WRAPPER]
    server = bs.Server(db_url, args.server_core, env, work / "server.log", cmd=cmd)
    try:
        server.start()  # stopped below even when it fails to come up
        try:
            row = measure(server, game, args, work, snapshots=work if traced else None)
        except Exception as exc:
            raise RuntimeError(f"{exc!r}; server log: {(work / 'server.log').read_text()[-3000:]}") from exc
        row["mode"] = mode
        row["traced"] = traced
        return row
    finally:
        server.stop()
        if prod is not None:
            prod.drop()


# ---------------------------------------------------------------------------- one runner, in-process
class _Writer:
    """The log writer's interface for :class:`MatchRunner`, committing when told (no database)."""

    def __init__(self) -> None:
        self.pending: list[Any] = []

    def submit(self, _runner: Any, _row: Any, _update: Any, on_durable: Any) -> None:
        self.pending.append(on_durable)

    def commit(self) -> None:
        batch, self.pending = self.pending, []
        for on_durable in batch:
            on_durable(None)


class _Actor:
    """A peer that only takes the actor's answers (no socket: the runner's own memory is measured)."""

    __slots__ = ("deltas", "player_id", "sent_version", "viewer")

    def __init__(self, seat: int) -> None:
        self.viewer = seat
        self.player_id: str | None = None
        self.sent_version = 0
        self.deltas = True

    def push(self, text: str) -> None:
        pass

    def close(self, code: int, reason: str) -> None:
        pass


def runner_memory(game_id: str, matches: int, records: int, top: int = 15) -> dict[str, Any]:
    """Python memory (tracemalloc) of ``matches`` live :class:`~app.runtime.match.MatchRunner`\\ s of
    4 seats, in this process: just started, and after up to ``records`` actions each (the game's
    random bots act from their seat's document; every record committed at once). With ``records`` ≥
    ``MatchRunner.HISTORY`` a match holds all it keeps while it runs: its state, the 5 audiences'
    documents, the events of the last HISTORY records (resume) and the last RECENT_PER_SEAT client
    seqs per seat (duplicates). A match that would end before ``records`` is measured one record
    before its end (a first, untraced pass finds where each seeded match ends), so every measured
    match is live."""
    import gc
    import tracemalloc

    from app.games import registry
    from app.runtime.match import MatchRunner

    game = registry()[game_id]
    bot_class = game.info.bots["random"]
    opts = game.Options.model_validate(GAME_OPTIONS[game_id])

    def make(i: int) -> tuple[MatchRunner, _Writer]:
        seed = i.to_bytes(4, "big") * 8
        state = game.setup(4, opts, seed)
        writer = _Writer()
        row = {"id": f"m{i}", "game": game_id, "seed": seed.hex(), "seed_hash": "h", "seat_count": 4,
               "seats": [{"player_id": f"p{i}-{s}", "name": f"p{s}", "bot": None} for s in range(4)],
               "options": GAME_OPTIONS[game_id], "status": "running", "version": 0}
        deadlines = {p.phase_id: 1e12 for p in game.prompts(state)}
        runner = MatchRunner(match=row, game=game, state=state, version=0,  # type: ignore[arg-type]
                             log_writer=writer, deadlines=deadlines,  # type: ignore[arg-type]
                             schedule=lambda *_: None, on_finished=lambda _r: None)
        return runner, writer

    def bots(i: int) -> list[Any]:  # not the server's: made before tracing
        return [bot_class(seed=i * 10 + s) for s in range(4)]

    def play(runner: MatchRunner, writer: _Writer, bots: list[Any], upto: int) -> int:
        done = 0
        while done < upto and runner.status == "running":
            for prompt in runner.public_prompts():
                if prompt["submitted"]:
                    continue
                action = bots[prompt["seat"]].decide(runner._document(prompt["seat"])["view"], prompt)
                if action is not None:
                    runner.act(_Actor(prompt["seat"]), done + 1, action, None)
                    writer.commit()
                    done += 1
                    break
            else:
                break  # nobody would act: stop here
        return done

    targets = []
    for i in range(matches):  # where each match would end: measure it one record before
        runner, writer = make(i)
        done = play(runner, writer, bots(i), records)
        targets.append(records if runner.status == "running" else max(0, done - 1))
    players = [bots(i) for i in range(matches)]
    gc.collect()
    tracemalloc.start(1)
    try:
        s0 = tracemalloc.take_snapshot()
        made = [make(i) for i in range(matches)]
        gc.collect()
        s1 = tracemalloc.take_snapshot()
        played = [play(*m, b, upto) for m, b, upto in zip(made, players, targets, strict=True)]
        running = sum(m[0].status == "running" for m in made)
        gc.collect()
        s2 = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()

    def lines(a: Any, b: Any) -> list[dict[str, Any]]:
        return [{"bytes": round(x.size_diff / matches), "blocks": round(x.count_diff / matches, 1),
                 "where": f"{_short(x.traceback[0].filename)}:{x.traceback[0].lineno}"}
                for x in b.compare_to(a, "lineno")[:top]]

    def total(a: Any, b: Any) -> float:
        return sum(x.size_diff for x in b.compare_to(a, "filename")) / matches / 1024

    return {"game": game_id, "matches": matches, "records_asked": records,
            "records_mean": sum(played) / matches, "records_min": min(played), "running": running,
            "kb_fresh": total(s0, s1), "kb_played": total(s0, s2),
            "fresh_by_line": lines(s0, s1), "played_by_line": lines(s0, s2)}


def show_runner(r: dict[str, Any]) -> None:
    print(f"{r['game']} runner in-process (tracemalloc): {r['kb_fresh']:.1f} KB per live match just started, "
          f"{r['kb_played']:.1f} KB after {r['records_mean']:.0f} records on average (min {r['records_min']}; "
          f"{r['running']} of {r['matches']} matches running)", flush=True)
    for title, key in (("started", "fresh_by_line"), ("played", "played_by_line")):
        print(f"  {title}, by line:")
        for row in r[key]:
            print(f"    {row['bytes']:8,} B {row['blocks']:6.1f} blocks  {row['where']}")


def add_arguments(ap: argparse.ArgumentParser | argparse._ArgumentGroup, prefix: str = "") -> None:
    """The measurement's options; with ``prefix`` (``memory-`` in ``bench_matrix.py``) their flags and
    attributes carry it: read them back with :func:`options`."""
    dest = prefix.replace("-", "_")
    ap.add_argument(f"--{prefix}matches", dest=f"{dest}matches", type=int, default=200,
                    help="measured matches of 4 seats per game and mode (4 sockets each)")
    ap.add_argument(f"--{prefix}warm-matches", dest=f"{dest}warm_matches", type=int, default=8,
                    help="matches made, connected and played before the baseline")
    ap.add_argument(f"--{prefix}warm-seconds", dest=f"{dest}warm_seconds", type=float, default=3.0,
                    help="closed loop of the warm-up matches before the baseline")
    ap.add_argument(f"--{prefix}play-seconds", dest=f"{dest}play_seconds", type=float, default=5.0,
                    help="closed loop on the measured matches after the idle figures (0: none)")
    ap.add_argument(f"--{prefix}settle", dest=f"{dest}settle", type=float, default=1.0,
                    help="seconds the server is left idle before each RSS reading")


def options(args: argparse.Namespace, prefix: str = "") -> argparse.Namespace:
    """The options of :func:`add_arguments` without their prefix, plus the cores, the production
    servers and ``trace_frames``/``top``/``trace_collect`` from ``args`` (defaults when absent)."""
    dest = prefix.replace("-", "_")
    names = ("matches", "warm_matches", "warm_seconds", "play_seconds", "settle")
    out = argparse.Namespace(**{n: getattr(args, dest + n) for n in names})
    for name, default in (("server_core", 0), ("generator_core", 1), ("trace_frames", 16), ("top", 25),
                          ("trace_collect", False),
                          ("database_url", "postgresql://root@127.0.0.1:5432"),
                          ("redis_url", "redis://127.0.0.1:6379/0")):
        setattr(out, name, getattr(args, name, default))
    return out


def fmt_kb(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f} KB"


def show(row: dict[str, Any]) -> None:
    p = row.get("played") or {}
    print(f"{row['game']} {row['mode']}{' (traced: RSS includes tracemalloc)' if row.get('traced') else ''}: "
          f"{row['kb_per_live_match']:.1f} KB per live match ({row['matches']} matches; second half "
          f"{fmt_kb(row.get('kb_per_live_match_second_half'))}), "
          f"{row['kb_per_idle_socket']:.1f} KB per idle socket ({row['sockets']} sockets)"
          + (f"; played {p['seconds']:g} s ({p['actions_per_match']:.0f} actions per match, {p['matches_ended']} ended): "
             f"+{p['kb_per_match']:.1f} KB per match, {p['bytes_per_action']:.0f} B per action" if p else "")
          + f"; load average {row['loadavg'][0]:.1f}", flush=True)
    tm = row.get("tracemalloc")
    if tm:
        show_breakdown("per live match", tm["per_match"], "match")
        show_breakdown("per idle socket", tm["per_socket"], "socket")
        if "per_played_match" in tm:
            show_breakdown("per match, growth over the play", tm["per_played_match"], "match")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--games", default="provinces,conquest,warrior")
    ap.add_argument("--modes", default="embedded")
    add_arguments(ap)
    ap.add_argument("--tracemalloc", action="store_true",
                    help="also a traced run per game and mode, with the allocation sites per match and per socket")
    ap.add_argument("--only-traced", action="store_true", help="only the traced runs")
    ap.add_argument("--runner-records", type=int, default=0,
                    help="also measure live MatchRunners in-process after this many records each (0: not)")
    ap.add_argument("--runner-matches", type=int, default=30)
    ap.add_argument("--only-runner", action="store_true", help="only the in-process runner measurement")
    ap.add_argument("--top", type=int, default=25, help="allocation sites listed")
    ap.add_argument("--trace-frames", type=int, default=16, help="frames kept per traced allocation")
    ap.add_argument("--trace-collect", action="store_true",
                    help="traced runs: a full cyclic-GC collection before each snapshot (garbage not counted)")
    ap.add_argument("--database-url", default="postgresql://root@127.0.0.1:5432")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--generator-core", type=int, default=1)
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args()
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 65536)), hard))
    bs.SERVER_CORE = args.server_core
    machine = bs.machine_info()
    print(f"machine: {machine['nproc']} cores; {machine['uptime']}")
    print(f"code: {machine['git_head']}" + (f" + uncommitted {machine['app_uncommitted']}" if machine["app_uncommitted"] else "")
          + f"; hot paths: {machine['hot_paths']}")
    tmp = Path(tempfile.mkdtemp(prefix="bannerfall-memory-"))
    rows: list[dict[str, Any]] = []
    runners: list[dict[str, Any]] = []
    if args.runner_records or args.only_runner:
        for game in [g for g in args.games.split(",") if g]:
            runners.append(runner_memory(game, args.runner_matches, args.runner_records or 300, args.top))
            show_runner(runners[-1])
    try:
        for mode in [m for m in args.modes.split(",") if m and not args.only_runner]:
            for game in [g for g in args.games.split(",") if g]:
                for traced in ([True] if args.only_traced else [False, True] if args.tracemalloc else [False]):
                    try:
                        row = run_one(game, mode, options(args), tmp, traced)
                    except Exception as exc:  # noqa: BLE001 - one failed cell must not lose the others
                        row = {"game": game, "mode": mode, "traced": traced, "error": repr(exc)}
                        print(f"{game} {mode}: failed: {exc!r}", flush=True)
                    else:
                        show(row)
                    rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json_out:
        args.json_out.write_text(json.dumps({"machine": machine, "args": {k: str(v) for k, v in vars(args).items()},
                                             "rows": rows, "runners": runners}, indent=1))


if __name__ == "__main__":
    main()
