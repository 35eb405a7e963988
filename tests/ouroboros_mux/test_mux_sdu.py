"""The SDU header codec against the bytes of docs/protocol/mux.md 2.1."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ouroboros_mux.errors import SDUDecodeError
from ouroboros_mux.sdu import (
    EGRESS_SDU_SIZE,
    MAX_SDU_PAYLOAD,
    SDU,
    SDU_HEADER_SIZE,
    decode_header,
    encode_sdu,
    monotonic_timestamp,
)


@pytest.mark.parametrize(
    ("protocol_num", "from_responder", "header_hex"),
    [
        (11, False, "00000000000b0005"),  # initiator, sig submission, 5 bytes
        (11, True, "00000000800b0005"),   # responder
        (14, True, "00000000800e0005"),   # DMQ N2C reply on local submission
        (0, True, "0000000080000005"),    # handshake server reply
        (0, False, "0000000000000005"),   # handshake client proposal
    ],
)
def test_header_bytes_from_the_spec(protocol_num, from_responder, header_hex):
    encoded = encode_sdu(SDU(protocol_num, from_responder, b"\x01\x02\x03\x04\x05"))
    assert encoded[:SDU_HEADER_SIZE].hex() == header_hex
    assert encoded[SDU_HEADER_SIZE:] == b"\x01\x02\x03\x04\x05"
    assert decode_header(bytes.fromhex(header_hex)) == (0, protocol_num, from_responder, 5)


def test_timestamp_is_big_endian_in_the_first_word():
    encoded = encode_sdu(SDU(12, False, b"\x80", timestamp=0x01020304))
    assert encoded.hex() == "01020304000c000180"
    assert decode_header(encoded[:8])[0] == 0x01020304


@given(
    timestamp=st.integers(0, 2**32 - 1),
    protocol_num=st.integers(0, 0x7FFF),
    from_responder=st.booleans(),
    length=st.integers(1, MAX_SDU_PAYLOAD),
)
def test_header_roundtrip(timestamp, protocol_num, from_responder, length):
    header = encode_sdu(SDU(protocol_num, from_responder, bytes(length), timestamp))[:SDU_HEADER_SIZE]
    assert decode_header(header) == (timestamp, protocol_num, from_responder, length)


def test_zero_length_header_is_a_decode_error():
    with pytest.raises(SDUDecodeError, match="short SDU.*protocol 11"):
        decode_header(bytes.fromhex("00000000000b0000"))


def test_header_must_be_eight_bytes():
    with pytest.raises(SDUDecodeError, match="8 bytes, got 7"):
        decode_header(bytes.fromhex("00000000000b00"))


@pytest.mark.parametrize(
    ("sdu", "message"),
    [
        (SDU(11, False, b""), "outside 1..65535"),
        (SDU(11, False, bytes(MAX_SDU_PAYLOAD + 1)), "65536 bytes outside"),
        (SDU(0x8000, False, b"x"), "protocol number 32768"),
        (SDU(-1, False, b"x"), "protocol number -1"),
    ],
)
def test_encoder_refuses_what_cannot_be_on_the_wire(sdu, message):
    with pytest.raises(ValueError, match=message):
        encode_sdu(sdu)


def test_largest_payload_encodes():
    assert encode_sdu(SDU(7, False, bytes(MAX_SDU_PAYLOAD)))[4:8].hex() == "0007ffff"


def test_egress_size_is_the_reference_socket_bearer_size():
    assert EGRESS_SDU_SIZE == 12288


def test_monotonic_timestamp_fits_32_bits_and_advances():
    first = monotonic_timestamp()
    second = monotonic_timestamp()
    assert 0 <= first < 2**32 and 0 <= second < 2**32
    # Microseconds wrap every ~71 minutes; two successive reads differ by little either way.
    assert (second - first) % 2**32 < 10_000_000
