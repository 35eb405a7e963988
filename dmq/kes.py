"""Sum6KES over Ed25519 and Blake2b-256, as cardano-base builds it (docs/protocol/validation.md 6.4, 6.5).

A message's KES signature is checked under the hot key certified by the operational
certificate, at the evolution ``t = kesPeriod - startKesPeriod``. A depth-``d`` sum scheme is
a binary tree of ``2^d`` Ed25519 keys whose root verification key is a hash of its two
children's keys, so the signature carries the Ed25519 signature of the leaf for period ``t``
followed by the pair of child keys at every level, innermost pair first. The verifier hashes
its way up from the pair that hashes to the root, choosing left or right with the bits of
``t``, and checks the leaf signature under the key it ends with.

Signing keys use the flat layout the Haskell ``rawSerialiseSignKeyKES`` writes (the 608-byte
Sum6 key inside a ``KesSigningKey_ed25519_kes_2^6`` file)::

    level 0 (the current Ed25519 seed)      32 bytes        offset 0
    level 1: rightSeed, vkLeft, vkRight     96 bytes        offset 32
    ...
    level d: rightSeed, vkLeft, vkRight     96 bytes        offset 32 + 96 (d - 1)

so evolving is an in-place rewrite of a prefix of the buffer, and old key material is
overwritten rather than left behind in a discarded object. Forward security is the point of
KES: once a key has evolved past period ``t`` nothing in it can sign for ``t`` again.
"""

from __future__ import annotations

import hashlib

from nacl.bindings import crypto_sign, crypto_sign_open, crypto_sign_seed_keypair
from nacl.exceptions import CryptoError

__all__ = [
    "SUM6_DEPTH",
    "KES_SEED_SIZE",
    "KES_VK_SIZE",
    "KesError",
    "KesKeyExhausted",
    "KesPeriodError",
    "KesSigningKey",
    "kes_signature_size",
    "kes_signing_key_size",
    "kes_verify",
    "kes_sign_at",
]

SUM6_DEPTH = 6
KES_SEED_SIZE = 32
KES_VK_SIZE = 32
_ED25519_SIGNATURE_SIZE = 64
_LEVEL_SIZE = 96          # rightSeed(32) || vkLeft(32) || vkRight(32)
_PAIR_SIZE = 64           # vkLeft || vkRight, as carried in a signature
_ZERO_SEED = bytes(KES_SEED_SIZE)

_blake2b = hashlib.blake2b


class KesError(ValueError):
    """A KES key or signing request that cannot be honoured."""


class KesKeyExhausted(KesError):
    """The key is at its last period and cannot evolve any further."""


class KesPeriodError(KesError):
    """A signing or evolution request for a period the key cannot reach."""


def kes_signature_size(depth: int = SUM6_DEPTH) -> int:
    """Signature size at ``depth``: one Ed25519 signature plus one key pair per level (448 for Sum6)."""
    return _ED25519_SIGNATURE_SIZE + _PAIR_SIZE * depth


def kes_signing_key_size(depth: int = SUM6_DEPTH) -> int:
    """Raw signing key size at ``depth``: a seed plus 96 bytes per level (608 for Sum6)."""
    return KES_SEED_SIZE + _LEVEL_SIZE * depth


def _hash256(data) -> bytes:
    return _blake2b(data, digest_size=32).digest()


def kes_verify(
    vk: bytes, period: int, message: bytes, signature: bytes, depth: int = SUM6_DEPTH
) -> bool:
    """Check a sum-KES ``signature`` of ``message`` under root key ``vk`` at evolution ``period``.

    ``period`` is relative to the key (``kesPeriod - startKesPeriod`` for a DMQ message) and
    must match exactly: a signature made at another evolution fails, there is no tolerance.
    Every malformed input (wrong sizes, period out of range, non-bytes) gives False rather
    than an exception, because all of it comes from the network.

    The walk starts at the root pair (the last 64 bytes) and goes down one level per step, so
    it costs ``depth`` Blake2b-256 hashes of 64 bytes and one Ed25519 verification (libsodium,
    the library the reference node uses, so adversarial edge cases agree).
    """
    try:
        if type(signature) is not bytes:
            if not isinstance(signature, (bytearray, memoryview)):
                return False
            signature = bytes(signature)
        if type(vk) is not bytes:
            if not isinstance(vk, (bytearray, memoryview)):
                return False
            vk = bytes(vk)
        if len(vk) != KES_VK_SIZE or len(signature) != _ED25519_SIGNATURE_SIZE + _PAIR_SIZE * depth:
            return False
        if type(period) is not int or not 0 <= period < (1 << depth):
            return False
        expected = vk
        t = period
        half = 1 << depth
        end = len(signature)
        while end > _ED25519_SIGNATURE_SIZE:
            start = end - _PAIR_SIZE
            pair = signature[start:end]
            if _blake2b(pair, digest_size=32).digest() != expected:
                return False
            half >>= 1
            if t < half:
                expected = pair[:32]
            else:
                expected = pair[32:]
                t -= half
            end = start
        crypto_sign_open(signature[:_ED25519_SIGNATURE_SIZE] + message, expected)
        return True
    except (CryptoError, ValueError, TypeError):
        return False


def _split_seed(seed) -> tuple[bytes, bytes]:
    """cardano-base ``expandHashWith``: the left and right child seeds of a tree node."""
    return _hash256(b"\x01" + seed), _hash256(b"\x02" + seed)


def _ed25519_public(seed) -> bytes:
    return crypto_sign_seed_keypair(bytes(seed))[0]


def _generate(seed: bytes, depth: int) -> tuple[bytearray, bytes]:
    """Build the raw signing key of ``depth`` at period 0 from a 32-byte seed.

    Returns ``(raw key, root verification key)``. The left subtree is built in full (it is
    the key's period-0 state); of the right subtree only the seed is kept, but its root key
    is needed for the pair at this level, so its keys are derived and dropped.
    """
    if depth == 0:
        return bytearray(seed), _ed25519_public(seed)
    left_seed, right_seed = _split_seed(seed)
    left_raw, vk_left = _generate(left_seed, depth - 1)
    vk_right = _verification_key_of_seed(right_seed, depth - 1)
    left_raw += right_seed + vk_left + vk_right
    return left_raw, _hash256(vk_left + vk_right)


def _verification_key_of_seed(seed: bytes, depth: int) -> bytes:
    """Root verification key of the tree grown from ``seed``, without keeping its secrets."""
    if depth == 0:
        return _ed25519_public(seed)
    left_seed, right_seed = _split_seed(seed)
    return _hash256(
        _verification_key_of_seed(left_seed, depth - 1) + _verification_key_of_seed(right_seed, depth - 1)
    )


def _level_offset(level: int) -> int:
    """Offset of ``level``'s (rightSeed, vkLeft, vkRight) triple in the flat key (level >= 1)."""
    return KES_SEED_SIZE + _LEVEL_SIZE * (level - 1)


def _sign_from(raw, depth: int, key_period: int, target: int, message: bytes) -> bytes:
    """Sign ``message`` at ``target`` with a raw key at ``key_period`` without changing it.

    Walks from the root. Where the key and the target lie in the same half of a level, the
    key's own child is the right subtree to descend into; where the key is still in the left
    half and the target in the right one, the right child is regenerated from that level's
    right seed (this is how a period-0 key from a file signs at any period, docs/protocol/validation.md 6.5).
    """
    pairs: list[bytes] = []
    level = depth
    p, t = key_period, target
    while level > 0:
        half = 1 << (level - 1)
        base = _level_offset(level)
        pairs.append(bytes(raw[base + KES_SEED_SIZE:base + _LEVEL_SIZE]))
        if t >= half:
            t -= half
            if p < half:
                raw, _ = _generate(bytes(raw[base:base + KES_SEED_SIZE]), level - 1)
                p = 0
            else:
                p -= half
        level -= 1
    signing_key = crypto_sign_seed_keypair(bytes(raw[:KES_SEED_SIZE]))[1]
    leaf_signature = crypto_sign(bytes(message), signing_key)[:_ED25519_SIGNATURE_SIZE]
    pairs.reverse()
    return leaf_signature + b"".join(pairs)


class KesSigningKey:
    """A sum-KES signing key (Sum6 by default) at a known period, evolving in place.

    The raw bytes do not record the period (cardano-cli key files hold the period-0 key), so
    the period is tracked beside them. ``evolve`` moves to the next period and erases what
    signed the previous ones: when a level's left subtree is used up its right child is grown
    from that level's right seed and the seed is overwritten with 32 zero bytes, exactly as
    cardano-base does, so evolved keys serialise byte for byte like the Haskell ones.
    """

    __slots__ = ("_raw", "_period", "_depth")

    def __init__(self, raw: bytearray, period: int, depth: int) -> None:
        self._raw = raw
        self._period = period
        self._depth = depth

    # -- construction --------------------------------------------------------------
    @classmethod
    def generate(cls, seed: bytes, depth: int = SUM6_DEPTH) -> KesSigningKey:
        """The period-0 key grown from a 32-byte seed (cardano-base ``genKeyKES``)."""
        if len(seed) != KES_SEED_SIZE:
            raise KesError(f"KES seed must be {KES_SEED_SIZE} bytes, got {len(seed)}")
        if depth < 0:
            raise KesError(f"KES depth must be non-negative, got {depth}")
        raw, _ = _generate(bytes(seed), depth)
        return cls(raw, 0, depth)

    @classmethod
    def from_bytes(cls, raw: bytes, period: int = 0, depth: int = SUM6_DEPTH) -> KesSigningKey:
        """A key from its raw serialisation, said to be at ``period``.

        Key files hold the key as created (period 0); a key saved after evolving must be
        loaded with the period it was saved at, since the bytes do not say.
        """
        expected = kes_signing_key_size(depth)
        if len(raw) != expected:
            raise KesError(f"Sum{depth}KES signing key must be {expected} bytes, got {len(raw)}")
        if not 0 <= period < (1 << depth):
            raise KesPeriodError(f"period {period} outside 0..{(1 << depth) - 1} for Sum{depth}KES")
        return cls(bytearray(raw), period, depth)

    def copy(self) -> KesSigningKey:
        return KesSigningKey(bytearray(self._raw), self._period, self._depth)

    # -- inspection ----------------------------------------------------------------
    @property
    def period(self) -> int:
        """The evolution the key signs at now (0 .. 2^depth - 1), relative to its creation."""
        return self._period

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def total_periods(self) -> int:
        return 1 << self._depth

    def to_bytes(self) -> bytes:
        """The raw serialisation (608 bytes for Sum6), as in the key file's CBOR byte string."""
        return bytes(self._raw)

    def verification_key(self) -> bytes:
        """The root verification key: Blake2b-256 of the top-level key pair (the opcert hot key)."""
        if self._depth == 0:
            return _ed25519_public(self._raw[:KES_SEED_SIZE])
        return _hash256(self._raw[-_PAIR_SIZE:])

    def __repr__(self) -> str:
        return (
            f"KesSigningKey(depth={self._depth}, period={self._period}, "
            f"vk={self.verification_key().hex()})"
        )

    # -- use -----------------------------------------------------------------------
    def sign(self, message: bytes) -> bytes:
        """Sign at the current period."""
        return _sign_from(self._raw, self._depth, self._period, self._period, message)

    def evolve(self) -> None:
        """Move to the next period, erasing the material of the current one (docs/protocol/validation.md 6.5)."""
        depth = self._depth
        if self._period + 1 >= (1 << depth):
            raise KesKeyExhausted(
                f"Sum{depth}KES key is at its last period {self._period} and cannot evolve"
            )
        raw = self._raw
        t = self._period
        level = depth
        while level > 0:
            half = 1 << (level - 1)
            if t + 1 == half:
                base = _level_offset(level)
                right_seed = bytes(raw[base:base + KES_SEED_SIZE])
                child, _ = _generate(right_seed, level - 1)
                raw[:base] = child
                raw[base:base + KES_SEED_SIZE] = _ZERO_SEED
                break
            if t >= half:
                t -= half
            level -= 1
        self._period += 1

    def evolve_to(self, period: int) -> None:
        """Evolve forward until the key is at ``period``; a key never goes back."""
        if period < self._period:
            raise KesPeriodError(f"KES key is at period {self._period}; it cannot go back to {period}")
        if period >= (1 << self._depth):
            raise KesPeriodError(
                f"period {period} beyond the last period {(1 << self._depth) - 1} of Sum{self._depth}KES"
            )
        while self._period < period:
            self.evolve()

    def erase(self) -> None:
        """Overwrite the key material with zeros (the object is unusable afterwards)."""
        self._raw[:] = bytes(len(self._raw))


def kes_sign_at(key: KesSigningKey, period: int, message: bytes) -> bytes:
    """Sign ``message`` at ``period`` with ``key`` (typically at period 0) without evolving it.

    This is how a signer that reloads its period-0 key file for every signature works
    (Mithril): the subtrees needed for ``period`` are regenerated from the right seeds and
    dropped. ``period`` must not be behind the key's own period, whose past is erased.
    """
    if not 0 <= period < key.total_periods:
        raise KesPeriodError(f"period {period} outside 0..{key.total_periods - 1} for Sum{key.depth}KES")
    if period < key.period:
        raise KesPeriodError(f"KES key is at period {key.period}; it cannot sign at the earlier period {period}")
    return _sign_from(key._raw, key.depth, key.period, period, message)
