"""The socket leak suite: seeded bot matches over real sockets of a real server; every frame each
socket received is checked against the card ids hidden from its viewer at the version it was built
at — ``hidden_tokens`` and the oracle's set together (``app.testing.oracle``), which must agree at
every version. A game flagged with hidden information must hide something in all but
``HID_NOTHING_SHARE`` (2 %) of a run's matches (the conformance suite asks it of every seeded
random match). Frames
may also be validated against the game's published JSON Schemas.

Traces too (docs/protocol.md, "nothing you receive … counts the actions you could not see"): the
same replay gives, for every record and every socket's viewer, its document (status, prompts, view)
from the engine alone; a record that leaves it unchanged must bring that viewer no event, and the
version the viewer holds at the end (its ``ended``) must be the number of records it could see — so
no message, version or event counted an action it could not see. The bots also replace their
submissions in simultaneous phases, and send actions of any moment (``GameInfo.unprompted_actions``,
Conquest's specials) while they have nothing to answer.

The hidden sets come from replaying each match's log from its revealed seed in this process, so the
game must be installed here too (it is in the registry of both). Versions on the wire are per
audience: each is mapped back to the match's version it was built at by a replay that derives the
audience versions (``app.runtime.replay``).

Use it from a test with a server (``app.testing.server.LocalServer``, or your own)::

    report = asyncio.run(leak.run_matches(server.url, server.admin_token, "mygame", matches=40))
    assert report.problems == [], report.problems[:10]
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, cast

import orjson

from app.client import RestClient
from app.client.socket import MatchSocket, play
from app.games import registry
from app.games.base import SPECTATOR
from app.runtime.bots import make_bot
from app.runtime.replay import initial_state, replay
from app.runtime.rows import LogRow, MatchRow
from app.testing.contracts import SchemaCheck
from app.testing.oracle import card_ids, examine, viewers_of

__all__ = ["LeakReport", "SeatSetup", "check_match", "one_match", "run_matches"]

#: ``(match index, the seats' clients, an admin client) -> seat -> the loadout it brings (or None)``
SeatSetup = Callable[[int, list[RestClient], RestClient], Awaitable[dict[int, list[str] | None]]]


@dataclass
class LeakReport:
    """What :func:`run_matches` found. ``problems`` is every leak, every difference between
    ``hidden_tokens`` and the oracle, every hidden-information match that hid nothing and every frame
    off its schema; empty when the game passed."""

    matches: int = 0
    frames: int = 0
    problems: list[str] = field(default_factory=list)
    #: each match's action log (as ``GET /admin/matches/{id}/log`` gives it)
    logs: list[list[dict[str, Any]]] = field(default_factory=list)
    #: submissions replaced, and actions of any moment sent by a seat without a prompt
    replaced: int = 0
    unprompted: int = 0
    #: hidden-information matches in which nothing was hidden from anyone at any version (their
    #: ids); :func:`run_matches` allows at most :data:`HID_NOTHING_SHARE` of them
    hid_nothing: list[str] = field(default_factory=list)


#: the share of a run's matches that may hide nothing: a random play can end before the game hides
#: anything (about 0.2 % of 3-seat Provinces matches of 3 rounds never draw a joker: all four stay
#: among the ~16 cards left in the shoe, and only garrisoned jokers are hidden, rule 6.1)
HID_NOTHING_SHARE = 0.02


def _anytime(bot: Any, index: int) -> Callable[[dict[str, Any], dict[str, Any] | None], dict[str, Any] | None]:
    """What a seat does while it has nothing to answer: now and then it replaces its submission with
    a new decision (simultaneous phases), and a bot that has actions of any moment (its ``anytime``,
    e.g. Conquest's specials) sends them."""
    rng = random.Random(index)
    anytime = getattr(bot, "anytime", None)

    def decide(view: dict[str, Any], prompt: dict[str, Any] | None) -> dict[str, Any] | None:
        if prompt is not None and rng.random() < 0.5:
            return bot.decide(view, {**prompt, "submitted": False})  # a replacement
        return anytime(view) if anytime is not None else None

    return decide


class _RecordingSocket(MatchSocket):
    """Keeps every text frame it receives (deltas included) in ``raw``."""

    raw: list[bytes | str]

    async def recv(self, timeout: float | None = None) -> dict[str, Any]:
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), timeout)
            self.raw.append(raw)
            msg = await self.take(orjson.loads(raw))  # a delta comes back as the state it makes
            if msg is not None:
                return msg


async def one_match(url: str, game_id: str, seats: int, options: dict[str, Any], index: int,
                    admin: RestClient, *, seat_setup: SeatSetup | None = None, bot: str | None = None,
                    timeout: float = 600.0) -> dict[str, Any]:
    """One match between freshly registered players, every seat played by the game's ``bot`` kind
    (default: ``random`` when it has one, else its first) over its own socket, and a spectator on
    another. Returns ``{"match", "raw": {viewer: [frames]}}``."""
    game = registry()[game_id]
    kind = bot or ("random" if "random" in game.info.bots else next(iter(game.info.bots)))
    players = []
    for i in range(seats + 1):
        client = RestClient(url)
        await client.register(f"g{index}p{i}")
        players.append(client)
    host, watcher = players[0], players[-1]
    try:
        loadouts = await seat_setup(index, players[:seats], admin) if seat_setup is not None else {}
        lobby = await host.create_lobby(game_id, seats, options, loadout=loadouts.get(0))
        for seat, client in enumerate(players[1:seats], start=1):
            await client.join(lobby["id"], loadout=loadouts.get(seat))
        lobby = await host.start(lobby["id"])
        match_id = lobby["match_id"]
        socks: dict[int, _RecordingSocket] = {}
        for viewer, client in [*enumerate(players[:seats]), (SPECTATOR, watcher)]:
            sock = _RecordingSocket(url, match_id, client.token)
            sock.raw = []
            await sock.connect()
            socks[viewer] = sock

        async def spectate() -> dict[str, Any]:
            while True:
                msg = await socks[SPECTATOR].recv(timeout=timeout)
                if msg["type"] == "ended":
                    return msg

        bots = {seat: make_bot(game_id, kind, index * 10 + seat) for seat in range(seats)}
        try:
            # the last seat answers a little later, so the others have time to replace their submissions
            await asyncio.wait_for(asyncio.gather(*(play(socks[s], bots[s].decide, anytime=_anytime(bots[s], index),
                                                         delay=0.02 if s == seats - 1 else 0.0)
                                                    for s in range(seats)), spectate()), timeout=timeout)
        finally:
            for sock in socks.values():
                await sock.close()
        match = await host.match(match_id)
    finally:
        for client in players:
            await client.close()
    return {"match": match, "raw": {viewer: sock.raw for viewer, sock in socks.items()}}


def _document(game: Any, state: Any, viewer: int) -> bytes:
    """``viewer``'s document as the engine gives it (status, prompts without deadlines, view)."""
    prompts = [[p.seat, p.kind, p.phase_id, p.simultaneous, p.submitted] for p in game.prompts(state)]
    return orjson.dumps([game.outcome(state) is None, prompts, game.view(state, viewer)],
                        option=orjson.OPT_NON_STR_KEYS)


def check_match(game_id: str, result: dict[str, Any], log: list[dict[str, Any]],
                initial_deadlines: dict[str, float], schemas: SchemaCheck | None = None,
                report: LeakReport | None = None) -> list[str]:
    """Replay one match and check every frame its sockets received; returns the problems found
    (``report``: its ``replaced`` and ``unprompted`` counts are added to)."""
    game = registry()[game_id]
    match = dict(result["match"])
    seats = match["seat_count"] = len(match["seats"])
    match["deadlines"] = initial_deadlines
    state = initial_state(game, cast(MatchRow, match))
    replayed = replay(cast(MatchRow, match), cast(list[LogRow], log), keep_events=len(log) + 1)
    built_at: dict[int, dict[int, int]] = {}  # viewer -> audience version -> match version
    for viewer in result["raw"]:
        index = viewer if viewer >= 0 else seats
        reached = built_at[viewer] = {0: 0}
        for version, _events, audiences in replayed.history:
            reached.setdefault(audiences[index], version)
    viewers = viewers_of(seats)
    watched = list(result["raw"])
    problems: list[str] = []
    hidden: list[dict[int, frozenset[str]]] = []
    anything_hidden = False
    documents = {v: _document(game, state, v) for v in watched}
    seen = dict.fromkeys(watched, 0)  # records each socket's viewer could see: its version at the end
    for version in range(len(log) + 1):
        if version:
            row = log[version - 1]
            if row["kind"] == "abort":
                hidden.append(hidden[-1])
                continue
            prompts = {p.seat: p for p in game.prompts(state)}
            kind = (row["action"] or {}).get("type")
            if report is not None and kind in game.info.unprompted_actions and row["seat"] not in prompts:
                report.unprompted += 1
            if (report is not None and row["seat"] in prompts and prompts[row["seat"]].submitted
                    and kind not in game.info.unprompted_actions):
                report.replaced += 1
            state, events = game.apply(state, row["seat"], row["action"])
            for v in watched:
                document = _document(game, state, v)
                got = [e.type for e in events if e.visible_to(v)]
                if document == documents[v] and got and v != row["seat"]:
                    problems.append(f"viewer {v} saw nothing of record {row['seq']} ({kind} by seat "
                                    f"{row['seat']}) but got {got}")
                seen[v] += document != documents[v] or bool(got)
                documents[v] = document
        sets, found = examine(game, state, viewers)
        problems.extend(f"match {match['id'][:8]} v{version}: {problem}" for problem in found)
        anything_hidden = anything_hidden or any(sets.values())
        hidden.append(sets)
    if game.info.hidden_information and not anything_hidden and report is not None:
        report.hid_nothing.append(match["id"][:8])
    elif game.info.hidden_information and not anything_hidden:
        problems.append(f"{game_id} match {match['id'][:8]} ({seats} seats): hidden information, but nothing was "
                        "hidden from anyone at any version")
    for viewer, frames in result["raw"].items():
        ended = [msg for msg in map(orjson.loads, frames) if msg.get("type") == "ended"]
        if not ended:
            problems.append(f"viewer {viewer} got no ended")
        elif ended[-1]["version"] != seen[viewer]:
            problems.append(f"viewer {viewer} ends at version {ended[-1]['version']}, but could see "
                            f"{seen[viewer]} records")
    for viewer, frames in result["raw"].items():
        current = 0
        for raw in frames:
            msg = orjson.loads(raw)
            if isinstance(msg.get("version"), int):
                current = built_at[viewer].get(msg["version"], current)
            if msg.get("type") in ("state", "delta"):
                for event in msg.pop("events", []):
                    at = built_at[viewer].get(event.get("v"), current)
                    bad = card_ids(event) & hidden[at][viewer]
                    if bad:
                        problems.append(f"viewer {viewer} event v{event.get('v')} {event.get('type')}: {sorted(bad)}")
                    if schemas is not None:
                        body = {k: v for k, v in event.items() if k != "v"}
                        problems.extend(f"viewer {viewer}: {e}" for e in schemas.errors("event", body))
                if schemas is not None and msg.get("type") == "state":
                    problems.extend(f"viewer {viewer}: {e}" for e in schemas.errors("view", msg["view"]))
            bad = card_ids(msg) & hidden[current][viewer]
            if bad:
                problems.append(f"viewer {viewer} {msg.get('type')} v{current}: {sorted(bad)}")
    if schemas is not None:
        for row in log:
            if row["kind"] != "abort":
                problems.extend(schemas.errors("action", row["action"]))
    return problems


async def run_matches(url: str, admin_token: str, game_id: str, *, matches: int,
                      seats: tuple[int, ...] | None = None, options: dict[str, Any] | None = None,
                      concurrency: int = 8, seat_setup: SeatSetup | None = None, schemas: int = 3,
                      bot: str | None = None) -> LeakReport:
    """``matches`` bot matches of ``game_id`` on the server at ``url`` (``admin_token``: an admin's,
    to read the logs), ``concurrency`` at a time, seat counts cycling through ``seats`` (default: every
    count the game takes), with ``options`` (default: the game's ``test_options``); the first
    ``schemas`` matches have every frame validated against the game's JSON Schemas too."""
    game = registry()[game_id]
    counts = seats or tuple(range(game.info.min_seats, game.info.max_seats + 1))
    opts = dict(game.info.test_options) if options is None else options
    admin = RestClient(url, admin_token)
    schema_check = SchemaCheck(game) if schemas else None
    report = LeakReport()
    gate = asyncio.Semaphore(concurrency)

    async def run(i: int) -> None:
        async with gate:
            result = await one_match(url, game_id, counts[i % len(counts)], opts, i, admin,
                                     seat_setup=seat_setup, bot=bot)
            answer = await admin.admin_log(result["match"]["id"])
            report.problems.extend(check_match(game_id, result, answer["actions"], answer["initial_deadlines"],
                                               schema_check if i < schemas else None, report))
            report.logs.append(answer["actions"])
            report.frames += sum(len(frames) for frames in result["raw"].values())
            report.matches += 1

    try:
        await asyncio.gather(*(run(i) for i in range(matches)))
    finally:
        await admin.close()
    if len(report.hid_nothing) > max(1, int(matches * HID_NOTHING_SHARE)):
        report.problems.append(f"{game_id}: hidden information, but nothing was hidden from anyone at any "
                               f"version in {len(report.hid_nothing)} of {matches} matches: {report.hid_nothing[:10]}")
    return report
