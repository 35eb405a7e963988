"""``dmq keys``: files cardano-cli and pycardano read, rotations nodes accept, pool ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pycardano import StakePoolSigningKey, StakePoolVerificationKey

from dmq.clock import ManualClock
from dmq.keyfiles import (
    read_issue_counter,
    read_kes_signing_key,
    read_kes_verification_key,
    read_operational_certificate,
)
from dmq.opcert import pool_id_bech32, verify_opcert
from dmq.stake import StakeView
from dmq.validation import Validator
from clients.keys import pool_identity
from clients.mithril import FixedKesPeriod, MessageBuilder, SigningCredentials, SigningError
from tests.clients.mithril.support import DEVNET_BULK_CREDENTIALS, DEVNET_POOL_IDS

from .conftest import run_dmq

NOW = 1_800_000_000.25  # a fraction past the second: floor(now) + 1800 is then below now + 1800


def _validates(pool_dir: Path, kes_period: int) -> None:
    """A message signed with the pool's current files passes every check of a node that knows the pool."""
    credentials = SigningCredentials.from_files(pool_dir / "kes.skey", pool_dir / "node.cert")
    clock = ManualClock(now=NOW)
    stake = pool_dir.parent / "stake.json"
    stake.write_text(json.dumps({"epoch": 1, "pools": {credentials.pool_id.hex(): 1_000_000}}))
    message = MessageBuilder(credentials, FixedKesPeriod(kes_period), clock).build(bytes(range(100)))
    assert Validator(StakeView.from_json(stake, clock), clock).check(message) is None


def test_generate_rotate_and_pool_id(tmp_path):
    done = run_dmq(["keys", "generate", "--out-dir", "pool", "--kes-period", "2"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    pool = tmp_path / "pool"
    assert sorted(p.name for p in pool.iterdir()) == sorted(
        ["cold.skey", "cold.vkey", "cold.counter", "kes.skey", "kes.vkey", "node.cert"])

    # pycardano reads the cold keys and agrees on the pool id the command printed.
    signing_key = StakePoolSigningKey.load(str(pool / "cold.skey"))
    verification_key = StakePoolVerificationKey.load(str(pool / "cold.vkey"))
    assert StakePoolVerificationKey.from_signing_key(signing_key).payload == verification_key.payload
    pool_id = verification_key.hash().payload
    assert f"pool id: {pool_id.hex()} {pool_id_bech32(pool_id)}" in done.stdout

    opcert, cold_vk = read_operational_certificate(pool / "node.cert")
    assert cold_vk == verification_key.payload and verify_opcert(opcert, cold_vk)
    assert (opcert.issue_number, opcert.start_kes_period) == (0, 2)
    first_kes_vk = read_kes_verification_key(pool / "kes.vkey")
    assert read_kes_signing_key(pool / "kes.skey").verification_key() == first_kes_vk == opcert.hot_vk
    assert read_issue_counter(pool / "cold.counter").next_issue_number == 1
    _validates(pool, 3)

    done = run_dmq(["keys", "rotate", "--dir", "pool", "--kes-period", "40"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "issue number 1, start KES period 40" in done.stdout
    rotated, _ = read_operational_certificate(pool / "node.cert")
    assert rotated.hot_vk == read_kes_verification_key(pool / "kes.vkey") != first_kes_vk
    assert verify_opcert(rotated, cold_vk) and read_issue_counter(pool / "cold.counter").next_issue_number == 2
    _validates(pool, 41)
    # The new key does not fit the replaced certificate: the rotation really moved the pool on.
    with pytest.raises(SigningError):
        SigningCredentials(read_kes_signing_key(pool / "kes.skey"), opcert, cold_vk)

    for name in ("cold.skey", "cold.vkey", "node.cert", "cold.counter"):
        identity = pool_identity(pool / name)
        assert (identity.hex, identity.bech32) == (pool_id.hex(), pool_id_bech32(pool_id))


def test_haskell_generated_devnet_files(tmp_path):
    """The cardano-cli envelopes of the devnet, as written by the Haskell tools, are read as they are."""
    triples = json.loads(DEVNET_BULK_CREDENTIALS.read_text())
    for index, (opcert_envelope, _vrf, kes_envelope) in enumerate(triples):
        (tmp_path / f"node{index}.cert").write_text(json.dumps(opcert_envelope))
        (tmp_path / f"kes{index}.skey").write_text(json.dumps(kes_envelope))
        opcert, cold_vk = read_operational_certificate(tmp_path / f"node{index}.cert")
        assert read_kes_signing_key(tmp_path / f"kes{index}.skey").verification_key() == opcert.hot_vk
    done = run_dmq(["keys", "pool-id", "node1.cert"], cwd=tmp_path)
    pool_id = bytes.fromhex(DEVNET_POOL_IDS[1])
    assert (done.returncode, done.stdout) == (0, f"{pool_id.hex()}\n{pool_id_bech32(pool_id)}\n")
