"""A test proxy that turns a full-state server into a delta server, for checking the load
generators' delta path (apply, resume on a gap) before the delta runtime exists on the server.

    python bench/loadgen/delta_proxy.py ws://127.0.0.1:SERVER_PORT LISTEN_PORT [FAULT_EVERY]

Each client socket gets its own upstream socket (same path). Client messages pass through (``hello``
loses its ``deltas`` key; a ``resume`` makes the next ``state`` go out whole). After the first
``state`` of a socket that asked for deltas, every further ``state`` goes out as ``{"type": "delta",
"match_id", "base": <previous version>, "version", "patch": app.delta.diff(previous, new), "events"}``
of the document ``{"status", "prompts", "view"}``; every FAULT_EVERY-th delta (0 = never) gets a
wrong ``base`` so the client must resume. Versions stay the server's (today: the match's action
count for everybody), and acks still come before the state; the proxy does not imitate audiences.
Prints its counters every 2 s. Used by ``bench/check_loadgen_deltas.py``.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.delta import diff

UPSTREAM = sys.argv[1]
PORT = int(sys.argv[2])
FAULT_EVERY = int(sys.argv[3]) if len(sys.argv) > 3 else 0
stats = {"states": 0, "deltas": 0, "faults": 0, "resumes": 0}


async def handler(ws: ServerConnection) -> None:
    assert ws.request is not None
    async with connect(UPSTREAM + ws.request.path, max_size=2**24) as up:
        held: dict[str, Any] = {"doc": None, "version": None, "deltas": True, "whole_next": True}

        async def client_to_server() -> None:
            async for text in ws:
                msg = orjson.loads(text)
                if msg.get("type") == "hello":
                    held["deltas"] = msg.pop("deltas", True)
                    text = orjson.dumps(msg).decode()
                elif msg.get("type") == "resume":
                    held["whole_next"] = True
                    stats["resumes"] += 1
                await up.send(text)

        async def server_to_client() -> None:
            async for text in up:
                msg = orjson.loads(text)
                if msg.get("type") == "state":
                    doc = {"status": msg["status"], "prompts": msg["prompts"], "view": msg["view"]}
                    if held["deltas"] and not held["whole_next"] and held["doc"] is not None:
                        stats["deltas"] += 1
                        base = held["version"]
                        if FAULT_EVERY and stats["deltas"] % FAULT_EVERY == 0:
                            base -= 1
                            stats["faults"] += 1
                        text = orjson.dumps({"type": "delta", "match_id": msg["match_id"], "base": base,
                                             "version": msg["version"], "patch": diff(held["doc"], doc),
                                             "events": msg["events"]}).decode()
                    else:
                        held["whole_next"] = False
                        stats["states"] += 1
                    held["doc"], held["version"] = doc, msg["version"]
                await ws.send(text)

        tasks = [asyncio.ensure_future(client_to_server()), asyncio.ensure_future(server_to_client())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()


async def main() -> None:
    async with serve(handler, "127.0.0.1", PORT, max_size=2**24):
        while True:
            await asyncio.sleep(2)
            print(orjson.dumps(stats).decode(), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
