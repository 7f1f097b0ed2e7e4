"""Quick play under load: N players queue at once on two real nodes (one Postgres, one Redis) for
2-seat Provinces; prints the time until every ticket is matched, the long-poll latency (match
formed → the waiting request answered, as the client sees it: ``matched`` answer time minus the
ticket's wait), and each node's formed / lost-claim counts.

    python bench/bench_matchmaking.py [N]      (default 200; needs the local Postgres and Redis)
"""
from __future__ import annotations

import asyncio
import re
import statistics
import sys
import time
import uuid

import httpx

sys.path.insert(0, ".")
from app.client import RestClient
from tests.conftest import REDIS_URL, PostgresDatabase, ServerProcess


async def main(n: int, db: PostgresDatabase, url: str) -> None:
    prefix = f"bfbench:{uuid.uuid4().hex[:8]}:"
    env = {"BANNERFALL_REDIS_URL": REDIS_URL, "BANNERFALL_REDIS_PREFIX": prefix, "BANNERFALL_RUN_BOTS": "false",
           "BANNERFALL_RATE_LIMIT_PLAYER": "", "BANNERFALL_RATE_LIMIT_IP": ""}
    nodes = [ServerProcess(url, env={**env, "BANNERFALL_NODE_ID": f"bench-{i}"}) for i in range(2)]
    try:
        for node in nodes:
            node.start()
        clients = []
        for i in range(n):
            c = RestClient(nodes[i % 2].url)
            await c.register(f"b{i}")
            clients.append(c)
        started = time.monotonic()
        tickets = await asyncio.gather(*(c.queue("provinces", 2, {"turn_seconds": 600}) for c in clients))
        queued = time.monotonic()
        answered: list[float] = []

        async def wait(c: RestClient, t: dict) -> dict:
            out = await c.wait_for_match(t["id"], timeout=120)
            answered.append(time.monotonic())
            return out

        done = await asyncio.gather(*(wait(c, t) for c, t in zip(clients, tickets, strict=True)))
        finished = time.monotonic()
        assert all(t["status"] == "matched" for t in done)
        assert len({t["match_id"] for t in done}) == n // 2
        print(f"{n} tickets on 2 nodes: queued in {queued - started:.2f} s, all matched "
              f"{finished - started:.2f} s after the first POST")
        spread = sorted(a - started for a in answered)
        print(f"answers: median {statistics.median(spread):.2f} s, p95 {spread[int(len(spread) * .95) - 1]:.2f} s")
        async with httpx.AsyncClient() as raw:
            for node in nodes:
                text = (await raw.get(node.url + "/metrics")).text
                found = dict(re.findall(r"^bannerfall_matchmaking_(\w+)_total (\S+)$", text, re.MULTILINE))
                print(node.url, found)
        for c in clients:
            await c.close()
    finally:
        for node in nodes:
            node.stop()
        import redis

        r = redis.Redis.from_url(REDIS_URL)
        keys = list(r.scan_iter(match=prefix + "*"))
        if keys:
            r.delete(*keys)
        r.close()


if __name__ == "__main__":
    database = PostgresDatabase()
    database_url = database.create()
    try:
        asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200, database, database_url))
    finally:
        database.drop()
