"""One netlab run, in order, always ending with every namespace removed.

1. the privileges are checked (one line and the loopback alternative if they are missing), the
   namespaces of earlier crashed runs are removed, the directory is prepared;
2. the devnet's pools, genesis (skewed stake) and stake file are generated;
3. the namespaces, veth pairs and bridge are built, each node's files written and the nodes
   started inside their namespaces; the run waits until every node has a TCP connection;
4. one aggregator per node connects through the node's local socket (Unix sockets live on the
   shared filesystem, so publishers and aggregators run here, in the root namespace), the pools
   publish to their home nodes, and the faults happen on schedule;
5. in-flight messages get a bounded time to arrive, the nodes are stopped, the namespaces
   removed, and the report printed and written.

SIGINT, SIGTERM and SIGHUP end the run early; step 5 still runs, and the namespaces are removed
also when anything raises.
"""

from __future__ import annotations

import os
import signal
from datetime import datetime, timezone
from dataclasses import asdict, dataclass, field
from pathlib import Path

import trio
from rich.console import Console

from dmq.clock import SystemClock
from dmq.config import MAX_UNIX_SOCKET_PATH_BYTES
from dmq.networks import DEVNET
from dmq.stake import load_shelley_genesis
from integrations.devnet.aggregator import Aggregator
from integrations.devnet.node_process import NodeProcess, NodeStartError
from integrations.devnet.orchestrator import DevnetError, DevnetLayout, client_path, prepare_directory
from integrations.devnet.pools import generate_pools
from integrations.devnet.genesis import write_shelley_genesis, write_stake_file
from integrations.devnet.probe import DEFAULT_BODY_SIZE
from integrations.devnet.publisher import PoolPublisher, PublishingTally
from integrations.devnet.stats import LatencyRecorder
from integrations.mithril import GenesisClockKesPeriod

from .addresses import MAX_NODES, node_address
from .faults import FaultPlan, await_recovery, kill_and_restart, partition_and_heal, plan_faults
from .namespaces import Lab, check_available, remove_leftovers
from .plan import min_sig_delay_for, node_files, workload_problem
from .report import REPORT_FILE, FaultRecord, NetlabReport, NodeDelivery, fault_windows, load_average

__all__ = ["NetlabOptions", "Netlab", "run_netlab"]

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class NetlabOptions:
    nodes: int = 50
    pools: int = 100
    period: float = 10.0
    duration: float = 60.0
    directory: Path = Path("netlab")
    seed: int = 0
    #: Public roots per node (the next node plus random others).
    roots: int = 3
    kill_fraction: float = 0.1
    partition_fraction: float = 0.2
    #: Egress limit per node in Mbit/s (``tc tbf``); ``None``: no limit.
    rate_mbit: float | None = None
    record_traffic: bool = False
    start_timeout: float = 120.0
    connect_timeout: float = 60.0
    drain_timeout: float = 30.0
    stop_grace: float = 10.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "directory", Path(self.directory))
        if not 2 <= self.nodes <= MAX_NODES:
            raise DevnetError(f"a netlab has 2..{MAX_NODES} nodes, got --nodes {self.nodes}")
        problem = workload_problem(self.pools, self.period, self.duration, self.kill_fraction,
                                   self.partition_fraction)
        if problem is not None:
            raise DevnetError(problem)

    @property
    def min_sig_delay(self) -> float:
        return min_sig_delay_for(self.period)

    def fault_plan(self) -> FaultPlan:
        return plan_faults(self.nodes, self.duration, self.kill_fraction, self.partition_fraction, self.seed)

    def settings(self) -> dict[str, object]:
        values = asdict(self)
        values["directory"] = str(self.directory)
        values["min_sig_delay"] = self.min_sig_delay
        return values


@dataclass
class Netlab:
    options: NetlabOptions
    console: Console = field(default_factory=lambda: Console(soft_wrap=True))

    def __post_init__(self) -> None:
        self.layout = DevnetLayout(self.options.directory.absolute())
        self.clock = SystemClock()
        self.lab = Lab(self.options.nodes)
        self.tally = PublishingTally()
        self.processes: list[NodeProcess] = []
        self.aggregators: list[Aggregator] = []
        self.faults: list[FaultRecord] = []
        self.interrupted: str | None = None
        self._started: float | None = None
        #: The wall-clock time publishing started (publications carry wall-clock send times).
        self._started_wall = 0.0
        self._ended: float | None = None

    def _say(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def _prepare(self) -> list[PoolPublisher]:
        options, layout = self.options, self.layout
        prepare_directory(layout)
        pools = generate_pools(layout.pools, options.pools, seed=options.seed)
        system_start = datetime.fromtimestamp(int(self.clock.now()), timezone.utc)
        write_shelley_genesis(layout.genesis, pools, system_start, seed=options.seed)
        write_stake_file(layout.stake_file, pools, seed=options.seed)
        files = node_files(options.nodes, layout.nodes, layout.genesis, roots=options.roots, seed=options.seed,
                           min_sig_delay=options.min_sig_delay,
                           prefixes=[self.lab.exec_prefix(i) for i in range(options.nodes)],
                           record=layout.recording if options.record_traffic else None)
        deepest = client_path(files[-1].socket_path)
        if len(os.fsencode(deepest)) > MAX_UNIX_SOCKET_PATH_BYTES:
            raise DevnetError(f"{layout.root} is too deep: node sockets such as {deepest} would exceed "
                              f"{MAX_UNIX_SOCKET_PATH_BYTES} bytes; choose a shorter --dir")
        self.processes = [NodeProcess(node) for node in files]
        self.aggregators = [Aggregator(i, client_path(node.socket_path), DEVNET.dmq, self.clock)
                            for i, node in enumerate(files)]
        kes_periods = GenesisClockKesPeriod.from_genesis(load_shelley_genesis(layout.genesis), self.clock)
        publishers = []
        for pool in pools:
            home = pool.index % options.nodes
            publishers.append(PoolPublisher(pool, home, client_path(files[home].socket_path), DEVNET.dmq,
                                            kes_periods, self.clock, body_size=DEFAULT_BODY_SIZE))
        return publishers

    async def _start_nodes(self) -> None:
        for process in self.processes:
            await process.start()
        deadline = trio.current_time() + self.options.start_timeout
        try:
            for process in self.processes:
                await process.wait_listening(max(0.0, deadline - trio.current_time()))
        except NodeStartError as exc:
            raise DevnetError(str(exc)) from None
        with trio.move_on_after(self.options.connect_timeout):
            while not all(self.lab.established(i) > 0 for i in range(self.options.nodes)):
                await trio.sleep(0.5)
            self._say(f"{self.options.nodes} nodes listening in their namespaces, each connected to peers")
            return
        self._say("warning: some nodes have no peer connection yet; publishing anyway")

    def _recovery(self, nursery: trio.Nursery):
        def begin(record: FaultRecord) -> None:
            nursery.start_soon(await_recovery, record, self.tally, self.aggregators)
        return begin

    async def _traffic(self, publishers: list[PoolPublisher]) -> None:
        options, plan = self.options, self.options.fault_plan()
        async with trio.open_nursery() as clients:
            for aggregator in self.aggregators:
                await clients.start(aggregator.run)
            start = self._started = trio.current_time()
            self._started_wall = self.clock.now()
            end = start + options.duration
            async with trio.open_nursery() as recoveries:
                async with trio.open_nursery() as work:
                    for k, publisher in enumerate(publishers):
                        work.start_soon(publisher.run, start + options.period * k / len(publishers), options.period,
                                        end, self.tally)
                    names = lambda victims: [self.processes[i].name for i in victims]  # noqa: E731
                    if plan.kill:
                        record = FaultRecord("kill -9 and restart", names(plan.kill), plan.kill_at)
                        self.faults.append(record)
                        work.start_soon(kill_and_restart, self.processes, plan.kill, plan.kill_at, plan.kill_seconds,
                                        start, record, self._recovery(recoveries))
                    if plan.partition:
                        record = FaultRecord("partition and heal", names(plan.partition), plan.partition_at)
                        self.faults.append(record)
                        work.start_soon(partition_and_heal, self.lab, plan.partition, plan.partition_at,
                                        plan.partition_seconds, start, record, self._recovery(recoveries))
                self._ended = trio.current_time()
                with trio.move_on_after(options.drain_timeout):
                    while not all(a.missing(self.tally.accepted) == 0 for a in self.aggregators):
                        await trio.sleep(0.1)
                    while any(f.recovery_seconds is None for f in self.faults):
                        await trio.sleep(0.1)
                recoveries.cancel_scope.cancel()
            clients.cancel_scope.cancel()

    async def _stop_nodes(self) -> None:
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for process in self.processes:
                    nursery.start_soon(process.stop, self.options.stop_grace)

    async def _watch_signals(self, signals, work: trio.CancelScope) -> None:
        async for signum in signals:
            if self.interrupted is None:
                self.interrupted = signal.Signals(signum).name
                work.cancel()

    async def run(self) -> NetlabReport:
        check_available()
        removed = remove_leftovers()
        if removed:
            self._say(f"removed {len(removed)} namespaces left by an earlier run")
        publishers = self._prepare()
        leftovers: list[str] = []
        failure: BaseException | None = None
        try:
            with trio.open_signal_receiver(*_STOP_SIGNALS) as signals:
                async with trio.open_nursery() as watcher:
                    work = trio.CancelScope()
                    watcher.start_soon(self._watch_signals, signals, work)
                    try:
                        with work:
                            self.lab.build()
                            if self.options.rate_mbit:
                                for index in range(self.options.nodes):
                                    self.lab.limit_rate(index, self.options.rate_mbit)
                            self._say(f"{self.options.nodes} namespaces {self.lab.run_id}-n*, bridge in "
                                      f"{self.lab.bridge_namespace}; addresses {node_address(0)}.."
                                      f"{node_address(self.options.nodes - 1)}")
                            await self._start_nodes()
                            await self._traffic(publishers)
                    except Exception as exc:
                        failure = exc
                    finally:
                        await self._stop_nodes()
                        watcher.cancel_scope.cancel()
        finally:
            # A signal now would stop the teardown half-way: it waits until the namespaces are gone.
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
            try:
                leftovers = self.lab.teardown()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if failure is not None:
            raise _single(failure)
        report = self.report()
        report.leftovers = leftovers
        report.write(self.layout.root / REPORT_FILE)
        return report

    def report(self) -> NetlabReport:
        expected = self.tally.accepted
        everything, steady = LatencyRecorder(), LatencyRecorder()
        disturbed = fault_windows(self.faults, self._started_wall)
        deliveries = []
        for index, (process, aggregator) in enumerate(zip(self.processes, self.aggregators)):
            for message_id, arrived in aggregator.arrivals.items():
                publication = expected.get(message_id)
                if publication is not None:
                    latency = max(0.0, arrived - publication.sent_at)
                    everything.add(latency)
                    if not any(begin <= publication.sent_at <= end for begin, end in disturbed):
                        steady.add(latency)
            deliveries.append(NodeDelivery(
                node=process.name, address=node_address(index),
                delivered=sum(1 for message_id in aggregator.arrivals if message_id in expected),
                missing=aggregator.missing(expected), duplicates=aggregator.duplicates, replays=aggregator.replays,
                connections=aggregator.connections_opened, ending=process.ending, returncode=process.returncode))
        publishing = 0.0 if self._started is None else (self._ended or trio.current_time()) - self._started
        return NetlabReport(
            settings=self.options.settings(), run_id=self.lab.run_id, load_average=load_average(),
            attempted=self.tally.attempted, accepted=len(expected), rejected=dict(self.tally.rejected),
            failed=dict(self.tally.failed), nodes=deliveries, latency=everything.summary(), steady_latency=steady.summary(), faults=self.faults,
            publishing_seconds=round(publishing, 3), interrupted=self.interrupted)


def _single(failure: BaseException) -> BaseException:
    while isinstance(failure, BaseExceptionGroup) and len(failure.exceptions) == 1:
        failure = failure.exceptions[0]
    return failure


async def run_netlab(options: NetlabOptions, *, console: Console | None = None) -> NetlabReport:
    """Run a netlab, print its report, and return it (also written as ``netlab-report.json``)."""
    netlab = Netlab(options, console or Console(soft_wrap=True))
    report = await netlab.run()
    report.render(netlab.console)
    netlab.console.print(f"report written to {netlab.layout.root / REPORT_FILE}", highlight=False)
    return report
