"""Node-to-node diffusion: sig submission (11), keep-alive (12) and peer sharing (13) with peers.

:class:`Diffusion` is the node's service (listener, outbound governor, shared in-flight
registry, per-peer metrics). The pieces are usable alone: :func:`connection_plan` (which
instances a connection runs), :func:`run_n2n_connection` (one agreed connection),
:class:`Governor` (the sans-IO peer selection), :class:`MempoolSigSource` (the mempool
as outbound peers serve it).
"""

from .events import InboundDelayed, InboundRefused, PeerBackoff, PeerDialFailed, PeerForgotten, PeersShared
from .governor import Address, Governor, KnownPeer, PeerSource, Verdict
from .inbound import InboundServer, soft_limit_delay
from .mempool_source import MempoolSigSource
from .n2n_connection import DIALECTS, N2NContext, run_n2n_connection
from .on_demand import OnDemandChannel, started_on_demand
from .outbound import OutboundGovernor
from .peers import PeerState, PeerStats, PeerTable
from .plan import INGRESS_LIMITS, Instance, Protocol, connection_plan
from .policy import BackoffPolicy, DiffusionPolicy
from .prometheus import PeerCollector
from .service import Diffusion, ListenError
from .transport import TcpTransport, Transport

__all__ = [
    "Diffusion",
    "DiffusionPolicy",
    "BackoffPolicy",
    "ListenError",
    "Governor",
    "KnownPeer",
    "PeerSource",
    "Verdict",
    "Address",
    "OutboundGovernor",
    "InboundServer",
    "soft_limit_delay",
    "N2NContext",
    "run_n2n_connection",
    "DIALECTS",
    "connection_plan",
    "Instance",
    "Protocol",
    "INGRESS_LIMITS",
    "MempoolSigSource",
    "OnDemandChannel",
    "started_on_demand",
    "PeerTable",
    "PeerStats",
    "PeerState",
    "PeerCollector",
    "PeerDialFailed",
    "PeerBackoff",
    "PeerForgotten",
    "PeersShared",
    "InboundRefused",
    "InboundDelayed",
    "Transport",
    "TcpTransport",
]
