"""The configuration flags of ``dmq-node``, shared with ``dmq doctor`` (docs/protocol/configuration.md section 11.1).

Both commands take the same flags, each overriding one configuration key; kept apart from
:mod:`dmq.cli.node` because that command hands ``--check`` over to :mod:`dmq.cli.doctor`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from dmq.config import DEFAULT_CONFIG_FILE, DEFAULT_TOPOLOGY_FILE, NodeConfig

__all__ = ["FLAG_KEYS", "add_node_flags", "add_running_flag"]

_DEFAULTS = NodeConfig()


@dataclass(frozen=True, slots=True)
class _Flag:
    """One command-line flag overriding one configuration key (``None``: hidden from help)."""

    names: tuple[str, ...]
    key: str
    metavar: str
    help: str | None
    default: Any = None


_FLAGS: tuple[_Flag, ...] = (
    _Flag(("--host-addr",), "IPv4", "IPv4", "IPv4 that the node will bind to"),
    _Flag(("--host-ipv6-addr",), "IPv6", "IPv6", "IPv6 that the node will bind to"),
    _Flag(("-p", "--port"), "PortNumber", "PORT_NUMBER", "Port number that the node will bind to",
          _DEFAULTS.port_number),
    _Flag(("--local-socket",), "LocalAddress", "FILENAME", "Unix socket for node-to-client communication",
          str(_DEFAULTS.local_address)),
    _Flag(("-c", "--configuration-file"), "ConfigFile", "FILENAME", "Configuration file for DMQ Node",
          DEFAULT_CONFIG_FILE),
    _Flag(("-t", "--topology-file"), "TopologyFile", "FILENAME", "Topology file for DMQ Node",
          DEFAULT_TOPOLOGY_FILE),
    _Flag(("--cardano-node-socket",), "CardanoNodeSocket", "FILENAME",
          "Used for local connections to Cardano node", str(_DEFAULTS.cardano_node_socket)),
    _Flag(("--cardano-network-magic",), "CardanoNetworkMagic", "CARDANO_NETWORK_MAGIC",
          "The network magic of cardano-node client for local connections", _DEFAULTS.cardano_network_magic),
    _Flag(("--dmq-network-magic",), "NetworkMagic", "DMQ_NETWORK_MAGIC", "The network magic of the dmq network",
          _DEFAULTS.network_magic),
    _Flag(("--min-sig-delay",), "MinSigDelay", "SECONDS", None),
    _Flag(("--stake-source",), "StakeSource", "SOURCE",
          '"cardano-node", "genesis" (pools of the Shelley genesis file) or a JSON stake file',
          str(_DEFAULTS.stake_source)),
    _Flag(("--database-path",), "DatabasePath", "DIR", "Directory of the message store",
          str(_DEFAULTS.database_path)),
    _Flag(("--record-traffic",), "RecordTraffic", "DIR", "Record traffic into DIR for the capacity report"),
    _Flag(("--prometheus-port",), "PrometheusPort", "PORT", "Serve Prometheus metrics on 127.0.0.1:PORT"),
    # Topic networks (docs/topics.md): not flags of the reference node, which carries raw bodies only.
    _Flag(("--topics",), "TopicsCarried", "NAMES",
          "Topics this node carries, comma-separated: raw, upsycle, blocklace, dmsg (default: raw)"),
    _Flag(("--topic-kes-key",), "TopicKesKey", "FILE", "The pool's kes.skey, to sign topic publications"),
    _Flag(("--topic-operational-certificate",), "TopicOperationalCertificate", "FILE",
          "The pool's node.cert, with --topic-kes-key"),
)


#: The configuration keys the flags are stored under (what ``load_config`` takes).
FLAG_KEYS = frozenset(flag.key for flag in _FLAGS)


def add_node_flags(parser: argparse.ArgumentParser) -> None:
    """The node's configuration flags, each stored under its configuration key (``dmq doctor`` too)."""
    for flag in _FLAGS:
        if flag.help is None:
            text = argparse.SUPPRESS
        elif flag.default is None:
            text = flag.help
        else:
            text = f"{flag.help} (default: {flag.default})"
        parser.add_argument(*flag.names, dest=flag.key, metavar=flag.metavar, help=text)


def add_running_flag(parser: argparse.ArgumentParser) -> None:
    """``--running`` of ``dmq-node --check`` and ``dmq doctor`` (:mod:`dmq.cli.running_node`)."""
    parser.add_argument("--running", action="store_true",
                        help="check the configuration of the node running on the configured local socket, "
                             "before a restart: its socket and the ports its process holds are its own")
