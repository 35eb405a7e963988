"""Message ids and Ed25519 signatures exactly as docs/topics-design.md 4.3 pins them.

The design hashes ``enc(type) || enc(header) || enc(BODY) || enc(SIG)``. For a routed message
received in deterministic encoding that is its exact bytes minus the one-byte array head
(``84``), and the signed bytes are those minus the trailing 66-byte ``enc(SIG)`` (``58 40`` +
64 bytes). Both are slices of the received bytes: nothing is re-encoded before hashing.
"""

from __future__ import annotations

import blake3
from nacl.bindings import crypto_sign, crypto_sign_open, crypto_sign_seed_keypair
from nacl.exceptions import CryptoError

__all__ = [
    "ID_SIZE",
    "KEY_SIZE",
    "SIG_SIZE",
    "upsycle_id",
    "signed_part",
    "verify",
    "sign",
    "keypair_from_seed",
]

ID_SIZE = 32
KEY_SIZE = 32
SIG_SIZE = 64
#: ``58 40`` followed by the 64 signature bytes.
_ENCODED_SIG_SIZE = 2 + SIG_SIZE


def upsycle_id(routed_raw: bytes) -> bytes:
    """BLAKE3-256 of the routed message's bytes without its array head."""
    return blake3.blake3(routed_raw[1:]).digest()


def signed_part(routed_raw: bytes) -> bytes:
    """``enc(type) || enc(header) || enc(BODY)``: the bytes the source or group key signs."""
    return routed_raw[1:-_ENCODED_SIG_SIZE]


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Ed25519 (RFC 8032) verification; any malformed key or signature is simply invalid."""
    if len(public_key) != KEY_SIZE or len(signature) != SIG_SIZE:
        return False
    try:
        crypto_sign_open(bytes(signature) + bytes(message), bytes(public_key))
    except CryptoError:
        return False
    return True


def keypair_from_seed(seed: bytes) -> tuple[bytes, bytes]:
    """``(public key, libsodium secret key)`` of a 32-byte Ed25519 seed."""
    return crypto_sign_seed_keypair(bytes(seed))


def sign(seed: bytes, message: bytes) -> bytes:
    """The detached Ed25519 signature of ``message`` by the key of ``seed``."""
    _, secret = crypto_sign_seed_keypair(bytes(seed))
    return crypto_sign(bytes(message), secret)[:SIG_SIZE]
