"""One netlab run, in order, always ending with every namespace removed.

1. the privileges are checked (one line and the loopback alternative if they are missing), the
   namespaces of earlier crashed runs are removed, the directory is prepared;
2. the devnet's pools, genesis (skewed stake) and stake file are generated;
3. the namespaces, veth pairs and bridge are built (one namespace per node and per attacker),
   each node's files written and the nodes started inside their namespaces, a few at a time
   (a hundred Python processes importing at once on two cores would miss any start timeout);
   the run waits until every node has a TCP connection;
4. one aggregator per node connects through the node's local socket (Unix sockets live on the
   shared filesystem, so publishers and aggregators run here, in the root namespace), the pools
   publish to their home nodes, and the faults and attacks happen on schedule, while every
   process's CPU and memory are sampled from ``/proc`` (:mod:`.resources`) and every node's
   metrics are read from inside its namespace;
5. in-flight messages get a bounded time to arrive, the nodes' metrics are read a last time,
   the nodes are stopped, the namespaces removed, and the report printed and written.

SIGINT, SIGTERM and SIGHUP end the run early; step 5 still runs, and the namespaces are removed
also when anything raises.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from datetime import datetime, timezone
from dataclasses import asdict, dataclass, field
from pathlib import Path

import trio
from rich.console import Console

from dmq.clock import SystemClock
from dmq.config import MAX_UNIX_SOCKET_PATH_BYTES, AcceptedConnectionsLimit
from dmq.networks import DEVNET
from dmq.stake import load_shelley_genesis
from dmq.trace import ROUTES
from lab.devnet.aggregator import Aggregator
from lab.devnet.node_process import NodeProcess, NodeProcessFailed
from lab.devnet.orchestrator import DevnetError, DevnetLayout, client_path, node_name, prepare_directory
from lab.devnet.pools import generate_pools
from lab.devnet.genesis import write_shelley_genesis, write_stake_file
from lab.devnet.probe import DEFAULT_BODY_SIZE
from lab.devnet.publisher import PoolPublisher, PublishingTally
from lab.devnet.scrape import NodeSample, ScrapeError, scrape_node
from lab.devnet.stats import LatencyRecorder
from clients.mithril import GenesisClockKesPeriod

from .addresses import MAX_NODES, node_address
from .attacks import (FLOOD, IDS_FILE, READY_FILE, RESULT_FILE, STAKELESS, AdversaryFiles, AttackPlan,
                      choose_attack_nodes, connections_per_peer, flood_verdict, read_offered_ids, read_result,
                      ready_adversaries, run_adversaries)
from .faults import FaultPlan, await_delivered, await_recovery, kill_and_restart, partition_and_heal, plan_faults
from .namespaces import Lab, NeighbourTable, check_available, remove_leftovers
from .plan import METRICS_PORT, NODE_PORT, min_sig_delay_for, node_files, workload_problem
from .priority import RunPriority, autogroup_niceness, lower
from .report import REPORT_FILE, AttackRecord, FaultRecord, NetlabReport, NodeDelivery, fault_windows, load_average
from .resources import ResourceSampler

__all__ = ["NetlabOptions", "Netlab", "run_netlab"]

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
KILL, PARTITION = "kill", "partition"
#: Every fault and attack a run can be asked for, by the name ``--faults`` takes.
FAULT_NAMES = (KILL, PARTITION, FLOOD, STAKELESS)
#: The reference node's inbound hard limit (``AcceptedConnectionsLimit``), unless a run sets one.
_DEFAULT_HARD_LIMIT = AcceptedConnectionsLimit().hard_limit
#: What a node traces for each connection it closes at once because it is at its inbound hard limit.
HARD_LIMIT_TRACE = ROUTES["InboundRefused"][0]


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
    #: Which of FAULT_NAMES happen (a fraction of 0 also turns kill or partition off).
    faults: tuple[str, ...] = (KILL, PARTITION)
    #: Honest nodes the flooding peer dials, and messages per second per flood connection.
    flood_targets: int = 3
    flood_rate: float = 20.0
    #: Processes (each its own address) in the stake-less cluster.
    stakeless_peers: int = 4
    #: Every node's ``AcceptedConnectionsLimit`` as (hard, soft, delay); None: the node's default.
    inbound_limit: tuple[int, int, float] | None = None
    #: Seconds between two samples of every process's CPU and memory, and between two metric reads.
    resource_interval: float = 2.0
    metrics_interval: float = 5.0
    #: Nodes starting (importing, opening their database) at the same time.
    start_concurrency: int = 4
    #: Scheduling priorities (niceness, and the session's autogroup niceness; :mod:`.priority`):
    #: the nodes', set once each listens, and the run's own while it runs (None: left as it is).
    #: The run signs for every pool, aggregates for every node and keeps the faults' clock; at
    #: equal weight a hundred busy nodes left it a hundredth of the CPU and its timers fired
    #: minutes late. At 19 against -10 a hundred nodes weigh 0.16 times the run (15 each against
    #: 9548); they get every cycle the run leaves, and their use is measured as is.
    niceness: int = 19
    run_niceness: int | None = -10
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
        object.__setattr__(self, "faults", tuple(self.faults))
        unknown = [name for name in self.faults if name not in FAULT_NAMES]
        if unknown:
            raise DevnetError(f"unknown fault {', '.join(unknown)}; the faults are {', '.join(FAULT_NAMES)}")
        if not all(-20 <= value <= 19 for value in (self.niceness, self.run_niceness or 0)):
            raise DevnetError(f"a niceness is -20..19, got {self.niceness} for the nodes and {self.run_niceness} "
                              "for the run")
        if self.flood_targets < 1 or not self.flood_rate > 0 or self.stakeless_peers < 1:
            raise DevnetError("--flood-targets, --flood-rate and --stakeless-peers must be positive")

    @property
    def min_sig_delay(self) -> float:
        return min_sig_delay_for(self.period)

    def fault_plan(self) -> FaultPlan:
        return plan_faults(self.nodes, self.duration, self.kill_fraction if KILL in self.faults else 0,
                           self.partition_fraction if PARTITION in self.faults else 0, self.seed)

    @property
    def hard_limit(self) -> int:
        return _DEFAULT_HARD_LIMIT if self.inbound_limit is None else self.inbound_limit[0]

    def attack_plan(self) -> AttackPlan:
        faults = self.fault_plan()
        targets, victim = choose_attack_nodes(self.nodes, self.flood_targets if FLOOD in self.faults else 0,
                                              STAKELESS in self.faults, self.seed,
                                              set(faults.kill) | set(faults.partition))
        # The cluster holds the victim from early on to near the end; the flood spans the middle.
        return AttackPlan(targets, 0.25 * self.duration, max(3.0, 0.4 * self.duration),
                          victim, self.stakeless_peers, connections_per_peer(self.hard_limit, self.stakeless_peers),
                          0.1 * self.duration, 0.8 * self.duration)

    @property
    def attackers(self) -> int:
        """Namespaces beyond the nodes': one flooder, and the stake-less cluster's peers."""
        return (FLOOD in self.faults) + (self.stakeless_peers if STAKELESS in self.faults else 0)

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
        self.lab = Lab(self.options.nodes + self.options.attackers)
        self.neighbours = NeighbourTable()
        self.tally = PublishingTally()
        self.processes: list[NodeProcess] = []
        self.aggregators: list[Aggregator] = []
        self.flooders: list[NodeProcess] = []
        self.cluster: list[NodeProcess] = []
        self.faults: list[FaultRecord] = []
        self.attacks: list[AttackRecord] = []
        #: Each node's metrics as last read, and the most inbound connections it was seen with.
        self.samples: dict[int, NodeSample] = {}
        self.final_samples: dict[int, NodeSample] = {}
        self.peak_inbound: dict[int, int] = {}
        self.sampler = ResourceSampler(self._pids, self.options.resource_interval)
        self.interrupted: str | None = None
        self._started: float | None = None
        #: The wall-clock time publishing started (publications carry wall-clock send times).
        self._started_wall = 0.0
        self._ended: float | None = None
        #: The run's CPU time at the start of publishing and at the end of the drain, and when that was.
        self._cpu_started = self._cpu_ended = 0.0
        self._waited_started = self._waited_ended = 0.0
        #: The run's niceness and its session's autogroup niceness while it published (it puts
        #: back the ones it started with at the end).
        self._niceness: tuple[int | None, int | None] = (None, None)
        self._drained: float | None = None

    def _say(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def _pids(self):
        for process in [*self.processes, *self.flooders, *self.cluster]:
            yield process.name, process.process.pid if process.running else None

    def _prepare(self) -> list[PoolPublisher]:
        options, layout = self.options, self.layout
        plan = options.attack_plan()
        prepare_directory(layout)
        # A flood abuses the public credentials of one registered pool that publishes nothing itself.
        pools = generate_pools(layout.pools, options.pools + bool(plan.flood_targets), seed=options.seed)
        system_start = datetime.fromtimestamp(int(self.clock.now()), timezone.utc)
        write_shelley_genesis(layout.genesis, pools, system_start, seed=options.seed)
        write_stake_file(layout.stake_file, pools, seed=options.seed)
        limit = None
        if options.inbound_limit is not None:
            hard, soft, delay = options.inbound_limit
            limit = {"hardLimit": hard, "softLimit": soft, "delay": delay}
        files = node_files(options.nodes, layout.nodes, layout.genesis, roots=options.roots, seed=options.seed,
                           min_sig_delay=options.min_sig_delay,
                           prefixes=[self._prefix(i, node_name(i)) for i in range(options.nodes)],
                           record=layout.recording if options.record_traffic else None, inbound_limit=limit)
        deepest = client_path(files[-1].socket_path)
        if len(os.fsencode(deepest)) > MAX_UNIX_SOCKET_PATH_BYTES:
            raise DevnetError(f"{layout.root} is too deep: node sockets such as {deepest} would exceed "
                              f"{MAX_UNIX_SOCKET_PATH_BYTES} bytes; choose a shorter --dir")
        self.processes = [NodeProcess(node) for node in files]
        self.aggregators = [Aggregator(i, client_path(node.socket_path), DEVNET.dmq, self.clock)
                            for i, node in enumerate(files)]
        kes_periods = GenesisClockKesPeriod.from_genesis(load_shelley_genesis(layout.genesis), self.clock)
        self._prepare_attackers(plan, pools[-1].paths.opcert if plan.flood_targets else None,
                                kes_periods.current_kes_period())
        publishers = []
        for pool in pools[:options.pools]:
            home = pool.index % options.nodes
            publishers.append(PoolPublisher(pool, home, client_path(files[home].socket_path), DEVNET.dmq,
                                            kes_periods, self.clock, body_size=DEFAULT_BODY_SIZE))
        return publishers

    def _prefix(self, index: int, name: str) -> list[str]:
        """What runs process ``name`` in namespace ``index`` as host ``name`` (every part execs
        the next: same pid), at the run's priority: a node is lowered once it listens."""
        return self.lab.exec_prefix(index, name)

    def _lower(self, process: NodeProcess) -> None:
        """A node that listens, to the nodes' priority (:func:`.priority.lower`)."""
        if process.process is not None:
            lower(process.process.pid, self.options.niceness)

    def _attacker(self, name: str, slot: int, arguments: list[str]) -> NodeProcess:
        index = self.options.nodes + slot
        directory = self.layout.root / "attackers" / name
        result, ready = directory / RESULT_FILE, directory / READY_FILE
        files = AdversaryFiles(name, directory, {}, {}, tuple(self._prefix(index, name)),
                               (*arguments, "--magic", str(DEVNET.dmq), "--result", str(result),
                                "--ready", str(ready)))
        return NodeProcess(files)

    def _prepare_attackers(self, plan: AttackPlan, opcert, kes_period: int) -> None:
        target = lambda i: f"{node_address(i)}:{NODE_PORT}"  # noqa: E731
        slot = 0
        if plan.flood_targets:
            directory = self.layout.root / "attackers" / "flooder"
            arguments = ["flood", "--opcert", str(opcert), "--kes-period", str(kes_period),
                         "--rate", f"{self.options.flood_rate:g}", "--ids", str(directory / IDS_FILE)]
            for index in plan.flood_targets:
                arguments += ["--target", target(index)]
            self.flooders = [self._attacker("flooder", slot, arguments)]
            slot += 1
        if plan.stakeless_victim is not None:
            self.cluster = [self._attacker(f"stakeless-{k + 1}", slot + k,
                                           ["withhold", "--target", target(plan.stakeless_victim),
                                            "--connections", str(plan.stakeless_connections)])
                            for k in range(plan.stakeless_peers)]

    async def _start_nodes(self) -> None:
        """Start the nodes ``start_concurrency`` at a time, each given ``start_timeout`` to listen,
        then the attackers, which wait ready for their attack's time (:func:`.attacks.ready_adversaries`)."""
        limiter = trio.CapacityLimiter(self.options.start_concurrency)

        async def start(process: NodeProcess) -> None:
            async with limiter:
                await process.start()
                await process.wait_listening(self.options.start_timeout)
                self._lower(process)

        try:
            async with trio.open_nursery() as nursery:
                for process in self.processes:
                    nursery.start_soon(start, process)
        except BaseExceptionGroup as group:
            failures = group.subgroup(lambda exc: isinstance(exc, NodeProcessFailed))
            if failures is None:
                raise
            raise DevnetError(str(_single(failures))) from None
        try:
            await ready_adversaries([*self.flooders, *self.cluster], self.options.start_timeout)
        except NodeProcessFailed as exc:
            raise DevnetError(str(exc)) from None
        with trio.move_on_after(self.options.connect_timeout):
            while not all(self.lab.established(i) > 0 for i in range(self.options.nodes)):
                await trio.sleep(0.5)
            self._say(f"{self.options.nodes} nodes listening in their namespaces, each connected to peers")
            return
        self._say("warning: some nodes have no peer connection yet; publishing anyway")

    async def _read_metrics(self, index: int) -> bool:
        if not self.processes[index].running:
            return False
        try:
            sample = await scrape_node(METRICS_PORT, timeout=5.0,
                                       connect=lambda: self.lab.open_tcp_stream(index, METRICS_PORT))
        except ScrapeError:
            return False
        self.samples[index] = sample
        self.peak_inbound[index] = max(self.peak_inbound.get(index, 0), sample.inbound_peers)
        return True

    async def _read_final_metrics(self) -> None:
        """Every node's metrics once more after the drain, each read tried up to three times: the
        nodes' own counts in the report (``node_accepted``) come from this read only, never from
        an older sample that would miss what a node accepted since."""
        async def read(index: int) -> None:
            for _ in range(3):
                if await self._read_metrics(index):
                    self.final_samples[index] = self.samples[index]
                    return

        async with trio.open_nursery() as nursery:
            for index in range(self.options.nodes):
                nursery.start_soon(read, index)

    async def _read_all_metrics(self) -> None:
        async with trio.open_nursery() as nursery:
            for index in range(self.options.nodes):
                nursery.start_soon(self._read_metrics, index)

    async def _watch_metrics(self) -> None:
        while True:
            await self._read_all_metrics()
            await trio.sleep(self.options.metrics_interval)

    def _recovery(self, nursery: trio.Nursery):
        def begin(record: FaultRecord) -> None:
            nursery.start_soon(await_recovery, record, self.tally, self.aggregators)
        return begin

    def _schedule_attacks(self, work: trio.Nursery, start: float, end: float) -> None:
        plan = self.options.attack_plan()
        names = lambda victims: [self.processes[i].name for i in victims]  # noqa: E731
        if self.flooders:
            record = AttackRecord(FLOOD, names(plan.flood_targets), [p.name for p in self.flooders],
                                  [node_address(self.options.nodes)], plan.flood_at)
            self.attacks.append(record)
            work.start_soon(run_adversaries, self.flooders, plan.flood_at, plan.flood_seconds, start, end, record)
        if self.cluster:
            first = self.options.nodes + len(self.flooders)
            record = AttackRecord(STAKELESS, names([plan.stakeless_victim]), [p.name for p in self.cluster],
                                  [node_address(first + k) for k in range(len(self.cluster))], plan.stakeless_at)
            self.attacks.append(record)
            work.start_soon(run_adversaries, self.cluster, plan.stakeless_at, plan.stakeless_seconds, start, end,
                            record)

    async def _traffic(self, publishers: list[PoolPublisher]) -> None:
        options, plan = self.options, self.options.fault_plan()
        async with trio.open_nursery() as clients:
            for aggregator in self.aggregators:
                await clients.start(aggregator.run)
            clients.start_soon(self.sampler.run)
            clients.start_soon(self._watch_metrics)
            start = self._started = trio.current_time()
            self._started_wall = self.clock.now()
            self._cpu_started, self._waited_started = time.process_time(), _run_queue_wait()
            self._niceness = os.getpriority(os.PRIO_PROCESS, 0), autogroup_niceness()
            end = start + options.duration
            async with trio.open_nursery() as recoveries:
                async with trio.open_nursery() as work:
                    for k, publisher in enumerate(publishers):
                        work.start_soon(publisher.run, start + options.period * k / len(publishers), options.period,
                                        end, self.tally)
                    names = lambda victims: [self.processes[i].name for i in victims]  # noqa: E731
                    if plan.kill:
                        record = FaultRecord("kill -9 and restart", names(plan.kill), plan.kill_at,
                                             planned_at=plan.kill_at)
                        self.faults.append(record)
                        work.start_soon(kill_and_restart, self.processes, plan.kill, plan.kill_at, plan.kill_seconds,
                                        start, record, self._recovery(recoveries), self._lower,
                                        options.start_timeout)
                    if plan.partition:
                        record = FaultRecord("partition and heal", names(plan.partition), plan.partition_at,
                                             planned_at=plan.partition_at)
                        self.faults.append(record)
                        work.start_soon(partition_and_heal, self.lab, plan.partition, plan.partition_at,
                                        plan.partition_seconds, start, record, self._recovery(recoveries))
                    self._schedule_attacks(work, start, end)
                self._ended = trio.current_time()
                with trio.move_on_after(options.drain_timeout):
                    await await_delivered(self.aggregators, self.tally.accepted)
                    while any(f.recovery_seconds is None for f in self.faults):
                        await trio.sleep(0.1)
                recoveries.cancel_scope.cancel()
            self._cpu_ended, self._drained = time.process_time(), trio.current_time()
            self._waited_ended = _run_queue_wait()
            await self._read_final_metrics()
            clients.cancel_scope.cancel()

    async def _stop_nodes(self) -> None:
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for process in [*self.processes, *self.flooders, *self.cluster]:
                    nursery.start_soon(process.stop, self.options.stop_grace)

    async def _watch_signals(self, signals, work: trio.CancelScope) -> None:
        async for signum in signals:
            if self.interrupted is None:
                self.interrupted = signal.Signals(signum).name
                work.cancel()

    async def run(self) -> NetlabReport:
        check_available()
        with RunPriority(self.options.run_niceness) as priority:
            if priority.problem:
                self._say(f"warning: {priority.problem}; the nodes may starve the run")
            return await self._run()

    async def _run(self) -> NetlabReport:
        _raise_open_file_limit()
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
                            # Every node may learn every other's address: the kernel's table must hold them all.
                            self.neighbours.ensure(self.lab.nodes * self.lab.nodes + 1024)
                            self.lab.build()
                            if self.options.rate_mbit:
                                for index in range(self.options.nodes):
                                    self.lab.limit_rate(index, self.options.rate_mbit)
                            self._say(f"{self.options.nodes} namespaces {self.lab.run_id}-n*, bridge in "
                                      f"{self.lab.bridge_namespace}; addresses {node_address(0)}.."
                                      f"{node_address(self.options.nodes - 1)}"
                                      + (f", {self.options.attackers} attackers after them" if self.options.attackers
                                         else ""))
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
                self.neighbours.restore()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if failure is not None:
            raise _single(failure)
        report = self.report()
        report.leftovers = leftovers
        report.write(self.layout.root / REPORT_FILE)
        return report

    def _fault_windows(self) -> list[tuple[float, float]]:
        """Wall-clock spans from each fault's start to its recovery (open-ended if it never recovered)."""
        return fault_windows(self.faults, self._started_wall)

    def _window_latency(self, nodes: list[int], began: float, ended: float | None) -> dict[str, float | None]:
        """Latency at ``nodes`` of the messages published while an attack ran (seconds into publishing)."""
        low, high = self._started_wall + began, self._started_wall + (ended if ended is not None else float("inf"))
        recorder = LatencyRecorder()
        expected = self.tally.accepted
        for index in nodes:
            for message_id, arrived in self.aggregators[index].arrivals.items():
                publication = expected.get(message_id)
                if publication is not None and low <= publication.sent_at <= high:
                    recorder.add(max(0.0, arrived - publication.sent_at))
        return recorder.summary()

    def _attack_outcomes(self, foreign: int) -> None:
        everyone = range(self.options.nodes)
        index_of = {process.name: i for i, process in enumerate(self.processes)}
        for record in self.attacks:
            mine = [index_of[name] for name in record.nodes]
            others = [i for i in everyone if i not in mine]
            if record.kind == FLOOD:
                flooder = self.flooders[0].files
                rejected = {self.processes[i].name: dict(sample.rejected) for i, sample in self.samples.items()}
                record.outcome = flood_verdict(read_result(flooder.result_path), read_offered_ids(flooder.ids_path),
                                               [a.arrivals for a in self.aggregators], foreign, rejected,
                                               record.nodes)
            else:
                victim, = mine
                links = [link for process in self.cluster for link in read_result(process.files.result_path)]
                missing = self.aggregators[victim].missing(self.tally.accepted)
                record.outcome = {
                    "connections_per_peer": self.options.attack_plan().stakeless_connections,
                    "victim_hard_limit": self.options.hard_limit,
                    "victim_peak_inbound": self.peak_inbound.get(victim),
                    "victim_refusals_at_hard_limit": _log_count(self.processes[victim].files.log_path,
                                                                HARD_LIMIT_TRACE),
                    "cluster_peak_holding": sum(link["peak_holding"] for link in links),
                    "cluster_opened": sum(link["opened"] for link in links),
                    "cluster_refused": sum(link["refused"] for link in links),
                    "victim_missing": missing, "held": missing == 0 and bool(links),
                }
            record.outcome["latency_at_attacked"] = self._window_latency(mine, record.began_at, record.ended_at)
            record.outcome["latency_elsewhere"] = self._window_latency(others, record.began_at, record.ended_at)

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
                connections=aggregator.connections_opened, ending=process.ending, returncode=process.returncode,
                unexpected=sum(1 for message_id in aggregator.arrivals if message_id not in expected),
                foreign=aggregator.foreign, inbound_peak=self.peak_inbound.get(index),
                node_accepted=None if index not in self.final_samples
                else sum(self.final_samples[index].accepted.values())))
        self._attack_outcomes(sum(node.foreign for node in deliveries))
        publishing = 0.0 if self._started is None else (self._ended or trio.current_time()) - self._started
        return NetlabReport(
            settings=self.options.settings(), run_id=self.lab.run_id, load_average=load_average(),
            attempted=self.tally.attempted, accepted=len(expected), rejected=dict(self.tally.rejected),
            failed=dict(self.tally.failed), nodes=deliveries, latency=everything.summary(),
            steady_latency=steady.summary(), faults=self.faults, attacks=self.attacks,
            resources=self.sampler.summary(process.name for process in self.processes),
            publishing_seconds=round(publishing, 3), harness=self._harness(), interrupted=self.interrupted)

    def _harness(self) -> dict[str, object]:
        """How the run's own process kept time (report field ``harness``)."""
        wall = 0.0 if self._started is None or self._drained is None else self._drained - self._started
        cpu = self._cpu_ended - self._cpu_started
        return {"niceness": self._niceness[0], "autogroup_niceness": self._niceness[1],
                "nodes_niceness": self.options.niceness,
                "cpu_seconds": round(cpu, 2), "wall_seconds": round(wall, 3),
                "cpu_percent": round(100.0 * cpu / wall, 1) if wall > 0 else None,
                "run_queue_wait_seconds": round(self._waited_ended - self._waited_started, 2),
                "publish_lateness": {**self.tally.lateness.summary(), "count": len(self.tally.lateness)},
                "faults_late_seconds": {f.kind: round(f.began_at - f.planned_at, 3) for f in self.faults
                                        if f.planned_at is not None}}


def _log_count(path: Path, namespace: str) -> int:
    """Lines of a node's JSON log traced under ``namespace``."""
    needle = f'"ns":"{namespace}"'
    try:
        with open(path, errors="replace") as log:
            return sum(1 for line in log if needle in line)
    except OSError:
        return 0


def _run_queue_wait() -> float:
    """Seconds this process's main thread (trio's) has so far spent runnable but waiting for a CPU
    (``/proc/self/schedstat``, second field, in ns): time it was starved, whatever starved it."""
    try:
        return int(open("/proc/self/schedstat").read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _raise_open_file_limit() -> None:
    """The soft limit on open files up to the hard one: the run holds an aggregator connection,
    publisher connections and two pipes per node, and nodes inherit the limit (a victim of the
    stake-less cluster holds hundreds of connections)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


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
