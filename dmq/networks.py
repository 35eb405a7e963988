"""The named networks and their two magics (docs/protocol/handshake.md section 4.6), as the node's layer sees them.

A DMQ node speaks two network magics: the DMQ magic in its own handshakes (node-to-node and
node-to-client, so a Mithril client must propose the same one) and the Cardano magic on its
link to cardano-node. The table itself lives with the handshake, which is where magics are
compared; this module gives the configuration, the tools and the tests one place to import it
from, plus the lookups they need (which named network a magic belongs to, Mithril's rule for
deriving a DMQ magic).
"""

from __future__ import annotations

from handshake.magics import (
    CARDANO_MAINNET_MAGIC,
    DMQ_MAINNET_MAGIC,
    MAX_NETWORK_MAGIC,
    NETWORK_MAGICS,
    NetworkMagics,
    network_magics,
)

__all__ = [
    "NetworkMagics",
    "NETWORK_MAGICS",
    "MAINNET",
    "PREPROD",
    "PREVIEW",
    "DEVNET",
    "DMQ_MAINNET_MAGIC",
    "CARDANO_MAINNET_MAGIC",
    "MAX_NETWORK_MAGIC",
    "network_magics",
    "network_by_dmq_magic",
    "network_by_cardano_magic",
    "dmq_magic_of_cardano_magic",
]

MAINNET = NETWORK_MAGICS["mainnet"]
PREPROD = NETWORK_MAGICS["preprod"]
PREVIEW = NETWORK_MAGICS["preview"]
#: The Mithril end-to-end devnet (``mithril-test-lab/cardano-devnet``).
DEVNET = NETWORK_MAGICS["devnet"]

#: Mithril's convention for DMQ magics: Cardano magic + 2**31 (not in CIP-0137).
_DMQ_MAGIC_OFFSET = 2**31


def network_by_dmq_magic(magic: int) -> NetworkMagics | None:
    """The named network using this DMQ magic, or ``None`` for a private network."""
    return next((n for n in NETWORK_MAGICS.values() if n.dmq == magic), None)


def network_by_cardano_magic(magic: int) -> NetworkMagics | None:
    """The named network using this Cardano magic, or ``None`` for a private network."""
    return next((n for n in NETWORK_MAGICS.values() if n.cardano == magic), None)


def dmq_magic_of_cardano_magic(cardano_magic: int) -> int:
    """The DMQ magic Mithril derives for a Cardano network: the Cardano magic plus 2**31.

    Every named network follows the rule, mainnet included (0x2d964a09 + 2**31 = 0xad964a09).
    Magics are 32-bit, so a Cardano magic at or above 2**31 has no derived DMQ magic.
    """
    if not 0 <= cardano_magic < _DMQ_MAGIC_OFFSET:
        raise ValueError(f"Cardano magic {cardano_magic} has no derived DMQ magic (it must be below 2**31)")
    return cardano_magic + _DMQ_MAGIC_OFFSET
