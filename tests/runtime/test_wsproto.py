"""``app.api.wsproto``: the inbox and the writable flag that replace uvicorn's ``asyncio.Queue`` and
``asyncio.Event`` behave like them where uvicorn uses them. The protocol itself serves every socket
of the e2e tests (``bannerfall serve``)."""
from __future__ import annotations

import asyncio

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
