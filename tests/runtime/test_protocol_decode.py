"""``app.runtime.protocol.decode``: what a received text frame may be before anything reads it."""
from __future__ import annotations

import json

import orjson
import pydantic
import pytest

from app.runtime.protocol import MAX_DEPTH, ProtocolError, decode, nested_over


def act_nested(containers: int) -> str:
    """An ``act`` whose action holds ``containers`` arrays inside each other: the message nests
    ``containers + 2`` deep (the message, the action, the arrays)."""
    return ('{"type":"act","seq":1,"action":{"type":"end_turn","x":' + "[" * containers + "1"
            + "]" * containers + "}}")


@pytest.mark.parametrize("depth", [2, 3, MAX_DEPTH])
def test_a_message_nested_up_to_the_limit_is_read(depth):
    text = act_nested(depth - 2)
    value = decode({"text": text}, 1 << 20)
    assert value == json.loads(text) and not nested_over(value, MAX_DEPTH)
    assert nested_over(value, depth - 1)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 1000])
def test_a_message_nested_deeper_is_malformed_and_could_not_have_been_logged(depth):
    text = act_nested(depth - 2)
    if depth >= 300:  # why the limit: orjson reads what it cannot write again (log, echo)
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps(orjson.loads(text))
    with pytest.raises(ProtocolError) as err:
        decode({"text": text}, 1 << 20)
    assert err.value.code == "malformed_message" and str(MAX_DEPTH) in err.value.message


def test_many_brackets_side_by_side_are_not_depth():
    msg = {"type": "ping", "t": [[1]] * 500}
    assert decode({"text": json.dumps(msg)}, 1 << 20) == msg


def test_an_ended_message_always_carries_an_outcome_object():
    """``ended.outcome`` is never null (docs/protocol.md, "After ended"; the schema requires the object):
    a match row that holds no outcome reads as its status alone."""
    from app.api.messages import validate_server_message
    from app.games.base import Outcome
    from app.runtime import wire

    missing = wire.ended_message(match_id="m1", status="aborted", version=3, outcome=None, seed="00", seed_hash="11")
    assert missing["outcome"] == {"ranks": {}, "scores": {}, "reason": "aborted"}
    validate_server_message(missing)
    kept = wire.ended_message(match_id="m1", status="finished", version=9,
                              outcome=Outcome(ranks={0: 1, 1: 2}, scores={0: 3, 1: 1}, reason="tables_to_win"),
                              seed="00", seed_hash="11")
    assert kept["outcome"] == {"ranks": {"0": 1, "1": 2}, "scores": {"0": 3, "1": 1}, "reason": "tables_to_win"}
    validate_server_message(kept)
    with pytest.raises(pydantic.ValidationError):
        validate_server_message({**kept, "outcome": None})
