"""The bodies devnet publishers send: Mithril-shaped, carrying who sent them and when.

A body is a real ``RegisterSignatureMessageDmq`` (what Mithril signers publish, so the
aggregator side parses it with the same code as a Mithril body) whose signed entity is
``CardanoTransactions(epoch 0, block number = sequence)``. Its single signature is not a BLS
signature, which a devnet without a Mithril signer cannot make, but a *probe*::

    "DMQPROBE" ‖ u32be pool index ‖ u64be sequence ‖ u64be send time (µs since the epoch) ‖ filler

The filler is SHAKE-256 of the header, as incompressible as a real signature, up to the body
size asked for (451 bytes by default, the size of the Mithril body in the conformance
vectors), so message sizes and bandwidth are those of real traffic. Every body is distinct
(pool, sequence), so no two messages share an id.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from dmq.message import MAX_BODY_SIZE, MIN_BODY_SIZE
from clients.mithril import CardanoTransactions, RegisterSignatureMessageDmq

__all__ = ["PROBE_MAGIC", "DEFAULT_BODY_SIZE", "ProbeError", "Probe", "probe_body", "read_probe", "body_size_range"]

PROBE_MAGIC = b"DMQPROBE"
#: The Mithril body of ``tests/data/vectors.json`` (``mithril_body``) is 451 bytes.
DEFAULT_BODY_SIZE = 451
_HEADER = struct.Struct(">8sIQQ")
_MICROS = 1_000_000


class ProbeError(ValueError):
    """A body that is not a devnet probe (or a body size no probe can have)."""


@dataclass(frozen=True, slots=True)
class Probe:
    pool_index: int
    sequence: int
    #: POSIX seconds, microsecond resolution.
    sent_at: float


def _envelope_size() -> int:
    """Bytes of a body that are not the signature (lengths and the signed entity)."""
    empty = RegisterSignatureMessageDmq(CardanoTransactions(0, 0), b"").to_bytes()
    return len(empty)


def body_size_range() -> tuple[int, int]:
    """The body sizes a probe can have: a message body's bounds, large enough for the header."""
    smallest = _envelope_size() + _HEADER.size
    return max(MIN_BODY_SIZE, smallest), MAX_BODY_SIZE


def probe_body(probe: Probe, size: int = DEFAULT_BODY_SIZE) -> bytes:
    """The body carrying ``probe``, exactly ``size`` bytes long."""
    low, high = body_size_range()
    if not low <= size <= high:
        raise ProbeError(f"a probe body is {low}..{high} bytes, asked for {size}")
    header = _HEADER.pack(PROBE_MAGIC, probe.pool_index, probe.sequence, round(probe.sent_at * _MICROS))
    entity = CardanoTransactions(0, probe.sequence)
    # The block number's varint grows with the sequence; the filler absorbs it.
    overhead = len(RegisterSignatureMessageDmq(entity, b"").to_bytes())
    filler = hashlib.shake_256(header).digest(size - overhead - len(header))
    return RegisterSignatureMessageDmq(entity, header + filler).to_bytes()


def read_probe(body: RegisterSignatureMessageDmq) -> Probe:
    """The probe inside a parsed body; ProbeError if the signature is not one."""
    signature = body.signature
    if len(signature) < _HEADER.size or not signature.startswith(PROBE_MAGIC):
        raise ProbeError("the single signature is not a devnet probe")
    _, pool_index, sequence, micros = _HEADER.unpack_from(signature)
    return Probe(pool_index, sequence, micros / _MICROS)
