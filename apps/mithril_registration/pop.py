"""Mithril's proof of possession of a BLS verification key, as mithril-stm checks it.

A Mithril signer's key for the concatenation proof system is 192 bytes
(mithril-stm/src/signature_scheme/bls_multi_signature/verification_key.rs,
``BlsVerificationKeyProofOfPossession::to_canonical_bytes``)::

    vk   96 bytes   compressed G2 point, the verification key (blst ``min_sig``: keys in G2)
    k1   48 bytes   compressed G1 point, sk * H("PoP"), a BLS signature of the bytes b"PoP"
    k2   48 bytes   compressed G1 point, sk * g1

and ``verify_proof_of_possession`` accepts it when

1. ``vk`` decodes to a point of the G2 subgroup other than the identity (blst ``key_validate``);
2. ``e(k1, g2) == e(H(b"PoP"), vk)``, where H is hash-to-G1 (RFC 9380 ``BLS12381G1_XMD:SHA-256_SSWU_RO_``)
   with an **empty** domain separation tag: mithril-stm signs with ``sign(POP, &[], &[])``
   (proof_of_possession.rs) and verifies with ``verify(false, POP, &[], &[], vk, false)``;
3. ``e(g1, vk) == e(k2, g2)`` (helper.rs ``verify_pairing``): ``k2`` carries the same secret in G1.

``k1`` and ``k2`` are decoded as points of the curve without the subgroup check, exactly as
mithril-stm does (blst ``Signature::from_bytes`` and a bare ``blst_p1_uncompress``, and the
signature check runs with ``sig_groupcheck = false``), so a key Mithril accepts is accepted here
and the other way round. Two pairing checks, as Mithril makes them, not one random combination.
"""

from __future__ import annotations

import functools

from py_arkworks_bls12381 import GT, G1Point, G2Point

from .errors import ProofOfPossessionInvalid

__all__ = ["VK_SIZE", "POP_SIZE", "VERIFICATION_KEY_SIZE", "POP_MESSAGE", "POP_DST", "verify_proof_of_possession"]

VK_SIZE = 96
POP_SIZE = 96
VERIFICATION_KEY_SIZE = VK_SIZE + POP_SIZE
POP_MESSAGE = b"PoP"
POP_DST = b""


@functools.cache
def _pop_point() -> G1Point:
    """H(b"PoP"): the same point for every key, hashed once."""
    return G1Point.hash_to_curve(POP_MESSAGE, POP_DST)


@functools.cache
def _generators() -> tuple[G1Point, G2Point]:
    return G1Point(), G2Point()


def verify_proof_of_possession(key: bytes) -> None:
    """Raise :class:`ProofOfPossessionInvalid` unless ``key`` (192 canonical bytes) passes Mithril's check."""
    if len(key) != VERIFICATION_KEY_SIZE:
        raise ProofOfPossessionInvalid(
            f"a Mithril verification key is {VERIFICATION_KEY_SIZE} bytes (vk, k1, k2), got {len(key)}")
    try:
        vk = G2Point.from_compressed_bytes(bytes(key[:VK_SIZE]))
    except (ValueError, TypeError) as exc:
        raise ProofOfPossessionInvalid(f"verification key is not a point of the G2 subgroup: {exc}") from None
    if vk == G2Point.identity():
        raise ProofOfPossessionInvalid("verification key is the identity of G2")
    try:
        k1 = G1Point.from_compressed_bytes_unchecked(bytes(key[VK_SIZE:VK_SIZE + 48]))
        k2 = G1Point.from_compressed_bytes_unchecked(bytes(key[VK_SIZE + 48:]))
    except (ValueError, TypeError) as exc:
        raise ProofOfPossessionInvalid(f"proof of possession is not two G1 points: {exc}") from None
    g1, g2 = _generators()
    if not GT.pairing_check([k1, -_pop_point()], [g2, vk]):
        raise ProofOfPossessionInvalid("proof of possession: k1 is not the key's signature of b'PoP'")
    if not GT.pairing_check([g1, -k2], [vk, g2]):
        raise ProofOfPossessionInvalid("proof of possession: k2 does not carry the key's secret")
