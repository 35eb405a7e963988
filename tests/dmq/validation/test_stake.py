"""The stake view: readiness, eligibility, atomic updates, and its three loaders."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

import pytest

from dmq.clock import ManualClock
from dmq.errors import OperatorError
from dmq.opcert import pool_id_bech32
from dmq.stake import (
    Eligibility,
    PoolStake,
    Readiness,
    StakeFile,
    StakeFileError,
    StakeView,
    load_shelley_genesis,
    load_stake_file,
    parse_pool_id,
)

DEVNET_POOLS = {
    bytes.fromhex("1dc0a846ec816bdcc5288c0b57871a0400e86728ad0851132e43883f"),
    bytes.fromhex("d3e16257b8c608ec4b2cb89621d7ddb60fc08839c1b491a598615fb5"),
}
A = bytes.fromhex("d9899c574fd7a710732391706b59e878bfd416214c49d2b3841c5c8b")
B = bytes(range(28))


@pytest.fixture
def genesis_path(conformance_dir):
    return conformance_dir / "cardano-devnet" / "shelley-genesis.json"


# -- readiness and eligibility ----------------------------------------------------------------

def test_readiness_lifecycle_and_times():
    clock = ManualClock(now=1_700_000_000.0)
    view = StakeView(clock)
    assert view.readiness is Readiness.NOT_INITIALIZED and not view.ready
    assert (view.epoch, view.ready_since, view.updated_at, view.version) == (None, None, None, 0)
    assert view.eligibility(A) is Eligibility.NOT_INITIALIZED

    clock.advance(5)
    view.update({}, 400)                     # an empty first snapshot still makes the view Ready
    assert view.readiness is Readiness.READY
    assert (view.epoch, view.ready_since, view.updated_at, view.version) == (400, 1_700_000_005.0, 1_700_000_005.0, 1)
    assert view.eligibility(A) is Eligibility.UNRECOGNIZED

    clock.advance(5)
    view.update({A: PoolStake(0, 7, 0), B: PoolStake(9, 0, 9)}, 401)
    assert (view.epoch, view.ready_since, view.updated_at, view.version) == (401, 1_700_000_005.0, 1_700_000_010.0, 2)
    assert view.eligibility(A) is Eligibility.ELIGIBLE
    assert view.eligibility(B) is Eligibility.NOT_ELIGIBLE      # mark and go do not count
    assert view.stake_of(B) == PoolStake(9, 0, 9)
    assert (len(view), view.eligible_count) == (2, 1)


def test_update_replaces_the_snapshot_atomically():
    view = StakeView(ManualClock())
    view.update({A: PoolStake(1, 1, 1)}, 1)
    held = view.pools
    view.update({B: PoolStake(1, 1, 1)}, 2)
    assert dict(held) == {A: PoolStake(1, 1, 1)}       # a reader's snapshot is never mutated
    assert dict(view.pools) == {B: PoolStake(1, 1, 1)}
    assert view.eligibility(A) is Eligibility.UNRECOGNIZED
    with pytest.raises(TypeError):
        view.pools[A] = PoolStake(1, 1, 1)  # type: ignore[index]


def test_update_validates_its_input():
    view = StakeView(ManualClock())
    with pytest.raises(ValueError):
        view.update({b"short": PoolStake(1, 1, 1)}, 1)
    with pytest.raises(TypeError):
        view.update({A: 5}, 1)  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        PoolStake(1, -1, 1)
    assert view.version == 0 and not view.ready


# -- Shelley genesis --------------------------------------------------------------------------

def test_devnet_genesis(genesis_path):
    view = StakeView.from_shelley_genesis(genesis_path, ManualClock())
    assert view.ready and view.epoch == 0
    assert set(view.pools) == DEVNET_POOLS
    for pool_id in DEVNET_POOLS:
        assert view.eligibility(pool_id) is Eligibility.ELIGIBLE
        assert view.stake_of(pool_id) == PoolStake(999_500_000_000_000, 999_500_000_000_000, 999_500_000_000_000)
    assert (view.max_kes_evolutions, view.slots_per_kes_period) == (60, 129_600)
    genesis = view.genesis
    assert (genesis.network_magic, genesis.epoch_length, genesis.slot_length) == (42, 432_000, 1.0)
    assert genesis.system_start == datetime(2022, 6, 16, 8, 4, 19, tzinfo=timezone.utc)
    assert genesis.file_hash == hashlib.blake2b(genesis_path.read_bytes(), digest_size=32).digest()


def test_genesis_without_its_stake_waits_for_the_first_query(genesis_path):
    view = StakeView.from_shelley_genesis(genesis_path, ManualClock(), with_genesis_stake=False)
    assert view.max_kes_evolutions == 60
    assert view.eligibility(next(iter(DEVNET_POOLS))) is Eligibility.NOT_INITIALIZED


def test_genesis_hash_check(genesis_path):
    good = hashlib.blake2b(genesis_path.read_bytes(), digest_size=32).hexdigest()
    assert load_shelley_genesis(genesis_path, good).max_kes_evolutions == 60
    with pytest.raises(StakeFileError) as info:
        load_shelley_genesis(genesis_path, "00" * 32)
    message = str(info.value)
    assert "\n" not in message and str(genesis_path) in message
    assert "genesis hash mismatch" in message and good in message
    assert isinstance(info.value, OperatorError)


def _genesis(tmp_path, funds, delegations, pools, **overrides):
    doc = {
        "networkMagic": 7, "systemStart": "2024-01-01T00:00:00Z", "epochLength": 500, "slotLength": 0.2,
        "slotsPerKESPeriod": 100, "maxKESEvolutions": 62, "initialFunds": funds,
        "staking": {"pools": {p: {} for p in pools}, "stake": delegations},
    }
    doc.update(overrides)
    path = tmp_path / "genesis.json"
    path.write_text(json.dumps(doc))
    return path


def test_genesis_stake_counts_only_base_addresses_with_a_stake_key(tmp_path):
    stake_key, other_key = bytes([1]) * 28, bytes([2]) * 28
    pay = bytes([9]) * 28
    funds = {
        ("00" + pay.hex() + stake_key.hex()): 10,     # key / key base address: counts
        ("10" + pay.hex() + stake_key.hex()): 20,     # script / key base address: counts
        ("20" + pay.hex() + stake_key.hex()): 40,     # key / script: the stake part is a script hash
        ("60" + pay.hex()): 80,                       # enterprise: no stake part
        ("00" + pay.hex() + other_key.hex()): 160,    # delegated to a pool the genesis does not register
    }
    path = _genesis(tmp_path, funds, {stake_key.hex(): A.hex(), other_key.hex(): "ab" * 28}, [A.hex(), B.hex()])
    genesis = load_shelley_genesis(path)
    assert dict(genesis.pools) == {A: PoolStake(30, 30, 30), B: PoolStake(0, 0, 0)}
    view = StakeView.from_shelley_genesis(path, ManualClock())
    assert view.eligibility(A) is Eligibility.ELIGIBLE
    assert view.eligibility(B) is Eligibility.NOT_ELIGIBLE     # registered, nothing delegated
    assert (view.slots_per_kes_period, view.genesis.slot_length) == (100, 0.2)


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"maxKESEvolutions": "62"}, "'maxKESEvolutions' must be a non-negative integer"),
        ({"systemStart": "yesterday"}, "'systemStart' is not an ISO 8601 time"),
        ({"slotsPerKESPeriod": 0}, "'slotsPerKESPeriod' must be positive"),
        ({"initialFunds": {"zz": 1}}, "is not a hex address"),
    ],
)
def test_genesis_errors_are_one_line(tmp_path, overrides, fragment):
    path = _genesis(tmp_path, {}, {}, [], **overrides)
    with pytest.raises(StakeFileError) as info:
        load_shelley_genesis(path)
    assert fragment in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_and_unparsable_files(tmp_path):
    with pytest.raises(StakeFileError, match="cannot read the file"):
        load_shelley_genesis(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(StakeFileError, match="invalid JSON"):
        StakeView.from_json(broken)


# -- plain stake file -------------------------------------------------------------------------

def test_stake_file(tmp_path):
    path = tmp_path / "stake.json"
    path.write_text(json.dumps({
        "epoch": 512,
        "maxKESEvolutions": 60,
        "pools": {A.hex(): {"mark": 1, "set": 0, "go": 3}, pool_id_bech32(B): 25},
    }))
    clock = ManualClock(now=1_750_000_000.0)
    view = StakeView.from_json(path, clock)
    assert (view.epoch, view.max_kes_evolutions, view.slots_per_kes_period) == (512, 60, 129_600)
    assert view.stake_of(A) == PoolStake(1, 0, 3) and view.eligibility(A) is Eligibility.NOT_ELIGIBLE
    assert view.stake_of(B) == PoolStake(25, 25, 25) and view.eligibility(B) is Eligibility.ELIGIBLE
    assert view.ready_since == 1_750_000_000.0


def test_views_of_one_parsed_stake_file_share_its_map_and_a_new_snapshot_replaces_only_their_own(tmp_path):
    path = tmp_path / "stake.json"
    path.write_text(json.dumps({"epoch": 7, "pools": {A.hex(): 5, B.hex(): 0}}))
    stake_file = load_stake_file(path)
    clock = ManualClock(now=10.0)
    first, second = StakeView.from_stake_file(stake_file, clock), StakeView.from_stake_file(stake_file, clock)
    assert first.pools is stake_file.pools and second.pools is stake_file.pools
    assert (first.epoch, first.readiness, first.eligibility(A), first.eligibility(B)) == (
        7, Readiness.READY, Eligibility.ELIGIBLE, Eligibility.NOT_ELIGIBLE)
    first.update({B: PoolStake(3, 3, 3)}, 8)
    assert first.eligibility(B) is Eligibility.ELIGIBLE and first.eligibility(A) is Eligibility.UNRECOGNIZED
    assert dict(second.pools) == dict(stake_file.pools) == {A: PoolStake(5, 5, 5), B: PoolStake(0, 0, 0)}
    # A StakeFile made by hand around a plain dict is checked and copied, as update does.
    by_hand = StakeFile(path="x", epoch=1, max_kes_evolutions=62, slots_per_kes_period=129_600, pools={A: 1})
    with pytest.raises(TypeError):
        StakeView.from_stake_file(by_hand)


def test_stake_file_defaults_to_mainnet_kes_parameters(tmp_path):
    path = tmp_path / "stake.json"
    path.write_text(json.dumps({"epoch": 1, "pools": {}}))
    stake_file = load_stake_file(path)
    assert (stake_file.max_kes_evolutions, stake_file.slots_per_kes_period, dict(stake_file.pools)) == (62, 129_600, {})


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        ({"pools": {}}, "missing key 'epoch'"),
        ({"epoch": 1}, "missing key 'pools'"),
        ({"epoch": -1, "pools": {}}, "'epoch' must be a non-negative integer"),
        ({"epoch": 1, "pools": {"abcd": 1}}, "2 bytes, a pool id is 28"),
        ({"epoch": 1, "pools": {"pool1xyz": 1}}, "pools:"),
        ({"epoch": 1, "pools": {A.hex(): -5}}, "stake must be non-negative"),
        ({"epoch": 1, "pools": {A.hex(): True}}, "expected an integer or {mark, set, go}"),
        ({"epoch": 1, "pools": {A.hex(): {"set": 1}}}, ".mark must be a non-negative integer"),
        ({"epoch": 1, "pools": {A.hex(): {"mark": 1, "set": 1, "go": 1, "live": 1}}}, "unknown keys ['live']"),
        ({"epoch": 1, "pools": {A.hex(): 1, pool_id_bech32(A): 2}}, "is listed twice"),
        ([1, 2], "the stake file must hold a JSON object, got an array"),
    ],
)
def test_stake_file_errors_name_file_and_problem(tmp_path, doc, fragment):
    path = tmp_path / "stake.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(StakeFileError) as info:
        StakeView.from_json(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and fragment in text and "\n" not in text


def test_parse_pool_id_forms():
    assert parse_pool_id(A.hex()) == A
    assert parse_pool_id(A.hex().upper()) == A
    assert parse_pool_id("pool1mxyec46067n3querj9cxkk0g0zlag93pf3ya9vuyr3wgkq2e6t7") == A
    for bad in ("", "zz", "00" * 29, "pool1mxyec46067n3querj9cxkk0g0zlag93pf3ya9vuyr3wgkq2e6t8"):
        with pytest.raises(ValueError):
            parse_pool_id(bad)
