"""Invalid messages for the flooding peer, each failing exactly one check of
docs/protocol/validation.md section 6.2, and the node-to-node reaction that check calls for.

None of them needs a real KES signature: every class fails a check that comes before the
KES verification, or is the KES verification failing, so a flooder builds thousands a second
from one registered pool's public credentials (its cold key and operational certificate,
which every message of that pool carries in clear anyway):

* ``bad-kes``: a registered pool, a correct id and period, a KES signature of random bytes
  (check 10, ``InvalidKESSignature``: disconnect);
* ``bad-opcert``: the same with one bit of the certificate's cold signature flipped
  (check 9, ``InvalidSignatureOCERT``: disconnect);
* ``unknown-pool``: a cold key no genesis registers (check 7, ``UnrecognizedPool``: trace);
* ``expired``: a registered pool, ``expiresAt`` a second in the past (check 1, ``SigExpired``: trace).

The registered pool must publish nothing itself: check 3 (at most one accepted message per
pool per ``MinSigDelay``) comes before 9 and 10, and a pool that had just published would
make these ``SigTooFrequent`` instead.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from dmq.codec import encode_message, encode_payload
from dmq.message import COLD_VK_SIZE, KES_SIGNATURE_SIZE, OperationalCertificate, message_id_of
from dmq.validation.errors import (InvalidKESSignature, InvalidSignatureOCERT, SigExpired, SigValidationError,
                                  UnrecognizedPool)
from dmq.validation.reactions import REACTION_TABLE

__all__ = ["FLOOD_CLASSES", "FloodClass", "FloodMessages", "FLOOD_MARK"]

#: The start of every flood body: a flood message found anywhere else is recognised by it.
FLOOD_MARK = b"dmq-netlab-flood "
_BODY_SIZE = 200
_TTL = 600


@dataclass(frozen=True)
class FloodClass:
    name: str
    #: The node's error for it (docs/protocol/validation.md 6.2).
    error_type: type[SigValidationError]

    @property
    def error(self) -> str:
        return self.error_type.__name__

    @property
    def reaction(self) -> str:
        """``disconnect`` or ``trace``: the node's own reaction table says which."""
        return REACTION_TABLE[self.error_type].peer.value


FLOOD_CLASSES = {c.name: c for c in (
    FloodClass("bad-kes", InvalidKESSignature),
    FloodClass("bad-opcert", InvalidSignatureOCERT),
    FloodClass("unknown-pool", UnrecognizedPool),
    FloodClass("expired", SigExpired),
)}


@dataclass(frozen=True)
class FloodMessages:
    """Builds message ``n`` of a class for one flooder (``tag`` keeps two flooders' ids apart)."""

    opcert: OperationalCertificate
    cold_vk: bytes
    kes_period: int
    tag: str

    def body(self, kind: str, number: int) -> bytes:
        text = FLOOD_MARK + f"{self.tag} {kind} {number} ".encode()
        return text + bytes(_BODY_SIZE - len(text))

    def build(self, kind: str, number: int, now: float) -> tuple[bytes, bytes]:
        """``(message id, raw message)`` of the ``number``-th message of class ``kind`` at wall time ``now``."""
        if kind not in FLOOD_CLASSES:
            raise ValueError(f"no flood class {kind!r}; the classes are {', '.join(FLOOD_CLASSES)}")
        expires_at = int(now) - 1 if kind == "expired" else int(now) + _TTL
        payload = encode_payload(self.body(kind, number), self.kes_period, expires_at)
        opcert, cold_vk = self.opcert, self.cold_vk
        if kind == "bad-opcert":
            signature = opcert.cold_signature
            opcert = OperationalCertificate(opcert.hot_vk, opcert.issue_number, opcert.start_kes_period,
                                            signature[:-1] + bytes([signature[-1] ^ 1]))
        elif kind == "unknown-pool":
            cold_vk = hashlib.blake2b(f"{self.tag}/{number}".encode(), digest_size=COLD_VK_SIZE).digest()
        message_id = message_id_of(payload)
        return message_id, encode_message(payload, os.urandom(KES_SIGNATURE_SIZE), opcert, cold_vk,
                                          message_id=message_id)
