"""Deltas are proven over real sockets (issue 11 items 1 and 6): matches of every game on a real
server, every seat and a spectator on sockets that take deltas (``MatchSocket``, which applies
them as docs/protocol.md says), a second spectator that takes full states.

Checked, for every version each socket held: the document a delta socket built equals the document
of that audience at that version, computed independently by replaying the match's log in this
process (``AudienceBook`` over the engine); the delta spectator and the full-state spectator hold the
same documents at the same versions; no socket ever needed a resume; the bytes of a delta are a
fraction of a full state's. On both socket transports (``tests/conftest.py``, ``backends_and_transports``).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import orjson
import pytest

from app.client import MatchSocket, RestClient
from app.client.socket import play
from app.games import registry
from app.games.base import SPECTATOR, Event
from app.parts import to_json
from app.runtime.audience import AudienceBook
from app.runtime.bots import make_bot
from app.runtime.replay import initial_state
from app.runtime.rows import MatchRow
from app.runtime.wire import prompts_part, status_part
from tests.conftest import backends_and_transports
from tests.e2e.helpers import start_match


def exact(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True)


def documents_by_version(game_id: str, match: dict[str, Any], initial_deadlines: dict[str, float],
                         log: list[dict[str, Any]]) -> dict[int, dict[int, str]]:
    """audience viewer -> its version -> its document (exact JSON), replayed from the log here."""
    game = registry()[game_id]
    seats = len(match["seats"])
    row = cast(MatchRow, {**match, "seat_count": seats, "deadlines": initial_deadlines})
    state = initial_state(game, row)
    prompts = prompts_part(game.prompts(state), {int(k): v for k, v in initial_deadlines.items()})
    book = AudienceBook(game, seats, state, status_part("running"), prompts)
    docs: dict[int, dict[int, str]] = {v: {0: exact(to_json(book.docs[i]))} for i, v in enumerate(book.keys)}
    status = "running"
    events: list[Event]
    for rec in log:
        if rec["kind"] == "abort":
            status, prompts, events = "aborted", (), []
        else:
            state, events = game.apply(state, rec["seat"], rec["action"])
            if game.outcome(state) is not None:
                status = "finished"
            prompts = prompts_part(game.prompts(state), {int(k): v for k, v in (rec["deadlines"] or {}).items()})
        for i in book.advance(state, status_part(status), prompts, events):
            docs[book.keys[i]][book.versions[i]] = exact(to_json(book.docs[i]))
    return docs


@backends_and_transports
@pytest.mark.parametrize("game_id", list(registry()))
async def test_every_delta_socket_holds_its_audiences_document_at_every_version(server, game_id):
    info = registry()[game_id].info
    seats = min(3, info.max_seats)
    table = await start_match(server.url, game_id, seats, options=dict(info.test_options))
    watchers = [RestClient(server.url), RestClient(server.url)]
    for i, w in enumerate(watchers):
        await w.register(f"watcher{i}")
    admin = RestClient(server.url, server.admin_token)
    socks = [MatchSocket(server.url, table.match_id, p.token, record=True) for p in table.players]
    spec = MatchSocket(server.url, table.match_id, watchers[0].token, record=True)
    spec_full = MatchSocket(server.url, table.match_id, watchers[1].token, deltas=False, record=True)
    try:
        firsts = []
        for s in [*socks, spec, spec_full]:  # every socket holds version 0 before anyone acts
            await s.connect()
            firsts.append(await s.recv(timeout=30))
        assert all(f["type"] == "state" and f["version"] == 0 for f in firsts)

        async def watch(sock: MatchSocket) -> dict[str, Any]:
            while True:
                msg = await sock.recv(timeout=120)
                if msg["type"] == "ended":
                    return msg

        bots = [make_bot(game_id, next(iter(info.bots)), 100 + seat) for seat in range(seats)]
        await asyncio.wait_for(asyncio.gather(*(play(s, b.decide, initial=f)
                                                for s, b, f in zip(socks, bots, firsts, strict=False)),
                                              watch(spec), watch(spec_full)), timeout=300)
        answer = await admin.admin_log(table.match_id)
        match = await admin.request("GET", f"/admin/matches/{table.match_id}")
        expected = documents_by_version(game_id, match["match"], answer["initial_deadlines"], answer["actions"])

        def held(sock: MatchSocket) -> list[tuple[int, str, bool]]:
            return [(m["version"], exact({k: m[k] for k in ("status", "prompts", "view")}), bool(m.get("via_delta")))
                    for m in sock.received if m["type"] == "state"]

        for viewer, sock in [*enumerate(socks), (SPECTATOR, spec)]:
            states = held(sock)
            assert sock.resumes == 0
            assert sum(1 for _v, _d, via in states if via) >= len(states) - 2  # all but the first are deltas
            for version, doc, _via in states:
                assert doc == expected[viewer][version], (game_id, viewer, version)
        # the full-state spectator saw the same documents at the same versions
        full = {v: d for v, d, _via in held(spec_full)}
        assert full == {v: d for v, d, _via in held(spec)}
        kinds = [kind for kind, _raw in spec_full.raw_received]
        assert "delta" not in kinds and kinds.count("state") == len(full)
        # deltas are smaller than full states (Provinces' at most half: random bots move many cards);
        # a small view's (under 2 KB, e.g. Tricks') delta is about its size, events included
        delta_bytes = [len(raw) for kind, raw in socks[0].raw_received if kind == "delta"]
        state_bytes = [len(raw) for kind, raw in socks[0].raw_received if kind == "state"]
        median = sorted(delta_bytes)[len(delta_bytes) // 2]
        if state_bytes[0] > 2000:
            assert delta_bytes and median * (2 if game_id == "provinces" else 1) < state_bytes[0]
        else:
            assert delta_bytes and median < 2 * state_bytes[0], (median, state_bytes[0])
        # the seat's raw deltas move its version one by one, and every ack follows its version's delta
        seat_msgs = [orjson.loads(raw) for kind, raw in socks[0].raw_received if kind in ("delta", "ack")]
        last = None
        for msg in seat_msgs:
            if msg["type"] == "delta":
                assert last is None or msg["base"] == last
                assert msg["version"] == msg["base"] + 1
                last = msg["version"]
            else:
                assert last is not None and msg["version"] <= last
    finally:
        for s in [*socks, spec, spec_full]:
            await s.close()
        await table.close()
        for w in watchers:
            await w.close()
        await admin.close()
