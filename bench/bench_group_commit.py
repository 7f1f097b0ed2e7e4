"""CPU per group commit on SQLite: ``Repository.commit_batch`` through the engine (SQLAlchemy +
aiosqlite) against the dedicated committer thread (``app/db/sqlite_log.py``).

``python bench/bench_group_commit.py [--commits 400] [--batches 1,4,50]``: for each batch size
(records per commit, one record per match), the process CPU (all threads: ``time.process_time``)
and wall time per commit, on a fresh SQLite file in a temp dir with the schema at head. The
machine's neighbours hardly move the CPU figure; the wall figure includes fsync.
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import insert

from app.db.database import make_engine
from app.db.migrate import upgrade_async
from app.db.repo import MatchWrite, Repository
from app.db.tables import matches_t


async def run(commits: int, batches: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        await upgrade_async(url)
        engine = make_engine(url)
        repo = Repository(engine)
        committer = repo.log_committer
        n = max(batches)
        ids = [uuid.uuid4().hex for _ in range(n)]
        now = time.time()
        async with engine.begin() as conn:
            await conn.execute(insert(matches_t), [
                {"id": i, "game": "provinces", "options": {}, "seat_count": 4, "status": "running", "seed": "s",
                 "seed_hash": "h", "seats": [], "deadlines": {}, "version": 0, "owner_epoch": 1,
                 "created_at": now} for i in ids])
        version = dict.fromkeys(ids, 0)
        for label, use in (("engine (SQLAlchemy + aiosqlite)", None), ("dedicated thread (sqlite_log)", committer)):
            repo.log_committer = use
            for size in batches:
                cpu0, wall0 = time.process_time(), time.perf_counter()
                for _ in range(commits):
                    writes = []
                    for i in ids[:size]:
                        version[i] += 1
                        writes.append(MatchWrite(i, 1, [{
                            "match_id": i, "seq": version[i], "seat": 0, "kind": "act",
                            "action": {"type": "set_dealing", "dealing": 3}, "client_seq": version[i],
                            "deadlines": {"7": now + 60}, "created_at": now}]))
                    refused = await repo.commit_batch(writes)
                    assert not refused, refused
                cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                print(f"{label:34s} batch {size:4d}: {1000 * cpu / commits:6.3f} ms CPU, "
                      f"{1000 * wall / commits:6.3f} ms wall per commit ({1e6 * cpu / commits / size:7.1f} µs CPU per record)")
        repo.log_committer = committer
        repo.close()
        await engine.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--commits", type=int, default=400)
    ap.add_argument("--batches", default="1,4,50")
    args = ap.parse_args()
    asyncio.run(run(args.commits, [int(b) for b in args.batches.split(",")]))


if __name__ == "__main__":
    main()
