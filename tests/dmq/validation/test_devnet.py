"""The devnet end to end: its genesis as the stake view, its bulk credentials as the signers."""

from __future__ import annotations

import pytest

from dmq.clock import ManualClock
from dmq.codec import build_message, decode_message
from dmq.keyfiles import read_bulk_credentials
from dmq.stake import StakeView
from dmq.validation import KESAfterEndOCERT, Validator

from .support import never_known

NOW = 1_760_000_000.0


@pytest.fixture(scope="module")
def devnet(conformance_dir):
    folder = conformance_dir / "cardano-devnet"
    return folder / "shelley-genesis.json", read_bulk_credentials(folder / "bulk-creds-k2.json")


def test_devnet_credentials_are_the_genesis_pools(devnet):
    genesis_path, credentials = devnet
    view = StakeView.from_shelley_genesis(genesis_path, ManualClock(NOW))
    assert {c.pool_id for c in credentials} == set(view.pools)
    assert [c.pool_id.hex() for c in credentials] == [
        "1dc0a846ec816bdcc5288c0b57871a0400e86728ad0851132e43883f",
        "d3e16257b8c608ec4b2cb89621d7ddb60fc08839c1b491a598615fb5",
    ]
    assert len(view) == view.eligible_count == 2


@pytest.mark.parametrize("kes_period", [0, 17, 59])
def test_devnet_messages_validate_against_the_genesis(devnet, kes_period):
    genesis_path, credentials = devnet
    clock = ManualClock(NOW, 100.0)
    validator = Validator(StakeView.from_shelley_genesis(genesis_path, clock), clock)
    messages = [
        decode_message(build_message(c.pool_id * 4, kes_period, int(NOW) + 1799, c.kes_key, c.opcert, c.cold_vk).raw)
        for c in credentials
    ]
    outcomes = validator.process_batch(messages, never_known)
    assert [o.error for o in outcomes] == [None, None]


def test_devnet_max_kes_evolutions_is_60(devnet):
    genesis_path, credentials = devnet
    clock = ManualClock(NOW, 100.0)
    validator = Validator(StakeView.from_shelley_genesis(genesis_path, clock), clock)
    credential = credentials[0]
    msg = build_message(b"x" * 90, 60, int(NOW) + 60, credential.kes_key, credential.opcert, credential.cold_vk)
    assert validator.check(msg) == KESAfterEndOCERT(60, 60)
