"""The address plan: every node an address from 198.18.0.0/15, the range RFC 2544 sets aside
for benchmarking, so no address a netlab node uses can be one of a real network's."""

from __future__ import annotations

import ipaddress

__all__ = ["NETWORK", "PREFIX_LENGTH", "MAX_NODES", "node_address"]

NETWORK = ipaddress.IPv4Network("198.18.0.0/15")
PREFIX_LENGTH = NETWORK.prefixlen
#: Far more than a machine runs; the bound keeps an address away from the range's last one.
MAX_NODES = 10_000


def node_address(index: int) -> str:
    """Node ``index`` (0-based) gets 198.18.0.<index+1> onwards; 198.18.0.0 is never used."""
    if not 0 <= index < MAX_NODES:
        raise ValueError(f"a netlab has nodes 0..{MAX_NODES - 1}, got {index}")
    return str(NETWORK.network_address + index + 1)
