"""Bots as local peers of the runner (issue 10 item 5): the same messages as a seat's socket, the
same pipeline for their actions, and they follow the match to its current runner."""
from __future__ import annotations

import asyncio

import orjson
import pytest

from app.games import registry
from app.runtime.bots import BotGone, BotPeer, BotRunner
from app.runtime.protocol import CLOSE_MOVED, route
from tests.runtime.twins import FakePeer, make_runner

provinces = registry()["provinces"]


def _turn_seat(runner) -> int:
    return runner.prompts[0].seat


async def test_a_bot_peer_gets_exactly_what_a_seat_socket_gets():
    """Two identical matches, the same actions: seat 1 as a bot peer in one, as a socket twin in the
    other; both receive the same texts (views filtered for seat 1, events it may see). Bots take full
    states, so the socket twin asks for full states too (``"deltas": false``)."""
    a, writer_a, _, _ = make_runner(provinces, 2)
    b, writer_b, _, _ = make_runner(provinces, 2)
    bot, sock = BotPeer(a, 1, "p1"), FakePeer(1, "p1")
    sock.deltas = False
    a.attach(bot)
    b.attach(sock)
    actors = [FakePeer(0, "p0"), FakePeer(0, "p0")]
    a.attach(actors[0])
    b.attach(actors[1])
    for seq in range(1, 5):
        seat = _turn_seat(a)
        for runner, actor, other in ((a, actors[0], bot), (b, actors[1], sock)):
            msg = {"type": "act", "seq": seq, "action": {"type": "end_turn"}, "version": runner.version}
            route(runner, actor if seat == 0 else other, msg)
        writer_a.commit()
        writer_b.commit()
    got = []
    while not bot.inbox.empty():
        got.append(orjson.loads(bot.inbox.get_nowait()))
    assert got == sock.messages and len(got) >= 5
    assert all(m.get("seat") == 1 for m in got if m["type"] == "state")


async def test_a_bot_action_takes_the_same_validation_as_a_socket():
    runner, writer, _, _ = make_runner(provinces, 2)
    seat = _turn_seat(runner)
    bot = BotPeer(runner, 1 - seat, "p")
    runner.attach(bot)
    await bot.recv()  # the first state
    await bot.act({"type": "end_turn"}, version=0)  # not its turn
    reply = await bot.recv()
    assert reply["type"] == "error" and reply["code"] == "not_your_turn" and reply["seq"] == 1
    assert runner.version == 0 and writer.pending == []


async def test_a_closed_bot_peer_stops_its_bot():
    runner, _, _, _ = make_runner(provinces, 2)
    bot = BotPeer(runner, 0, "p")
    bot.close(CLOSE_MOVED, "moved")
    with pytest.raises(BotGone):
        await bot.recv()


class _Live:
    def __init__(self, runner) -> None:
        self.runner = runner

    def live(self, match_id):
        return self.runner


async def test_bots_play_on_the_current_runner_and_follow_a_rebuild():
    """The node that runs the match runs its bots; after the match is rebuilt (a new runner, as
    after a takeover or recovery) ``ensure`` moves the bot onto it, and it acts through the pipeline."""
    old, _, _, _ = make_runner(provinces, 2)
    new, writer, _, _ = make_runner(provinces, 2)
    seat = _turn_seat(new)
    meta = {**old.meta, "seats": [{"player_id": f"p{i}", "bot": "random" if i == seat else None}
                                  for i in range(2)]}
    live = _Live(old)
    bots = BotRunner(delay=0.0)
    bots.bind(live)
    bots.ensure(meta)
    await asyncio.sleep(0)
    assert isinstance(old.seat_peers.get(seat), BotPeer)
    first_task = bots.tasks[("m1", seat)][1]
    live.runner = new
    bots.ensure(meta)  # the match was rebuilt here: the bot moves to the new runner
    for _ in range(100):
        if writer.pending:
            break
        await asyncio.sleep(0.01)
    assert first_task.cancelled() or first_task.done()
    assert isinstance(new.seat_peers.get(seat), BotPeer)
    row = writer.pending[0][0]
    assert row["seat"] == seat and row["kind"] == "act" and row["client_seq"] == 1
    await bots.stop()
    assert not bots.tasks
