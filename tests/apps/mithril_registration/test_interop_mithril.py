"""Registrations made by Mithril's own code pass here, and both sides refuse the same tampering.

The harness (tests/interop/mithril, mithril-common 0.8.3) creates signers as a mithril-signer
does and verifies registrations as the aggregator's verifier does. Every case is judged by
both: ``apps.mithril_registration.verify_registration`` and Mithril's ``KeyRegWrapper::register``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from py_arkworks_bls12381 import G1Point, G2Point

from dmq.opcert import pool_id_from_bech32
from apps.mithril_registration import (
    KesSignatureInvalid,
    PartyIdMismatch,
    PoolNotInStakeDistribution,
    ProofOfPossessionInvalid,
    RegistrationMalformed,
    RegistrationRefused,
    SignerRegistration,
    parse_register_signer,
    verify_registration,
)
from apps.mithril_registration.build import BlsKey, build_registration, encode_bytes_hex, encode_json_hex
from apps.mithril_registration.encoding import decode_kes_signature, decode_opcert, decode_verification_key
from .conftest import run_harness

from .keys import bls_key, point_outside_g1, point_outside_g2, pool

pytestmark = pytest.mark.interop

EPOCH = 42
START = 100
EVOLUTIONS = 7
CURRENT = START + EVOLUTIONS
SIGNERS = 4


_run = run_harness


@pytest.fixture(scope="module")
def made_by_mithril(harness, tmp_path_factory) -> list[dict[str, Any]]:
    """SIGNERS registrations in JSON-hex and SIGNERS in bytes-hex, each with its pool's stake."""
    lines = []
    for seed, encoding in ((1, "json-hex"), (2, "bytes-hex")):
        done = _run(harness, "generate", "--signers", str(SIGNERS), "--epoch", str(EPOCH), "--start-kes-period", str(START),
                    "--kes-evolutions", str(EVOLUTIONS), "--seed", str(seed), "--encoding", encoding,
                    "--dir", str(tmp_path_factory.mktemp(f"pools-{seed}")))
        assert done.returncode == 0, done.stderr
        lines += [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 2 * SIGNERS
    return lines


def _stakes(made: list[dict[str, Any]]) -> dict[str, int]:
    return {line["registration"]["party_id"]: line["stake"] for line in made}


def _mithril_verdicts(harness: Path, tmp_path: Path, registrations: list[SignerRegistration], stakes: dict[str, int],
                      current: int = CURRENT) -> list[dict[str, Any]]:
    (tmp_path / "stakes.json").write_text(json.dumps(stakes))
    done = _run(harness, "verify", "--epoch", str(EPOCH), "--current-kes-period", str(current),
                "--stake-distribution", str(tmp_path / "stakes.json"),
                stdin="".join(json.dumps(r.to_json()) + "\n" for r in registrations))
    assert done.returncode in (0, 1), done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(registrations)
    return verdicts


def _ours(registration: SignerRegistration, stakes: dict[str, int], current: int = CURRENT) -> RegistrationRefused | None:
    try:
        verify_registration(registration, stake_distribution={pool_id_from_bech32(p): s for p, s in stakes.items()},
                            current_kes_period=current, epoch=EPOCH)
    except RegistrationRefused as refused:
        return refused
    return None


def test_every_registration_mithril_makes_passes_here(made_by_mithril):
    stakes = {pool_id_from_bech32(p): s for p, s in _stakes(made_by_mithril).items()}
    for line in made_by_mithril:
        registration = parse_register_signer(line["registration"])
        signer = verify_registration(registration, stake_distribution=stakes, current_kes_period=CURRENT, epoch=EPOCH)
        assert signer.party_id == registration.party_id
        assert signer.pool_id.hex() == line["pool_id_hex"]
        assert signer.stake == line["stake"]
        assert signer.kes_evolution == EVOLUTIONS == registration.kes_evolutions


def test_the_encoders_write_byte_for_byte_what_mithril_writes(made_by_mithril):
    for index, line in enumerate(made_by_mithril):
        registration = parse_register_signer(line["registration"])
        opcert, cold_vk = decode_opcert(registration.operational_certificate)
        fields = (decode_verification_key(registration.verification_key),
                  decode_kes_signature(registration.verification_key_signature), opcert, cold_vk)
        encode = encode_json_hex if index < SIGNERS else encode_bytes_hex
        assert encode(*fields) == (registration.verification_key, registration.verification_key_signature,
                                   registration.operational_certificate)


def _tampered(made: list[dict[str, Any]]) -> dict[str, tuple[SignerRegistration, dict[str, int], type | None, bool]]:
    """name -> (registration, stake distribution, our expected refusal or None, Mithril accepts)."""
    regs = [parse_register_signer(line["registration"]) for line in made]
    stakes = _stakes(made)
    without_first = {p: s for p, s in stakes.items() if p != regs[0].party_id}
    return {
        "honest": (regs[0], stakes, None, True),
        "honest, bytes-hex": (regs[SIGNERS], stakes, None, True),
        "empty party id": (dataclasses.replace(regs[1], party_id=""), stakes, None, True),
        "another signer's verification key": (
            dataclasses.replace(regs[0], verification_key=regs[1].verification_key), stakes, KesSignatureInvalid, False),
        "another signer's KES signature": (
            dataclasses.replace(regs[0], verification_key_signature=regs[1].verification_key_signature), stakes,
            KesSignatureInvalid, False),
        "another pool's certificate": (
            dataclasses.replace(regs[0], operational_certificate=regs[1].operational_certificate,
                                party_id=regs[1].party_id), stakes, KesSignatureInvalid, False),
        "pool outside the stake distribution": (regs[0], without_first, PoolNotInStakeDistribution, False),
        "JSON-hex key with a repeated member": (
            dataclasses.replace(regs[0], verification_key=_repeat_vk(regs[0].verification_key)), stakes,
            RegistrationMalformed, False),
        # The differences, on purpose (docs/mithril-registration.md 6): Mithril replaces a wrong
        # party id with the certificate's pool, and reads encodings no Mithril signer writes.
        "party id naming another pool": (
            dataclasses.replace(regs[0], party_id=regs[1].party_id), stakes, PartyIdMismatch, True),
        "bytes-hex key with a trailing byte": (
            dataclasses.replace(regs[SIGNERS], verification_key=regs[SIGNERS].verification_key + "00"), stakes,
            RegistrationMalformed, True),
        "JSON-hex key with an unknown member": (
            dataclasses.replace(regs[0], verification_key=_with_member(regs[0].verification_key)), stakes,
            RegistrationMalformed, True),
    }


def _repeat_vk(json_hex: str) -> str:
    text = bytes.fromhex(json_hex).decode()
    return text.replace('{"vk":', '{"vk":[0],"vk":', 1).encode().hex()


def _with_member(json_hex: str) -> str:
    document = json.loads(bytes.fromhex(json_hex))
    return json.dumps({**document, "extra": 1}, separators=(",", ":")).encode().hex()


def test_tampered_registrations_get_the_same_verdict_from_mithril_and_here(harness, made_by_mithril, tmp_path):
    cases = _tampered(made_by_mithril)
    for name, (registration, stakes, refusal, mithril_accepts) in cases.items():
        verdict = _mithril_verdicts(harness, tmp_path, [registration], stakes)[0]
        assert verdict["ok"] is mithril_accepts, f"{name}: Mithril said {verdict}"
        ours = _ours(registration, stakes)
        if refusal is None:
            assert ours is None, f"{name}: refused here: {ours!r}"
        else:
            assert isinstance(ours, refusal), f"{name}: expected {refusal.__name__}, got {ours!r}"


def test_the_kes_skew_window_is_mithrils(harness, made_by_mithril, tmp_path):
    registration = parse_register_signer(made_by_mithril[0]["registration"])
    stakes = _stakes(made_by_mithril)
    for current, accepted in ((CURRENT - 2, False), (CURRENT - 1, True), (CURRENT, True), (CURRENT + 1, True),
                              (CURRENT + 2, False), (START - 3, False)):
        verdict = _mithril_verdicts(harness, tmp_path, [registration], stakes, current)[0]
        assert verdict["ok"] is accepted, f"current KES period {current}: Mithril said {verdict}"
        assert (_ours(registration, stakes, current) is None) is accepted, f"current KES period {current}"


def _pop_cases() -> dict[str, tuple[SignerRegistration, bool]]:
    """Registrations built here, KES-signed over the key as given: name -> (registration, valid)."""
    vk, k1, k2 = (bls_key(0).verification_key[a:b] for a, b in ((0, 96), (96, 144), (144, 192)))
    other = bls_key(1).verification_key
    odd_k1 = (G1Point.from_compressed_bytes(k1) + point_outside_g1()).to_compressed_bytes()
    keys = {
        "honest, built here": (bls_key(0).verification_key, True),
        "k1 with a torsion component": (vk + odd_k1 + k2, True),
        "k1 of another key": (vk + other[96:144] + k2, False),
        "k2 of another key": (vk + k1 + other[144:], False),
        "vk of another key": (other[:96] + k1 + k2, False),
        "vk outside G2": (point_outside_g2() + k1 + k2, False),
        "vk the identity": (G2Point.identity().to_compressed_bytes() + G1Point.identity().to_compressed_bytes() * 2, False),
    }
    return {name: (build_registration(pool(0), BlsKey(0, key), epoch=EPOCH, current_kes_period=CURRENT), valid)
            for name, (key, valid) in keys.items()}


def test_registrations_built_here_get_the_same_proof_of_possession_verdict_from_mithril(harness, tmp_path):
    stakes = {pool(0).party_id: 5_000}
    cases = _pop_cases()
    verdicts = _mithril_verdicts(harness, tmp_path, [registration for registration, _ in cases.values()], stakes)
    for (name, (registration, valid)), verdict in zip(cases.items(), verdicts):
        assert verdict["ok"] is valid, f"{name}: Mithril said {verdict}"
        ours = _ours(registration, stakes)
        if valid:
            assert ours is None, f"{name}: refused here: {ours!r}"
        else:
            # Mithril refuses a vk outside G2 when decoding it, the others in the proof of possession.
            assert isinstance(ours, ProofOfPossessionInvalid), f"{name}: got {ours!r}"


def test_mithril_reads_an_epoch_settings_message_of_these_registrations(harness, made_by_mithril, tmp_path):
    regs = [parse_register_signer(line["registration"]) for line in made_by_mithril]
    ours = build_registration(pool(0), bls_key(0), epoch=EPOCH, current_kes_period=CURRENT)
    stakes = {**_stakes(made_by_mithril), pool(0).party_id: 5_000}
    (tmp_path / "stakes.json").write_text(json.dumps(stakes))

    def part(r: SignerRegistration) -> dict[str, Any]:
        return {k: v for k, v in r.to_json().items() if k != "epoch"}

    settings = {"epoch": EPOCH, "current_signers": [part(r) for r in regs[:SIGNERS]],
                "next_signers": [part(r) for r in regs[SIGNERS:]] + [part(ours)]}
    args = ("verify-epoch-settings", "--current-kes-period", str(CURRENT), "--stake-distribution", str(tmp_path / "stakes.json"))
    done = _run(harness, *args, stdin=json.dumps(settings))
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["list"] for v in verdicts] == ["current_signers"] * SIGNERS + ["next_signers"] * (SIGNERS + 1)
    assert all(v["ok"] for v in verdicts)

    settings["next_signers"][0]["verification_key_signature"] = settings["next_signers"][1]["verification_key_signature"]
    done = _run(harness, *args, stdin=json.dumps(settings))
    assert done.returncode == 1
    refused = [v for v in map(json.loads, done.stdout.splitlines()) if not v["ok"]]
    assert [v["party_id"] for v in refused] == [regs[SIGNERS].party_id]
