"""The lean transport's RFC 6455 framing (``app/transport/frames.py``) against the frames the
``websockets`` library makes as a client: whole messages out of any split of the bytes, control
frames between fragments, and every rule a client can break answered with its close code."""
from __future__ import annotations

import random

import pytest
from websockets.frames import Close, Frame, Opcode

from app.transport.frames import (
    OP_BINARY,
    OP_CLOSE,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    FrameReader,
    ProtocolViolation,
    close_frame,
    frame,
    parse_close,
)


def client(opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
    """A masked client frame, as websockets' client writes it."""
    return Frame(opcode, data, fin).serialize(mask=True, extensions=[])


def raw(first: int, data: bytes) -> bytes:
    """A masked client frame with any first byte (FIN, RSV, opcode) and payload, rules or not."""
    mask = b"\x01\x02\x03\x04"
    n = len(data)
    length = bytes((0x80 | n,)) if n < 126 else bytes((0x80 | 126,)) + n.to_bytes(2, "big")
    return bytes((first,)) + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def feed_in_pieces(reader: FrameReader, data: bytes, rng: random.Random) -> list:
    out, pos = [], 0
    while pos < len(data):
        step = rng.choice((1, 2, 3, 7, 64, 1000, len(data)))
        out += reader.feed(data[pos:pos + step])
        pos += step
    return out


@pytest.mark.parametrize("seed", range(20))
def test_messages_come_out_whole_however_the_bytes_are_split(seed):
    rng = random.Random(seed)
    reader = FrameReader(1 << 20)
    expected, stream = [], b""
    for _ in range(30):
        kind = rng.choice(("text", "binary", "fragmented", "ping", "pong"))
        size = rng.choice((0, 1, 125, 126, 127, 300, 65535, 65536, 70000))
        if kind == "text":
            text = "".join(rng.choice("aé€𝄞{}\"") for _ in range(size // 3))
            stream += client(Opcode.TEXT, text.encode())
            expected.append((OP_TEXT, text))
        elif kind == "binary":
            data = rng.randbytes(size)
            stream += client(Opcode.BINARY, data)
            expected.append((OP_BINARY, data))
        elif kind == "fragmented":
            text = "".join(rng.choice("abc€") for _ in range(size // 2 + 3))
            raw = text.encode()
            cut1, cut2 = sorted(rng.sample(range(len(raw) + 1), 2))
            stream += client(Opcode.TEXT, raw[:cut1], fin=False)
            stream += client(Opcode.PING, b"between")  # a control frame between fragments (RFC 6455 5.4)
            expected.append((OP_PING, b"between"))
            stream += client(Opcode.CONT, raw[cut1:cut2], fin=False)
            stream += client(Opcode.CONT, raw[cut2:], fin=True)
            expected.append((OP_TEXT, text))  # a UTF-8 character split across fragments is fine
        else:
            data = rng.randbytes(min(size, 125))
            stream += client(Opcode.PING if kind == "ping" else Opcode.PONG, data)
            expected.append((OP_PING if kind == "ping" else OP_PONG, data))
    assert feed_in_pieces(reader, stream, rng) == expected


@pytest.mark.parametrize("data, code", [
    (bytes((0x81, 0x05)) + b"hello", 1002),                      # not masked
    (client(Opcode.TEXT, b"x")[:1] + bytes((0x80 | 1,)) + b"\0\0\0\0x", None),  # masked: fine
    (bytes((0xC1, 0x80)) + b"\0\0\0\0", 1002),                   # RSV1 without an extension
    (bytes((0x83, 0x80)) + b"\0\0\0\0", 1002),                   # reserved opcode 3
    (raw(0x89, b"x" * 126), 1002),                                # control frame over 125 bytes
    (raw(0x09, b"x"), 1002),                                      # fragmented control frame
    (client(Opcode.CONT, b"x"), 1002),                            # continuation of nothing
    (client(Opcode.TEXT, b"a", fin=False) + client(Opcode.TEXT, b"b"), 1002),  # new message mid-message
    (client(Opcode.TEXT, b"\xff\xfe"), 1007),                     # not UTF-8
    (client(Opcode.TEXT, b"x" * 2000), 1009),                    # over max_size
    (client(Opcode.TEXT, b"x" * 600, fin=False) + client(Opcode.CONT, b"x" * 600), 1009),
], ids=["unmasked", "masked", "rsv1", "opcode3", "long-control", "fragmented-control", "stray-continuation",
        "interleaved", "not-utf8", "too-big", "too-big-fragmented"])
def test_what_a_client_may_not_send_is_answered_with_its_close_code(data, code):
    reader = FrameReader(1000)
    if code is None:
        assert reader.feed(data) == [(OP_TEXT, "x")]
        return
    with pytest.raises(ProtocolViolation) as refused:
        reader.feed(data)
    assert refused.value.code == code


def test_a_too_long_message_is_refused_from_its_header_before_its_payload():
    reader = FrameReader(1000)
    header = client(Opcode.BINARY, b"x" * 70000)[:14]  # 2 + 8 length bytes + 4 mask bytes
    with pytest.raises(ProtocolViolation) as refused:
        reader.feed(header)
    assert refused.value.code == 1009


def test_close_payloads():
    assert parse_close(b"") == (None, "")
    assert parse_close(Close(1000, "bye").serialize()) == (1000, "bye")
    assert parse_close(Close(4001, "é").serialize()) == (4001, "é")
    for bad, code in ((b"\x03", 1002), (b"\x03\xed", 1002), (b"\x00\x00", 1002), (b"\x03\xe8\xff", 1007)):
        with pytest.raises(ProtocolViolation) as refused:
            parse_close(bad)
        assert refused.value.code == code


def test_server_frames_are_what_websockets_reads():
    from websockets.frames import Frame as F

    for size in (0, 125, 126, 65535, 65536):
        data = b"y" * size
        assert frame(OP_TEXT, data) == F(Opcode.TEXT, data, True).serialize(mask=False, extensions=[])
    long_reason = "é" * 100  # 200 bytes: cut to at most 123 at a character boundary
    close = close_frame(4008, long_reason)
    assert close[0] == 0x80 | OP_CLOSE and close[1] <= 125
    code, reason = parse_close(close[2:])
    assert code == 4008 and long_reason.startswith(reason) and len(reason.encode()) <= 123
