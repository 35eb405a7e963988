"""A Shelley genesis that registers the devnet's pools and gives each of them stake.

The document has the shape of the Mithril devnet's genesis (``tests/data/cardano-devnet``):
network magic 42, the same protocol parameters and KES settings, and one ``staking.pools``
entry per pool. Stake is what the ledger derives from the genesis: each pool's initial funds
sit at a base address whose stake key ``staking.stake`` delegates to the pool, which is
exactly what :meth:`dmq.stake.StakeView.from_shelley_genesis` sums, so every pool is
eligible (non-zero *set* stake) on a node started with ``StakeSource: "genesis"``.

Stake amounts vary between pools (a deterministic spread over two orders of magnitude, as
real stake does) so that anything weighting by stake sees a realistic distribution. The same
amounts are also written as a plain stake file (:func:`dmq.stake.load_stake_file`), for a
node started with ``StakeSource: "<file>"`` instead of the genesis.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from .pools import DevnetPool

__all__ = ["GenesisParameters", "pool_stakes", "shelley_genesis", "write_shelley_genesis", "stake_file",
           "write_stake_file", "CARDANO_DEVNET_MAGIC"]

#: The Cardano magic of the Mithril devnet, whose DMQ magic is 2147483690 (docs/protocol/handshake.md 4.6).
CARDANO_DEVNET_MAGIC = 42
_LOVELACE_PER_ADA = 1_000_000


@dataclass(frozen=True, slots=True)
class GenesisParameters:
    """The chain settings a DMQ node reads from the genesis, with the devnet's values."""

    network_magic: int = CARDANO_DEVNET_MAGIC
    max_kes_evolutions: int = 60
    slots_per_kes_period: int = 129_600
    epoch_length: int = 432_000
    slot_length: float = 1
    #: Each pool's delegated funds are drawn log-uniformly between these (in ada).
    min_pool_stake_ada: int = 100_000
    max_pool_stake_ada: int = 10_000_000


def _iso(system_start: datetime) -> str:
    return system_start.astimezone(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pool_entry(pool: DevnetPool) -> dict[str, Any]:
    owner = pool.stake_key_hash.hex()
    return {
        "cost": 0,
        "margin": 0,
        "metadata": None,
        "owners": [owner],
        "pledge": 0,
        "publicKey": pool.pool_id.hex(),
        "relays": [],
        "rewardAccount": {"credential": {"key hash": owner}, "network": "Testnet"},
        "vrf": pool.vrf_key_hash.hex(),
    }


def pool_stakes(pools: Sequence[DevnetPool], *, seed: int = 0,
                parameters: GenesisParameters = GenesisParameters()) -> list[int]:
    """Each pool's delegated lovelace, in pool order (the same for the same seed)."""
    rng = random.Random(f"dmq-devnet-stake/{seed}")
    low, high = parameters.min_pool_stake_ada, parameters.max_pool_stake_ada
    return [round(low * (high / low) ** rng.random()) * _LOVELACE_PER_ADA for _ in pools]


def shelley_genesis(pools: Sequence[DevnetPool], system_start: datetime, *, seed: int = 0,
                    parameters: GenesisParameters = GenesisParameters()) -> dict[str, Any]:
    """The genesis document registering ``pools``, the chain starting at ``system_start``."""
    if not pools:
        raise ValueError("a devnet genesis registers at least one pool")
    stakes = pool_stakes(pools, seed=seed, parameters=parameters)
    funds = {pool.address.hex(): lovelace for pool, lovelace in zip(pools, stakes)}
    supply = sum(funds.values())
    return {
        "activeSlotsCoeff": 0.05,
        "epochLength": parameters.epoch_length,
        "genDelegs": {},
        "initialFunds": funds,
        "maxKESEvolutions": parameters.max_kes_evolutions,
        "maxLovelaceSupply": 2 * supply,
        "networkId": "Testnet",
        "networkMagic": parameters.network_magic,
        "protocolParams": {
            "a0": 0.3,
            "decentralisationParam": 0,
            "eMax": 18,
            "extraEntropy": {"tag": "NeutralNonce"},
            "keyDeposit": 400000,
            "maxBlockBodySize": 81920,
            "maxBlockHeaderSize": 1100,
            "maxTxSize": 16384,
            "minFeeA": 0,
            "minFeeB": 0,
            "minPoolCost": 0,
            "minUTxOValue": 0,
            "nOpt": max(50, len(pools)),
            "poolDeposit": 500000000,
            "protocolVersion": {"major": 5, "minor": 0},
            "rho": 0.0022,
            "tau": 0.05,
        },
        "securityParam": 2160,
        "slotLength": parameters.slot_length,
        "slotsPerKESPeriod": parameters.slots_per_kes_period,
        "staking": {
            "pools": {pool.pool_id.hex(): _pool_entry(pool) for pool in pools},
            "stake": {pool.stake_key_hash.hex(): pool.pool_id.hex() for pool in pools},
        },
        "systemStart": _iso(system_start),
        "updateQuorum": 5,
    }


def write_shelley_genesis(path: str | os.PathLike, pools: Sequence[DevnetPool], system_start: datetime, *,
                          seed: int = 0, parameters: GenesisParameters = GenesisParameters()) -> Path:
    """Write :func:`shelley_genesis` as ``path`` (two-space JSON, as cardano-cli writes it)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    document = shelley_genesis(pools, system_start, seed=seed, parameters=parameters)
    target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return target


def stake_file(pools: Sequence[DevnetPool], *, seed: int = 0,
               parameters: GenesisParameters = GenesisParameters()) -> dict[str, Any]:
    """The plain stake file of the same pools and stake as :func:`shelley_genesis` (epoch 0)."""
    stakes = pool_stakes(pools, seed=seed, parameters=parameters)
    return {
        "epoch": 0,
        "maxKESEvolutions": parameters.max_kes_evolutions,
        "slotsPerKESPeriod": parameters.slots_per_kes_period,
        "pools": {pool.pool_id_bech32: lovelace for pool, lovelace in zip(pools, stakes)},
    }


def write_stake_file(path: str | os.PathLike, pools: Sequence[DevnetPool], *, seed: int = 0,
                     parameters: GenesisParameters = GenesisParameters()) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    document = stake_file(pools, seed=seed, parameters=parameters)
    target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return target
