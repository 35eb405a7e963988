"""DMQ message bytes to ``DmqMessage`` and back (docs/protocol/message.md 5).

The decoder is as strict as the reference node's (``DMQ.Protocol.SigSubmission.Codec``): a
definite array of five, a 32-byte id, a definite three-item payload with a 90..2000-byte body,
a 448-byte KES signature, a four-item operational certificate and a 32-byte cold key; no tags,
no indefinite lengths, nothing left over. Non-minimal integer and length headers are accepted,
as cborg's non-canonical decoders accept them: the id and the signature cover the received
bytes, so their spelling cannot change what is checked. Every violation is a
``MessageDecodeError`` naming the field, which the callers turn into a protocol error (never a
reject reason).

Offsets are tracked while reading, so ``signed_bytes`` is the payload exactly as received and
``raw`` is the message exactly as received: these are what get hashed, verified, stored and
forwarded. The reader is written out by hand rather than through a generic CBOR decoder because
it runs once per message on the validation hot path.

The legacy layout of Mithril 2543–2617 (id inside the payload, docs/protocol/message.md 5.5) is recognised so
that it can be reported for what it is, and decoded only when a caller explicitly allows it.
"""

from __future__ import annotations

import struct

from ouroboros_mux.cbor import MAJOR_BYTES, CborError, CborIncomplete, read_head, write_head

from .kes import KesPeriodError, KesSigningKey, kes_sign_at
from .message import (
    COLD_SIGNATURE_SIZE,
    COLD_VK_SIZE,
    KES_SIGNATURE_SIZE,
    KES_VK_SIZE,
    LEGACY_MESSAGE_ID_SIZE,
    MAX_BODY_SIZE,
    MESSAGE_ID_SIZE,
    MIN_BODY_SIZE,
    DmqMessage,
    OperationalCertificate,
    legacy_message_id_of,
    message_id_of,
)
from .opcert import encode_opcert, encode_uint

__all__ = [
    "MessageDecodeError",
    "LegacyMessageFormat",
    "LEGACY_FORMAT_REASON",
    "decode_message",
    "decode_message_at",
    "decode_message_structure",
    "encode_payload",
    "encode_message",
    "build_message",
    "encode_legacy_payload",
    "encode_legacy_message",
    "build_legacy_message",
    "is_legacy_layout",
]

UINT32_MAX = 0xFFFFFFFF
UINT64_MAX = 0xFFFFFFFFFFFFFFFF

LEGACY_FORMAT_REASON = (
    "legacy message format (id inside the payload), sent by Mithril 2543–2617; "
    "enable LegacyMessageFormat to accept it"
)


class MessageDecodeError(ValueError):
    """The bytes are not a DMQ message the reference node would decode."""


class LegacyMessageFormat(MessageDecodeError):
    """A well-recognised legacy message (docs/protocol/message.md 5.5) while legacy messages are not accepted."""


# --------------------------------------------------------------------------------------
# Reading

_MAJOR_NAMES = ("unsigned integer", "negative integer", "byte string", "text string",
                "array", "map", "tag", "simple value or float")
_unpack_u32 = struct.Struct(">I").unpack_from
_UNBOUNDED = 1 << 64


def _truncated(what: str, pos: int) -> MessageDecodeError:
    return MessageDecodeError(f"{what}: message truncated at byte {pos}")


def _head(buf, pos: int, end: int, what: str) -> tuple[int, int, int]:
    """One CBOR head: ``(major type, argument, next offset)``; refuses indefinite lengths.

    The project's one head reader, with its errors turned into ones naming the field.
    """
    try:
        major, _, argument, after = read_head(buf, pos, end)
    except CborIncomplete:
        raise _truncated(what, pos) from None
    except CborError:
        raise MessageDecodeError(f"{what}: malformed CBOR head 0x{buf[pos]:02x} at byte {pos}") from None
    if argument is None:
        if 2 <= major <= 5:
            raise MessageDecodeError(
                f"{what}: indefinite-length {_MAJOR_NAMES[major]} at byte {pos} is not accepted"
            )
        raise MessageDecodeError(f"{what}: malformed CBOR head 0x{buf[pos]:02x} at byte {pos}")
    return major, argument, after


def _array(buf, pos: int, end: int, what: str, length: int) -> int:
    if pos < end and buf[pos] == 0x80 | length:  # the one-byte head every encoder writes
        return pos + 1
    major, n, after = _head(buf, pos, end, what)
    if major != 4:
        raise MessageDecodeError(f"{what}: expected an array, got a {_MAJOR_NAMES[major]} at byte {pos}")
    if n != length:
        raise MessageDecodeError(f"{what}: expected an array of {length} items, got {n}")
    return after


def _bstr(buf, pos: int, end: int, what: str, low: int, high: int) -> tuple[int, int]:
    """Span ``(start, stop)`` of a definite byte string whose size lies in ``low..high``."""
    # The one- and two-byte length heads every real message uses are read inline.
    ib = buf[pos] if pos < end else -1
    if ib == 0x58 and pos + 2 <= end:
        n = buf[pos + 1]
        start = pos + 2
    elif ib == 0x59 and pos + 3 <= end:
        n = (buf[pos + 1] << 8) | buf[pos + 2]
        start = pos + 3
    else:
        major, n, start = _head(buf, pos, end, what)
        if major != 2:
            raise MessageDecodeError(
                f"{what}: expected a byte string, got a {_MAJOR_NAMES[major]} at byte {pos}"
            )
    if n < low or n > high:
        expected = f"{low}" if low == high else f"{low}..{high}"
        raise MessageDecodeError(f"{what}: expected {expected} bytes, got {n}")
    stop = start + n
    if stop > end:
        raise _truncated(what, end)
    return start, stop


def _uint(buf, pos: int, end: int, what: str, maximum: int) -> tuple[int, int]:
    ib = buf[pos] if pos < end else -1
    if 0 <= ib < 24:
        return ib, pos + 1
    major, value, after = _head(buf, pos, end, what)
    if major != 0:
        raise MessageDecodeError(
            f"{what}: expected an unsigned integer, got a {_MAJOR_NAMES[major]} at byte {pos}"
        )
    if value > maximum:
        raise MessageDecodeError(f"{what}: {value} exceeds {maximum}")
    return value, after


class _Sizes:
    """Byte-string size bounds: the reference's (strict) or none at all (structure only)."""

    __slots__ = ("id_low", "id_high", "legacy_id_low", "legacy_id_high", "body_low", "body_high",
                 "sig_low", "sig_high", "hot_low", "hot_high", "cold_sig_low", "cold_sig_high",
                 "cold_vk_low", "cold_vk_high")

    def __init__(self, strict: bool) -> None:
        def bounds(low: int, high: int) -> tuple[int, int]:
            return (low, high) if strict else (0, _UNBOUNDED)

        self.id_low, self.id_high = bounds(MESSAGE_ID_SIZE, MESSAGE_ID_SIZE)
        self.legacy_id_low, self.legacy_id_high = bounds(LEGACY_MESSAGE_ID_SIZE, LEGACY_MESSAGE_ID_SIZE)
        self.body_low, self.body_high = bounds(MIN_BODY_SIZE, MAX_BODY_SIZE)
        self.sig_low, self.sig_high = bounds(KES_SIGNATURE_SIZE, KES_SIGNATURE_SIZE)
        self.hot_low, self.hot_high = bounds(KES_VK_SIZE, KES_VK_SIZE)
        self.cold_sig_low, self.cold_sig_high = bounds(COLD_SIGNATURE_SIZE, COLD_SIGNATURE_SIZE)
        self.cold_vk_low, self.cold_vk_high = bounds(COLD_VK_SIZE, COLD_VK_SIZE)


_STRICT = _Sizes(strict=True)
_STRUCTURE = _Sizes(strict=False)


def _span(buf, start: int, stop: int) -> bytes:
    if type(buf) is bytes and start == 0 and stop == len(buf):
        return buf
    return bytes(buf[start:stop])


def _read(buf, pos: int, end: int, allow_legacy: bool, sizes: _Sizes) -> tuple[DmqMessage, int]:
    """The general reader: every rule of docs/protocol/message.md 5.2, with an error naming the field."""
    start = pos
    major, n, pos = _head(buf, pos, end, "message")
    if major != 4:
        raise MessageDecodeError(f"message: expected an array, got a {_MAJOR_NAMES[major]}")
    legacy = n == 4 and pos < end and buf[pos] >> 5 == 4
    if legacy:
        if not allow_legacy:
            raise LegacyMessageFormat(LEGACY_FORMAT_REASON)
        payload_start = pos
        pos = _array(buf, pos, end, "messagePayload", 4)
        a, pos = _bstr(buf, pos, end, "messageId", sizes.legacy_id_low, sizes.legacy_id_high)
        message_id = bytes(buf[a:pos])
    elif n == 5:
        a, pos = _bstr(buf, pos, end, "messageId", sizes.id_low, sizes.id_high)
        message_id = bytes(buf[a:pos])
        payload_start = pos
        pos = _array(buf, pos, end, "messagePayload", 3)
    else:
        raise MessageDecodeError(f"message: expected an array of 5 items, got {n}")
    a, pos = _bstr(buf, pos, end, "messageBody", sizes.body_low, sizes.body_high)
    body = bytes(buf[a:pos])
    kes_period, pos = _uint(buf, pos, end, "kesPeriod", UINT64_MAX)
    expires_at, pos = _uint(buf, pos, end, "expiresAt", UINT32_MAX)
    signed_bytes = bytes(buf[payload_start:pos])

    a, pos = _bstr(buf, pos, end, "kesSignature", sizes.sig_low, sizes.sig_high)
    kes_signature = bytes(buf[a:pos])

    pos = _array(buf, pos, end, "operationalCertificate", 4)
    a, pos = _bstr(buf, pos, end, "operationalCertificate.hotKesVk", sizes.hot_low, sizes.hot_high)
    hot_vk = bytes(buf[a:pos])
    issue_number, pos = _uint(buf, pos, end, "operationalCertificate.issueNumber", UINT64_MAX)
    start_kes_period, pos = _uint(buf, pos, end, "operationalCertificate.startKesPeriod", UINT64_MAX)
    a, pos = _bstr(
        buf, pos, end, "operationalCertificate.coldSignature", sizes.cold_sig_low, sizes.cold_sig_high
    )
    cold_signature = bytes(buf[a:pos])

    a, pos = _bstr(buf, pos, end, "coldVerificationKey", sizes.cold_vk_low, sizes.cold_vk_high)
    cold_vk = bytes(buf[a:pos])

    message = DmqMessage(
        _span(buf, start, pos),
        message_id,
        signed_bytes,
        body,
        kes_period,
        expires_at,
        kes_signature,
        OperationalCertificate(hot_vk, issue_number, start_kes_period, cold_signature),
        cold_vk,
        legacy,
    )
    return message, pos


def _read_common(buf, pos: int) -> tuple[DmqMessage, int] | None:
    """The hot path: a new-format message in ``bytes`` with the heads every encoder writes.

    It accepts a subset of what ``_read`` accepts and builds the same result; anything else
    (another head spelling, a wrong size, truncation, legacy, a memoryview) returns None and
    the general reader decides, with its precise error.
    """
    if type(buf) is not bytes:
        return None
    end = len(buf)
    try:
        if buf[pos] != 0x85 or buf[pos + 1] != 0x58 or buf[pos + 2] != 0x20 or buf[pos + 35] != 0x83:
            return None
        payload_start = pos + 35
        head = buf[pos + 36]
        if head == 0x58:
            n = buf[pos + 37]
            body_start = pos + 38
        elif head == 0x59:
            n = (buf[pos + 37] << 8) | buf[pos + 38]
            body_start = pos + 39
        else:
            return None
        if n < MIN_BODY_SIZE or n > MAX_BODY_SIZE:
            return None
        p = body_start + n
        kes_period = buf[p]
        if kes_period < 24:
            p += 1
        else:
            major, _, kes_period, p = read_head(buf, p, end)
            if major:
                return None
        if buf[p] == 0x1A:  # a current POSIX time: the four-byte head every encoder writes
            expires_at = _unpack_u32(buf, p + 1)[0]
            sig_head = p + 5
        else:
            major, _, expires_at, sig_head = read_head(buf, p, end)
            if major or expires_at > UINT32_MAX:
                return None
        if buf[sig_head] != 0x59 or buf[sig_head + 1] != 0x01 or buf[sig_head + 2] != 0xC0:
            return None
        sig_start = sig_head + 3
        p = sig_start + KES_SIGNATURE_SIZE
        if buf[p] != 0x84 or buf[p + 1] != 0x58 or buf[p + 2] != 0x20:
            return None
        hot_start = p + 3
        p = hot_start + KES_VK_SIZE
        issue_number = buf[p]
        if issue_number < 24:
            p += 1
        else:
            major, _, issue_number, p = read_head(buf, p, end)
            if major:
                return None
        start_kes_period = buf[p]
        if start_kes_period < 24:
            p += 1
        else:
            major, _, start_kes_period, p = read_head(buf, p, end)
            if major:
                return None
        if buf[p] != 0x58 or buf[p + 1] != 0x40:
            return None
        cold_sig_start = p + 2
        p = cold_sig_start + COLD_SIGNATURE_SIZE
        if buf[p] != 0x58 or buf[p + 1] != 0x20:
            return None
        stop = p + 2 + COLD_VK_SIZE
        if stop > end:
            return None
    except (IndexError, struct.error, CborError):
        return None
    message = DmqMessage(
        buf if pos == 0 and stop == len(buf) else buf[pos:stop],
        buf[pos + 3:payload_start],
        buf[payload_start:sig_head],
        buf[body_start:body_start + n],
        kes_period,
        expires_at,
        buf[sig_start:sig_start + KES_SIGNATURE_SIZE],
        OperationalCertificate(
            buf[hot_start:hot_start + KES_VK_SIZE],
            issue_number,
            start_kes_period,
            buf[cold_sig_start:cold_sig_start + COLD_SIGNATURE_SIZE],
        ),
        buf[p + 2:stop],
    )
    return message, stop


def decode_message_at(buf, pos: int = 0, *, allow_legacy: bool = False) -> tuple[DmqMessage, int]:
    """Decode the message starting at ``buf[pos]`` inside a larger buffer (an envelope).

    Returns the message (its ``raw`` is the exact span it occupies) and the offset just past
    it. ``buf`` may be ``bytes``, ``bytearray`` or ``memoryview``; the fields are copied out.
    """
    if not 0 <= pos <= len(buf):
        raise MessageDecodeError(f"message: start offset {pos} outside a buffer of {len(buf)} bytes")
    found = _read_common(buf, pos)
    if found is not None:
        return found
    return _read(buf, pos, len(buf), allow_legacy, _STRICT)


def is_legacy_layout(raw: bytes) -> bool:
    """Whether ``raw`` has the legacy shape (docs/protocol/message.md 5.5): an array of 4 whose first item is
    an array (the strict decoder takes only this one-byte head for either layout)."""
    return len(raw) >= 2 and raw[0] == 0x84 and raw[1] >> 5 == 4


def decode_message(raw: bytes, *, allow_legacy: bool = False) -> DmqMessage:
    """Decode one complete message; ``raw`` must hold exactly one message and nothing else.

    With ``allow_legacy`` a legacy message (docs/protocol/message.md 5.5) is returned with ``legacy=True``:
    its ``signed_bytes`` are the legacy payload ``[id, body, kesPeriod, expiresAt]`` as
    received (what Mithril's KES key signed) and its ``message_id`` is the 64-byte id inside
    it, which validation checks with Mithril's rule ``Blake2b-512(body || u64be(kesPeriod) ||
    u32be(expiresAt))`` (``DmqMessage.expected_message_id``). Without it, a legacy message
    raises ``LegacyMessageFormat``.
    """
    found = _read_common(raw, 0)
    if found is not None and found[1] == len(raw):
        return found[0]
    message, end = _read(raw, 0, len(raw), allow_legacy, _STRICT)
    if end != len(raw):
        raise MessageDecodeError(f"message: {len(raw) - end} trailing bytes after the message")
    return message


def decode_message_structure(raw: bytes) -> DmqMessage:
    """Decode the shape only, new or legacy layout, without any size bound.

    For diagnostics and tooling (explaining why a peer's bytes were refused, reading the
    Pallas shape vectors): it accepts messages the node must refuse, so its result is never
    validated, stored or forwarded. Type, range and definite-length rules still apply.
    """
    message, end = _read(raw, 0, len(raw), True, _STRUCTURE)
    if end != len(raw):
        raise MessageDecodeError(f"message: {len(raw) - end} trailing bytes after the message")
    return message


# --------------------------------------------------------------------------------------
# Writing (messages the project creates: definite lengths, shortest forms, docs/protocol/message.md 5.6)

def _bstr_header(length: int) -> bytes:
    return write_head(MAJOR_BYTES, length)


def _check_ranges(kes_period: int, expires_at: int) -> None:
    if not 0 <= kes_period <= UINT64_MAX:
        raise ValueError(f"kesPeriod {kes_period} outside 0..2^64-1")
    if not 0 <= expires_at <= UINT32_MAX:
        raise ValueError(f"expiresAt {expires_at} outside 0..2^32-1")


def encode_payload(body: bytes, kes_period: int, expires_at: int) -> bytes:
    """``[body, kesPeriod, expiresAt]``: the bytes the id hashes and the KES key signs.

    The body size is not checked here (the CIP's golden vector has a 10-byte body); messages
    built with ``build_message`` are.
    """
    _check_ranges(kes_period, expires_at)
    body = bytes(body)
    return b"\x83" + _bstr_header(len(body)) + body + encode_uint(kes_period) + encode_uint(expires_at)


def encode_message(
    signed_bytes: bytes,
    kes_signature: bytes,
    opcert: OperationalCertificate,
    cold_vk: bytes,
    *,
    message_id: bytes | None = None,
) -> bytes:
    """``[id, payload, kesSignature, opcert, coldVk]`` around an already encoded payload.

    The payload goes in as the exact bytes given (they are what was signed). The id defaults
    to Blake2b-256 of them; passing another one builds a deliberately inconsistent message.
    """
    if message_id is None:
        message_id = message_id_of(signed_bytes)
    return (
        b"\x85" + _bstr_header(len(message_id)) + message_id
        + signed_bytes
        + _bstr_header(len(kes_signature)) + kes_signature
        + encode_opcert(opcert)
        + _bstr_header(len(cold_vk)) + cold_vk
    )


def _check_body(body: bytes) -> None:
    if not MIN_BODY_SIZE <= len(body) <= MAX_BODY_SIZE:
        raise ValueError(
            f"message body of {len(body)} bytes outside {MIN_BODY_SIZE}..{MAX_BODY_SIZE}: "
            "the reference node would refuse to decode it"
        )


def _evolution(kes_period: int, opcert: OperationalCertificate, sign_period: int | None) -> int:
    if sign_period is not None:
        return sign_period
    if kes_period < opcert.start_kes_period:
        raise KesPeriodError(
            f"KES period {kes_period} is before the certificate's start period {opcert.start_kes_period}"
        )
    return kes_period - opcert.start_kes_period


def _signature(kes_key: KesSigningKey, t: int, payload: bytes) -> bytes:
    if t == kes_key.period:
        return kes_key.sign(payload)
    return kes_sign_at(kes_key, t, payload)


def build_message(
    body: bytes,
    kes_period: int,
    expires_at: int,
    kes_key: KesSigningKey,
    opcert: OperationalCertificate,
    cold_vk: bytes,
    *,
    sign_period: int | None = None,
) -> DmqMessage:
    """Create and sign a message, as a Mithril signer does.

    ``kes_period`` is the absolute period carried in the message; the payload is signed at
    evolution ``t = kes_period - opcert.start_kes_period`` (or ``sign_period`` when given, to
    build messages signed at the wrong evolution on purpose). The key may be at period 0
    (it is not changed: the needed subtree is regenerated) or already evolved up to ``t``.
    """
    body = bytes(body)
    _check_body(body)
    payload = encode_payload(body, kes_period, expires_at)
    kes_signature = _signature(kes_key, _evolution(kes_period, opcert, sign_period), payload)
    message_id = message_id_of(payload)
    raw = encode_message(payload, kes_signature, opcert, cold_vk, message_id=message_id)
    return DmqMessage(raw, message_id, payload, body, kes_period, expires_at, kes_signature, opcert, bytes(cold_vk))


def encode_legacy_payload(body: bytes, kes_period: int, expires_at: int) -> bytes:
    """``[id, body, kesPeriod, expiresAt]`` with Mithril's id (docs/protocol/message.md 5.5): what Mithril 2543–2617 signs."""
    _check_ranges(kes_period, expires_at)
    body = bytes(body)
    message_id = legacy_message_id_of(body, kes_period, expires_at)
    return (
        b"\x84" + _bstr_header(len(message_id)) + message_id
        + _bstr_header(len(body)) + body
        + encode_uint(kes_period) + encode_uint(expires_at)
    )


def encode_legacy_message(
    signed_bytes: bytes, kes_signature: bytes, opcert: OperationalCertificate, cold_vk: bytes
) -> bytes:
    """``[payload, kesSignature, opcert, coldVk]``: the legacy 4-array around its payload."""
    return (
        b"\x84" + signed_bytes
        + _bstr_header(len(kes_signature)) + kes_signature
        + encode_opcert(opcert)
        + _bstr_header(len(cold_vk)) + cold_vk
    )


def build_legacy_message(
    body: bytes,
    kes_period: int,
    expires_at: int,
    kes_key: KesSigningKey,
    opcert: OperationalCertificate,
    cold_vk: bytes,
    *,
    sign_period: int | None = None,
) -> DmqMessage:
    """A message exactly as released Mithril 2543–2617 builds it (for interop tests and replays)."""
    body = bytes(body)
    _check_body(body)
    payload = encode_legacy_payload(body, kes_period, expires_at)
    kes_signature = _signature(kes_key, _evolution(kes_period, opcert, sign_period), payload)
    raw = encode_legacy_message(payload, kes_signature, opcert, cold_vk)
    message_id = legacy_message_id_of(body, kes_period, expires_at)
    return DmqMessage(
        raw, message_id, payload, body, kes_period, expires_at, kes_signature, opcert, bytes(cold_vk), True
    )
