"""The ``Idempotency-Key`` header's value (docs/protocol.md, "Idempotency keys"): a Structured
Field string as the IETF draft writes it, or the same characters unquoted; 1-255 printable ASCII."""
from __future__ import annotations

import pytest

from app.api.errors import ApiError
from app.api.idempotency import parse_key
from app.db.idempotency import fingerprint


@pytest.mark.parametrize("value, key", [
    ('"8e03978e-40d5-43e8-bc93-6894a57f9324"', "8e03978e-40d5-43e8-bc93-6894a57f9324"),
    ("8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"),
    ('  "a b"  ', "a b"), (r'"say \"hi\" \\ there"', 'say "hi" \\ there'), ("x" * 255, "x" * 255), ("~!", "~!"),
    (None, None),
])
def test_keys_quoted_or_not(value, key):
    assert parse_key(value) == key


@pytest.mark.parametrize("value", ["", "  ", '""', "x" * 256, '"' + "x" * 256 + '"', "caf\u00e9", "a\tb", "a\x00b",
                                   '"a"b"', r'"a\b"', '"a\\"'])
def test_malformed_keys_are_400(value):
    with pytest.raises(ApiError) as err:
        parse_key(value)
    assert (err.value.status, err.value.code) == (400, "bad_idempotency_key")


def test_the_fingerprint_covers_method_path_and_body_not_key_order():
    base = fingerprint("POST", "/api/v1/players/me/spins", {"client_seed": "a", "x": 1})
    assert base == fingerprint("post", "/api/v1/players/me/spins", {"x": 1, "client_seed": "a"})
    assert base != fingerprint("POST", "/api/v1/players/me/spins", {"client_seed": "b", "x": 1})
    assert base != fingerprint("POST", "/api/v1/admin/players/p/crystals", {"client_seed": "a", "x": 1})
    assert base != fingerprint("PUT", "/api/v1/players/me/spins", {"client_seed": "a", "x": 1})
