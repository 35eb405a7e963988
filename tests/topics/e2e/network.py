"""Topic nodes on real sockets: whole :class:`dmq.node.Node` instances of a topic network.

Each node carries the adapters a test names, signs its own publications with its pool's
``kes.skey`` and ``node.cert`` (written here as cardano-cli text envelopes, read back by the
node exactly as an operator's files are), and diffuses over real TCP on loopback; clients
reach it over its Unix socket with protocol 1000. The nodes share one manual wall clock
(expiry, KES period, gap and answer delays are under the test's control) while the network
runs in real time. Housekeeping runs every few hundred milliseconds instead of every few
seconds so that a test waits for the clock it advanced, not for a timer.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path

import pytest
import trio

import topics.service
from dmq.config import TopicBucket
from dmq.keyfiles import write_kes_signing_key, write_operational_certificate
from tests.dmq.diffusion.network import NOW, Network, RunningNode, local_roots, wait_until
from tests.topics.blocklace.world import Pool, pool

__all__ = ["TOPIC_MAGIC", "NOW", "TopicNetwork", "fast_housekeeping", "line", "running_line", "wait_until"]

TOPIC_MAGIC = 424242
#: A bucket that never holds a test back: rate limits have their own tests.
OPEN_BUCKET = TopicBucket(capacity=100_000, refill_seconds=0.001)


@pytest.fixture
def fast_housekeeping(monkeypatch):
    """Due publications every 50 ms and pruning (gap checks) every 100 ms."""
    monkeypatch.setattr(topics.service, "DUE_INTERVAL", 0.05)
    monkeypatch.setattr(topics.service, "PRUNE_INTERVAL", 0.1)


def write_chain(directory: Path, pools: list[Pool], now: float = NOW) -> tuple[Path, Path]:
    """A stake file naming ``pools`` and a Shelley genesis whose chain started just before
    ``now``, so the node's KES period is 0, the one the pools' certificates start at."""
    stake = directory / "stake.json"
    stake.write_text(json.dumps({"epoch": 500, "maxKESEvolutions": 62,
                                 "pools": {p.id.hex(): 1_000_000 for p in pools}}))
    genesis = directory / "shelley-genesis.json"
    start = datetime.fromtimestamp(now - 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    genesis.write_text(json.dumps({"systemStart": start, "slotLength": 1, "slotsPerKESPeriod": 129600,
                                   "networkMagic": 42, "epochLength": 432000, "maxKESEvolutions": 62}))
    return stake, genesis


def write_pool_files(directory: Path, signer: Pool) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    kes, cert = directory / "kes.skey", directory / "node.cert"
    write_kes_signing_key(kes, signer.kes)
    write_operational_certificate(cert, signer.opcert, signer.cold_vk)
    return kes, cert


class TopicNetwork:
    """Topic nodes named n0, n1, ... whose signer is pool i (``tests.topics.blocklace.world``)."""

    def __init__(self, nursery, directory: Path, carried: str, pools: int, **overrides) -> None:
        self.overrides = {"topic_token_bucket": OPEN_BUCKET, **overrides}
        self.nursery = nursery
        self.pools = [pool(i) for i in range(pools)]
        self.directory = directory
        stake, self.genesis = write_chain(directory, self.pools)
        self.net = Network(nursery, stake)
        self.clock = self.net.clock
        self.carried = carried

    async def start(self, index: int, *dial: RunningNode, port: int = 0) -> RunningNode:
        kes, cert = write_pool_files(self.directory / f"pool{index}", self.pools[index])
        return await self.net.start(
            f"n{index}", local_roots(*(d.port for d in dial)) if dial else None, port=port,
            config_overrides=self.overrides,
            NetworkMagic=str(TOPIC_MAGIC), TopicsCarried=self.carried, TopicKesKey=str(kes),
            TopicOperationalCertificate=str(cert), ShelleyGenesisFile=str(self.genesis))

    async def restart(self, node: RunningNode, *dial: RunningNode) -> RunningNode:
        """Stop ``node`` and start it again on its port with its database."""
        port, index = node.port, int(node.name[1:])
        await self.net.stop(node)
        return await self.start(index, *dial, port=port)


async def line(network: TopicNetwork, count: int) -> list[RunningNode]:
    """n0 - n1 - ... each node dialling the previous one; returns once every link is up."""
    nodes: list[RunningNode] = []
    for index in range(count):
        nodes.append(await network.start(index, *nodes[-1:]))
    await wait_until(lambda: all(_linked(n) for n in nodes[1:]), 10, what="every link of the line up")
    return nodes


def _linked(node: RunningNode) -> bool:
    from ouroboros_mux import Provenance

    return len(node.node.diffusion.peers.hot(Provenance.OUTBOUND)) >= 1


@asynccontextmanager
async def running_line(directory: Path, carried: str, count: int):
    """``(network, nodes)`` of a line of ``count`` nodes carrying ``carried``, stopped after."""
    async with trio.open_nursery() as nursery:
        network = TopicNetwork(nursery, directory, carried, count)
        yield network, await line(network, count)
        nursery.cancel_scope.cancel()
