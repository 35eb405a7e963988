"""The BLS proof of possession, checked as mithril-stm checks it."""

from __future__ import annotations

import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from apps.mithril_registration import ProofOfPossessionInvalid, verify_proof_of_possession
from apps.mithril_registration.pop import POP_DST, POP_MESSAGE

from .keys import bls_key, point_outside_g1, point_outside_g2


def _parts(key: bytes) -> tuple[bytes, bytes, bytes]:
    return key[:96], key[96:144], key[144:]


def test_a_generated_key_passes():
    for index in range(3):
        verify_proof_of_possession(bls_key(index).verification_key)


def test_the_hash_is_mithrils_empty_tag_not_the_standard_one():
    """k1 is sk * H(b"PoP") with an empty DST; the same key signed under the IETF tag fails."""
    key = bls_key(0)
    vk, _, k2 = _parts(key.verification_key)
    standard = G1Point.hash_to_curve(POP_MESSAGE, b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_") * Scalar(key.secret)
    assert POP_DST == b""
    with pytest.raises(ProofOfPossessionInvalid, match="k1"):
        verify_proof_of_possession(vk + standard.to_compressed_bytes() + k2)


@pytest.mark.parametrize("swap", ["k1", "k2"])
def test_a_proof_part_from_another_key_fails(swap):
    vk, k1, k2 = _parts(bls_key(0).verification_key)
    _, other_k1, other_k2 = _parts(bls_key(1).verification_key)
    tampered = vk + (other_k1 if swap == "k1" else k1) + (other_k2 if swap == "k2" else k2)
    with pytest.raises(ProofOfPossessionInvalid, match=swap):
        verify_proof_of_possession(tampered)


def test_another_keys_vk_with_this_proof_fails():
    _, k1, k2 = _parts(bls_key(0).verification_key)
    other_vk, _, _ = _parts(bls_key(1).verification_key)
    with pytest.raises(ProofOfPossessionInvalid):
        verify_proof_of_possession(other_vk + k1 + k2)


def test_a_vk_outside_g2_is_refused():
    _, k1, k2 = _parts(bls_key(0).verification_key)
    with pytest.raises(ProofOfPossessionInvalid, match="G2 subgroup"):
        verify_proof_of_possession(point_outside_g2() + k1 + k2)


def test_the_identity_as_vk_is_refused():
    """blst's key_validate refuses the point at infinity; with it, both pairings would be trivial."""
    identity = G2Point.identity().to_compressed_bytes()
    infinity_g1 = G1Point.identity().to_compressed_bytes()
    with pytest.raises(ProofOfPossessionInvalid, match="identity"):
        verify_proof_of_possession(identity + infinity_g1 + infinity_g1)


def test_k1_with_a_torsion_component_passes_as_in_mithril():
    """mithril-stm checks k1 with sig_groupcheck = false: a cofactor component changes no pairing.

    Refusing it here would make a node refuse what every Mithril aggregator accepts
    (tests/apps/mithril_registration/test_interop_mithril.py shows Mithril accepting the same key).
    """
    vk, k1, k2 = _parts(bls_key(0).verification_key)
    odd_k1 = G1Point.from_compressed_bytes(k1) + point_outside_g1()
    assert not odd_k1.is_in_subgroup()
    verify_proof_of_possession(vk + odd_k1.to_compressed_bytes() + k2)


@pytest.mark.parametrize("key", [b"", bytes(191), bytes(193), b"\xff" * 192])
def test_bytes_that_are_not_a_key_are_refused(key):
    with pytest.raises(ProofOfPossessionInvalid):
        verify_proof_of_possession(key)
