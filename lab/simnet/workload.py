"""The simulated network's pools and what they publish: netlab's workload, held in memory.

The same shape as ``dmq netlab``'s (:mod:`lab.netlab`): every pool signs one
message per ``period`` and submits it to its home node (pool ``i`` lives on node
``i % nodes``), pool ``k`` of ``P`` first ``k/P`` of a period in, so the load is steady; the
body is the devnet's probe (it carries the send time) and the stake is the devnet
genesis's log-uniform spread (:func:`lab.devnet.genesis.pool_stakes`). With 3,000
pools and a 120 s period that is 1,500 messages a minute, mainnet's signer count
(docs/capacity/model.md).

What differs is only where the keys live: a few thousand pools written as cardano-cli files
would take minutes, so the keys are derived in memory from the devnet's seeds
(:func:`lab.devnet.pools.derive_seed`) and a pool signs with
:class:`dmq.signer.MessageBuilder` directly, without a local socket.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dmq.clock import Clock
from dmq.kes import KesSigningKey
from dmq.kes_period import FixedKesPeriod
from dmq.message import DmqMessage
from dmq.opcert import cold_verification_key, issue_opcert, pool_id_of
from dmq.signer import MessageBuilder, SigningCredentials
from lab.devnet.genesis import GenesisParameters, pool_stakes
from lab.devnet.pools import derive_seed
from lab.devnet.probe import DEFAULT_BODY_SIZE, Probe, probe_body

__all__ = ["SimPool", "make_pools", "write_stake_file", "schedule"]


@dataclass(frozen=True, slots=True)
class SimPool:
    index: int
    credentials: SigningCredentials

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.credentials.cold_vk)

    def builder(self, clock: Clock) -> MessageBuilder:
        return MessageBuilder(self.credentials, FixedKesPeriod(0), clock)

    def sign(self, builder: MessageBuilder, sequence: int, sent_at: float,
             body_size: int = DEFAULT_BODY_SIZE) -> DmqMessage:
        return builder.build(probe_body(Probe(self.index, sequence, sent_at), body_size))


def make_pools(count: int, seed: int) -> list[SimPool]:
    """``count`` pools whose keys follow from ``seed`` (about 6 ms each: one Sum6KES key)."""
    pools = []
    for index in range(count):
        cold = derive_seed(seed, index, "cold")
        kes = KesSigningKey.generate(derive_seed(seed, index, "kes"))
        opcert = issue_opcert(cold, kes.verification_key(), 0, 0)
        pools.append(SimPool(index, SigningCredentials(kes, opcert, cold_verification_key(cold))))
    return pools


def write_stake_file(path: Path, pools: list[SimPool], seed: int) -> Path:
    """The pools' stake (the devnet genesis's spread) as a plain stake file every node reads."""
    parameters = GenesisParameters()
    stakes = pool_stakes(pools, seed=seed, parameters=parameters)
    document = {
        "epoch": 0,
        "maxKESEvolutions": parameters.max_kes_evolutions,
        "slotsPerKESPeriod": parameters.slots_per_kes_period,
        "pools": {pool.pool_id.hex(): stake for pool, stake in zip(pools, stakes)},
    }
    path.write_text(json.dumps(document))
    return path


def schedule(pools: int, period: float, duration: float) -> Iterator[tuple[float, int, int]]:
    """``(seconds from the start, pool index, sequence)`` of every publication, in time order."""
    heap = [(period * k / pools, k, 0) for k in range(pools)]
    heapq.heapify(heap)
    while heap:
        at, pool, sequence = heapq.heappop(heap)
        if at >= duration:
            continue
        yield at, pool, sequence
        heapq.heappush(heap, (at + period, pool, sequence + 1))
