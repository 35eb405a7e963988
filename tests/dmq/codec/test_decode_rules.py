"""Each decoder rule of docs/protocol/message.md 5.2, one hand-made deviation at a time."""

from __future__ import annotations

import cbor2
import pytest

from dmq.codec import (
    LegacyMessageFormat,
    MessageDecodeError,
    decode_message,
    decode_message_at,
)
from dmq.message import message_id_of
from dmq.opcert import encode_opcert

from .conftest import E2E_BODY


def bstr(data: bytes) -> bytes:
    return cbor2.dumps(data)


def uint(value: int) -> bytes:
    return cbor2.dumps(value)


class Parts:
    """The five items of a valid message as raw CBOR, to be spoiled one at a time."""

    def __init__(self, message):
        self.head = b"\x85"
        self.body = bstr(message.body)
        self.kes_period = uint(message.kes_period)
        self.expires_at = uint(message.expires_at)
        self.payload_head = b"\x83"
        self.payload_extra = b""
        self.signature = bstr(message.kes_signature)
        self.opcert = encode_opcert(message.opcert)
        self.cold_vk = bstr(message.cold_vk)
        self.extra = b""
        self.message_id: bytes | None = None

    def payload(self) -> bytes:
        return self.payload_head + self.body + self.kes_period + self.expires_at + self.payload_extra

    def raw(self) -> bytes:
        payload = self.payload()
        message_id = self.message_id if self.message_id is not None else bstr(message_id_of(payload))
        return self.head + message_id + payload + self.signature + self.opcert + self.cold_vk + self.extra


@pytest.fixture
def parts(e2e_message) -> Parts:
    return Parts(e2e_message)


def test_the_parts_rebuild_the_original(parts, e2e_message):
    assert parts.raw() == e2e_message.raw


def refused(raw: bytes, reason: str) -> None:
    with pytest.raises(MessageDecodeError, match=reason):
        decode_message(raw)


# -- the outer array -----------------------------------------------------------------------

def test_outer_array_must_be_definite(parts):
    parts.head, parts.extra = b"\x9f", b"\xff"
    refused(parts.raw(), "message: indefinite-length array")


@pytest.mark.parametrize("head, extra", [(b"\x86", b"\x00"), (b"\x84", b"")])
def test_outer_array_must_have_five_items(parts, head, extra):
    parts.head, parts.extra = head, extra
    refused(parts.raw(), "message: expected an array of 5 items")


def test_four_items_starting_with_a_byte_string_is_not_legacy(parts):
    parts.head, parts.cold_vk = b"\x84", b""
    with pytest.raises(MessageDecodeError) as caught:
        decode_message(parts.raw())
    assert not isinstance(caught.value, LegacyMessageFormat)


def test_outer_item_must_be_an_array(parts):
    refused(b"\xa1\x00" + parts.raw()[1:], "message: expected an array, got a map")
    refused(b"\xd8\x18" + parts.raw(), "message: expected an array, got a tag")


def test_nothing_may_follow_the_message(parts):
    refused(parts.raw() + b"\x00", "1 trailing bytes after the message")


# -- message id ----------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 31, 33, 64])
def test_message_id_is_32_bytes(parts, size):
    parts.message_id = bstr(bytes(size))
    refused(parts.raw(), f"messageId: expected 32 bytes, got {size}")


def test_message_id_is_a_definite_byte_string(parts, e2e_message):
    parts.message_id = b"\x5f" + bstr(e2e_message.message_id[:16]) + bstr(e2e_message.message_id[16:]) + b"\xff"
    refused(parts.raw(), "messageId: indefinite-length byte string")
    parts.message_id = cbor2.dumps(e2e_message.message_id.hex()[:32])
    refused(parts.raw(), "messageId: expected a byte string, got a text string")
    parts.message_id = b"\xd8\x40" + bstr(e2e_message.message_id)
    refused(parts.raw(), "messageId: expected a byte string, got a tag")


# -- payload -------------------------------------------------------------------------------

def test_payload_is_a_definite_array_of_three(parts):
    parts.payload_head = b"\x9f"
    parts.payload_extra = b"\xff"
    refused(parts.raw(), "messagePayload: indefinite-length array")
    parts.payload_head, parts.payload_extra = b"\x84", b"\x00"
    refused(parts.raw(), "messagePayload: expected an array of 3 items, got 4")


@pytest.mark.parametrize("size, ok", [(89, False), (90, True), (2000, True), (2001, False)])
def test_body_size_bounds(parts, size, ok):
    parts.body = bstr(bytes(size))
    if ok:
        assert len(decode_message(parts.raw()).body) == size
    else:
        refused(parts.raw(), f"messageBody: expected 90..2000 bytes, got {size}")


def test_body_must_be_a_definite_byte_string(parts):
    parts.body = b"\x5f" + bstr(E2E_BODY[:50]) + bstr(E2E_BODY[50:]) + b"\xff"
    refused(parts.raw(), "messageBody: indefinite-length byte string")
    parts.body = cbor2.dumps("x" * 100)
    refused(parts.raw(), "messageBody: expected a byte string, got a text string")


@pytest.mark.parametrize(
    "field, value, reason",
    [
        ("kes_period", uint(2**64 - 1), None),
        ("kes_period", b"\x20", "kesPeriod: expected an unsigned integer, got a negative integer"),
        ("kes_period", bstr(b"\x05"), "kesPeriod: expected an unsigned integer, got a byte string"),
        ("kes_period", b"\xf9\x45\x00", "kesPeriod: expected an unsigned integer"),
        ("kes_period", b"\xc2\x41\x05", "kesPeriod: expected an unsigned integer, got a tag"),
        ("expires_at", uint(2**32 - 1), None),
        ("expires_at", uint(2**32), "expiresAt: 4294967296 exceeds 4294967295"),
        ("expires_at", b"\x1c", "expiresAt: malformed CBOR head"),
    ],
)
def test_integer_fields(parts, field, value, reason):
    setattr(parts, field, value)
    if reason is None:
        decoded = decode_message(parts.raw())
        assert getattr(decoded, field) == cbor2.loads(value)
    else:
        refused(parts.raw(), reason)


def test_non_minimal_encodings_are_accepted_and_kept_verbatim(parts):
    parts.head = b"\x98\x05"
    parts.body = b"\x59\x00\x64" + E2E_BODY
    parts.kes_period = b"\x1b" + (5).to_bytes(8, "big")
    parts.expires_at = b"\x1b" + (1_800_000_000).to_bytes(8, "big")
    parts.opcert = b"\x98\x04" + encode_opcert_parts(parts, issue=b"\x19\x00\x00")
    raw = parts.raw()
    decoded = decode_message(raw)
    assert decoded.raw == raw
    assert decoded.signed_bytes == parts.payload()
    assert decoded.kes_period == 5 and decoded.expires_at == 1_800_000_000 and decoded.body == E2E_BODY
    assert decoded.opcert.issue_number == 0
    assert decoded.has_valid_id()  # the id covers the received (long-form) bytes


def encode_opcert_parts(parts, issue: bytes) -> bytes:
    """The opcert items without their array head, with the issue number spelled ``issue``."""
    original = parts.opcert
    # 84 | 5820 hot(32) | issue(1 byte: 00) | start(1 byte: 00) | 5840 sig(64)
    return original[1:35] + issue + original[36:]


# -- signature, certificate, cold key --------------------------------------------------------

@pytest.mark.parametrize("size", [447, 449, 0])
def test_kes_signature_is_448_bytes(parts, size):
    parts.signature = bstr(bytes(size))
    refused(parts.raw(), f"kesSignature: expected 448 bytes, got {size}")


def test_opcert_shape(parts, e2e_message):
    opcert = e2e_message.opcert
    good_items = bstr(opcert.hot_vk) + uint(0) + uint(0) + bstr(opcert.cold_signature)
    parts.opcert = b"\x83" + good_items[:-66]
    refused(parts.raw(), "operationalCertificate: expected an array of 4 items, got 3")
    parts.opcert = b"\x9f" + good_items + b"\xff"
    refused(parts.raw(), "operationalCertificate: indefinite-length array")
    parts.opcert = b"\x84" + bstr(opcert.hot_vk[:31]) + good_items[34:]
    refused(parts.raw(), "operationalCertificate.hotKesVk: expected 32 bytes, got 31")
    parts.opcert = b"\x84" + good_items[:34] + b"\x20" + good_items[35:]
    refused(parts.raw(), "operationalCertificate.issueNumber: expected an unsigned integer")
    parts.opcert = b"\x84" + good_items[:35] + bstr(b"") + good_items[36:]
    refused(parts.raw(), "operationalCertificate.startKesPeriod: expected an unsigned integer")
    parts.opcert = b"\x84" + good_items[:36] + bstr(opcert.cold_signature[:63])
    refused(parts.raw(), "operationalCertificate.coldSignature: expected 64 bytes, got 63")


def test_opcert_integers_span_64_bits(parts, e2e_message):
    opcert = e2e_message.opcert
    parts.opcert = (
        b"\x84" + bstr(opcert.hot_vk) + uint(2**64 - 1) + uint(2**63) + bstr(opcert.cold_signature)
    )
    decoded = decode_message(parts.raw())
    assert (decoded.opcert.issue_number, decoded.opcert.start_kes_period) == (2**64 - 1, 2**63)


@pytest.mark.parametrize("size", [31, 33])
def test_cold_key_is_32_bytes(parts, size):
    parts.cold_vk = bstr(bytes(size))
    refused(parts.raw(), f"coldVerificationKey: expected 32 bytes, got {size}")


def test_every_truncation_is_a_decode_error(e2e_message):
    raw = e2e_message.raw
    for cut in range(len(raw)):
        with pytest.raises(MessageDecodeError, match="truncated"):
            decode_message(raw[:cut])


# -- messages inside envelopes ---------------------------------------------------------------

def test_decode_at_returns_exact_spans_inside_an_envelope(e2e_message, parts):
    parts.kes_period = uint(6)
    other = parts.raw()
    envelope = b"\x82\x01\x9f" + e2e_message.raw + other + b"\xff"
    first, end = decode_message_at(envelope, 3)
    assert first == e2e_message and end == 3 + len(e2e_message.raw)
    second, end2 = decode_message_at(envelope, end)
    assert second.raw == other and second.kes_period == 6 and envelope[end2:] == b"\xff"
    for view in (memoryview(envelope), bytearray(envelope)):
        again, stop = decode_message_at(view, 3)
        assert again == first and stop == end and type(again.raw) is bytes and type(again.body) is bytes


def test_decode_at_refuses_offsets_outside_the_buffer(e2e_message):
    with pytest.raises(MessageDecodeError, match="outside"):
        decode_message_at(e2e_message.raw, len(e2e_message.raw) + 1)
    with pytest.raises(MessageDecodeError, match="truncated"):
        decode_message_at(e2e_message.raw, len(e2e_message.raw))
    with pytest.raises(MessageDecodeError, match="outside"):
        decode_message_at(e2e_message.raw, -1)


def test_decode_accepts_memoryview_and_bytearray(e2e_message):
    assert decode_message(memoryview(e2e_message.raw)) == e2e_message
    assert decode_message(bytearray(e2e_message.raw)) == e2e_message
