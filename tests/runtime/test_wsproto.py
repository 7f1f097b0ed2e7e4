"""``app.api.wsproto``: the inbox and the writable flag that replace uvicorn's ``asyncio.Queue`` and
``asyncio.Event`` behave like them where uvicorn uses them. The protocol itself serves every socket
of the e2e tests (``bannerfall serve``). The check of the uvicorn internals they (and the socket fast
path) use, and the fallback to uvicorn's stock protocols when they changed."""
from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from app.api import wsproto
from app.api.ws import _sansio_protocol
from app.api.wsproto import Flag, Inbox


async def until(condition, seconds: float = 1.0) -> None:
    """Let the loop run until ``condition()`` holds (a task reached its wait); fails after ``seconds``."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the condition never held"
        await asyncio.sleep(0)


async def test_inbox_gives_items_in_order_and_wakes_a_waiting_getter():
    inbox = Inbox()
    assert inbox.empty()
    inbox.put_nowait(1)
    inbox.put_nowait(2)
    assert not inbox.empty() and inbox.qsize() == 2
    assert await inbox.get() == 1 and await inbox.get() == 2 and inbox.empty()
    getter = asyncio.ensure_future(inbox.get())
    await until(lambda: inbox._getters)
    assert not getter.done()
    inbox.put_nowait("x")
    assert await asyncio.wait_for(getter, 1) == "x"


async def test_inbox_getters_are_served_in_order_and_a_timed_out_get_loses_nothing():
    inbox = Inbox()
    first = asyncio.ensure_future(inbox.get())
    second = asyncio.ensure_future(inbox.get())
    await until(lambda: inbox._getters and len(inbox._getters) == 2)
    inbox.put_nowait("a")
    inbox.put_nowait("b")
    assert await first == "a" and await second == "b"
    try:  # as the hello timeout does: the item put later is not lost
        await asyncio.wait_for(inbox.get(), 0.01)
    except TimeoutError:
        pass
    inbox.put_nowait("c")
    assert await asyncio.wait_for(inbox.get(), 1) == "c"


async def test_inbox_passes_a_wake_up_on_when_the_woken_getter_is_cancelled():
    inbox = Inbox()
    first = asyncio.ensure_future(inbox.get())
    second = asyncio.ensure_future(inbox.get())
    await until(lambda: inbox._getters and len(inbox._getters) == 2)
    inbox.put_nowait("only")  # wakes the first ...
    first.cancel()  # ... which is cancelled before it runs: the second must get the item
    assert await asyncio.wait_for(second, 1) == "only"
    assert first.cancelled()


async def test_flag_set_wakes_every_waiter_and_clear_makes_them_wait():
    flag = Flag()
    assert not flag.is_set()
    waiters = [asyncio.ensure_future(flag.wait()) for _ in range(3)]
    await until(lambda: flag._waiters and len(flag._waiters) == 3)
    assert not any(w.done() for w in waiters)
    flag.set()
    assert await asyncio.wait_for(asyncio.gather(*waiters), 1) == [True, True, True]
    assert flag.is_set() and await flag.wait()
    flag.clear()
    late = asyncio.ensure_future(flag.wait())
    await until(lambda: flag._waiters)
    assert not late.done()
    late.cancel()
    await until(late.done)
    flag.set()  # a cancelled waiter is simply gone
    assert late.cancelled()


# -- the uvicorn internals the lean protocols and the socket fast path use ---------------------

@pytest.fixture
def fresh_check():
    wsproto.internals_problem.cache_clear()
    yield
    wsproto.internals_problem.cache_clear()


def test_the_installed_uvicorn_has_the_internals_the_lean_protocols_use(fresh_check):
    """Fails when uvicorn (or websockets) is upgraded past what ``app.api.wsproto`` was written for:
    then re-read their code, adjust, and move the bound in pyproject.toml."""
    assert wsproto.internals_problem() is None
    assert wsproto.server_protocols() == (wsproto.LeanHttpToolsProtocol, wsproto.LeanWebSocketsProtocol)
    proto = object.__new__(wsproto.LeanWebSocketsProtocol)
    ws = SimpleNamespace(scope={"bannerfall.raw_send": proto.send})
    assert _sansio_protocol(ws) is proto  # the socket fast path is on


@pytest.mark.parametrize("change", ["renamed attribute", "missing class"])
def test_changed_internals_fall_back_to_uvicorns_stock_protocols_with_a_warning(change, fresh_check, monkeypatch,
                                                                                  caplog):
    module, cls, methods = wsproto.INTERNALS[0]
    if change == "renamed attribute":
        changed = (module, cls, {**methods, "__init__": (*methods["__init__"], "a_renamed_attribute")})
        expected = "a_renamed_attribute"
    else:
        changed = (module, "NoSuchProtocol", methods)
        expected = "NoSuchProtocol is missing"
    monkeypatch.setattr(wsproto, "INTERNALS", (changed, *wsproto.INTERNALS[1:]))
    problem = wsproto.internals_problem()
    assert problem is not None and expected in problem
    with caplog.at_level(logging.WARNING, logger="bannerfall.api"):
        assert wsproto.server_protocols() == ("auto", "websockets-sansio")
    assert "stock protocols" in caplog.text and expected in caplog.text
    proto = object.__new__(wsproto.LeanWebSocketsProtocol)
    ws = SimpleNamespace(scope={"bannerfall.raw_send": proto.send})
    assert _sansio_protocol(ws) is None  # the socket fast path is off: uvicorn's own send


def test_the_http_protocol_lets_go_of_its_parser_after_a_websocket_upgrade(monkeypatch):
    """The parser holds the protocol's bound methods: kept after the upgrade, the pair is a
    reference cycle for every socket (tests/runtime/test_cyclic_garbage.py measures the whole)."""
    upgraded = []
    monkeypatch.setattr(wsproto.HttpToolsProtocol, "handle_websocket_upgrade", lambda self: upgraded.append(self))
    proto = object.__new__(wsproto.LeanHttpToolsProtocol)
    proto.parser = object()
    proto.handle_websocket_upgrade()
    assert upgraded == [proto] and proto.parser is None
