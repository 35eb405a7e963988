"""The node runtime: wires configuration to the stake view, mempool, ingress and servers.

Start-up reads everything that can fail on an operator's input (genesis, stake file,
database directory, socket path) before serving anyone, so a mistake is one line and an
exit, never a half-started node. Then one nursery runs the mempool writer and expiry loop,
the local service and, when configured, metrics and node-to-node diffusion.
"""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import lmdb
import trio

from dmq.clock import Clock, SystemClock
from dmq.codec import decode_message
from dmq.config import NodeConfig, StakeSourceKind
from dmq.diffusion import Diffusion, DiffusionPolicy
from dmq.errors import OperatorError
from dmq.gc_tuning import tune_for_serving
from dmq.ingress import Ingress
from dmq.local_service import LocalService
from dmq.mempool import DurableMempool
from dmq.mempool.integrity import DamagedDatabase, check_readable
from dmq.metrics import NodeMetrics, serve_metrics
from dmq.recorder import node_label
from dmq.recorder.recorder import NO_RECORDER, NullRecorder, RecorderError, TrafficRecorder
from dmq.stake import StakeView
from dmq.topology import Topology
from dmq.trace import LogSink, MessageExpired, NodeStopped, StakeViewUpdated, Tracer
from dmq.validation import PoolState, ReactionPolicy, Validator

__all__ = ["Node", "run_node", "NodeStartError", "load_stake_view"]


class NodeStartError(OperatorError):
    """Something the node needs at start-up is missing or unusable."""


def load_stake_view(config: NodeConfig, clock: Clock) -> StakeView:
    """The stake view named by ``StakeSource``, with the KES limits of the Shelley genesis."""
    source = config.stake_source
    expected = config.shelley_genesis_hash.hex() if config.shelley_genesis_hash else None
    if source.kind is StakeSourceKind.GENESIS:
        return StakeView.from_shelley_genesis(config.shelley_genesis_file, clock, expected_hash=expected)
    if source.kind is StakeSourceKind.FILE:
        return StakeView.from_json(source.path, clock)
    # cardano-node: the genesis gives maxKESEvolutions; the stake map comes from the link.
    return StakeView.from_shelley_genesis(config.shelley_genesis_file, clock, expected_hash=expected,
                                          with_genesis_stake=False)


@dataclass
class Node:
    """One running DMQ network instance."""

    config: NodeConfig
    topology: Topology | None = None
    clock: Clock = field(default_factory=SystemClock)
    tracer: Tracer = field(default_factory=Tracer)
    #: Extra tasks started with the node (diffusion, the cardano-node link), each ``fn(node)``.
    services: list[Callable[["Node"], object]] = field(default_factory=list)
    #: Timings of node-to-node diffusion (started when the configuration names an IPv4 or IPv6 address).
    diffusion_policy: DiffusionPolicy = field(default_factory=DiffusionPolicy)

    def __post_init__(self) -> None:
        self.stake_view = load_stake_view(self.config, self.clock)
        endpoint = self.config.prometheus_endpoint
        self.metrics = NodeMetrics(self.config.trace_option_metrics_prefix, endpoint is not None and endpoint.no_suffix)
        self.tracer.add_sink(self.metrics)
        self.mempool: DurableMempool | None = None
        self.ingress: Ingress | None = None
        self.local_service: LocalService | None = None
        #: The topic service when the configuration carries an adapter (``topics.service``).
        self.topics = None
        self.metrics_port: int | None = None
        self.diffusion: Diffusion | None = None
        self.stake_link = None
        if self.config.stake_source.kind is StakeSourceKind.CARDANO_NODE:
            # The link lives in ``integrations`` (it needs the node's parts), hence the late import.
            from integrations.cardano_node import CardanoNodeLink

            link = self.stake_link = CardanoNodeLink.for_node(self)
            self.services.append(lambda _node: link.run())

    @property
    def stake_link_status(self):
        """The cardano-node link's :class:`~integrations.cardano_node.StakeLinkStatus`, if linked."""
        return None if self.stake_link is None else self.stake_link.status
        #: Connection code calls ``node.recorder.watching(peer, mux, link)``; a no-op when not recording.
        self.recorder: TrafficRecorder | NullRecorder = NO_RECORDER

    def _open_mempool(self) -> DurableMempool:
        path = Path(self.config.database_path)
        try:
            path.mkdir(parents=True, exist_ok=True)
            check_readable(path)
            # Stored messages are read back with the decoder that accepted them: with
            # LegacyMessageFormat on, acknowledged legacy messages survive a restart too.
            decode = partial(decode_message, allow_legacy=self.config.legacy_message_format)
            return DurableMempool(path, self.clock, decode=decode)
        except OSError as exc:
            raise NodeStartError(f"database {path}: {exc.strerror or exc}") from None
        except (DamagedDatabase, lmdb.Error) as exc:
            raise NodeStartError(f"database {path} is damaged, {exc}; move the directory aside and start again "
                                 "(peers resend every unexpired message)") from None

    def _open_recorder(self, mempool: DurableMempool) -> TrafficRecorder | NullRecorder:
        if self.config.record_traffic is None:
            return NO_RECORDER
        try:
            recorder = TrafficRecorder(self.config.record_traffic,
                                       node_label(socket.gethostname(), self.config.port_number), now=self.tracer.now)
        except RecorderError as exc:
            raise NodeStartError(str(exc)) from None
        recorder.bind_holdings(lambda: len(mempool), lambda: mempool.bytes_held)
        self.tracer.add_sink(recorder)
        return recorder

    def _build(self) -> None:
        mempool = self._open_mempool()
        self.mempool = mempool
        self.recorder = self._open_recorder(mempool)
        try:
            state = PoolState.restore(mempool.load_pool_state(), self.clock)
        except ValueError as exc:
            raise NodeStartError(f"database {self.config.database_path}: {exc}") from None
        reactions = ReactionPolicy(trace_timing_errors=self.config.trace_only_reactions)
        # Topic code lives in ``topics`` (it builds on the node's parts), hence the late imports.
        if self.config.has_topics:
            from topics.node_setup import topic_service_for
            from topics.raw import is_raw_message

            # On a topic network the per-pool token bucket replaces the spacing rule (docs/topics-design.md 2.1.4).
            validator = Validator(self.stake_view, self.clock, min_sig_delay=0, state=state)
            self.topics = topic_service_for(self.config, mempool, validator, self.tracer, clock=self.clock,
                                            stake_view=self.stake_view,
                                            allow_legacy=self.config.legacy_message_format, reactions=reactions)
            self.ingress = self.topics.ingress
            self.topics.bind_metrics(self.metrics.registry, self.config.trace_option_metrics_prefix)
            self.services.append(lambda _node: self.topics.run())
            self.local_service = LocalService(self.ingress, mempool, self.tracer, self.config.network_magic,
                                              recorder=self.recorder, topics=self.topics,
                                              notify_filter=is_raw_message,
                                              legacy_reject_text=self.config.legacy_reject_text)
        else:
            # Raw only (every Mithril network): nothing is classified, every message the
            # reference accepts is accepted, stored, relayed and notified (docs/topics-design.md 2.1).
            validator = Validator(self.stake_view, self.clock, min_sig_delay=self.config.min_sig_delay, state=state)
            self.ingress = Ingress(mempool, validator, self.tracer, allow_legacy=self.config.legacy_message_format,
                                   reactions=reactions)
            self.local_service = LocalService(self.ingress, mempool, self.tracer, self.config.network_magic,
                                              recorder=self.recorder,
                                              legacy_reject_text=self.config.legacy_reject_text)
        self.metrics.bind_mempool(lambda: len(mempool), lambda: mempool.bytes_held)
        self.metrics.bind_database(Path(self.config.database_path))
        signer = self.topics.publisher.signer if self.topics is not None else None
        if signer is not None:
            self.metrics.bind_kes(signer.kes_periods.current_kes_period, signer.credentials.opcert.start_kes_period,
                                  self.stake_view.max_kes_evolutions)
        now = self.tracer.now
        mempool.expiry_observers.append(
            lambda removed: [self.tracer.emit(MessageExpired(now(), e.message_id, e.size)) for e in removed])
        view = self.stake_view
        if view.ready:
            self.tracer.emit(StakeViewUpdated(now(), str(self.config.stake_source), view.epoch,
                                              len(view.pools), view.eligible_count))

    async def run(self, *, task_status: trio.TaskStatus["Node"] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; the database is closed on the way out."""
        self._build()
        assert self.mempool is not None and self.local_service is not None
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.mempool.run)
                if isinstance(self.recorder, TrafficRecorder):
                    await nursery.start(self.recorder.run)
                if self.config.ipv4 is not None or self.config.ipv6 is not None:
                    self.diffusion = await nursery.start(Diffusion(self, self.diffusion_policy).run)
                endpoint = self.config.prometheus_endpoint
                if endpoint is not None:
                    self.metrics_port = await nursery.start(serve_metrics, self.metrics, endpoint.port, endpoint.host)
                # The local socket is bound last: local clients (a round of Mithril signers) may use up
                # the descriptors as soon as it exists, and every other listener must be bound by then.
                # Its appearance also tells supervisors and tests that the whole node is up.
                await nursery.start(lambda task_status: self.local_service.serve_path(
                    self.config.local_address, mode=self.config.local_socket_mode, task_status=task_status))
                for service in self.services:
                    nursery.start_soon(service, self)
                task_status.started(self)
        finally:
            self.tracer.emit(NodeStopped(self.tracer.now(), "stopped"))
            self.recorder.close()
            self.mempool.close()


async def run_node(config: NodeConfig, topology: Topology | None) -> int:
    """The ``dmq-node`` entry point: run until interrupted or told to stop.

    SIGTERM (``systemctl stop``, ``docker stop``) stops the node the way the end of
    ``Node.run`` does: the mempool writer finishes the group it holds, the recorder flushes,
    a ``NodeStopped`` event is written, and the exit status is 0.
    """
    tune_for_serving()
    tracer = Tracer()
    tracer.add_sink(LogSink(sys.stdout, severities=config.trace_severities, backend=config.trace_stdout_backend))
    node = Node(config, topology, tracer=tracer)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_stop_on_sigterm, nursery.cancel_scope)
            await node.run()
            nursery.cancel_scope.cancel()
    except* OperatorError as group:
        # Out of the nursery's group, so the CLI prints it as one line (a damaged database, a busy socket).
        raise group.exceptions[0] from None
    return 0


async def _stop_on_sigterm(scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return
