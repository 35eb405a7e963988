"""The three kinds of link that run a handshake, and their version tables.

A link fixes which version numbers exist (everything else a peer proposes is skipped
silently), which version-data shape they carry and the per-state limits. The numbers
are disjoint on purpose: DMQ N2C 4097 is 1 with bit 12 set, Cardano N2C V16..V23 are
16..23 with bit 15 set, so a Cardano client reaching a DMQ socket, or the reverse,
finds no common version and is told which ones exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .states import State
from .version_data import NodeToClientVersionData, NodeToNodeVersionData, VersionData

__all__ = [
    "VersionTable",
    "HandshakeLink",
    "DMQ_NODE_TO_NODE",
    "DMQ_NODE_TO_CLIENT",
    "DMQ_NODE_TO_CLIENT_TOPICS",
    "CARDANO_NODE_TO_CLIENT",
    "DMQ_N2N_V1",
    "DMQ_N2N_V2",
    "DMQ_N2C_V1",
    "DMQ_N2C_TOPICS_V1",
    "CARDANO_N2C_VERSIONS",
    "MAX_HANDSHAKE_MESSAGE",
    "HANDSHAKE_TIME_LIMIT",
    "QUERY_SHUTDOWN_DELAY",
    "dmq_node_to_node_versions",
    "dmq_node_to_client_versions",
    "cardano_node_to_client_versions",
]

#: Version number -> this side's data for it. Iteration order does not matter: the codec
#: always writes ascending keys.
VersionTable = Mapping[int, VersionData]

DMQ_N2N_V1 = 1
DMQ_N2N_V2 = 2
_N2C_BIT_DMQ = 1 << 12
DMQ_N2C_V1 = 1 | _N2C_BIT_DMQ
_N2C_BIT_TOPICS = 1 << 13
#: DMQ N2C version 1 with the topic extension (bit 13): protocols 14, 15 and 1000 (docs/topics-design.md 3.1, P).
DMQ_N2C_TOPICS_V1 = DMQ_N2C_V1 | _N2C_BIT_TOPICS
_N2C_BIT_CARDANO = 1 << 15
#: Cardano NodeToClientV_16 .. V_23.
CARDANO_N2C_VERSIONS = tuple(v | _N2C_BIT_CARDANO for v in range(16, 24))

#: One TCP initial window (4 segments of 1440 bytes): every handshake message must fit.
MAX_HANDSHAKE_MESSAGE = 4 * 1440
#: ``shortWait``: per-state limit on node-to-node links.
HANDSHAKE_TIME_LIMIT = 10.0
#: After answering a query the server gives the client this long to read it and close.
QUERY_SHUTDOWN_DELAY = 20.0


@dataclass(frozen=True, eq=False)
class HandshakeLink:
    """Everything that differs between handshakes on different kinds of link.

    Links compare and hash by identity, as protocol specs do: each kind of link is one
    object, and :func:`handshake.spec.protocol_spec` keeps one spec per link.
    """

    name: str
    versions: frozenset[int]
    data_type: type
    #: Per-state time limits in seconds; None means wait for ever (local links).
    time_limits: Mapping[State, float | None]
    #: Per-state byte limits.
    size_limits: Mapping[State, int] = field(default_factory=lambda: MappingProxyType({
        State.PROPOSE: MAX_HANDSHAKE_MESSAGE, State.CONFIRM: MAX_HANDSHAKE_MESSAGE}))
    query_shutdown_delay: float = QUERY_SHUTDOWN_DELAY

    def knows(self, version: int) -> bool:
        return version in self.versions

    def decode_data(self, raw: bytes) -> VersionData:
        """Decode one version's raw data, raising :class:`~handshake.errors.VersionDataError`."""
        return self.data_type.from_cbor(raw)

    def check_table(self, table: VersionTable) -> None:
        """Reject a local table this link cannot speak: a configuration error, caught early."""
        if not table:
            raise ValueError(f"{self.name}: the version table is empty")
        for version, data in table.items():
            if not self.knows(version):
                raise ValueError(f"{self.name}: version {version} is not one of {sorted(self.versions)}")
            if not isinstance(data, self.data_type):
                raise ValueError(f"{self.name}: version {version} needs {self.data_type.__name__}, "
                                 f"got {type(data).__name__}")


def _both_states(limit: float | None) -> Mapping[State, float | None]:
    return MappingProxyType({State.PROPOSE: limit, State.CONFIRM: limit})


DMQ_NODE_TO_NODE = HandshakeLink(
    name="DMQ node-to-node",
    versions=frozenset({DMQ_N2N_V1, DMQ_N2N_V2}),
    data_type=NodeToNodeVersionData,
    time_limits=_both_states(HANDSHAKE_TIME_LIMIT),
)

DMQ_NODE_TO_CLIENT = HandshakeLink(
    name="DMQ node-to-client",
    versions=frozenset({DMQ_N2C_V1}),
    data_type=NodeToClientVersionData,
    time_limits=_both_states(None),
)

#: The local link of a node (or client) with topics: 4097 and 12289 (docs/topics-design.md 3.1). A node
#: without topics keeps :data:`DMQ_NODE_TO_CLIENT`, so 12289 is skipped as unknown exactly as
#: the reference skips it.
DMQ_NODE_TO_CLIENT_TOPICS = HandshakeLink(
    name="DMQ node-to-client",
    versions=frozenset({DMQ_N2C_V1, DMQ_N2C_TOPICS_V1}),
    data_type=NodeToClientVersionData,
    time_limits=_both_states(None),
)

CARDANO_NODE_TO_CLIENT = HandshakeLink(
    name="Cardano node-to-client",
    versions=frozenset(CARDANO_N2C_VERSIONS),
    data_type=NodeToClientVersionData,
    time_limits=_both_states(None),
)


def dmq_node_to_node_versions(network_magic: int, *, initiator_only: bool = False,
                              peer_sharing: bool = True, query: bool = False) -> VersionTable:
    """What the reference offers on N2N: versions 1 and 2 with the same data."""
    data = NodeToNodeVersionData(network_magic, initiator_only, peer_sharing, query)
    return MappingProxyType({DMQ_N2N_V1: data, DMQ_N2N_V2: data})


def dmq_node_to_client_versions(network_magic: int, *, query: bool = False, topics: bool = False) -> VersionTable:
    """What the reference serves (and a Mithril client proposes) on the local socket.

    ``topics``: also 12289, the same data, for an instance (or a client) with protocol 1000.
    A node without topics offers exactly the reference's table.
    """
    data = NodeToClientVersionData(network_magic, query)
    if topics:
        return MappingProxyType({DMQ_N2C_V1: data, DMQ_N2C_TOPICS_V1: data})
    return MappingProxyType({DMQ_N2C_V1: data})


def cardano_node_to_client_versions(network_magic: int, *, query: bool = False) -> VersionTable:
    """What the reference proposes to cardano-node: V16..V23 with the Cardano magic."""
    data = NodeToClientVersionData(network_magic, query)
    return MappingProxyType({v: data for v in CARDANO_N2C_VERSIONS})
