"""The node runtime: runs the parts a running node is made of, from start to orderly stop.

The parts (stake view, mempool, ingress stage, local service, recorder, topic service, the
cardano-node link) are chosen and built from the configuration by the composition root,
:mod:`dmq.cli.wiring`, which reads everything that can fail on an operator's input before
the node serves anyone. This module knows none of the packages that build on ``dmq``
(``topics``, ``apps``): it runs what it is given. One nursery runs the mempool
writer and expiry loop, the recorder, the local service and, when configured, metrics and
node-to-node diffusion, then the extra tasks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from dmq.clock import Clock, SystemClock
from dmq.config import NodeConfig
from dmq.diffusion import Diffusion, DiffusionPolicy, TcpTransport, Transport
from dmq.errors import OperatorError
from dmq.ingress import Ingress
from dmq.local_service import LocalService
from dmq.mempool import DurableMempool
from dmq.metrics import NodeMetrics, serve_metrics
from dmq.ports import busy_port_problem, host_port
from dmq.recorder.recorder import NO_RECORDER, NullRecorder, TrafficRecorder
from dmq.stake import StakeView
from dmq.topology import Topology
from dmq.trace import (
    LocalSocketUp,
    NodeStopped,
    PrometheusSimpleStart,
    ServerSocketUp,
    StakeViewUpdated,
    StartupConfiguration,
    StartupTopology,
    Tracer,
)

__all__ = ["Node", "NodeStartError", "StakeLink"]


class NodeStartError(OperatorError):
    """Something the node needs at start-up is missing or unusable."""


class StakeLink(Protocol):
    """A task keeping the node's stake view in step with a ledger; ``status`` says how it goes."""

    status: Any

    async def run(self) -> Any: ...


@dataclass(kw_only=True)
class Node:
    """One running DMQ network instance, made of parts built elsewhere (:mod:`dmq.cli.wiring`)."""

    config: NodeConfig
    stake_view: StakeView
    metrics: NodeMetrics
    mempool: DurableMempool
    #: The ingress stage every message passes (the topic service's when the instance carries topics).
    ingress: Ingress
    local_service: LocalService
    topology: Topology | None = None
    clock: Clock = field(default_factory=SystemClock)
    tracer: Tracer = field(default_factory=Tracer)
    #: Connection code calls ``node.recorder.watching(peer, mux, link)``; a no-op when not recording.
    recorder: TrafficRecorder | NullRecorder = NO_RECORDER
    #: Extra tasks run for the node's lifetime (the cardano-node link, the topic service), each ``fn()``.
    services: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    #: Timings of node-to-node diffusion (started when the configuration names an IPv4 or IPv6 address).
    diffusion_policy: DiffusionPolicy = field(default_factory=DiffusionPolicy)
    #: How diffusion listens and dials: TCP, unless a simulated network supplies in-memory links.
    transport: Transport = field(default_factory=TcpTransport)
    #: The link feeding ``stake_view`` when the stake comes from cardano-node (also among ``services``).
    stake_link: StakeLink | None = None
    #: The topic service when the configuration carries an adapter (``topics.service``).
    topics: Any = None

    def __post_init__(self) -> None:
        self.metrics_port: int | None = None
        self.diffusion: Diffusion | None = None

    @property
    def stake_link_status(self) -> Any:
        """The cardano-node link's status, if linked."""
        return None if self.stake_link is None else self.stake_link.status

    def _trace_startup(self) -> None:
        """``Startup.Configuration`` and ``Startup.Topology``: what this run is made of, in the log."""
        now = self.tracer.now()
        self.tracer.emit(StartupConfiguration(now, self.config.to_json()))
        if self.topology is not None:
            self.tracer.emit(StartupTopology(now, self.topology.to_json()))

    def _start_diffusion(self) -> Diffusion:
        return Diffusion(self.config, self.topology, ingress=self.ingress, mempool=self.mempool, tracer=self.tracer,
                         metrics=self.metrics, recorder=self.recorder, policy=self.diffusion_policy,
                         transport=self.transport)

    async def run(self, *, task_status: trio.TaskStatus["Node"] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; the database is closed on the way out."""
        self._trace_startup()
        view = self.stake_view
        if view.ready:
            self.tracer.emit(StakeViewUpdated(self.tracer.now(), str(self.config.stake_source), view.epoch,
                                              len(view.pools), view.eligible_count))
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.mempool.run)
                if isinstance(self.recorder, TrafficRecorder):
                    await nursery.start(self.recorder.run)
                if self.config.ipv4 is not None or self.config.ipv6 is not None:
                    self.diffusion = await nursery.start(self._start_diffusion().run)
                    for host, port in self.diffusion.addresses:
                        self.tracer.emit(ServerSocketUp(self.tracer.now(), host_port(host, port)))
                endpoint = self.config.prometheus_endpoint
                if endpoint is not None:
                    try:
                        self.metrics_port = await nursery.start(serve_metrics, self.metrics, endpoint.port,
                                                                endpoint.host)
                    except OSError as exc:
                        raise NodeStartError(busy_port_problem("Prometheus port", endpoint.host, endpoint.port,
                                                               exc)) from None
                    self.tracer.emit(PrometheusSimpleStart(self.tracer.now(), endpoint.host, self.metrics_port))
                # The local socket is bound last: local clients (a round of Mithril signers) may use up
                # the descriptors as soon as it exists, and every other listener must be bound by then.
                # Its appearance also tells supervisors and tests that the whole node is up.
                await nursery.start(lambda task_status: self.local_service.serve_path(
                    self.config.local_address, mode=self.config.local_socket_mode, task_status=task_status))
                self.tracer.emit(LocalSocketUp(self.tracer.now(), str(self.config.local_address)))
                for service in self.services:
                    nursery.start_soon(service)
                task_status.started(self)
        finally:
            self.tracer.emit(NodeStopped(self.tracer.now(), "stopped"))
            self.recorder.close()
            self.mempool.close()
