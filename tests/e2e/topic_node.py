"""A ``dmq-node`` process on a topic network, signing with its own pool, and its peers.

The chain (a Shelley genesis that started a moment ago, so the KES period is 0, and a stake
file naming the pools) and the pool's ``kes.skey`` and ``node.cert`` are written into the
node's directory as an operator would; the pools are those of the Blocklace tests
(``tests.topics.blocklace.world``), with real Sum6KES keys. Clients reach the node over its
Unix socket (protocols 14, 15, 1000); :func:`n2n_port` is where a node-to-node peer dials it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.node_process import NodeProcess
from tests.topics.blocklace.world import Pool, pool
from tests.topics.e2e.network import write_chain, write_pool_files

__all__ = ["TOPIC_MAGIC", "STAKE_EPOCH", "ALL_ADAPTERS", "topic_node", "topic_nodes", "n2n_port", "stake_pools"]

TOPIC_MAGIC = 424242
#: The epoch of the stake file's snapshot (``write_chain``).
STAKE_EPOCH = 500
ALL_ADAPTERS = ["raw", "upsycle", "blocklace", "dmsg"]


def stake_pools(count: int = 4) -> list[Pool]:
    """The pools with stake on the network: pool 0 signs for the node, the others are clients'."""
    return [pool(i) for i in range(count)]


def topic_node(workdir: Path, *, carried: list[str] | None = None, signer: int | None = 0, pools: int = 4,
               **config: Any) -> NodeProcess:
    """A node (not started) carrying ``carried`` (default: every adapter), signing as pool
    ``signer``, with pools 0 .. ``pools`` - 1 holding stake."""
    workdir.mkdir(parents=True, exist_ok=True)
    stake, genesis = write_chain(workdir, stake_pools(pools), time.time())
    settings: dict[str, Any] = {
        "NetworkMagic": TOPIC_MAGIC,
        "StakeSource": stake.name,
        "ShelleyGenesisFile": genesis.name,
        "DatabasePath": "db",
        "LocalAddress": "dmq.socket",
        "TopicsCarried": ALL_ADAPTERS if carried is None else carried,
    }
    if signer is not None:
        kes, cert = write_pool_files(workdir / "pool", pool(signer))
        settings["TopicKesKey"] = str(kes.relative_to(workdir))
        settings["TopicOperationalCertificate"] = str(cert.relative_to(workdir))
    settings.update(config)
    # Generous: the node starts in about a second, far slower on a loaded machine.
    return NodeProcess(workdir, settings, start_timeout=60.0)


#: Budgets opened, for a test whose subject is not the pools' budgets (tests/topics/test_budgets.py)
#: but sends more blocks of a few pools within seconds than the defaults (8 per 25 s) admit.
OPEN_BUDGETS = {"TopicTokenBucket": {"Capacity": 100000, "RefillSeconds": 0.001}}


@pytest.fixture
def topic_nodes(tmp_path: Path) -> Iterator[Callable[..., NodeProcess]]:
    """``topic_nodes(name="node", **options)``: a started :func:`topic_node`; all killed at the end."""
    started: list[NodeProcess] = []

    def start(name: str = "node", **options: Any) -> NodeProcess:
        node = topic_node(tmp_path / name, **options)
        started.append(node)
        return node.start()

    try:
        yield start
    finally:
        for node in started:
            node.kill()


def n2n_port(node: NodeProcess, timeout: float = 10.0) -> int:
    """The node-to-node port the node listens on (its ``NodeListening`` trace line)."""
    deadline = time.monotonic() + timeout
    while True:
        node.check_running()
        for event in node.trace_events("NodeListening"):
            if event.get("link") == "n2n":
                return int(event["endpoint"].rsplit(":", 1)[1])
        if time.monotonic() > deadline:
            raise TimeoutError(f"no node-to-node listener in the log; {node.diagnostics()}")
        time.sleep(0.02)
