"""Each namespaced node's files: configuration like a mainnet relay's, peers from public roots only.

Every node listens on the same port at its own address (as relays on separate hosts do). Its
topology file has no local roots: its peers are a few public roots (the next node, so that the
roots alone connect the network, and some drawn from the seed), and with ``PeerSharing`` on the
node learns the rest from them. The governor's targets are the reference relay defaults
(docs/protocol/configuration.md), so a node keeps up to 20 active peers when the network has them.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dmq.config import DEFAULT_MIN_SIG_DELAY
from dmq.networks import DEVNET
from lab.devnet.node_process import SOCKET_FILE, NodeFiles
from lab.devnet.orchestrator import node_name

from .addresses import node_address

__all__ = ["NODE_PORT", "METRICS_PORT", "RELAY_TARGETS", "NamespacedNodeFiles", "public_roots", "node_files",
           "min_sig_delay_for", "workload_problem"]

NODE_PORT = 3001
#: Each node serves its metrics on 127.0.0.1 of its own namespace (the reference's default
#: port); the run reaches it from inside that namespace (``Lab.open_tcp_stream``).
METRICS_PORT = 12798
#: The reference node's defaults, which mainnet relays run with.
RELAY_TARGETS = {
    "TargetNumberOfRootPeers": 60,
    "TargetNumberOfKnownPeers": 150,
    "TargetNumberOfEstablishedPeers": 30,
    "TargetNumberOfActivePeers": 20,
}


def min_sig_delay_for(period: float) -> float:
    """The nodes' ``MinSigDelay``: the reference's, or half a period when pools sign faster (a short run)."""
    return min(DEFAULT_MIN_SIG_DELAY, period / 2)


def workload_problem(pools: int, period: float, duration: float, kill_fraction: float,
                     partition_fraction: float) -> str | None:
    """What is wrong with a run's workload and faults (the real and the simulated network's), or None."""
    if pools < 1 or not period > 0 or not duration > 0:
        return "--pools, --period and --duration must be positive"
    for name, value in (("kill-fraction", kill_fraction), ("partition-fraction", partition_fraction)):
        if not 0 <= value < 1:
            return f"--{name} is a fraction in [0, 1), got {value}"
    return None


@dataclass(frozen=True, slots=True)
class NamespacedNodeFiles(NodeFiles):
    """A node's files, its command run through ``prefix`` (``ip netns exec <namespace>``)."""

    prefix: tuple[str, ...] = ()

    def command(self) -> list[str]:
        return [*self.prefix, *NodeFiles.command(self)]


def public_roots(nodes: int, index: int, count: int, seed: int) -> list[int]:
    """Node ``index``'s public roots: the next node (a ring: connected by itself) and
    ``count - 1`` others drawn from ``seed``."""
    if nodes < 2:
        return []
    roots = [(index + 1) % nodes]
    others = [other for other in range(nodes) if other not in (index, roots[0])]
    rng = random.Random(f"dmq-netlab-roots/{seed}/{index}")
    roots += rng.sample(others, min(len(others), max(0, count - 1)))
    return roots


def node_files(nodes: int, directory: Path, genesis: Path, *, roots: int, seed: int, min_sig_delay: float,
               prefixes: list[list[str]], record: Path | None = None,
               inbound_limit: dict[str, float] | None = None) -> list[NamespacedNodeFiles]:
    """``inbound_limit``: an ``AcceptedConnectionsLimit`` object for every node (None: the default)."""
    files = []
    for index in range(nodes):
        node_dir = directory / node_name(index)
        config: dict[str, Any] = {
            "NetworkMagic": DEVNET.dmq,
            "CardanoNetworkMagic": DEVNET.cardano,
            "IPv4": node_address(index),
            "PortNumber": NODE_PORT,
            "LocalAddress": SOCKET_FILE,
            "DatabasePath": "db",
            "StakeSource": "genesis",
            "ShelleyGenesisFile": os.path.relpath(genesis, node_dir),
            "MinSigDelay": min_sig_delay,
            "PeerSharing": True,
            "PrometheusPort": METRICS_PORT,
            **RELAY_TARGETS,
        }
        if inbound_limit is not None:
            config["AcceptedConnectionsLimit"] = inbound_limit
        if record is not None:
            config["RecordTraffic"] = os.path.relpath(record, node_dir)
        topology = {
            "localRoots": [],
            "publicRoots": [{
                "accessPoints": [{"address": node_address(other), "port": NODE_PORT}
                                 for other in public_roots(nodes, index, roots, seed)],
                "advertise": True,
            }],
            "useLedgerAfterSlot": -1,
        }
        files.append(NamespacedNodeFiles(node_name(index), node_dir, config, topology, tuple(prefixes[index])))
    return files
