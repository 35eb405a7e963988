"""The DMQ message: ``[id, [body, kesPeriod, expiresAt], kesSig, opcert, coldVk]``.

A message is always held together with the exact bytes it arrived as. The id and the KES
signature cover ``signed_bytes`` as received; the node stores and forwards ``raw`` and never
re-encodes a message it did not create (docs/protocol/message.md sections 5.3 and 5.4).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = [
    "MESSAGE_ID_SIZE",
    "KES_SIGNATURE_SIZE",
    "MIN_BODY_SIZE",
    "MAX_BODY_SIZE",
    "OperationalCertificate",
    "DmqMessage",
    "pool_id_of",
    "message_id_of",
    "legacy_message_id_of",
    "LEGACY_MESSAGE_ID_SIZE",
]

MESSAGE_ID_SIZE = 32
KES_SIGNATURE_SIZE = 448
KES_VK_SIZE = 32
COLD_VK_SIZE = 32
COLD_SIGNATURE_SIZE = 64
MIN_BODY_SIZE = 90
MAX_BODY_SIZE = 2000
LEGACY_MESSAGE_ID_SIZE = 64


def pool_id_of(cold_vk: bytes) -> bytes:
    """Pool id = Blake2b-224 of the cold verification key (28 bytes)."""
    return hashlib.blake2b(cold_vk, digest_size=28).digest()


def message_id_of(signed_bytes: bytes) -> bytes:
    """Message id = Blake2b-256 of the payload bytes as received (docs/protocol/message.md 5.3)."""
    return hashlib.blake2b(signed_bytes, digest_size=32).digest()


def legacy_message_id_of(body: bytes, kes_period: int, expires_at: int) -> bytes:
    """The id Mithril 2543–2617 put inside a legacy payload (docs/protocol/message.md 5.5).

    ``Blake2b-512(body || u64be(kesPeriod) || u32be(expiresAt))``: Mithril's own rule, not
    the reference node's, checked against the legacy bytes of the Pallas vectors.
    """
    return hashlib.blake2b(
        body + kes_period.to_bytes(8, "big") + expires_at.to_bytes(4, "big"), digest_size=64
    ).digest()


@dataclass(frozen=True, slots=True)
class OperationalCertificate:
    """``[hotKesVk, issueNumber, startKesPeriod, coldSignature]``."""

    hot_vk: bytes
    issue_number: int
    start_kes_period: int
    cold_signature: bytes

    def signable(self) -> bytes:
        """The 48 raw bytes the cold key signs: hot vk, u64be issue, u64be start period."""
        return (
            self.hot_vk
            + self.issue_number.to_bytes(8, "big")
            + self.start_kes_period.to_bytes(8, "big")
        )


@dataclass(frozen=True, slots=True)
class DmqMessage:
    """A decoded message together with the exact bytes it was decoded from."""

    raw: bytes                 # the whole 5-array as received: what is stored and forwarded
    message_id: bytes          # 32 bytes, as carried (validation checks it); 64 if legacy
    signed_bytes: bytes        # the raw payload span [body, kesPeriod, expiresAt] (legacy: id first)
    body: bytes
    kes_period: int            # absolute KES period
    expires_at: int            # POSIX seconds
    kes_signature: bytes       # 448 bytes, Sum6KES
    opcert: OperationalCertificate
    cold_vk: bytes             # 32 bytes, Ed25519
    legacy: bool = False       # the pre-0.5 layout of docs/protocol/message.md 5.5 (only when explicitly allowed)
    pool_id: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pool_id", pool_id_of(self.cold_vk))

    def expected_message_id(self) -> bytes:
        """The id the carried one must equal (validation check 4).

        New format: Blake2b-256 of ``signed_bytes``. Legacy format: the id sits inside the
        signed payload and follows Mithril's Blake2b-512 rule over the decoded fields.
        """
        if self.legacy:
            return legacy_message_id_of(self.body, self.kes_period, self.expires_at)
        return message_id_of(self.signed_bytes)

    def has_valid_id(self) -> bool:
        """Whether the carried id is the one the message's own bytes give."""
        return self.message_id == self.expected_message_id()

    @property
    def size(self) -> int:
        """The size announced to peers and used for byte accounting: ``len(raw)``."""
        return len(self.raw)
