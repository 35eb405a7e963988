"""Key files: the devnet's bulk credentials, round trips, pycardano interop, operator errors."""

from __future__ import annotations

import hashlib
import json
import stat

import pytest
from pycardano import StakePoolSigningKey, StakePoolVerificationKey

from dmq.codec import build_message, decode_message
from dmq.kes import KesSigningKey, kes_verify
from dmq.keyfiles import (
    BulkCredential,
    IssueCounter,
    KeyFileError,
    TextEnvelope,
    read_bulk_credentials,
    read_cold_signing_key,
    read_cold_verification_key,
    read_issue_counter,
    read_kes_signing_key,
    read_kes_verification_key,
    read_operational_certificate,
    read_text_envelope,
    write_bulk_credentials,
    write_cold_signing_key,
    write_cold_verification_key,
    write_issue_counter,
    write_kes_signing_key,
    write_kes_verification_key,
    write_operational_certificate,
)
from dmq.opcert import cold_verification_key, issue_opcert, verify_opcert

COLD_SEED = hashlib.blake2b(b"key file tests cold key", digest_size=32).digest()
KES_SEED = hashlib.blake2b(b"key file tests kes key", digest_size=32).digest()


@pytest.fixture(scope="module")
def devnet(conformance_dir):
    return conformance_dir / "cardano-devnet"


@pytest.fixture(scope="module")
def credentials(devnet) -> list[BulkCredential]:
    return read_bulk_credentials(devnet / "bulk-creds-k2.json")


@pytest.fixture(scope="module")
def kes_key() -> KesSigningKey:
    return KesSigningKey.generate(KES_SEED)


def test_bulk_credentials_are_the_genesis_pools(credentials, devnet):
    genesis = json.loads((devnet / "shelley-genesis.json").read_text())
    assert len(credentials) == 2
    assert sorted(c.pool_id.hex() for c in credentials) == sorted(genesis["staking"]["pools"])
    assert [c.pool_id.hex() for c in credentials] == [
        "1dc0a846ec816bdcc5288c0b57871a0400e86728ad0851132e43883f",
        "d3e16257b8c608ec4b2cb89621d7ddb60fc08839c1b491a598615fb5",
    ]
    assert credentials[0].cold_vk.hex().startswith("974aab23") and credentials[0].cold_vk.hex().endswith("57bb")
    assert credentials[1].cold_vk.hex().startswith("e41015ed") and credentials[1].cold_vk.hex().endswith("50bf")


def test_bulk_credentials_are_consistent(credentials):
    for credential in credentials:
        assert credential.kes_key.period == 0
        assert credential.kes_key.verification_key() == credential.opcert.hot_vk
        assert verify_opcert(credential.opcert, credential.cold_vk)
        assert (credential.opcert.issue_number, credential.opcert.start_kes_period) == (0, 0)
        assert len(credential.vrf_signing_key) == 64


def test_a_message_signed_with_devnet_credentials_verifies(credentials, devnet):
    max_evolutions = json.loads((devnet / "shelley-genesis.json").read_text())["maxKESEvolutions"]
    for credential, kes_period in zip(credentials, (7, max_evolutions - 1)):
        message = build_message(
            bytes(range(256)) * 2, kes_period, 1_800_000_000,
            credential.kes_key, credential.opcert, credential.cold_vk,
        )
        decoded = decode_message(message.raw)
        t = decoded.kes_period - decoded.opcert.start_kes_period
        assert decoded.has_valid_id()
        assert verify_opcert(decoded.opcert, decoded.cold_vk)
        assert kes_verify(decoded.opcert.hot_vk, t, decoded.signed_bytes, decoded.kes_signature)
        assert not kes_verify(decoded.opcert.hot_vk, t - 1, decoded.signed_bytes, decoded.kes_signature)
        assert decoded.pool_id == credential.pool_id


def test_kes_key_files_round_trip_in_the_cardano_cli_layout(tmp_path, kes_key):
    signing, verification = tmp_path / "kes.skey", tmp_path / "kes.vkey"
    write_kes_signing_key(signing, kes_key)
    write_kes_verification_key(verification, kes_key.verification_key())
    envelope = json.loads(signing.read_text())
    assert list(envelope) == ["type", "description", "cborHex"]
    assert envelope["type"] == "KesSigningKey_ed25519_kes_2^6"
    assert envelope["cborHex"] == "590260" + kes_key.to_bytes().hex()
    assert signing.read_text().endswith("}\n")
    assert stat.S_IMODE(signing.stat().st_mode) == 0o600
    assert json.loads(verification.read_text())["cborHex"] == "5820" + kes_key.verification_key().hex()
    loaded = read_kes_signing_key(signing)
    assert loaded.to_bytes() == kes_key.to_bytes() and loaded.period == 0
    assert read_kes_verification_key(verification) == kes_key.verification_key()


def test_an_evolved_kes_key_reads_back_at_its_period(tmp_path, kes_key):
    evolved = kes_key.copy()
    evolved.evolve_to(9)
    write_kes_signing_key(tmp_path / "kes.skey", evolved)
    loaded = read_kes_signing_key(tmp_path / "kes.skey", period=9)
    assert loaded.sign(b"m") == evolved.sign(b"m")


def test_opcert_and_counter_files_round_trip(tmp_path, kes_key):
    cold_vk = cold_verification_key(COLD_SEED)
    opcert = issue_opcert(COLD_SEED, kes_key.verification_key(), 3, 250)
    write_operational_certificate(tmp_path / "node.cert", opcert, cold_vk)
    cbor_hex = json.loads((tmp_path / "node.cert").read_text())["cborHex"]
    assert cbor_hex.startswith("82845820")
    assert read_operational_certificate(tmp_path / "node.cert") == (opcert, cold_vk)
    write_issue_counter(tmp_path / "cold.counter", IssueCounter(4, cold_vk))
    counter_file = json.loads((tmp_path / "cold.counter").read_text())
    assert counter_file["description"] == "Next certificate issue number: 4"
    assert counter_file["cborHex"] == "82045820" + cold_vk.hex()
    assert read_issue_counter(tmp_path / "cold.counter") == IssueCounter(4, cold_vk)


def test_devnet_opcert_envelope_is_read_like_a_file(tmp_path, devnet, credentials):
    triple = json.loads((devnet / "bulk-creds-k2.json").read_text())[0]
    (tmp_path / "node.cert").write_text(json.dumps(triple[0]))
    (tmp_path / "kes.skey").write_text(json.dumps(triple[2]))
    assert read_operational_certificate(tmp_path / "node.cert") == (credentials[0].opcert, credentials[0].cold_vk)
    assert read_kes_signing_key(tmp_path / "kes.skey").to_bytes() == credentials[0].kes_key.to_bytes()


def test_cold_key_files_are_read_by_pycardano(tmp_path):
    cold_vk = cold_verification_key(COLD_SEED)
    write_cold_signing_key(tmp_path / "cold.skey", COLD_SEED)
    write_cold_verification_key(tmp_path / "cold.vkey", cold_vk)
    signing = StakePoolSigningKey.load(str(tmp_path / "cold.skey"))
    verification = StakePoolVerificationKey.load(str(tmp_path / "cold.vkey"))
    assert signing.payload == COLD_SEED and signing.key_type == "StakePoolSigningKey_ed25519"
    assert verification.payload == cold_vk
    assert signing.to_verification_key().payload == cold_vk
    assert stat.S_IMODE((tmp_path / "cold.skey").stat().st_mode) == 0o600
    assert read_cold_signing_key(tmp_path / "cold.skey") == COLD_SEED
    assert read_cold_verification_key(tmp_path / "cold.vkey") == cold_vk


def test_cold_key_files_written_by_pycardano_are_read(tmp_path):
    key = StakePoolSigningKey(COLD_SEED)
    key.save(str(tmp_path / "cold.skey"))
    key.to_verification_key().save(str(tmp_path / "cold.vkey"))
    assert read_cold_signing_key(tmp_path / "cold.skey") == COLD_SEED
    assert read_cold_verification_key(tmp_path / "cold.vkey") == cold_verification_key(COLD_SEED)


def test_bulk_credentials_round_trip(tmp_path, credentials):
    write_bulk_credentials(tmp_path / "bulk.json", credentials)
    again = read_bulk_credentials(tmp_path / "bulk.json")
    assert [(c.opcert, c.cold_vk, c.vrf_signing_key, c.kes_key.to_bytes()) for c in again] == [
        (c.opcert, c.cold_vk, c.vrf_signing_key, c.kes_key.to_bytes()) for c in credentials
    ]


def _one_line_about(error: KeyFileError, path) -> str:
    text = str(error)
    assert "\n" not in text and text.startswith(str(path))
    return text


@pytest.mark.parametrize(
    "content, expected",
    [
        (None, "no such file"),
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a text envelope"),
        ('{"type": "KesSigningKey_ed25519_kes_2^6", "description": ""}', "no \"cborHex\""),
        ('{"type": "KesSigningKey_ed25519_kes_2^6", "description": "", "cborHex": "zz"}', "not hexadecimal"),
        ('{"type": "KesSigningKey_ed25519_kes_2^6", "description": "", "cborHex": "5820' + "00" * 32 + '"}',
         "expected 608 bytes"),
        ('{"type": "StakePoolSigningKey_ed25519", "description": "", "cborHex": "5820' + "00" * 32 + '"}',
         "expected a KesSigningKey_ed25519_kes_2^6 file"),
    ],
)
def test_errors_name_the_file_and_the_problem(tmp_path, content, expected):
    path = tmp_path / "kes.skey"
    if content is not None:
        path.write_text(content)
    with pytest.raises(KeyFileError) as caught:
        read_kes_signing_key(path)
    assert expected in _one_line_about(caught.value, path)


def test_cold_key_of_the_wrong_kind_is_refused(tmp_path, kes_key):
    write_kes_verification_key(tmp_path / "kes.vkey", kes_key.verification_key())
    with pytest.raises(KeyFileError) as caught:
        read_cold_verification_key(tmp_path / "kes.vkey")
    assert "StakePoolVerificationKey_ed25519" in _one_line_about(caught.value, tmp_path / "kes.vkey")


def test_bulk_file_errors_say_which_credential(tmp_path, devnet):
    document = json.loads((devnet / "bulk-creds-k2.json").read_text())
    document[1] = document[1][:2]
    (tmp_path / "bulk.json").write_text(json.dumps(document))
    with pytest.raises(KeyFileError, match=r"\(credential 1\): expected a list of 3 envelopes"):
        read_bulk_credentials(tmp_path / "bulk.json")
    document = json.loads((devnet / "bulk-creds-k2.json").read_text())
    document[0][1], document[0][2] = document[0][2], document[0][1]
    (tmp_path / "bulk.json").write_text(json.dumps(document))
    with pytest.raises(KeyFileError, match=r"\(credential 0\): expected a VrfSigningKey_PraosVRF"):
        read_bulk_credentials(tmp_path / "bulk.json")


def test_text_envelope_json_is_the_cardano_cli_shape():
    envelope = TextEnvelope("T", "D", b"\x01\x02")
    assert envelope.to_json() == '{\n    "type": "T",\n    "description": "D",\n    "cborHex": "0102"\n}\n'
    assert TextEnvelope.from_json(envelope.to_json(), "x") == envelope


def test_read_text_envelope_with_expected_type(tmp_path, kes_key):
    write_kes_verification_key(tmp_path / "kes.vkey", kes_key.verification_key())
    assert read_text_envelope(tmp_path / "kes.vkey").type == "KesVerificationKey_ed25519_kes_2^6"
    with pytest.raises(KeyFileError, match="expected a NodeOperationalCertificate file"):
        read_text_envelope(tmp_path / "kes.vkey", "NodeOperationalCertificate")
