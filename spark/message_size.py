"""Wire size of a DMQ message in the current layout, from its CDDL (docs/protocol/message.md 5.2, 5.4).

``[id bstr32, [body bstr, kesPeriod uint, expiresAt uint], kesSig bstr448,
[hotVk bstr32, issueNumber uint, startKesPeriod uint, coldSig bstr64], coldVk bstr32]``
with definite lengths and shortest-form integers. The CIP sized messages with the old
layout (block number, 304-byte opcert); this is what the node actually stores and sends.
"""

from __future__ import annotations

__all__ = [
    "cbor_head_size",
    "message_size",
    "CIP_MESSAGE_BYTES_LOW",
    "CIP_MESSAGE_BYTES_HIGH",
    "CIP_BODY_BYTES_LOW",
    "CIP_BODY_BYTES_HIGH",
    "MAINNET_EXPIRES_AT",
    "MAINNET_KES_PERIOD",
]

#: The CIP's bounds: id 32 + body + block number 4 + KES signature 448 + opcert 304.
CIP_BODY_BYTES_LOW = 360
CIP_BODY_BYTES_HIGH = 2000
CIP_MESSAGE_BYTES_LOW = 32 + CIP_BODY_BYTES_LOW + 4 + 448 + 304
CIP_MESSAGE_BYTES_HIGH = 32 + CIP_BODY_BYTES_HIGH + 4 + 448 + 304

#: Typical mainnet values: a POSIX expiry (4-byte integer) and a KES period above 255.
MAINNET_EXPIRES_AT = 1_800_000_000
MAINNET_KES_PERIOD = 1_200


def cbor_head_size(value: int) -> int:
    """Bytes of a CBOR head carrying ``value`` (an unsigned integer, or a length)."""
    if value < 0:
        raise ValueError("negative")
    if value < 24:
        return 1
    if value < 0x100:
        return 2
    if value < 0x10000:
        return 3
    if value < 0x100000000:
        return 5
    return 9


def _bstr(n: int) -> int:
    return cbor_head_size(n) + n


def message_size(
    body_bytes: int,
    *,
    kes_period: int = MAINNET_KES_PERIOD,
    expires_at: int = MAINNET_EXPIRES_AT,
    issue_number: int = 0,
    start_kes_period: int = MAINNET_KES_PERIOD,
) -> int:
    """``len(rawBytes)`` of a message with a ``body_bytes`` body."""
    payload = 1 + _bstr(body_bytes) + cbor_head_size(kes_period) + cbor_head_size(expires_at)
    opcert = 1 + _bstr(32) + cbor_head_size(issue_number) + cbor_head_size(start_kes_period) + _bstr(64)
    return 1 + _bstr(32) + payload + _bstr(448) + opcert + _bstr(32)
