"""Which DMQ network magic a client proposes on the node's local socket.

Mithril names its network (``mainnet``, ``preprod``, ``preview``, ``devnet``) and takes a
number only for ``private`` networks (``internal/mithril-dmq/src/model/network.rs``). The
magic in the handshake is the **DMQ** magic (docs/protocol/handshake.md 4.6), never the Cardano one: a node
refuses a client proposing the wrong one, and the refusal names both magics.
"""

from __future__ import annotations

from dmq.networks import MAX_NETWORK_MAGIC, NETWORK_MAGICS

__all__ = ["UnknownNetwork", "resolve_dmq_magic", "mithril_dmq_magic", "network_name_of"]


class UnknownNetwork(ValueError):
    """Neither a named network nor a usable magic number."""


def resolve_dmq_magic(network: str | int) -> int:
    """The DMQ magic for a network name or a magic given as a number (or its decimal text)."""
    if isinstance(network, int) and not isinstance(network, bool):
        magic = network
    else:
        name = str(network).strip().lower()
        if name in NETWORK_MAGICS:
            return NETWORK_MAGICS[name].dmq
        if not name.isdigit():
            known = ", ".join(NETWORK_MAGICS)
            raise UnknownNetwork(f"unknown network {network!r}: expected one of {known} or a magic number")
        magic = int(name)
    if not 0 <= magic <= MAX_NETWORK_MAGIC:
        raise UnknownNetwork(f"network magic {magic} outside 0..{MAX_NETWORK_MAGIC}")
    return magic


def mithril_dmq_magic(network: str, dmq_network_magic: int | str | None = None) -> int:
    """The DMQ magic a Mithril signer or aggregator proposes for its ``NETWORK`` and
    ``DMQ_NETWORK_MAGIC`` settings: a named network fixes it, ``private`` takes the number
    (``DmqNetwork::from_code`` in ``internal/mithril-dmq/src/model/network.rs``)."""
    if network.strip().lower() != "private":
        if network.strip().isdigit():
            raise UnknownNetwork(f"NETWORK {network!r}: Mithril expects a name; use private and DMQ_NETWORK_MAGIC")
        return resolve_dmq_magic(network)
    if dmq_network_magic is None or not str(dmq_network_magic).strip().isdigit():
        raise UnknownNetwork("NETWORK private needs DMQ_NETWORK_MAGIC, the magic of the DMQ network")
    return resolve_dmq_magic(int(str(dmq_network_magic).strip()))


def network_name_of(magic: int) -> str:
    """``devnet`` for 2147483690 and so on; ``private`` for any other magic (Mithril's word)."""
    for magics in NETWORK_MAGICS.values():
        if magics.dmq == magic:
            return magics.network
    return "private"
