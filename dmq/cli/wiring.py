"""Building a running node from its configuration: the composition root (docs/architecture.md).

Here, and only here, the configuration chooses the parts a node is made of: the stake source
(genesis, a stake file, or cardano-node through ``dmq.cardano_node``), the message
store, the recorder, the ingress stage (raw only, or the topic service of ``topics`` with its
raw classification), the local service and the extra tasks. :class:`dmq.node.Node` receives
them built and runs them; it imports none of the packages above ``dmq``.

Everything that can fail on an operator's input (genesis, stake file, database directory,
recording directory, topic signer files) is read here, before the node serves anyone, so a
mistake is one line and an exit, never a half-started node.
"""

from __future__ import annotations

import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import lmdb
import trio

from dmq.clock import Clock, SystemClock
from dmq.codec import decode_message
from dmq.config import NodeConfig, StakeSourceKind
from dmq.diffusion import DiffusionPolicy, TcpTransport, Transport
from dmq.descriptors import raise_descriptor_limit
from dmq.errors import OperatorError
from dmq.gc_tuning import tune_for_serving
from dmq.heap_trim import HeapTrimmer
from dmq.ingress import Ingress
from dmq.kes import kes_verify
from dmq.opcert import verify_opcert
from dmq.local_service import LocalService
from dmq.mempool import DurableMempool
from dmq.mempool.memory import DEFAULT_EXPIRY_INTERVAL, EXPIRY_MAX_SLEEP
from dmq.mempool.integrity import DamagedDatabase, check_readable
from dmq.message import DmqMessage
from dmq.metrics import NodeMetrics
from dmq.node import Node, NodeStartError
from dmq.recorder import node_label
from dmq.recorder.recorder import NO_RECORDER, NullRecorder, RecorderError, TrafficRecorder
from dmq.stake import StakeFile, StakeView, load_stake_file
from dmq.topology import Topology
from dmq.trace import LogSink, MessageExpired, Tracer
from dmq.validation import PoolState, ReactionPolicy, Validator
from dmq.validation.opcert_cache import OpcertVerifier
from dmq.validation.pipeline import KesVerifier
from dmq.cardano_node import CardanoNodeLink

__all__ = ["assemble_node", "run_node", "load_stake_view"]


def load_stake_view(config: NodeConfig, clock: Clock,
                    read_stake_file: Callable[[Path], StakeFile] = load_stake_file) -> StakeView:
    """The stake view named by ``StakeSource``, with the KES limits of the Shelley genesis; a stake
    file is read by ``read_stake_file`` (a simulated network reads each file once for every node)."""
    source = config.stake_source
    expected = config.shelley_genesis_hash.hex() if config.shelley_genesis_hash else None
    if source.kind is StakeSourceKind.GENESIS:
        return StakeView.from_shelley_genesis(config.shelley_genesis_file, clock, expected_hash=expected)
    if source.kind is StakeSourceKind.FILE:
        return StakeView.from_stake_file(read_stake_file(source.path), clock)
    # cardano-node: the genesis gives maxKESEvolutions; the stake map comes from the link.
    return StakeView.from_shelley_genesis(config.shelley_genesis_file, clock, expected_hash=expected,
                                          with_genesis_stake=False)


def _open_mempool(config: NodeConfig, clock: Clock, run_blocking: Callable[..., Awaitable[Any]] | None,
                  expiry_interval: float | None, expiry_max_sleep: float | None, sync: bool) -> DurableMempool:
    path = Path(config.database_path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        check_readable(path)
        # Stored messages are read back with the decoder that accepted them: with
        # LegacyMessageFormat on, acknowledged legacy messages survive a restart too.
        decode = partial(decode_message, allow_legacy=config.legacy_message_format)
        return DurableMempool(path, clock, decode=decode, run_blocking=run_blocking, sync=sync,
                              expiry_interval=expiry_interval or DEFAULT_EXPIRY_INTERVAL,
                              expiry_max_sleep=expiry_max_sleep or EXPIRY_MAX_SLEEP)
    except OSError as exc:
        raise NodeStartError(f"database {path}: {exc.strerror or exc}") from None
    except (DamagedDatabase, lmdb.Error) as exc:
        raise NodeStartError(f"database {path} is damaged, {exc}; move the directory aside and start again "
                             "(peers resend every unexpired message)") from None


def _open_recorder(config: NodeConfig, tracer: Tracer, mempool: DurableMempool) -> TrafficRecorder | NullRecorder:
    if config.record_traffic is None:
        return NO_RECORDER
    # The node's own address names it when it has one: nodes sharing a host name and a port
    # (netlab's namespaces, a simulated network) must not merge into one node in the recording.
    address = config.ipv4 or config.ipv6
    host = str(address) if address is not None and not address.is_unspecified else socket.gethostname()
    try:
        recorder = TrafficRecorder(config.record_traffic, node_label(host, config.port_number), now=tracer.now)
    except RecorderError as exc:
        raise NodeStartError(str(exc)) from None
    recorder.bind_holdings(lambda: len(mempool), lambda: mempool.bytes_held)
    tracer.add_sink(recorder)
    return recorder


def assemble_node(config: NodeConfig, topology: Topology | None = None, *, clock: Clock | None = None,
                  tracer: Tracer | None = None, diffusion_policy: DiffusionPolicy | None = None,
                  transport: Transport | None = None, run_blocking: Callable[..., Awaitable[Any]] | None = None,
                  kes_verifier: KesVerifier | None = None, opcert_verifier: OpcertVerifier | None = None,
                  expiry_interval: float | None = None,
                  expiry_max_sleep: float | None = None,
                  registration_verifier: Callable[..., Any] | None = None,
                  decode_received: Callable[[bytes, Callable[[bytes], DmqMessage]], DmqMessage] | None = None,
                  read_stake_file: Callable[[Path], StakeFile] | None = None,
                  store_sync: bool = True,
                  ) -> Node:
    """The node ``config`` describes, its parts built and bound, ready for ``Node.run``.

    ``transport``, ``run_blocking`` (how the mempool and the Mithril registration application
    run their blocking work), ``kes_verifier``, ``opcert_verifier`` (check 9's Ed25519 check,
    behind the node's own cache), ``expiry_interval`` and ``expiry_max_sleep`` (the shortest and
    longest sleep of the mempool's purge), ``registration_verifier`` (the application's
    ``verify_registration``) and ``decode_received`` (how a peer's message bytes are decoded,
    ``Ingress.decode_received``), ``read_stake_file`` (how a ``StakeSource`` file is read) and
    ``store_sync`` (whether a commit waits for fsync) are what a simulated network or a test on a
    jumping clock replaces (``lab.simnet``); a running node keeps the defaults: TCP, a worker
    thread, the Sum6KES and Ed25519 verifiers, a purge at each expiry, at least 50 ms and, while
    messages are held, at most 60 s apart, Mithril's checks, the ingress's own decode,
    :func:`dmq.stake.load_stake_file`, an fsync per commit.

    Raises :class:`~dmq.node.NodeStartError` (or another ``OperatorError``) on an operator's
    mistake; the message store is closed again then.
    """
    clock = clock if clock is not None else SystemClock()
    tracer = tracer if tracer is not None else Tracer()
    stake_view = load_stake_view(config, clock, read_stake_file or load_stake_file)
    endpoint = config.prometheus_endpoint
    metrics = NodeMetrics(config.trace_option_metrics_prefix, endpoint is not None and endpoint.no_suffix)
    tracer.add_sink(metrics)
    services = []
    stake_link = None
    if config.stake_source.kind is StakeSourceKind.CARDANO_NODE:
        stake_link = CardanoNodeLink.from_config(config, stake_view, tracer=tracer, clock=clock,
                                                 registry=metrics.registry)
        services.append(stake_link.run)
    mempool = _open_mempool(config, clock, run_blocking, expiry_interval, expiry_max_sleep, store_sync)
    kes_verifier = kes_verifier or kes_verify
    opcert_verifier = opcert_verifier or verify_opcert
    recorder: TrafficRecorder | NullRecorder = NO_RECORDER
    try:
        recorder = _open_recorder(config, tracer, mempool)
        try:
            state = PoolState.restore(mempool.load_pool_state(), clock)
        except ValueError as exc:
            raise NodeStartError(f"database {config.database_path}: {exc}") from None
        reactions = ReactionPolicy(trace_timing_errors=config.trace_only_reactions)
        topics = None
        if config.has_topics:
            # Imported only for a topic network: the signer's key files pull in pycardano, seconds
            # of start-up a raw-only node (every Mithril network) does not need.
            from topics.node_setup import topic_service_for
            from topics.raw import is_raw_message

            # On a topic network the per-pool token bucket replaces the spacing rule (docs/topics-design.md 2.1.4).
            validator = Validator(stake_view, clock, min_sig_delay=0, state=state, kes_verifier=kes_verifier,
                                  opcert_verifier=opcert_verifier)
            topics = topic_service_for(config, mempool, validator, tracer, clock=clock, stake_view=stake_view,
                                       allow_legacy=config.legacy_message_format, reactions=reactions)
            ingress = topics.ingress
            topics.bind_metrics(metrics.registry, config.trace_option_metrics_prefix)
            services.append(topics.run)
            local_service = LocalService(ingress, mempool, tracer, config.network_magic, recorder=recorder,
                                         topics=topics, notify_filter=is_raw_message,
                                         legacy_reject_text=config.legacy_reject_text,
                                         idle_timeout=config.local_idle_timeout)
        else:
            # Raw only (every Mithril network): nothing is classified, every message the
            # reference accepts is accepted, stored, relayed and notified (docs/topics-design.md 2.1).
            validator = Validator(stake_view, clock, min_sig_delay=config.min_sig_delay, state=state,
                                  kes_verifier=kes_verifier, opcert_verifier=opcert_verifier)
            ingress = Ingress(mempool, validator, tracer, allow_legacy=config.legacy_message_format,
                              reactions=reactions, decode_received=decode_received)
            local_service = LocalService(ingress, mempool, tracer, config.network_magic, recorder=recorder,
                                         legacy_reject_text=config.legacy_reject_text,
                                         idle_timeout=config.local_idle_timeout)
    except BaseException:
        recorder.close()
        mempool.close()
        raise
    metrics.bind_mempool(lambda: len(mempool), lambda: mempool.bytes_held)
    metrics.bind_database(Path(config.database_path))
    signer = topics.publisher.signer if topics is not None else None
    if signer is not None:
        metrics.bind_kes(signer.kes_periods.current_kes_period, signer.credentials.opcert.start_kes_period,
                         stake_view.max_kes_evolutions)
    if config.mithril_registration is not None:
        services.append(_mithril_registration(config, stake_view, tracer, clock, signer, run_blocking,
                                              registration_verifier).run)
    now = tracer.now
    mempool.expiry_observers.append(
        lambda removed: [tracer.emit(MessageExpired(now(), e.message_id, e.size)) for e in removed])
    return Node(config=config, topology=topology, clock=clock, tracer=tracer, stake_view=stake_view, metrics=metrics,
                mempool=mempool, ingress=ingress, local_service=local_service, recorder=recorder, services=services,
                diffusion_policy=diffusion_policy if diffusion_policy is not None else DiffusionPolicy(),
                stake_link=stake_link, topics=topics, transport=transport or TcpTransport())


def _mithril_registration(config: NodeConfig, stake_view: StakeView, tracer: Tracer, clock: Clock,
                          signer: Any, run_blocking: Callable[..., Awaitable[Any]] | None,
                          verifier: Callable[..., Any] | None) -> Any:
    """The Mithril registration application's node-side part (docs/mithril-registration.md 8)."""
    from apps.mithril_registration.node_side import RegistrationNode
    from dmq.kes_period import GenesisClockKesPeriod, KesPeriodUnavailable
    from dmq.stake import load_shelley_genesis

    settings = config.mithril_registration
    if "blocklace" not in config.topics_carried or config.shelley_genesis_file is None:
        raise NodeStartError("MithrilRegistration needs a topic network carrying blocklace (TopicsCarried) and a "
                             "ShelleyGenesisFile (the chain's epochs)")
    if config.stake_source.kind is StakeSourceKind.CARDANO_NODE:
        # The ledger's epoch, as the link last saw it (a chain with a Byron history has no
        # epoch a Shelley genesis and the clock can give).
        def current_epoch() -> int:
            if stake_view.epoch is None:
                raise ValueError("the Cardano node has not given the current epoch yet")
            return stake_view.epoch
    else:
        genesis = load_shelley_genesis(config.shelley_genesis_file)
        try:
            chain = GenesisClockKesPeriod.from_genesis(genesis, clock)
        except KesPeriodUnavailable as exc:
            raise NodeStartError(f"MithrilRegistration: {exc}") from None

        def current_epoch() -> int:
            return chain.current_slot() // genesis.epoch_length
    return RegistrationNode(topic=settings.topic, socket_path=str(config.local_address),
                            network_magic=config.network_magic, stake_view=stake_view, tracer=tracer,
                            current_epoch=current_epoch,
                            own_pool=None if signer is None else signer.pool_id, database=Path(config.database_path),
                            http_host=settings.http_host, http_port=settings.http_port,
                            **({} if verifier is None else {"verify": verifier}),
                            **({} if run_blocking is None else {"run_blocking": run_blocking}))


async def run_node(config: NodeConfig, topology: Topology | None) -> int:
    """The ``dmq-node`` entry point: run until interrupted or told to stop.

    SIGTERM (``systemctl stop``, ``docker stop``) stops the node the way the end of
    ``Node.run`` does: the mempool writer finishes the group it holds, the recorder flushes,
    a ``NodeStopped`` event is written, and the exit status is 0.
    """
    tune_for_serving()
    tracer = Tracer()
    tracer.add_sink(LogSink(sys.stdout, severities=config.trace_severities, backend=config.trace_stdout_backend))
    # Every connection holds a descriptor: run with the hard nofile limit, and say which.
    tracer.emit(raise_descriptor_limit(tracer.now()))
    node = assemble_node(config, topology, tracer=tracer)
    # A process-wide concern, so here and not in assemble_node (a simulation holds many nodes).
    heap = HeapTrimmer()
    node.metrics.bind_heap_trims(lambda: heap.trims)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_stop_on_sigterm, nursery.cancel_scope)
            nursery.start_soon(heap.run)
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
