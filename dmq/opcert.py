"""Operational certificates and pool ids (docs/protocol/validation.md 6.3, 6.6).

An operational certificate binds a pool's hot KES key to its cold key: the cold key signs
``hotKesVk(32) || u64be(issueNumber) || u64be(startKesPeriod)`` (48 raw bytes, not CBOR, as
in cardano-ledger and kes-agent). The pool id is Blake2b-224 of the same cold key, so a valid
certificate ties a message's KES signature to a stake pool.

Ed25519 is checked with libsodium (PyNaCl), the library the reference node uses, so the
answer on adversarial keys and signatures (small-order points, non-canonical encodings) is
the reference's answer.
"""

from __future__ import annotations

import functools

from nacl.bindings import crypto_sign, crypto_sign_open, crypto_sign_seed_keypair
from nacl.exceptions import CryptoError

from ouroboros_mux.cbor import MAJOR_UINT, CborError, Cursor, write_head

from .message import COLD_SIGNATURE_SIZE, COLD_VK_SIZE, KES_VK_SIZE, OperationalCertificate, pool_id_of

__all__ = [
    "POOL_ID_SIZE",
    "OpcertDecodeError",
    "verify_opcert",
    "issue_opcert",
    "cold_verification_key",
    "pool_id_of",
    "pool_id_bech32",
    "pool_id_from_bech32",
    "encode_opcert",
    "decode_opcert",
    "read_opcert",
    "encode_uint",
]

POOL_ID_SIZE = 28
_POOL_HRP = "pool"
_UINT64_MAX = 0xFFFFFFFFFFFFFFFF


class OpcertDecodeError(ValueError):
    """The bytes are not a ``[hotKesVk, issueNumber, startKesPeriod, coldSignature]`` array."""


def verify_opcert(opcert: OperationalCertificate, cold_vk: bytes) -> bool:
    """Whether ``cold_vk`` signed the certificate's 48-byte signable. Never raises on bad input."""
    try:
        if len(cold_vk) != COLD_VK_SIZE or len(opcert.cold_signature) != COLD_SIGNATURE_SIZE:
            return False
        if len(opcert.hot_vk) != KES_VK_SIZE:
            return False
        crypto_sign_open(bytes(opcert.cold_signature) + opcert.signable(), bytes(cold_vk))
        return True
    except (CryptoError, ValueError, TypeError, OverflowError):
        return False


def cold_verification_key(cold_signing_key: bytes) -> bytes:
    """The Ed25519 verification key of a 32-byte cold signing key (seed)."""
    if len(cold_signing_key) != 32:
        raise ValueError(f"cold signing key must be a 32-byte Ed25519 seed, got {len(cold_signing_key)} bytes")
    return crypto_sign_seed_keypair(bytes(cold_signing_key))[0]


def issue_opcert(
    cold_signing_key: bytes, hot_vk: bytes, issue_number: int, start_kes_period: int
) -> OperationalCertificate:
    """Sign a certificate for ``hot_vk`` with a 32-byte cold signing key (``cardano-cli node issue-op-cert``)."""
    if len(cold_signing_key) != 32:
        raise ValueError(f"cold signing key must be a 32-byte Ed25519 seed, got {len(cold_signing_key)} bytes")
    if len(hot_vk) != KES_VK_SIZE:
        raise ValueError(f"hot KES verification key must be {KES_VK_SIZE} bytes, got {len(hot_vk)}")
    for name, value in (("issue number", issue_number), ("start KES period", start_kes_period)):
        if not 0 <= value <= _UINT64_MAX:
            raise ValueError(f"{name} {value} outside the unsigned 64-bit range")
    unsigned = OperationalCertificate(bytes(hot_vk), issue_number, start_kes_period, b"")
    secret = crypto_sign_seed_keypair(bytes(cold_signing_key))[1]
    signature = crypto_sign(unsigned.signable(), secret)[:COLD_SIGNATURE_SIZE]
    return OperationalCertificate(bytes(hot_vk), issue_number, start_kes_period, signature)


def pool_id_bech32(pool_id: bytes) -> str:
    """The ``pool1…`` form of a 28-byte pool id, as cardano-cli and explorers print it."""
    return _pool_id_bech32(bytes(pool_id))


@functools.lru_cache(maxsize=8192)
def _pool_id_bech32(pool_id: bytes) -> str:
    # Cached: a consumer names the pool of every message it receives, and encoding costs about
    # 0.3 ms of CPU (pure-Python bech32), 25 times the message's decoding; there are a few thousand
    # pools (8,192 entries hold mainnet's).
    if len(pool_id) != POOL_ID_SIZE:
        raise ValueError(f"a pool id is {POOL_ID_SIZE} bytes (Blake2b-224 of the cold key), got {len(pool_id)}")
    # Imported here: pycardano costs about a second of CPU to import, and the node, which
    # never prints a pool1 id, must restart in under two seconds.
    from pycardano import PoolId, PoolKeyHash
    from pycardano.crypto import bech32

    key_hash = PoolKeyHash(bytes(pool_id))
    text = bech32.encode(_POOL_HRP, key_hash.payload)
    if text is None:
        raise ValueError(f"cannot bech32-encode pool id {bytes(pool_id).hex()}")
    return str(PoolId(text))


def pool_id_from_bech32(text: str) -> bytes:
    """The 28 raw bytes of a ``pool1…`` id; ValueError if it is not one."""
    from pycardano.crypto import bech32  # see pool_id_bech32

    hrp, _, _ = bech32.bech32_decode(text)
    if hrp != _POOL_HRP:
        raise ValueError(f"not a bech32 pool id (expected prefix 'pool1'): {text!r}")
    data = bech32.decode(text)
    if data is None or len(data) != POOL_ID_SIZE:
        raise ValueError(f"bech32 pool id {text!r} does not hold {POOL_ID_SIZE} bytes")
    return bytes(data)


def encode_uint(value: int) -> bytes:
    """Shortest-form CBOR unsigned integer (major type 0), as cborg and Pallas write it."""
    return write_head(MAJOR_UINT, value)


def encode_opcert(opcert: OperationalCertificate) -> bytes:
    """``[hotKesVk, issueNumber, startKesPeriod, coldSignature]``: definite array, shortest ints."""
    if len(opcert.hot_vk) != KES_VK_SIZE or len(opcert.cold_signature) != COLD_SIGNATURE_SIZE:
        raise ValueError(
            f"opcert needs a {KES_VK_SIZE}-byte hot key and a {COLD_SIGNATURE_SIZE}-byte signature, "
            f"got {len(opcert.hot_vk)} and {len(opcert.cold_signature)}"
        )
    return (
        b"\x84\x58\x20" + opcert.hot_vk
        + encode_uint(opcert.issue_number) + encode_uint(opcert.start_kes_period)
        + b"\x58\x40" + opcert.cold_signature
    )


def read_opcert(cursor: Cursor) -> OperationalCertificate:
    """Read one certificate array at the cursor, strictly (docs/protocol/message.md 5.2); raises ``CborError``."""
    cursor.definite_array(4)
    hot_vk = cursor.bytes(size=KES_VK_SIZE)
    issue_number = cursor.uint(_UINT64_MAX)
    start_kes_period = cursor.uint(_UINT64_MAX)
    cold_signature = cursor.bytes(size=COLD_SIGNATURE_SIZE)
    return OperationalCertificate(hot_vk, issue_number, start_kes_period, cold_signature)


def decode_opcert(raw: bytes) -> OperationalCertificate:
    """Decode exactly one certificate array (the form inside messages and opcert files)."""
    cursor = Cursor(raw)
    try:
        opcert = read_opcert(cursor)
        cursor.expect_end()
    except CborError as exc:
        raise OpcertDecodeError(f"operational certificate: {exc}") from None
    return opcert
