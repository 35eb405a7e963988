"""The layout of one stored message: a checksum, then the message's raw bytes.

LMDB keeps no checksums of its own. A torn or overwritten page can change bytes inside a
stored message that its id does not cover (the KES signature, the operational certificate,
the cold key): the record still decodes, its id still matches its payload, and without a
check of its own the node would serve a message every peer rejects. So every record starts
with a Blake2b-128 digest of the raw bytes that follow it, verified when the log is read
back. It is a checksum against damage, not an authenticator: anyone able to write the file
could write a matching digest, and the signatures are what vouch for a message.
"""

from __future__ import annotations

from hashlib import blake2b

__all__ = ["CHECKSUM_SIZE", "seal", "unseal"]

#: Bytes of digest in front of each record (a chance of 2**-128 that damage goes unnoticed).
CHECKSUM_SIZE = 16


def _checksum(raw: bytes | memoryview) -> bytes:
    return blake2b(raw, digest_size=CHECKSUM_SIZE).digest()


def seal(raw: bytes) -> bytes:
    """The record stored for a message: its checksum followed by its raw bytes, untouched."""
    return _checksum(raw) + raw


def unseal(record: bytes) -> bytes | None:
    """The raw bytes of a stored record, or None when they no longer match its checksum."""
    if len(record) <= CHECKSUM_SIZE:
        return None
    raw = record[CHECKSUM_SIZE:]
    return raw if _checksum(raw) == record[:CHECKSUM_SIZE] else None
