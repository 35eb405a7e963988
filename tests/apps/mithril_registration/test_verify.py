"""verify_registration: each of Mithril's checks passes an honest registration and refuses its tampering."""

from __future__ import annotations

import dataclasses
import json

import pytest

from dmq.kes import kes_sign_at
from dmq.opcert import issue_opcert
from apps.mithril_registration import (
    KesSignatureInvalid,
    KesSignatureMissing,
    OpcertInvalid,
    OpcertMissing,
    PartyIdMismatch,
    PoolNotInStakeDistribution,
    ProofOfPossessionInvalid,
    RegistrationMalformed,
    RegistrationRefused,
    WrongEpoch,
    kes_evolutions_tried,
    parse_register_signer,
    verify_registration,
)
from apps.mithril_registration.build import BlsKey, build_registration, encode_json_hex

from .keys import CURRENT_KES_PERIOD, EPOCH, START_KES_PERIOD, bls_key, point_outside_g2, pool, stake_distribution


def _registration(index: int = 0, *, encoding: str = "json-hex", key: BlsKey | None = None, signed_at: int = CURRENT_KES_PERIOD):
    return build_registration(pool(index), key or bls_key(index), epoch=EPOCH, current_kes_period=signed_at, encoding=encoding)


def _verify(registration, *, stakes=None, current_kes_period=CURRENT_KES_PERIOD, epoch=EPOCH):
    return verify_registration(registration, stake_distribution=stake_distribution(0, 1) if stakes is None else stakes,
                               current_kes_period=current_kes_period, epoch=epoch)


@pytest.mark.parametrize("encoding", ["json-hex", "bytes-hex"])
def test_an_honest_registration_passes_with_what_it_proves(encoding):
    registration = _registration(1, encoding=encoding)
    signer = _verify(registration)
    assert signer.pool_id == pool(1).pool_id
    assert signer.party_id == pool(1).party_id == registration.party_id
    assert signer.stake == 2_000
    assert signer.verification_key == bls_key(1).verification_key
    assert signer.kes_evolution == CURRENT_KES_PERIOD - START_KES_PERIOD
    assert signer.cold_vk == pool(1).cold_vk and signer.opcert == pool(1).opcert
    assert signer.registration is registration


def test_the_message_json_round_trips_and_unknown_members_are_ignored():
    registration = _registration()
    document = registration.to_json()
    assert set(document) == {"epoch", "party_id", "verification_key", "verification_key_signature",
                             "operational_certificate", "kes_period"}
    assert parse_register_signer(json.dumps(document)) == registration
    # What an aggregator built with Mithril's `snark` feature would also read.
    assert parse_register_signer({**document, "verification_key_for_snark": "00"}) == registration


@pytest.mark.parametrize("document, problem", [
    ("{", "not JSON"),
    ([], "JSON object"),
    ({"party_id": "x", "verification_key": "00"}, "epoch"),
    ({"epoch": -1, "party_id": "x", "verification_key": "00"}, "epoch"),
    ({"epoch": True, "party_id": "x", "verification_key": "00"}, "epoch"),
    ({"epoch": 1, "party_id": 7, "verification_key": "00"}, "party_id"),
    ({"epoch": 1, "party_id": "x"}, "verification_key"),
    ({"epoch": 1, "party_id": "x", "verification_key": "00", "kes_period": "3"}, "kes_period"),
    ('{"epoch": 1, "epoch": 2, "party_id": "x", "verification_key": "00"}', "duplicate"),
])
def test_a_message_that_is_not_a_register_signer_message_is_malformed(document, problem):
    with pytest.raises(RegistrationMalformed, match=problem):
        parse_register_signer(document if isinstance(document, str) else json.dumps(document))


def test_the_kes_period_of_the_message_is_not_what_is_checked():
    """Mithril's aggregator takes the evolution from its own chain view, not from the message."""
    registration = dataclasses.replace(_registration(), kes_evolutions=0)
    assert _verify(registration).kes_evolution == CURRENT_KES_PERIOD - START_KES_PERIOD


def test_one_period_of_clock_skew_either_way_is_accepted_two_are_not():
    registration = _registration()
    assert _verify(registration, current_kes_period=CURRENT_KES_PERIOD - 1).kes_evolution == 7
    assert _verify(registration, current_kes_period=CURRENT_KES_PERIOD + 1).kes_evolution == 7
    for current in (CURRENT_KES_PERIOD - 2, CURRENT_KES_PERIOD + 2):
        with pytest.raises(KesSignatureInvalid, match=f"current KES period {current}"):
            _verify(registration, current_kes_period=current)


def test_the_evolutions_tried_are_mithrils():
    assert list(kes_evolutions_tried(107, 100)) == [6, 7, 8]
    assert list(kes_evolutions_tried(100, 100)) == [0, 1]
    assert list(kes_evolutions_tried(90, 100)) == [0, 1]      # before the certificate: saturates at 0
    assert list(kes_evolutions_tried(164, 100)) == [63, 64]   # capped at 64 (64 itself never verifies)


def test_a_signature_at_the_first_evolution_verifies_before_the_certificate_starts():
    registration = _registration(signed_at=START_KES_PERIOD)
    assert _verify(registration, current_kes_period=START_KES_PERIOD - 5).kes_evolution == 0


def test_no_operational_certificate_or_no_kes_signature_is_refused():
    registration = _registration()
    with pytest.raises(OpcertMissing):
        _verify(dataclasses.replace(registration, operational_certificate=None))
    with pytest.raises(KesSignatureMissing):
        _verify(dataclasses.replace(registration, verification_key_signature=None))


def test_a_certificate_the_cold_key_did_not_sign_is_refused():
    honest = pool(0)
    forged = dataclasses.replace(honest.opcert, issue_number=honest.opcert.issue_number + 1)  # signature now stale
    _, _, opcert = encode_json_hex(bls_key(0).verification_key,
                                   kes_sign_at(honest.kes_key, 7, bls_key(0).verification_key), forged, honest.cold_vk)
    registration = dataclasses.replace(_registration(0), operational_certificate=opcert)
    with pytest.raises(OpcertInvalid):
        _verify(registration)


def test_a_certificate_by_another_pools_cold_key_makes_it_that_pools_registration():
    """A pool's KES key certified by pool 1's cold key speaks for pool 1 (the pool id comes from the cold key)."""
    thief_opcert = issue_opcert(pool(1).cold_seed, pool(0).kes_key.verification_key(), 0, START_KES_PERIOD)
    key = bls_key(0).verification_key
    _, sig, opcert = encode_json_hex(key, kes_sign_at(pool(0).kes_key, 7, key), thief_opcert, pool(1).cold_vk)
    registration = dataclasses.replace(_registration(0), verification_key_signature=sig, operational_certificate=opcert)
    with pytest.raises(PartyIdMismatch, match=pool(1).party_id):
        _verify(registration)
    # Named as pool 1, it is pool 1's registration: the certificate is what binds a key to a pool.
    assert _verify(dataclasses.replace(registration, party_id=pool(1).party_id)).pool_id == pool(1).pool_id


def test_an_empty_party_id_takes_the_certificates_pool():
    assert _verify(dataclasses.replace(_registration(1), party_id="")).party_id == pool(1).party_id


def test_a_kes_signature_over_another_key_is_refused():
    other = _registration(1)
    registration = dataclasses.replace(_registration(0), verification_key=other.verification_key)
    with pytest.raises(KesSignatureInvalid):
        _verify(registration)


def test_another_pools_kes_signature_is_refused():
    registration = dataclasses.replace(_registration(0), verification_key_signature=_registration(1).verification_key_signature)
    with pytest.raises(KesSignatureInvalid):
        _verify(registration)


def test_a_pool_outside_the_stake_distribution_is_refused():
    with pytest.raises(PoolNotInStakeDistribution, match=pool(2).party_id):
        _verify(_registration(2))
    with pytest.raises(PoolNotInStakeDistribution):
        _verify(_registration(0), stakes={})


def test_a_pool_with_zero_stake_is_in_the_distribution():
    """Mithril looks the pool up; the amount is the round's business."""
    assert _verify(_registration(0), stakes={pool(0).pool_id: 0}).stake == 0


@pytest.mark.parametrize("tamper", ["k1 of another key", "vk outside G2"])
def test_a_key_whose_proof_of_possession_fails_is_refused_even_with_a_good_kes_signature(tamper):
    vk, k1, k2 = (bls_key(0).verification_key[a:b] for a, b in ((0, 96), (96, 144), (144, 192)))
    if tamper == "k1 of another key":
        bad = vk + bls_key(1).verification_key[96:144] + k2
    else:
        bad = point_outside_g2() + k1 + k2
    registration = _registration(0, key=BlsKey(bls_key(0).secret, bad))  # KES-signed over the bad key
    with pytest.raises(ProofOfPossessionInvalid):
        _verify(registration)


def test_a_registration_for_another_epoch_is_refused_when_the_round_is_named():
    registration = _registration()
    with pytest.raises(WrongEpoch, match=f"epoch {EPOCH + 1}"):
        _verify(registration, epoch=EPOCH + 1)
    assert _verify(registration, epoch=None).stake == 1_000


@pytest.mark.parametrize("field, text, problem", [
    ("verification_key", "zz", "hex"),
    ("verification_key", "abc", "hex"),
    ("verification_key", " " + _registration().verification_key, "hex"),
    ("verification_key", "00" * 191, "192 bytes"),
    ("verification_key", json.dumps({"vk": [0] * 96}).encode().hex(), '"vk" and "pop"'),
    ("verification_key", json.dumps({"vk": [0] * 96, "pop": [256] + [0] * 95}).encode().hex(), "0..255"),
    ("verification_key", json.dumps({"vk": [0] * 96, "pop": [0] * 96, "x": 1}).encode().hex(), '"vk" and "pop"'),
    ("verification_key", ('{"vk":[%s],"vk":[%s],"pop":[%s]}' % ((",".join(["0"] * 96),) * 3)).encode().hex(), "duplicate"),
    ("verification_key", json.dumps({"vk": [0] * 96, "pop": [0] * 96}).encode("utf-16").hex(), "not JSON"),
    ("verification_key_signature", "00" * 447, "448 bytes"),
    ("verification_key_signature", json.dumps({"sigma": [0] * 64, "lhs_pk": [0] * 32, "rhs_pk": [0] * 32}).encode().hex(),
     "sigma"),
    ("operational_certificate", json.dumps([[[0] * 32, 0, 0, [0] * 64]]).encode().hex(), "cold key"),
    ("operational_certificate", json.dumps([[[0] * 32, -1, 0, [0] * 64], [0] * 32]).encode().hex(), "issue number"),
    ("operational_certificate", "8284", "CBOR"),
])
def test_a_field_in_no_encoding_mithril_writes_is_malformed(field, text, problem):
    registration = dataclasses.replace(_registration(), **{field: text})
    with pytest.raises(RegistrationMalformed, match=problem) as caught:
        _verify(registration)
    assert str(caught.value).startswith(field)
    assert "\n" not in str(caught.value)


def test_every_refusal_has_a_distinct_stable_reason():
    reasons = {cls.reason for cls in (RegistrationMalformed, WrongEpoch, OpcertMissing, KesSignatureMissing, OpcertInvalid,
                                      KesSignatureInvalid, PartyIdMismatch, PoolNotInStakeDistribution,
                                      ProofOfPossessionInvalid)}
    assert len(reasons) == 9
    assert all(issubclass(cls, RegistrationRefused) for cls in (RegistrationMalformed, ProofOfPossessionInvalid))
