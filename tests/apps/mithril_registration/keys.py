"""Real pools and BLS keys for the registration tests, from fixed seeds (so failures reproduce)."""

from __future__ import annotations

import functools
import hashlib

from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from apps.mithril_registration.build import GROUP_ORDER, BlsKey, Pool

START_KES_PERIOD = 100
CURRENT_KES_PERIOD = 107  # evolution 7
EPOCH = 42


def _seed(label: str, index: int) -> bytes:
    return hashlib.blake2b(f"{label}/{index}".encode(), digest_size=32).digest()


@functools.cache
def pool(index: int) -> Pool:
    return Pool.create(_seed("cold", index), _seed("kes", index), start_kes_period=START_KES_PERIOD, issue_number=index)


@functools.cache
def bls_key(index: int) -> BlsKey:
    return BlsKey.generate(int.from_bytes(_seed("bls", index), "big") % GROUP_ORDER)


def stake_distribution(*indexes: int) -> dict[bytes, int]:
    return {pool(i).pool_id: 1_000 * (i + 1) for i in indexes}


def point_outside_g1() -> G1Point:
    """A point of the curve that is not in the subgroup G1 (pure cofactor torsion)."""
    for x in range(1, 1000):
        encoded = bytearray(x.to_bytes(48, "big"))
        encoded[0] |= 0x80  # compressed flag
        try:
            point = G1Point.from_compressed_bytes_unchecked(bytes(encoded))
        except ValueError:
            continue
        # r * point kills the subgroup part: what is left has order dividing the cofactor.
        torsion = point * Scalar(GROUP_ORDER - 1) + point
        if torsion != G1Point.identity():
            return torsion
    raise AssertionError("no point outside G1 found")


def point_outside_g2() -> bytes:
    """The compressed encoding of a point of the twist curve that is not in G2."""
    for x in range(1, 1000):
        encoded = bytearray(96)
        encoded[48:] = x.to_bytes(48, "big")  # c0; c1 = 0
        encoded[0] |= 0x80
        try:
            point = G2Point.from_compressed_bytes_unchecked(bytes(encoded))
        except ValueError:
            continue
        if not point.is_in_subgroup():
            return point.to_compressed_bytes()
    raise AssertionError("no point outside G2 found")
