"""Network magics: the number both sides of a handshake must agree on.

A DMQ network and the Cardano network it serves have different magics (the Mithril
convention is DMQ magic = Cardano magic + 2**31), and mixing them up is the classic
operator mistake: the N2C socket speaks the DMQ magic, only the link to cardano-node
speaks the Cardano one. Keeping both in one table makes that pairing explicit.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

__all__ = ["NetworkMagics", "NETWORK_MAGICS", "DMQ_MAINNET_MAGIC", "CARDANO_MAINNET_MAGIC",
           "MAX_NETWORK_MAGIC", "network_magics"]

#: Magics are 32-bit unsigned on the wire (``networkMagic: uint .le 4294967295``).
MAX_NETWORK_MAGIC = 0xFFFF_FFFF


@dataclass(frozen=True)
class NetworkMagics:
    """The pair of magics belonging to one named network."""

    network: str
    dmq: int
    cardano: int


#: docs/protocol/handshake.md 4.6. ``devnet`` is the Mithril end-to-end devnet.
NETWORK_MAGICS: Mapping[str, NetworkMagics] = MappingProxyType({
    m.network: m
    for m in (
        NetworkMagics("mainnet", dmq=2_912_307_721, cardano=764_824_073),
        NetworkMagics("preprod", dmq=2_147_483_649, cardano=1),
        NetworkMagics("preview", dmq=2_147_483_650, cardano=2),
        NetworkMagics("devnet", dmq=2_147_483_690, cardano=42),
    )
})

DMQ_MAINNET_MAGIC = NETWORK_MAGICS["mainnet"].dmq
CARDANO_MAINNET_MAGIC = NETWORK_MAGICS["mainnet"].cardano


def network_magics(network: str) -> NetworkMagics:
    """The magics of a named network; the error lists the names that exist."""
    try:
        return NETWORK_MAGICS[network]
    except KeyError:
        known = ", ".join(NETWORK_MAGICS)
        raise KeyError(f"unknown network {network!r}: expected one of {known}") from None
