"""Which mini-protocol instances run on a node-to-node connection, as data (docs/protocol/mux.md 2.2, 2.4, 2.5, docs/protocol/node-to-node.md 9.1).

What a connection carries depends on three facts only: who opened it, whether the agreed
mode is duplex (InitiatorAndResponder on both sides), and whether peer sharing was agreed
(which the handshake grants only on duplex connections). The side that opened the
connection runs the initiator instances, the side that accepted it the responder
instances; on a duplex connection each side runs both, so both can pull and serve over
one TCP connection. Sig submission (11) and keep-alive (12) run on every connection,
peer sharing (13) only when agreed: an SDU for an unregistered protocol is fatal
(``UnknownMiniProtocol``), so registering 13 without agreement would be wrong both ways.

Which *job* an instance of 11 does (pull or serve) is not decided here: it depends on the
version (``Dialect.side_of``), V1 and V2 having opposite directions of flow.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType

from miniprotocols import keep_alive, peer_sharing
from miniprotocols.sig_submission import INGRESS_LIMIT as SIG_SUBMISSION_INGRESS_LIMIT
from miniprotocols.sig_submission import PROTOCOL_NUM as SIG_SUBMISSION
from ouroboros_mux.mux import Mode

__all__ = ["Protocol", "Instance", "INGRESS_LIMITS", "connection_plan"]


class Protocol(enum.IntEnum):
    """The node-to-node mini-protocols after the handshake."""

    SIG_SUBMISSION = SIG_SUBMISSION
    KEEP_ALIVE = keep_alive.PROTOCOL_NUM
    PEER_SHARING = peer_sharing.PROTOCOL_NUM


#: Mux ingress limits per protocol on node-to-node links (docs/protocol/mux.md 2.4).
INGRESS_LIMITS = MappingProxyType({
    Protocol.SIG_SUBMISSION: SIG_SUBMISSION_INGRESS_LIMIT,  # 101 640
    Protocol.KEEP_ALIVE: keep_alive.INGRESS_LIMIT,          # 1 408
    Protocol.PEER_SHARING: peer_sharing.INGRESS_LIMIT,      # 5 760
})


@dataclass(frozen=True, slots=True)
class Instance:
    """One mini-protocol instance to register on the connection's mux."""

    protocol: Protocol
    mode: Mode

    @property
    def ingress_limit(self) -> int:
        return INGRESS_LIMITS[self.protocol]

    @property
    def initiator(self) -> bool:
        return self.mode is Mode.INITIATOR

    @property
    def on_demand(self) -> bool:
        """Responder instances start when the peer's first message arrives (``StartOnDemand``)."""
        return self.mode is Mode.RESPONDER

    @property
    def name(self) -> str:
        return f"{self.protocol.name.lower().replace('_', '-')}/{self.mode.value}"


def _modes(we_opened: bool, duplex: bool) -> tuple[Mode, ...]:
    if duplex:
        return (Mode.INITIATOR, Mode.RESPONDER)
    return (Mode.INITIATOR,) if we_opened else (Mode.RESPONDER,)


def connection_plan(*, we_opened: bool, duplex: bool, peer_sharing: bool) -> tuple[Instance, ...]:
    """The instances to register, given who opened the connection and what the handshake agreed."""
    if peer_sharing and not duplex:
        raise ValueError("peer sharing is only ever agreed on a duplex connection")
    protocols = [Protocol.SIG_SUBMISSION, Protocol.KEEP_ALIVE]
    if peer_sharing:
        protocols.append(Protocol.PEER_SHARING)
    modes = _modes(we_opened, duplex)
    return tuple(Instance(protocol, mode) for protocol in protocols for mode in modes)
