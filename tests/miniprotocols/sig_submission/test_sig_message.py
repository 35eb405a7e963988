"""The carried id and the payload span of a raw message, cut with the cursor."""

from __future__ import annotations

import cbor2
import pytest

from miniprotocols.framework import CodecError
from miniprotocols.sig_submission import carried_id, computed_id, payload_span
from miniprotocols.sig_submission.sig_message import checked_id, read_message
from ouroboros_mux.cbor import Cursor

from .helpers import make_message, message_id


def wrap(message_id_bytes: bytes, payload: bytes) -> bytes:
    return b"\x85" + cbor2.dumps(message_id_bytes) + payload + cbor2.dumps(bytes(448)) \
        + cbor2.dumps([bytes(32), 0, 0, bytes(64)]) + cbor2.dumps(bytes(32))


def test_the_cip_golden_vector(vectors):
    vector = vectors["message_id"]
    payload = bytes.fromhex(vector["payload_cbor"])
    expected = bytes.fromhex(vector["message_id"])
    raw = wrap(expected, payload)
    start, end = payload_span(raw)
    assert raw[start:end] == payload
    assert carried_id(raw) == computed_id(raw) == expected


def test_the_carried_id_is_reported_even_when_it_is_wrong():
    payload = bytes.fromhex("834a0102030405060708090a187b1a0001e240")
    raw = wrap(bytes(32), payload)
    assert carried_id(raw) == bytes(32)
    assert computed_id(raw) != carried_id(raw)  # validation's business (InvalidSigId), not the protocol's


def test_non_shortest_payload_bytes_are_hashed_as_received():
    raw = make_message(9)
    padded = raw.replace(b"\x05\x1a", b"\x1b\x00\x00\x00\x00\x00\x00\x00\x05\x1a", 1)
    assert computed_id(raw) == message_id(raw)
    assert computed_id(padded) != computed_id(raw)


def test_a_reply_is_cut_into_exact_spans_and_ids_in_one_walk():
    first, second = make_message(1), make_message(2)
    # The same message with a non-shortest array head and id head: still a message, the id not at byte 3.
    odd = b"\x98\x05\x59\x00\x20" + second[3:]
    cursor = Cursor(first + odd + second)
    assert read_message(cursor) == (first, message_id(first))
    assert read_message(cursor) == (odd, message_id(second))
    assert read_message(cursor) == (second, message_id(second))
    assert cursor.at_end()
    assert checked_id(first) == carried_id(first) == message_id(first)
    assert checked_id(odd) == carried_id(odd) == message_id(second)


@pytest.mark.parametrize("raw", [
    cbor2.dumps([bytes(32), [1], 2, 3]),  # four items: the legacy shape's length
    cbor2.dumps([[bytes(32), b"body", 1, 2], bytes(448), [], bytes(32)]),  # legacy format
    cbor2.dumps([bytes(31), [1], 2, 3, 4]),
    cbor2.dumps([bytes(32), b"payload", 2, 3, 4]),
    cbor2.dumps({"id": bytes(32)}),
])
def test_what_is_not_a_message(raw):
    with pytest.raises(CodecError):
        carried_id(raw)
    with pytest.raises(CodecError):
        read_message(Cursor(raw))
