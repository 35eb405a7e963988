"""Devnet pools and genesis: real credentials, registered with stake, as the node reads them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from dmq.clock import ManualClock
from dmq.keyfiles import read_kes_signing_key, read_operational_certificate
from dmq.opcert import pool_id_from_bech32, verify_opcert
from dmq.stake import StakeView, load_shelley_genesis, load_stake_file
from dmq.validation.pipeline import Validator
from lab.devnet.genesis import pool_stakes, write_shelley_genesis, write_stake_file
from lab.devnet.pools import generate_pools
from lab.devnet.probe import Probe, probe_body
from clients.mithril import FixedKesPeriod, MessageBuilder, SigningCredentials

START = datetime(2027, 1, 15, 7, 0, 0, tzinfo=timezone.utc)
POOLS = 4


@pytest.fixture(scope="module")
def devnet(tmp_path_factory):
    root = tmp_path_factory.mktemp("devnet")
    pools = generate_pools(root / "pools", POOLS, seed=3)
    genesis = write_shelley_genesis(root / "shelley-genesis.json", pools, START, seed=3)
    stake = write_stake_file(root / "stake.json", pools, seed=3)
    return root, pools, genesis, stake


def test_pool_files_hold_a_certificate_of_the_cold_key_for_the_kes_key(devnet):
    _, pools, _, _ = devnet
    for pool in pools:
        opcert, cold_vk = read_operational_certificate(pool.paths.opcert)
        assert cold_vk == pool.cold_vk
        assert verify_opcert(opcert, cold_vk)
        assert (opcert.issue_number, opcert.start_kes_period) == (0, 0)
        assert read_kes_signing_key(pool.paths.kes_skey).verification_key() == opcert.hot_vk
        assert all(path.exists() for path in pool.paths.all())
        assert (pool.directory / "vrf.skey").exists() and (pool.directory / "vrf.vkey").exists()
    assert len({pool.pool_id for pool in pools}) == POOLS


def test_genesis_loads_with_the_nodes_loader_and_registers_every_pool_with_its_stake(devnet):
    _, pools, genesis_path, _ = devnet
    genesis = load_shelley_genesis(genesis_path)
    assert genesis.network_magic == 42
    assert genesis.system_start == START
    assert set(genesis.pools) == {pool.pool_id for pool in pools}
    stakes = pool_stakes(pools, seed=3)
    for pool, lovelace in zip(pools, stakes):
        assert genesis.pools[pool.pool_id].set == lovelace > 0
    view = StakeView.from_shelley_genesis(genesis_path, ManualClock(START.timestamp()))
    assert view.ready and view.eligible_count == POOLS


def test_stake_file_agrees_with_the_genesis(devnet):
    _, pools, genesis_path, stake_path = devnet
    genesis = load_shelley_genesis(genesis_path)
    stake = load_stake_file(stake_path)
    assert {pool_id: s.set for pool_id, s in stake.pools.items()} == \
        {pool_id: s.set for pool_id, s in genesis.pools.items()}
    assert (stake.max_kes_evolutions, stake.slots_per_kes_period) == \
        (genesis.max_kes_evolutions, genesis.slots_per_kes_period)
    assert {pool_id_from_bech32(pool.pool_id_bech32) for pool in pools} == set(stake.pools)


def test_the_same_seed_gives_the_same_pools_and_another_seed_others(tmp_path):
    first = generate_pools(tmp_path / "a", 2, seed=9)
    again = generate_pools(tmp_path / "b", 2, seed=9)
    other = generate_pools(tmp_path / "c", 2, seed=10)
    assert [p.pool_id for p in first] == [p.pool_id for p in again]
    assert {p.pool_id for p in first}.isdisjoint(p.pool_id for p in other)


def test_generating_over_existing_pools_is_refused(devnet):
    root, _, _, _ = devnet
    with pytest.raises(Exception, match="exist"):
        generate_pools(root / "pools", 1, seed=3)


def test_a_devnet_message_passes_the_nodes_validation_against_the_genesis_stake(devnet):
    _, pools, genesis_path, _ = devnet
    clock = ManualClock(START.timestamp() + 3600.25)  # Mithril: expiresAt = floor(now) + 1800 < now + 1800
    validator = Validator(StakeView.from_shelley_genesis(genesis_path, clock), clock, min_sig_delay=1)
    for pool in pools:
        builder = MessageBuilder(SigningCredentials.from_files(pool.paths.kes_skey, pool.paths.opcert),
                                 FixedKesPeriod(0), clock)
        message = builder.build(probe_body(Probe(pool.index, 0, clock.now())))
        assert validator.check(message) is None
