"""A whole devnet run: pools, genesis, node processes, publishers, aggregators, view, summary.

The order matters and is the same every run:

1. the directory is prepared (a previous devnet there is replaced; anything else is refused);
2. pools are generated from the seed, a Shelley genesis registers them with stake, and a stake
   file states the same stake;
3. each node gets a directory with its configuration (DMQ devnet magic, loopback address and
   free ports, stake from the genesis, a rate limit short enough for the period, metrics,
   traffic recording) and its topology file, and is started as a ``dmq-node`` process;
4. once every node listens and the topology's links are up, one aggregator per node
   connects, then the publishers run for the chosen duration while the view refreshes;
5. the aggregators get a bounded time to receive what is still in flight, the nodes are
   stopped (SIGINT, then SIGKILL after a grace period) and the summary is printed and
   written.

SIGINT, SIGTERM and SIGHUP end the run early but cleanly (steps 5 still runs); a second
signal kills the nodes at once.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import trio
from rich.console import Console

from dmq.clock import Clock, SystemClock
from dmq.config import DEFAULT_MIN_SIG_DELAY, MAX_UNIX_SOCKET_PATH_BYTES
from dmq.errors import OperatorError
from dmq.networks import DEVNET
from dmq.ports import free_ports
from dmq.stake import load_shelley_genesis
from clients.mithril import GenesisClockKesPeriod

from .aggregator import Aggregator
from .genesis import write_shelley_genesis, write_stake_file
from .node_process import SOCKET_FILE, NodeFiles, NodeProcess, NodeProcessFailed
from .pools import DevnetPool, generate_pools
from .probe import DEFAULT_BODY_SIZE, body_size_range
from .publisher import PoolPublisher, PublishingTally
from .scrape import NodeSample, ScrapeError, scrape_node
from .stats import LatencyRecorder
from .status import DevnetStatus, NodeStatus
from .summary import SUMMARY_FILE, AggregatorSummary, DevnetSummary, NodeSummary
from .topology import Shape, dials_of, links_of, neighbours, topology_document
from .view import DevnetView, make_view

__all__ = ["DevnetError", "DevnetOptions", "DevnetLayout", "Devnet", "run_devnet", "HOST", "MARKER_FILE"]

HOST = "127.0.0.1"
#: Written into a devnet directory; only a directory holding it is ever emptied by a new run.
MARKER_FILE = ".dmq-devnet"
_REFRESH = 0.5


class DevnetError(OperatorError):
    """The devnet cannot run: a directory in the way, a node that does not start, bad options."""


@dataclass(frozen=True)
class DevnetOptions:
    """Everything a run is made of; the defaults are ``dmq devnet``'s (``dmq demo`` has its own)."""

    nodes: int = 4
    pools: int = 12
    topology: Shape = Shape.RING
    period: float = 5.0
    duration: float = 45.0
    directory: Path = Path("devnet")
    seed: int = 0
    live: bool = True
    #: Indexes of the nodes that get an aggregator; ``None``: every node.
    aggregators: tuple[int, ...] | None = None
    body_size: int = DEFAULT_BODY_SIZE
    record_traffic: bool = False
    #: Seconds for every node to listen on its socket, and then for the links to come up.
    start_timeout: float = 60.0
    link_timeout: float = 30.0
    #: Seconds after the last publication for in-flight messages to reach the aggregators.
    drain_timeout: float = 15.0
    #: Seconds a node has to stop after SIGINT before it is killed.
    stop_grace: float = 15.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "topology", Shape(self.topology))
        object.__setattr__(self, "directory", Path(self.directory))
        if self.nodes < 1:
            raise DevnetError(f"a devnet needs at least one node, got --nodes {self.nodes}")
        if self.pools < 1:
            raise DevnetError(f"a devnet needs at least one pool, got --pools {self.pools}")
        if not self.period > 0:
            raise DevnetError(f"the publishing period must be positive, got --period {self.period:g}")
        if not self.duration > 0:
            raise DevnetError(f"the duration must be positive, got --duration {self.duration:g}")
        low, high = body_size_range()
        if not low <= self.body_size <= high:
            raise DevnetError(f"a message body is {low}..{high} bytes, got --body-size {self.body_size}")
        if self.aggregators is not None:
            chosen = tuple(sorted(set(self.aggregators)))
            if not chosen or not all(0 <= index < self.nodes for index in chosen):
                raise DevnetError(f"aggregators go on nodes 1..{self.nodes}, got "
                                  f"{', '.join(str(index + 1) for index in self.aggregators) or 'none'}")
            object.__setattr__(self, "aggregators", chosen)

    @property
    def aggregator_nodes(self) -> tuple[int, ...]:
        return tuple(range(self.nodes)) if self.aggregators is None else self.aggregators

    @property
    def min_sig_delay(self) -> float:
        """The nodes' per-pool rate limit: half a period, so that a pool's messages, one period
        apart at the source, still pass at every relay whatever the jitter on the way."""
        return min(DEFAULT_MIN_SIG_DELAY, self.period / 2)

    def settings(self) -> dict[str, object]:
        values = asdict(self)
        values["topology"] = self.topology.value
        values["directory"] = str(self.directory)
        values["min_sig_delay"] = self.min_sig_delay
        values["aggregators"] = [node_name(index) for index in self.aggregator_nodes]
        return values


@dataclass(frozen=True)
class DevnetLayout:
    """Where a run's files go under its directory."""

    root: Path

    @property
    def marker(self) -> Path:
        return self.root / MARKER_FILE

    @property
    def pools(self) -> Path:
        return self.root / "pools"

    @property
    def genesis(self) -> Path:
        return self.root / "genesis" / "shelley-genesis.json"

    @property
    def stake_file(self) -> Path:
        return self.root / "genesis" / "stake.json"

    @property
    def nodes(self) -> Path:
        return self.root / "nodes"

    @property
    def recording(self) -> Path:
        """All nodes record into this one directory: one run for the capacity report."""
        return self.root / "traffic"

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY_FILE

    @property
    def report(self) -> Path:
        return self.root / "capacity-report"

    def node_dir(self, index: int) -> Path:
        return self.nodes / node_name(index)


def node_name(index: int) -> str:
    return f"node-{index + 1}"


def client_path(socket_path: Path) -> Path:
    """The shorter of a socket's absolute path and its path from here: a Unix socket path
    is limited to 107 bytes, and a deep checkout should not be what stops a devnet."""
    try:
        relative = Path(os.path.relpath(socket_path))
    except ValueError:
        return socket_path
    return min(socket_path, relative, key=lambda path: len(os.fsencode(path)))


def prepare_directory(layout: DevnetLayout) -> None:
    """An empty directory marked as a devnet's; a previous devnet's is emptied, anything else refused."""
    root = layout.root
    if root.exists():
        if not root.is_dir():
            raise DevnetError(f"{root} exists and is not a directory; choose another --dir")
        if any(root.iterdir()):
            if not layout.marker.exists():
                raise DevnetError(f"{root} is not empty and holds no previous devnet ({MARKER_FILE}); "
                                  "choose another --dir or empty it")
            shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    layout.marker.write_text("a dmq devnet: the next devnet run in this directory replaces everything here\n")


def node_files(options: DevnetOptions, layout: DevnetLayout, ports: list[int],
               metrics_ports: list[int]) -> list[NodeFiles]:
    """Each node's configuration and topology (paths relative to the node's directory)."""
    links = links_of(options.topology, options.nodes, seed=options.seed)
    files = []
    for index in range(options.nodes):
        directory = layout.node_dir(index)
        config: dict[str, object] = {
            "NetworkMagic": DEVNET.dmq,
            "CardanoNetworkMagic": DEVNET.cardano,
            "IPv4": HOST,
            "PortNumber": ports[index],
            "LocalAddress": SOCKET_FILE,
            "DatabasePath": "db",
            "StakeSource": "genesis",
            "ShelleyGenesisFile": os.path.relpath(layout.genesis, directory),
            "MinSigDelay": options.min_sig_delay,
            "PrometheusPort": metrics_ports[index],
        }
        if options.record_traffic:
            config["RecordTraffic"] = os.path.relpath(layout.recording, directory)
        peers = [(HOST, ports[other]) for other in dials_of(links, index)]
        files.append(NodeFiles(node_name(index), directory, config, topology_document(peers)))
    return files


@dataclass
class _NodeRuntime:
    """A node and what the devnet knows of it while running."""

    process: NodeProcess
    port: int
    metrics_port: int
    links: int
    dials: list[int]
    pools: int
    aggregator: Aggregator | None
    sample: NodeSample | None = None


@dataclass
class Devnet:
    """One devnet run (see the module docstring for its steps)."""

    options: DevnetOptions
    console: Console = field(default_factory=lambda: Console(soft_wrap=True))
    clock: Clock = field(default_factory=SystemClock)

    def __post_init__(self) -> None:
        self.layout = DevnetLayout(self.options.directory.absolute())
        self.tally = PublishingTally()
        self.nodes: list[_NodeRuntime] = []
        self.interrupted: str | None = None
        self.warnings: list[str] = []
        self.phase = "starting"
        self._publishing_started: float | None = None
        self._publishing_ended: float | None = None

    # -- set-up ----------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def _generate(self) -> tuple[list[DevnetPool], datetime]:
        options = self.options
        began = time.perf_counter()
        pools = generate_pools(self.layout.pools, options.pools, seed=options.seed)
        # The chain starts now (whole seconds), so the KES period is 0 for the certificates' life.
        system_start = datetime.fromtimestamp(int(self.clock.now()), timezone.utc)
        write_shelley_genesis(self.layout.genesis, pools, system_start, seed=options.seed)
        write_stake_file(self.layout.stake_file, pools, seed=options.seed)
        self._say(f"generated {len(pools)} pools (cold keys, Sum6KES keys, operational certificates), their "
                  f"Shelley genesis and stake file in {time.perf_counter() - began:.1f} s")
        return pools, system_start

    def _check_socket_paths(self) -> None:
        path = client_path(self.layout.node_dir(self.options.nodes - 1) / SOCKET_FILE)
        if len(os.fsencode(path)) > MAX_UNIX_SOCKET_PATH_BYTES:
            raise DevnetError(f"{self.layout.root} is too deep: node sockets such as {path} would exceed "
                              f"{MAX_UNIX_SOCKET_PATH_BYTES} bytes; choose a shorter --dir")

    def _plan_nodes(self, pools: list[DevnetPool]) -> list[PoolPublisher]:
        options = self.options
        ports = free_ports(2 * options.nodes, HOST)
        node_ports, metrics_ports = ports[:options.nodes], ports[options.nodes:]
        files = node_files(options, self.layout, node_ports, metrics_ports)
        links = links_of(options.topology, options.nodes, seed=options.seed)
        around = neighbours(links, options.nodes)
        for index, node in enumerate(files):
            aggregator = None
            if index in options.aggregator_nodes:
                aggregator = Aggregator(index, client_path(node.socket_path), DEVNET.dmq, self.clock)
            self.nodes.append(_NodeRuntime(
                NodeProcess(node), node_ports[index], metrics_ports[index], len(around[index]),
                dials_of(links, index), len(range(index, options.pools, options.nodes)), aggregator))
        genesis = load_shelley_genesis(self.layout.genesis)
        kes_periods = GenesisClockKesPeriod.from_genesis(genesis, self.clock)
        publishers = []
        for pool in pools:
            index = pool.index % options.nodes
            publishers.append(PoolPublisher(pool, index, client_path(files[index].socket_path), DEVNET.dmq,
                                            kes_periods, self.clock, body_size=options.body_size))
        pairs = ", ".join(f"{node_name(a)}->{node_name(b)}" for a, b in links) or "no links"
        self._say(f"{options.topology.value} topology of {options.nodes} nodes: {pairs}")
        return publishers

    async def _start_nodes(self) -> None:
        for node in self.nodes:
            await node.process.start()
        deadline = trio.current_time() + self.options.start_timeout
        try:
            for node in self.nodes:
                await node.process.wait_listening(max(0.0, deadline - trio.current_time()))
        except NodeProcessFailed as exc:
            raise DevnetError(str(exc)) from None
        ports = ", ".join(f"{n.process.name} :{n.port}" for n in self.nodes)
        self._say(f"{len(self.nodes)} dmq-node processes listening ({ports}); logs in {self.layout.nodes}")

    async def _scrape(self, node: _NodeRuntime) -> NodeSample | None:
        try:
            node.sample = await scrape_node(node.metrics_port, host=HOST, timeout=1.0)
        except ScrapeError:
            return None
        return node.sample

    async def _wait_for_links(self) -> None:
        """Until every node has its topology's outbound connections (bounded: a warning after)."""
        with trio.move_on_after(self.options.link_timeout):
            while True:
                samples = [await self._scrape(node) for node in self.nodes]
                if all(s is not None and s.outbound_peers >= len(n.dials) for s, n in zip(samples, self.nodes)):
                    self._say("every topology link is up")
                    return
                for node in self.nodes:
                    if not node.process.running:
                        raise DevnetError(f"{node.process.name} exited with status {node.process.returncode}; "
                                          f"{node.process.diagnostics()}")
                await trio.sleep(0.2)
        missing = [n.process.name for n in self.nodes
                   if n.sample is None or n.sample.outbound_peers < len(n.dials)]
        warning = f"links still down after {self.options.link_timeout:g} s at {', '.join(missing)}; publishing anyway"
        self.warnings.append(warning)
        self._say(f"warning: {warning}")

    # -- running ---------------------------------------------------------------------
    def status(self) -> DevnetStatus:
        now = trio.current_time()
        started = self._publishing_started
        elapsed = 0.0 if started is None else (self._publishing_ended or now) - started
        rows = []
        for node in self.nodes:
            sample, aggregator = node.sample, node.aggregator
            rows.append(NodeStatus(
                name=node.process.name, port=node.port, pools=node.pools, links=node.links,
                peers=None if sample is None else sample.outbound_peers + sample.inbound_peers,
                held=None if sample is None else sample.messages_held,
                received=None if aggregator is None else len(aggregator.arrivals),
                duplicates=0 if aggregator is None else aggregator.duplicates,
                rate=0.0 if aggregator is None else aggregator.rate.rate(now),
                p50=None if aggregator is None else aggregator.latencies.percentile(0.5),
                p99=None if aggregator is None else aggregator.latencies.percentile(0.99)))
        tally = self.tally
        return DevnetStatus(self.phase, elapsed, self.options.duration, tally.attempted, len(tally.accepted),
                            sum(tally.rejected.values()), sum(tally.failed.values()), tuple(rows))

    async def _refresh(self, view: DevnetView) -> None:
        while True:
            for node in self.nodes:
                await self._scrape(node)
            view.update(self.status(), trio.current_time())
            await trio.sleep(_REFRESH)

    async def _publish(self, publishers: list[PoolPublisher]) -> None:
        options = self.options
        self.phase = "publishing"
        start = trio.current_time()
        self._publishing_started = start
        end = start + options.duration
        async with trio.open_nursery() as nursery:
            for k, publisher in enumerate(publishers):
                offset = options.period * k / len(publishers)
                nursery.start_soon(publisher.run, start + offset, options.period, end, self.tally)
        self._publishing_ended = trio.current_time()

    def _aggregators(self) -> list[Aggregator]:
        return [node.aggregator for node in self.nodes if node.aggregator is not None]

    def _delivered_everywhere(self) -> bool:
        expected = self.tally.accepted
        return all(aggregator.missing(expected) == 0 for aggregator in self._aggregators())

    async def _drain(self) -> None:
        self.phase = "draining"
        with trio.move_on_after(self.options.drain_timeout):
            while not self._delivered_everywhere():
                await trio.sleep(0.05)

    async def _traffic(self, view: DevnetView, publishers: list[PoolPublisher]) -> None:
        async with trio.open_nursery() as clients:
            for aggregator in self._aggregators():
                await clients.start(aggregator.run)
            clients.start_soon(self._refresh, view)
            await self._publish(publishers)
            await self._drain()
            for node in self.nodes:
                await self._scrape(node)
            view.update(self.status(), trio.current_time())
            clients.cancel_scope.cancel()

    async def _stop_nodes(self, grace: float) -> None:
        self.phase = "stopping"
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for node in self.nodes:
                    nursery.start_soon(node.process.stop, grace)

    async def _watch_signals(self, signals, work: trio.CancelScope) -> None:
        async for signum in signals:
            if self.interrupted is None:
                self.interrupted = signal.Signals(signum).name
                work.cancel()
            else:
                for node in self.nodes:
                    if node.process.running and node.process.process is not None:
                        node.process.process.kill()

    async def run(self) -> DevnetSummary:
        """Run the devnet to its end (or to the first signal) and return its summary."""
        prepare_directory(self.layout)
        self._check_socket_paths()
        pools, system_start = self._generate()
        publishers = self._plan_nodes(pools)
        failure: Exception | None = None
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            async with trio.open_nursery() as watcher:
                work = trio.CancelScope()
                watcher.start_soon(self._watch_signals, signals, work)
                try:
                    with work, make_view(self.console, self.options.live) as view:
                        await self._start_nodes()
                        await self._wait_for_links()
                        await self._traffic(view, publishers)
                except Exception as exc:
                    failure = exc
                finally:
                    await self._stop_nodes(self.options.stop_grace)
                    watcher.cancel_scope.cancel()
        if failure is not None:
            raise _single(failure)
        summary = self.summary(system_start)
        summary.write(self.layout.summary)
        return summary

    # -- the result ------------------------------------------------------------------
    def summary(self, started: datetime) -> DevnetSummary:
        expected = self.tally.accepted
        everything = LatencyRecorder()
        aggregators = []
        for node in self.nodes:
            aggregator = node.aggregator
            if aggregator is None:
                continue
            for message_id, arrived in aggregator.arrivals.items():
                publication = expected.get(message_id)
                if publication is not None:
                    everything.add(max(0.0, arrived - publication.sent_at))
            aggregators.append(AggregatorSummary(
                node=node.process.name,
                received=sum(1 for message_id in aggregator.arrivals if message_id in expected),
                missing=aggregator.missing(expected),
                duplicates=aggregator.duplicates,
                replays=aggregator.replays,
                unexpected=sum(1 for message_id in aggregator.arrivals if message_id not in expected),
                foreign=aggregator.foreign,
                connections=aggregator.connections_opened,
                errors=dict(aggregator.errors),
                latency=aggregator.latencies.summary(),
            ))
        nodes = tuple(NodeSummary(
            name=node.process.name, port=node.port, metrics_port=node.metrics_port,
            dials=[node_name(other) for other in node.dials], pools=node.pools,
            held=None if node.sample is None else node.sample.messages_held,
            ending=node.process.ending, returncode=node.process.returncode) for node in self.nodes)
        sizes = [p.size for p in expected.values()]
        publishing = 0.0
        if self._publishing_started is not None:
            publishing = (self._publishing_ended or trio.current_time()) - self._publishing_started
        return DevnetSummary(
            directory=str(self.layout.root),
            settings=self.options.settings(),
            started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            publishing_seconds=round(publishing, 3),
            attempted=self.tally.attempted,
            accepted=len(expected),
            rejected=dict(self.tally.rejected),
            failed=dict(self.tally.failed),
            mean_message_size=sum(sizes) / len(sizes) if sizes else None,
            aggregators=tuple(aggregators),
            nodes=nodes,
            latency=everything.summary(),
            recording=str(self.layout.recording) if self.options.record_traffic else None,
            interrupted=self.interrupted,
            warnings=tuple(self.warnings),
        )


def _single(failure: Exception) -> Exception:
    """The one error inside nested exception groups (how an operator error leaves a nursery)."""
    while isinstance(failure, BaseExceptionGroup) and len(failure.exceptions) == 1 \
            and isinstance(failure.exceptions[0], Exception):
        failure = failure.exceptions[0]
    return failure


async def run_devnet(options: DevnetOptions, *, console: Console | None = None,
                     clock: Clock | None = None) -> DevnetSummary:
    """Run a devnet, print its summary, and return it (also written as ``devnet-summary.json``)."""
    devnet = Devnet(options, console or Console(soft_wrap=True), clock or SystemClock())
    summary = await devnet.run()
    summary.render(devnet.console)
    devnet.console.print(f"summary written to {devnet.layout.summary}", highlight=False)
    return summary
