"""Node-to-node diffusion as one service of the node: listener, governor, shared state.

Started by the node when its configuration names an IPv4 or IPv6 address (the reference
refuses to start without one). The configuration decides:

* ``DiffusionMode``: InitiatorAndResponder listens on ``PortNumber`` (0 picks a free port,
  see :attr:`Diffusion.port`) and offers duplex connections; InitiatorOnly does not listen
  and says so in the handshake, so its connections carry data one way only (docs/protocol/node-to-node.md 9.1).
* ``PeerSharing``: offered in the handshake; when agreed, protocol 13 runs.
* ``TargetNumberOfActivePeers`` / ``TargetNumberOfKnownPeers``: the governor's targets.
* ``AcceptedConnectionsLimit``: the inbound limits.

Everything connections share lives here once: the in-flight registry (one fetch per id
across all peers), the mempool source, the peer table behind the per-peer metrics.
It takes the parts it uses (ingress stage, mempool, tracer, metrics, recorder), never the
whole node, so the node may build on it without the two importing each other.
"""

from __future__ import annotations

import random
from types import MappingProxyType

import trio

from handshake.links import VersionTable, dmq_node_to_node_versions

from dmq.config import DiffusionMode, NodeConfig
from dmq.errors import OperatorError
from dmq.ingress import Ingress
from dmq.mempool import DurableMempool
from dmq.metrics import NodeMetrics
from dmq.recorder.recorder import NO_RECORDER, NullRecorder, TrafficRecorder
from dmq.topology import Topology
from dmq.trace import NodeListening, Tracer

from .governor import Address, Governor
from .inbound import InboundServer
from .mempool_source import MempoolSigSource
from .n2n_connection import N2NContext
from .outbound import OutboundGovernor
from .peers import PeerTable
from .policy import DiffusionPolicy
from .prometheus import PeerCollector
from .sig_submission import InFlightRegistry
from .transport import TCP, Transport

__all__ = ["Diffusion", "ListenError"]


class ListenError(OperatorError):
    """The node-to-node address cannot be bound."""


class Diffusion:
    """The node's node-to-node side. ``await nursery.start(Diffusion(...).run)`` returns it, bound."""

    def __init__(self, config: NodeConfig, topology: Topology | None, *, ingress: Ingress, mempool: DurableMempool,
                 tracer: Tracer, metrics: NodeMetrics, recorder: TrafficRecorder | NullRecorder = NO_RECORDER,
                 policy: DiffusionPolicy | None = None, transport: Transport = TCP) -> None:
        self.config = config
        #: The topology the governor follows (replaced by :meth:`update_topology`).
        self.topology = topology
        self.ingress = ingress
        self.mempool = mempool
        self.tracer = tracer
        self.metrics = metrics
        self.recorder = recorder
        self.policy = policy or DiffusionPolicy()
        #: How the node listens and dials (real TCP unless a simulated network supplies its own).
        self.transport = transport
        self.peers = PeerTable()
        self.registry = InFlightRegistry()
        self.source = MempoolSigSource(mempool)
        self.responder = self.config.diffusion_mode is DiffusionMode.INITIATOR_AND_RESPONDER
        #: Where the node listens, once bound (empty for InitiatorOnly).
        self.addresses: list[Address] = []
        self.governor: Governor | None = None
        self.inbound: InboundServer | None = None
        self.outbound: OutboundGovernor | None = None

    @property
    def port(self) -> int | None:
        """The bound node-to-node port (the real one when ``PortNumber`` is 0)."""
        return self.addresses[0][1] if self.addresses else None

    def versions(self, initiator_only: bool = False) -> VersionTable:
        """The version table this node proposes and serves (versions 1 and 2, unless the policy narrows it)."""
        table = dmq_node_to_node_versions(
            self.config.network_magic,
            initiator_only=initiator_only or not self.responder,
            peer_sharing=self.config.peer_sharing,
        )
        return MappingProxyType({v: data for v, data in table.items() if v in self.policy.versions})

    def update_topology(self, topology: Topology) -> None:
        """Adopt a new topology (as on a reload): new roots are dialled, removed ones wind down."""
        if self.governor is None or self.outbound is None:
            raise RuntimeError("diffusion is not running")
        self.topology = topology
        self.governor.set_topology(topology)
        self.outbound.poke()

    async def _bind(self) -> list[trio.abc.Listener[trio.abc.Stream]]:
        listeners: list[trio.abc.Listener[trio.abc.Stream]] = []
        port = self.config.port_number
        for address in (self.config.ipv4, self.config.ipv6):
            if address is None:
                continue
            try:
                bound = await self.transport.listen(str(address), port)
            except OSError as exc:
                for listener in listeners:
                    await listener.aclose()
                raise ListenError(f"node-to-node address {address} port {port}: cannot listen: "
                                  f"{exc.strerror or exc}") from None
            for listener, (host, bound_port) in bound:
                self.addresses.append((host, bound_port))
                port = bound_port  # with port 0, both families share the port the first got
                listeners.append(listener)
        return listeners

    def _own_addresses(self) -> set[Address]:
        own = set(self.addresses)
        for _, port in self.addresses:
            own.update({("127.0.0.1", port), ("::1", port), ("localhost", port)})
        return own

    async def run(self, *, task_status: trio.TaskStatus[Diffusion] = trio.TASK_STATUS_IGNORED) -> None:
        config = self.config
        listeners = await self._bind() if self.responder else []
        # One generator from the policy's seed for every random choice of diffusion (the governor's
        # jitter, keep-alive cookies): a seeded policy makes a node's behaviour repeatable.
        rng = random.Random(self.policy.seed)
        self.governor = Governor(
            self.topology,
            target_active=config.target_number_of_active_peers,
            target_known=config.target_number_of_known_peers,
            backoff=self.policy.backoff,
            rng=rng,
            own_addresses=self._own_addresses(),
        )
        self.outbound = OutboundGovernor(self.governor, self.peers, self.tracer, self.policy, self.versions,
                                         self.transport)
        ctx = N2NContext(
            ingress=self.ingress,
            mempool=self.mempool,
            registry=self.registry,
            source=self.source,
            peers_for=self.governor.shareable,
            peers_wanted=self.governor.peers_wanted,
            learn_peers=self.outbound.learn_peers,
            wait_peers_wanted=self.outbound.wait_peers_wanted,
            keep_alive_interval=self.policy.keep_alive_interval,
            blocking_reply_timeout=self.policy.blocking_reply_timeout,
            peer_share_interval=self.policy.peer_share_interval,
            protocol_idle_timeout=config.protocol_idle_timeout,
            rng=rng,
            hold_after_known=config.sig_submission_hold_after_known,
            hold_after_known_max=config.sig_submission_hold_after_known_max,
        )
        recorder = self.recorder
        ctx.watch = recorder.watching
        if isinstance(recorder, TrafficRecorder):
            ctx.record, ctx.now = recorder, self.tracer.now
        self.outbound.ctx = ctx
        self.inbound = InboundServer(ctx, self.peers, self.tracer, self.versions(),
                                     config.accepted_connections_limit, self.transport)
        collector = PeerCollector(self.peers, self.metrics.names, self.governor)
        registry = self.metrics.registry
        registry.register(collector)
        try:
            async with trio.open_nursery() as nursery:
                for host, port in self.addresses:
                    self.tracer.emit(NodeListening(self.tracer.now(), f"{host}:{port}", "n2n"))
                if listeners:
                    nursery.start_soon(self.inbound.serve, listeners)
                nursery.start_soon(self.outbound.run)
                task_status.started(self)
        finally:
            registry.unregister(collector)
            with trio.CancelScope(shield=True):
                for listener in listeners:
                    await listener.aclose()
