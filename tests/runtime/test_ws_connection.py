"""The ASGI transport's ``Connection`` in-process (unit tests with a fake ASGI send and transport):
a close flushes what was queued before it, then the close frame; a close that cannot finish is
bounded (the transport is aborted, or without one the handler is cancelled); a forwarded act with no
answer closes with 4503. The socket hub frames a text once for many sockets and writes a commit's
frames to a socket in one write inside ``corked``. The real-socket versions are in
tests/e2e/test_socket_trust.py and tests/e2e/test_transports.py."""
from __future__ import annotations

import asyncio

from app.runtime.protocol import has_nul, utf8_size_over
from app.transport.asgi import Connection
from app.transport.hub import SocketHub


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = False
        self.closing = False
        self.buffered = 0

    def abort(self) -> None:
        self.aborted = self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return self.buffered


class FakeProtocol:
    """Stands for uvicorn's protocol: ``send`` is a bound method, ``transport`` an attribute."""

    def __init__(self, *, writable: bool = True, transport: FakeTransport | None = None) -> None:
        self.sent: list[dict] = []
        self.writable = asyncio.Event()
        if writable:
            self.writable.set()
        self.transport = transport

    async def send(self, message: dict) -> None:
        await self.writable.wait()
        self.sent.append(message)
        if message["type"] == "websocket.close" and self.transport is not None:
            self.transport.closing = True


class FakeWebSocket:
    def __init__(self, protocol: FakeProtocol, *, raw: bool = True) -> None:
        self.scope = {"bannerfall.raw_send": protocol.send} if raw else {}
        self.protocol = protocol

    async def send_text(self, text: str) -> None:
        await self.protocol.send({"type": "websocket.send", "text": text})

    async def close(self, code: int = 1000, reason: str = "") -> None:
        await self.protocol.send({"type": "websocket.close", "code": code, "reason": reason})


async def test_close_sends_the_queued_messages_then_the_close_frame():
    proto = FakeProtocol(transport=FakeTransport())
    conn = Connection(FakeWebSocket(proto), 16, close_seconds=1.0)
    conn.start()
    conn.push('{"type":"state"}')
    conn.push('{"type":"error","code":"storage_unavailable"}')
    conn.close(1011, "storage unavailable")
    conn.push("after the close: dropped")
    await asyncio.wait_for(conn.closer, 2)
    assert [m.get("text") or m["code"] for m in proto.sent] == [
        '{"type":"state"}', '{"type":"error","code":"storage_unavailable"}', 1011]
    assert not proto.transport.aborted  # the close finished in time


async def test_a_writer_cancelled_before_its_first_step_leaves_no_reference_cycle():
    """The client leaves (``gone``) right after a push made the writer task, before that task ran:
    the task ends cancelled, holding the CancelledError whose traceback holds its frame and so the
    connection. The connection must not keep the task, or the two form a cycle that only the
    cyclic collector frees (2 Dec 2026, seen under load by tests/runtime/test_cyclic_garbage.py)."""
    import gc

    proto = FakeProtocol(transport=FakeTransport(), writable=False)
    conn = Connection(FakeWebSocket(proto), 16, close_seconds=1.0)
    conn.start()
    conn.push('{"type":"state"}')
    writer = conn.writer
    assert writer is not None and not writer.done()
    conn.gone()  # before the writer's first step
    assert conn.writer is None
    await asyncio.wait({writer}, timeout=5)
    assert writer.cancelled()
    gc.collect()
    gc.disable()
    try:
        del conn, writer
        assert gc.collect() == 0  # all freed by reference counting already: no cycle was left
    finally:
        gc.enable()


async def test_a_close_that_cannot_be_written_aborts_the_transport_within_the_bound():
    transport = FakeTransport()
    transport.buffered = 1 << 20
    proto = FakeProtocol(writable=False, transport=transport)  # the client reads nothing
    conn = Connection(FakeWebSocket(proto), 8, close_seconds=0.3)
    conn.start()
    for i in range(9):  # the 9th overflows the queue: 4008
        conn.push(f'"{i}"')
    assert conn.closed and conn.close_code[0] == 4008
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(conn.closer, 2)
    assert transport.aborted and loop.time() - started < 0.6
    assert proto.sent == []


async def test_without_a_transport_the_handler_is_cancelled_at_the_bound():
    proto = FakeProtocol(writable=False, transport=None)
    ws = FakeWebSocket(proto)
    ws.scope["bannerfall.raw_send"] = lambda message: proto.send(message)  # no __self__: no transport

    async def handler() -> str:
        conn = Connection(ws, 8, close_seconds=0.2)
        conn.start()
        assert conn.transport is None
        conn.close(4503, "moved")
        try:
            await asyncio.sleep(10)  # stands for ws.receive() that never returns
        except asyncio.CancelledError:
            return "released"
        return "stuck"

    assert await asyncio.wait_for(handler(), 2) == "released"


async def test_a_forwarded_act_without_answer_closes_with_4503_after_the_error():
    proto = FakeProtocol(transport=FakeTransport())
    conn = Connection(FakeWebSocket(proto), 16, close_seconds=1.0, act_timeout=0.2)
    conn.start()
    conn.expect_answer(7)
    conn.expect_answer(8)
    conn.push('{"type":"ack","seq":8,"version":3}')  # 8 is answered, 7 is not
    await asyncio.sleep(0.4)
    assert conn.closed and conn.close_code[0] == 4503
    await asyncio.wait_for(conn.closer, 2)
    texts = [m.get("text") for m in proto.sent if m["type"] == "websocket.send"]
    assert texts[0] == '{"type":"ack","seq":8,"version":3}'
    assert '"act_unanswered"' in texts[1] and '"seq"' not in texts[1]
    assert proto.sent[-1]["type"] == "websocket.close" and proto.sent[-1]["code"] == 4503


def test_nul_and_utf8_size_helpers():
    assert has_nul({"a": ["x", {"b\x00": 1}]}) and has_nul("\x00") and not has_nul({"a": [1, "b", None]})
    assert utf8_size_over("\u20ac" * 6000, 16384) and not utf8_size_over("\u20ac" * 5000, 16384)
    assert utf8_size_over("a" * 16385, 16384) and not utf8_size_over("a" * 16384, 16384)
    assert utf8_size_over(b"a" * 16385, 16384)


def test_text_frame_is_the_frame_websockets_makes_and_is_reused_for_the_same_text():
    from websockets.frames import Frame, Opcode

    hub = SocketHub()
    for size in (0, 1, 125, 126, 127, 65535, 65536, 70000):  # the 7-, 16- and 64-bit lengths
        text = "é" * (size // 2) + "a" * (size % 2)  # size bytes of UTF-8
        frame = Frame(Opcode.TEXT, text.encode(), True).serialize(mask=False, extensions=[])
        assert hub.text_frame(text) == frame
        assert hub.text_frame(text) is hub.text_frame(text)  # one text to many sockets: framed once
    assert hub.text_frame("a" * 10) != hub.text_frame("b" * 10)


class HeldSocket:
    """Stands for a lean socket: what a batch held for it arrives in one call."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write_frames(self, frames: list[bytes]) -> None:
        self.writes.append(b"".join(frames))


def test_corked_frames_leave_in_one_write_per_socket_in_order():
    hub = SocketHub()
    a, b = HeldSocket(), HeldSocket()
    assert not hub.hold(a, b"x")  # not corked: the caller writes at once
    with hub.corked():
        assert hub.hold(a, hub.text_frame('{"type":"delta","n":2}'))
        assert hub.hold(b, hub.text_frame('{"type":"delta","n":2}'))
        with hub.corked():  # nested: the outer one writes
            assert hub.hold(a, hub.text_frame('{"type":"ack","seq":5}'))
        assert a.writes == [] and b.writes == []
    assert a.writes == [hub.text_frame('{"type":"delta","n":2}') + hub.text_frame('{"type":"ack","seq":5}')]
    assert b.writes == [hub.text_frame('{"type":"delta","n":2}')]
    assert hub.batch is None
