"""One simulated-network run: N full nodes in one trio run on a virtual clock, faults, a report.

Order of a run:

1. the pools (keys from the seed) and their stake file are made, the nodes are placed in
   regions (:mod:`.regions`) and given netlab's topology: three public roots each (the next
   node, so that the roots alone connect the network, and two drawn from the seed), peer
   sharing on, the reference relay targets (:mod:`lab.netlab.plan`);
2. every node is built by the composition root's ``assemble`` (``dmq.cli.wiring.assemble_node``,
   handed in: this package does not import the CLI) with a :class:`.links.SimTransport`, a
   :class:`dmq.clock.TrioClock`, the mempool's commits in the loop's thread and the shared
   memos of KES and opcert checks, one table of decoded received messages and one parsed stake
   file (:mod:`.checks`),
   and started; they find each other for ``warmup`` virtual seconds;
3. the pools publish to their home nodes through each node's local service (the code behind
   the local submission protocol), netlab's faults happen on netlab's schedule
   (:func:`lab.netlab.faults.plan_faults`) and the attacks of :mod:`.attacks` run;
4. the run waits (at most ``drain`` virtual seconds) until every node holds every accepted
   message and every fault has recovered, then stops every node and reports.

The caller runs :meth:`Simnet.run` under ``trio.run(..., clock=VirtualClock())``
(:func:`run_simnet` does); nothing here reads the machine's clock except to report how long
the run took.
"""

from __future__ import annotations

import gc
import os
import random
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import trio

from dmq.clock import TrioClock
from dmq.config import read_config
from dmq.diffusion import DiffusionPolicy
from dmq.networks import DEVNET
from dmq.node import Node
from dmq.topology import AccessPoint, PublicRootGroup, Topology
from dmq.trace import MessageAccepted, MessageRejected, TraceEvent, Tracer
from lab.netlab.addresses import MAX_NODES, node_address
from lab.netlab.faults import plan_faults
from lab.netlab.plan import NODE_PORT, RELAY_TARGETS, min_sig_delay_for, public_roots, workload_problem
from lab.netlab.report import FaultRecord, fault_windows
from lab.netlab.resources import read_memory_bytes

from .attacks import AttackRecord, Flooder, eclipse_topology
from .checks import (SharedDecodes, SharedKesChecks, SharedOpcertChecks, SharedStakeFiles, VirtualClock,
                     deterministic_scheduling, run_inline)
from .collector import CollectorTime
from .deliveries import Deliveries
from .heap import allocator_in_use
from .links import LinkModel, SimNetwork
from .regions import REGIONS, place_nodes, rtt_ms
from .report import SimnetReport
from .shards import WINDOW_MARGIN, DeliveryLog, Shard, replay, run_sharded, split_problem, split_regions
from .workload import make_pools, schedule, write_stake_file

__all__ = ["SimnetOptions", "Simnet", "run_simnet", "EPOCH"]

#: Wall-clock time at virtual time 0: expiry and signing read it. Not a whole second: a
#: signer sets ``expiresAt = floor(now) + 1800`` and the node refuses ``expiresAt >= now + 1800``
#: (docs/protocol/validation.md 6.2, check 2), so a message signed at a whole second exactly is
#: refused. A real clock practically never reads one; virtual time, stepping in round
#: fractions of a period, would often do so from a whole-second epoch.
EPOCH = 1_800_000_000 + 1 / 7


#: How often each node sweeps its mempool for expired messages. A node sweeps every 50 ms;
#: a thousand of them in one process would spend 20,000 wake-ups a simulated second on it,
#: for messages that live 30 minutes. One second keeps expiry exact to the second.
EXPIRY_INTERVAL = 1.0


#: The links' tick from :data:`TICK_FROM_NODES` nodes, milliseconds. Arrivals within one
#: millisecond then wake their readers in one pass of the run loop: at 1,000 nodes 12 % less CPU a
#: simulated second of publishing (a quarter less connecting and idle), for up to a millisecond
#: more per link traversal (the default jitter span of the two nearest regions' links; a
#: traversal inside one region, 1 ms, may take twice as long) and latencies 1 to 4 % longer
#: (docs/network-scale.md, "Links"). Smaller networks, which the tests run, keep exact times: a
#: hop there takes exactly its round trips.
TICK_MS = 1.0
TICK_FROM_NODES = 500


@dataclass(frozen=True)
class SimnetOptions:
    nodes: int = 200
    pools: int = 3000
    #: Seconds between two messages of one pool: 3,000 pools every 120 s are 1,500 a minute.
    period: float = 120.0
    #: Virtual seconds of publishing.
    duration: float = 600.0
    seed: int = 0
    roots: int = 3
    #: The governor's ``TargetNumberOfActivePeers``: the reference relay's unless lowered (a cheaper
    #: run: the work grows with nodes times peers).
    active_peers: int = RELAY_TARGETS["TargetNumberOfActivePeers"]
    kill_fraction: float = 0.1
    partition_fraction: float = 1 / 3
    #: A peer flooding the first victim with invalid messages.
    flood: bool = True
    #: Stake-less nodes that dial one victim only (0: no such cluster).
    eclipse: int = 0
    jitter: float = 0.1
    loss: float = 0.0
    #: Every pair of nodes this round trip (milliseconds) instead of the regions' matrix: the
    #: protocol's own timing, without the geography (with ``jitter`` 0, a hop to the exact
    #: round trip).
    uniform_rtt_ms: float | None = None
    rate_mbit: float | None = 100.0
    #: Virtual seconds for the nodes to find peers before publishing starts.
    warmup: float = 60.0
    #: Virtual seconds after publishing for the last messages and the recoveries.
    drain: float = 300.0
    #: Where the nodes' databases go (default: a fresh directory in a tmpfs when there is one).
    directory: Path | None = None
    #: Record every node's traffic for ``dmq capacity-report`` into this directory.
    record: Path | None = None
    #: Every node's ``SigSubmissionHoldAfterKnown``, milliseconds (0: the reference's timing; None:
    #: the node's default).
    hold_after_known_ms: float | None = None
    #: Every node's ``SigSubmissionHoldAfterKnownMax``, milliseconds (None: the node's default).
    hold_after_known_max_ms: float | None = None
    #: Link arrivals put off to the next multiple of this many milliseconds (``LinkModel.tick``; 0:
    #: exact times; None: :data:`TICK_MS` from :data:`TICK_FROM_NODES` nodes, exact below).
    tick_ms: float | None = None

    def __post_init__(self) -> None:
        if not 2 <= self.nodes <= MAX_NODES - self.eclipse - 1:
            raise ValueError(f"a simulated network has 2..{MAX_NODES - 1} nodes, got {self.nodes}")
        problem = workload_problem(self.pools, self.period, self.duration, self.kill_fraction,
                                   self.partition_fraction)
        if problem is not None:
            raise ValueError(problem)
        if self.hold_after_known_ms is not None and not self.hold_after_known_ms >= 0:
            raise ValueError(f"a hold after known ids is a number of milliseconds >= 0, got {self.hold_after_known_ms}")
        if self.hold_after_known_max_ms is not None and not self.hold_after_known_max_ms >= 0:
            raise ValueError("the longest hold after known ids is a number of milliseconds >= 0, "
                             f"got {self.hold_after_known_max_ms}")
        if self.tick_ms is not None and not self.tick_ms >= 0:
            raise ValueError(f"a link tick is a number of milliseconds >= 0, got {self.tick_ms}")
        if self.uniform_rtt_ms is not None and not self.uniform_rtt_ms > 0:
            raise ValueError(f"a uniform round trip is a positive number of milliseconds, got {self.uniform_rtt_ms}")

    @property
    def min_sig_delay(self) -> float:
        return min_sig_delay_for(self.period)

    @property
    def link_tick_ms(self) -> float:
        """The tick the links run on, ``tick_ms`` or its default for this many nodes."""
        if self.tick_ms is not None:
            return self.tick_ms
        return TICK_MS if self.nodes >= TICK_FROM_NODES else 0.0

    def settings(self) -> dict[str, Any]:
        values = asdict(self)
        for key in ("directory", "record"):
            values[key] = None if values[key] is None else str(values[key])
        values["min_sig_delay"] = self.min_sig_delay
        values["link_tick_ms"] = self.link_tick_ms
        return values


#: ``dmq.cli.wiring.assemble_node``, or anything with its signature.
Assemble = Callable[..., Node]


@dataclass(eq=False)
class SimNode:
    index: int
    host: str
    region: int
    directory: Path
    topology: Topology
    node: Node | None = None
    scope: trio.CancelScope | None = None
    stopped: trio.Event = field(default_factory=trio.Event)

    @property
    def running(self) -> bool:
        return self.node is not None and not self.stopped.is_set()


def _tmpfs_root() -> Path:
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix="dqs", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))


class Simnet:
    """One run; :meth:`run` returns its report."""

    def __init__(self, options: SimnetOptions, assemble: Assemble, *, say: Callable[[str], None] = lambda text: None,
                 policy: DiffusionPolicy | None = None) -> None:
        self.options = options
        self.assemble = assemble
        self.say = say
        self.policy = policy or DiffusionPolicy()
        total = options.nodes + options.eclipse + (1 if options.flood else 0)
        self.hosts = [node_address(i) for i in range(total)]
        self.regions = place_nodes(total, options.seed)
        if options.uniform_rtt_ms is None:
            rtt = lambda a, b: rtt_ms(self.regions[a], self.regions[b]) / 1000  # noqa: E731
        else:
            rtt = lambda a, b: options.uniform_rtt_ms / 1000  # noqa: E731
        model = LinkModel(rtt=rtt, jitter=options.jitter,
                          loss=options.loss, rate_bps=None if options.rate_mbit is None else options.rate_mbit * 1e6,
                          seed=options.seed, tick=options.link_tick_ms / 1000)
        self.net = SimNetwork(model, self.hosts)
        self.deliveries = Deliveries(options.nodes, self.net.index_of, relays=options.eclipse)
        self.checks = SharedKesChecks()
        self.opcert_checks = SharedOpcertChecks()
        self.received = SharedDecodes()
        self.stake_files = SharedStakeFiles()
        self.clock = TrioClock(EPOCH)
        self.faults: list[FaultRecord] = []
        self.attacks: list[AttackRecord] = []
        self.rejections: dict[str, int] = {}
        self.tally = {"attempted": 0, "accepted": 0, "rejected": 0, "failed": 0}
        self.nodes: list[SimNode] = []
        self._recovering = 0
        self._message_size = 0
        #: This process's CPU seconds at the run's milestones (see :meth:`cost`).
        self._cpu_marks: dict[str, float] = {}
        self._write_marks: dict[str, int] = {}
        #: In a run over two processes, this process's wall seconds and its seconds waiting for the
        #: other at the milestones: in which phase the processes hold each other.
        self._wall_marks: dict[str, float] = {}
        self._wait_marks: dict[str, float] = {}
        #: The process's memory at the milestones (MiB: resident, its own heap, shared memory such
        #: as the stores' maps on a tmpfs), and the collector's time (see :meth:`cost`).
        self._memory_marks: dict[str, dict[str, float]] = {}
        self.collector = CollectorTime()
        #: This process's part of a run over two processes (:mod:`.shards`, :meth:`split`); None: all of it.
        self.shard: Shard | None = None
        self.log: DeliveryLog | None = None
        #: Each process's figures of a merged run (:meth:`merge`); empty in a run of one process.
        self._processes: list[dict[str, Any]] = []

    def split(self, shard: Shard) -> None:
        """Run only ``shard``'s nodes here, linked to the other process's through it (:mod:`.shards`);
        :meth:`run` then returns this process's :meth:`part` for :meth:`merge`, not a report."""
        self.shard = shard
        shard.attach(self.net)
        self.log = DeliveryLog(self.net.index_of)
        shard.missing_here = lambda: self.deliveries.missing_at(shard.nodes_here)
        shard.expect = self.deliveries.expect
        shard.withdraw = self.deliveries.withdraw

    def _runs_here(self, index: int) -> bool:
        return self.shard is None or self.shard.runs(index)

    # -- building ---------------------------------------------------------------------------

    def _topology(self, index: int) -> Topology:
        options = self.options
        roots = public_roots(options.nodes, index, options.roots, options.seed)
        points = tuple(AccessPoint(self.hosts[other], NODE_PORT) for other in roots)
        return Topology(public_roots=(PublicRootGroup(points, advertise=True),))

    def _config(self, sim: SimNode, stake_file: Path):
        return read_config(self._config_values(sim, stake_file))

    def _config_values(self, sim: SimNode, stake_file: Path) -> dict[str, str]:
        """The node's settings, as ``read_config`` takes them (a run of another kind adds its own)."""
        directory = sim.directory
        directory.mkdir(parents=True, exist_ok=True)
        values = {
            "ConfigFile": str(directory / "absent.json"),
            "NetworkMagic": str(DEVNET.dmq),
            "IPv4": sim.host,
            "PortNumber": str(NODE_PORT),
            "LocalAddress": str(directory / "s"),
            "StakeSource": str(stake_file),
            "DatabasePath": str(directory / "db"),
            "MinSigDelay": str(self.options.min_sig_delay),
            **{key: str(value) for key, value in RELAY_TARGETS.items()},
            "TargetNumberOfActivePeers": str(self.options.active_peers),
        }
        if self.options.hold_after_known_ms is not None:
            values["SigSubmissionHoldAfterKnown"] = str(self.options.hold_after_known_ms)
        if self.options.hold_after_known_max_ms is not None:
            values["SigSubmissionHoldAfterKnownMax"] = str(self.options.hold_after_known_max_ms)
        if self.options.record is not None:
            values["RecordTraffic"] = str(self.options.record)
        return values

    def _sink(self, index: int) -> Callable[[TraceEvent], None]:
        deliveries, rejections, log = self.deliveries, self.rejections, self.log

        def sink(event: TraceEvent) -> None:
            kind = type(event)
            if kind is MessageAccepted:
                deliveries.accepted(index, event.message_id, event.origin, trio.current_time())
                if log is not None and event.message_id in deliveries.published:
                    log.record(index, event.message_id, event.origin, trio.current_time())
            elif kind is MessageRejected:
                # Counted by error, without its details (pool, seconds), which differ on every rejection.
                reason = event.reason.split(" ", 1)[0]
                rejections[reason] = rejections.get(reason, 0) + 1
        return sink

    def _build(self, sim: SimNode) -> Node:
        tracer = Tracer(self.clock.now)
        tracer.add_sink(self._sink(sim.index))
        policy = replace(self.policy, seed=random.Random(f"dmq-simnet-governor/{self.options.seed}/{sim.index}")
                         .getrandbits(32))
        return self.assemble(self._config(sim, self._stake_file), sim.topology, clock=self.clock, tracer=tracer,
                             diffusion_policy=policy, transport=self.net.transport(sim.index),
                             run_blocking=run_inline, kes_verifier=self.checks, opcert_verifier=self.opcert_checks,
                             decode_received=self.received, read_stake_file=self.stake_files, store_sync=False,
                             expiry_interval=EXPIRY_INTERVAL,
                             **self._assembly_options())

    def _assembly_options(self) -> dict[str, Any]:
        """More keyword arguments of ``assemble`` (a run of another kind adds its own)."""
        return {}

    async def _serve(self, sim: SimNode, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        assert sim.node is not None
        try:
            with trio.CancelScope() as scope:
                sim.scope = scope
                await sim.node.run(task_status=task_status)
        finally:
            sim.stopped.set()

    async def start(self, sim: SimNode, nursery: trio.Nursery) -> None:
        sim.stopped = trio.Event()
        sim.node = self._build(sim)
        await nursery.start(self._serve, sim)

    async def stop(self, sim: SimNode) -> None:
        if sim.running and sim.scope is not None:
            sim.scope.cancel()
            await sim.stopped.wait()

    # -- traffic ----------------------------------------------------------------------------

    async def _submit(self, sim: SimNode, message_id: bytes, raw: bytes) -> None:
        assert sim.node is not None
        try:
            result = await sim.node.local_service.submit(raw)
        except Exception as exc:  # the node stopped under the submission: as a client sees a lost socket
            self._withdraw(message_id)
            self.tally["failed"] += 1
            self.rejections[f"failed: {type(exc).__name__}"] = self.rejections.get(f"failed: {type(exc).__name__}", 0) + 1
            return
        if self.deliveries.published.get(message_id) is not None and self.deliveries.published[message_id].reached:
            self.tally["accepted"] += 1
        else:
            self._withdraw(message_id)
            self.tally["rejected"] += 1
            self.rejections[f"local: {result!r}"] = self.rejections.get(f"local: {result!r}", 0) + 1

    def _withdraw(self, message_id: bytes) -> None:
        self.deliveries.withdraw(message_id)
        if self.shard is not None:
            self.shard.withdrawn(message_id)

    async def _publish(self, pools, started: float, nursery: trio.Nursery) -> None:
        options = self.options
        builders = [pool.builder(self.clock) for pool in pools]
        for at, index, sequence in schedule(options.pools, options.period, options.duration):
            await trio.sleep_until(started + at)
            sim = self.nodes[index % options.nodes]
            if not self._runs_here(sim.index):
                continue
            self.tally["attempted"] += 1
            message = pools[index].sign(builders[index], sequence, self.clock.now())
            self._message_size = len(message.raw)
            if not sim.running:
                self.tally["failed"] += 1
                continue
            self.deliveries.expect(message.message_id, sim.index, trio.current_time())
            if self.shard is not None:
                self.shard.published(message.message_id, sim.index, trio.current_time())
            nursery.start_soon(self._submit, sim, message.message_id, message.raw)

    # -- faults -----------------------------------------------------------------------------

    async def _recover(self, record: FaultRecord, started: float) -> None:
        """``record.recovery_seconds``: from the fault's end until every node holds what was accepted by then."""
        self._recovering += 1
        ended = trio.current_time()
        pending = self.deliveries.incomplete()
        while pending:
            await trio.sleep(0.1)
            pending = [message_id for message_id in pending if not self.deliveries.complete(message_id)]
        record.recovery_seconds = round(trio.current_time() - ended, 3)
        self._recovering -= 1

    async def _kill_and_restart(self, victims, at: float, down: float, started: float, record: FaultRecord,
                                nursery: trio.Nursery, recoveries: trio.Nursery) -> None:
        await trio.sleep_until(started + at)
        for index in victims:
            await self.stop(self.nodes[index])
        gc.collect()  # what the killed nodes held (the collector is off while the nodes run)
        record.began_at = round(trio.current_time() - started, 3)
        await trio.sleep(down)
        for index in victims:
            await self.start(self.nodes[index], nursery)
        record.ended_at = round(trio.current_time() - started, 3)
        recoveries.start_soon(self._recover, record, started)

    async def _partition(self, victims, at: float, length: float, started: float, record: FaultRecord,
                         recoveries: trio.Nursery) -> None:
        await trio.sleep_until(started + at)
        self.net.cut(set(victims))
        record.began_at = round(trio.current_time() - started, 3)
        await trio.sleep(length)
        self.net.heal()
        record.ended_at = round(trio.current_time() - started, 3)
        recoveries.start_soon(self._recover, record, started)

    # -- the run ----------------------------------------------------------------------------

    async def run(self) -> Any:
        """The run, in ``options.directory`` or a fresh directory removed afterwards; its report."""
        options = self.options
        wall = self._wall = time.perf_counter()
        self._cpu = time.process_time()
        root = options.directory or _tmpfs_root()
        root.mkdir(parents=True, exist_ok=True)
        try:
            return await self._run_in(root, wall)
        finally:
            if options.directory is None:
                shutil.rmtree(root, ignore_errors=True)

    async def _run_in(self, root: Path, wall: float) -> SimnetReport:
        options = self.options
        # One more staked pool than publish: the flooder forges its messages (checks 1 to 9 pass).
        pools = make_pools(options.pools + 1, options.seed)
        self._stake_file = write_stake_file(root / "stake.json", pools, options.seed)
        self.say(f"{options.pools:,} pools ({time.perf_counter() - wall:.0f} s)")
        victims = plan_faults(options.nodes, options.duration, options.kill_fraction, options.partition_fraction,
                              options.seed)
        self.nodes = [SimNode(i, self.hosts[i], self.regions[i], root / f"n{i}", self._topology(i))
                      for i in range(options.nodes)]
        attackers = [SimNode(i, self.hosts[i], self.regions[i], root / f"n{i}",
                             eclipse_topology(self.hosts[self._eclipse_victim(victims)], NODE_PORT))
                     for i in range(options.nodes, options.nodes + options.eclipse)]
        return await self._run(pools, victims, attackers, wall)

    def _eclipse_victim(self, plan) -> int:
        """A node hit by no other fault (the eclipse is measured alone)."""
        busy = set(plan.kill) | set(plan.partition)
        return next((i for i in range(self.options.nodes) if i not in busy), 0)

    async def _run(self, pools, plan, attackers: list[SimNode], wall: float) -> SimnetReport:
        options = self.options
        self._mark("pools")
        async with trio.open_nursery() as nursery:
            for sim in self.nodes + attackers:
                if self._runs_here(sim.index):
                    await self.start(sim, nursery)
            self.say(f"{sum(1 for sim in self.nodes if sim.running)} nodes started ({time.perf_counter() - wall:.0f} s)")
            self._mark("started")
            # The second half of the warm-up is the idle cost: connections are up, nothing is published.
            await trio.sleep(options.warmup / 2)
            self._mark("settled")
            await trio.sleep(options.warmup / 2)
            self._mark("warm")
            started = trio.current_time()
            self._started = started
            async with trio.open_nursery() as recoveries:
                async with trio.open_nursery() as work:
                    work.start_soon(self._publish, pools, started, work)
                    names = lambda victims: [self.hosts[i] for i in victims]  # noqa: E731
                    if plan.kill:
                        record = FaultRecord("kill -9 and restart", names(plan.kill), plan.kill_at)
                        self.faults.append(record)
                        work.start_soon(self._kill_and_restart, plan.kill, plan.kill_at, plan.kill_seconds, started,
                                        record, nursery, recoveries)
                    if plan.partition:
                        record = FaultRecord("partition and heal", names(plan.partition), plan.partition_at)
                        self.faults.append(record)
                        work.start_soon(self._partition, plan.partition, plan.partition_at, plan.partition_seconds,
                                        started, record, recoveries)
                    if options.flood:
                        victim = self._eclipse_victim(plan)
                        flooder = Flooder(self.net, len(self.hosts) - 1, self.hosts[victim], NODE_PORT,
                                          DEVNET.dmq, pools[options.pools], self.clock,
                                          rng=random.Random(f"dmq-simnet-flooder/{options.seed}"))
                        self.attacks.append(flooder.record)
                        nursery.start_soon(flooder.run, started + 0.3 * options.duration, 0.2 * options.duration)
                    if attackers:
                        victim = self._eclipse_victim(plan)
                        self.attacks.append(AttackRecord(
                            "eclipse", self.hosts[victim],
                            f"{len(attackers)} stake-less nodes whose only root is the victim"))
                self._ended = trio.current_time()
                self._mark("published")
                self.say(f"publishing done ({time.perf_counter() - wall:.0f} s wall, "
                         f"{time.process_time() - self._cpu:.0f} s CPU)")
                with trio.move_on_after(options.drain):
                    while self._missing() or self._recovering:
                        await trio.sleep(1.0)
                recoveries.cancel_scope.cancel()
            self._drained = trio.current_time()
            self._mark("drained")
            report = self.report(wall, attackers) if self.shard is None else self.part()
            nursery.cancel_scope.cancel()
        return report

    def _missing(self) -> int:
        """Deliveries still missing; in a run over two processes, both processes' at the last window's end
        (so that both stop draining at the same virtual second)."""
        return self.deliveries.missing() if self.shard is None else self.shard.missing

    def _mark(self, milestone: str) -> None:
        self._cpu_marks[milestone] = cpu = time.process_time()
        self._write_marks[milestone] = self.net.writes
        self._wall_marks[milestone] = time.perf_counter()
        self._wait_marks[milestone] = 0.0 if self.shard is None else self.shard.seconds_waiting
        memory = read_memory_bytes(os.getpid()) or {}
        self._memory_marks[milestone] = {name: round(size / 2**20, 1) for name, size in memory.items()}
        self.say(f"{milestone} at {trio.current_time():.1f} virtual s: {cpu - self._cpu:.1f} s CPU, "
                 f"{self.net.writes:,} link writes, RSS {memory.get('VmRSS', 0) / 2**20:,.0f} MiB "
                 f"(heap {memory.get('RssAnon', 0) / 2**20:,.0f}, shared {memory.get('RssShmem', 0) / 2**20:,.0f}), "
                 f"collector {sum(self.collector.seconds):.1f} s")

    def cost(self) -> dict[str, Any]:
        """Where this process's CPU went, and the two figures that extrapolate a run to other sizes and rates.

        The second half of the warm-up has every connection up and nothing published: its CPU
        over the nodes and its virtual seconds is the idle cost of a node (keep-alive, the V2
        blocking requests answered with no ids every 17 s, the governor, the mempool's sweeps).
        What publishing and the drain cost beyond that idle cost, over the accepted messages,
        is the cost of one message at this size and degree; link writes are counted the same
        way (one write is one batch of SDUs handed to a link).
        """
        writes = self._write_marks
        phases = _by_phase(self._cpu_marks, self._cpu)
        node_seconds = self.options.nodes * self.options.warmup / 2
        idle_rate = phases["idle"] / node_seconds if node_seconds else 0.0
        idle_writes = (writes["warm"] - writes["settled"]) / node_seconds if node_seconds else 0.0
        busy_node_seconds = self.options.nodes * (self._drained - self._started)
        accepted = max(1, len(self.deliveries.published))
        message_cpu = phases["publishing"] + phases["drain"] - idle_rate * busy_node_seconds
        message_writes = writes["drained"] - writes["warm"] - idle_writes * busy_node_seconds
        published = self._ended - self._started
        processes = {"processes": self._processes} if self._processes else {}
        return {**processes, "cpu_seconds_by_phase": {name: round(value, 2) for name, value in phases.items()},
                "memory_mib_by_milestone": self._memory_marks, "collector": self.collector.snapshot(),
                "publishing_cpu_per_simulated_second": round(phases["publishing"] / published, 2) if published else None,
                "idle_cpu_us_per_node_second": round(idle_rate * 1e6, 1),
                "idle_link_writes_per_node_second": round(idle_writes, 3),
                "cpu_ms_per_message": round(message_cpu / accepted * 1e3, 1),
                "link_writes_per_message": round(message_writes / accepted, 1),
                "cpu_us_per_link_write": round(message_cpu / message_writes * 1e6, 1) if message_writes > 0 else None}

    def _check_stats(self) -> dict[str, dict[str, int]]:
        """The shared checks' and decodes' counts, as the report gives them."""
        return {"kes_checks": self.checks.stats(), "opcert_checks": self.opcert_checks.stats(),
                "received_messages": self.received.stats()}

    def _connections(self) -> list[int]:
        """Each running node's open connections."""
        return [sum(1 for peer in sim.node.diffusion.peers if peer.mux is not None) for sim in self.nodes
                if sim.running and sim.node is not None and sim.node.diffusion is not None]

    def part(self) -> dict[str, Any]:
        """This process's share of a run over two processes, for :meth:`merge` in the parent."""
        shard = self.shard
        assert shard is not None
        return {"cpu": self._cpu, "cpu_marks": self._cpu_marks, "write_marks": self._write_marks,
                "memory_marks": self._memory_marks,
                "collector": (self.collector.collections, self.collector.seconds, self.collector.collected),
                "tally": self.tally, "rejections": self.rejections, "bytes_sent": self.net.bytes_sent,
                "published": [(message_id, record.home, record.sent_at)
                              for message_id, record in self.deliveries.published.items() if shard.runs(record.home)],
                "log": self.log, "times": (self._started, self._ended, self._drained),
                "message_size": self._message_size, "connections": self._connections(),
                "stats": self._check_stats(), "cpu_seconds": time.process_time() - self._cpu,
                "peak_rss_mib": process_peak_rss_mib(),
                "process": {"nodes": shard.nodes_here,
                            "windows": shard.exchanges, "window_ms": round(shard.window * 1000, 3),
                            "mib_exchanged": round(shard.bytes_exchanged / 2**20, 1),
                            "wall_seconds_waiting": round(shard.seconds_waiting, 1),
                            "wall_seconds_by_phase": {name: round(value, 1) for name, value in
                                                      _by_phase(self._wall_marks, self._wall).items()},
                            "wall_seconds_waiting_by_phase": {name: round(value, 1) for name, value in
                                                              _by_phase(self._wait_marks, 0.0).items()},
                            "cpu_seconds": round(time.process_time() - self._cpu, 1)}}

    def merge(self, parts: list[dict[str, Any]], wall: float) -> SimnetReport:
        """One report of a run over two processes, from their :meth:`part`: the deliveries replayed in
        time order (:func:`.shards.replay`), the counts summed."""
        for part in parts:
            for message_id, home, sent_at in part["published"]:
                self.deliveries.expect(message_id, home, sent_at)
        replay([part["log"] for part in parts], self.deliveries, self.hosts)
        for part in parts:
            for key, value in part["tally"].items():
                self.tally[key] += value
            for key, value in part["rejections"].items():
                self.rejections[key] = self.rejections.get(key, 0) + value
            self.net.bytes_sent = [a + b for a, b in zip(self.net.bytes_sent, part["bytes_sent"])]
            for index, values in enumerate(part["collector"]):
                for generation, value in enumerate(values):
                    (self.collector.collections, self.collector.seconds, self.collector.collected)[index][generation] += value
        self._cpu = 0.0
        self._cpu_marks = {mark: sum(part["cpu_marks"][mark] - part["cpu"] for part in parts) for mark in parts[0]["cpu_marks"]}
        self._write_marks = {mark: sum(part["write_marks"][mark] for part in parts) for mark in parts[0]["write_marks"]}
        self._memory_marks = {mark: {name: round(sum(part["memory_marks"][mark].get(name, 0) for part in parts), 1)
                                     for name in parts[0]["memory_marks"][mark]} for mark in parts[0]["memory_marks"]}
        self._started, self._ended, self._drained = parts[0]["times"]
        self._message_size = max(part["message_size"] for part in parts)
        self._processes = [part["process"] for part in parts]
        stats = {name: {key: sum(part["stats"][name][key] for part in parts) for key in parts[0]["stats"][name]}
                 for name in parts[0]["stats"]}
        return self.report(wall, [], degree=[count for part in parts for count in part["connections"]],
                           cpu=sum(part["cpu_seconds"] for part in parts),
                           peak_rss_mib=sum(part["peak_rss_mib"] for part in parts), stats=stats)

    def report(self, wall: float, attackers: list[SimNode], *, degree: list[int] | None = None,
               cpu: float | None = None, peak_rss_mib: float | None = None,
               stats: dict[str, dict[str, int]] | None = None) -> SimnetReport:
        """The run's report; a merged run (:meth:`merge`) gives its processes' connections, CPU and peak memory."""
        options = self.options
        deliveries = self.deliveries
        everything, steady, by_hop = deliveries.latency_summary(fault_windows(self.faults, self._started))
        if degree is None:
            degree = self._connections()
        for attack in self.attacks:
            if attack.kind == "eclipse":
                victim = self.nodes[self.net.index_of[attack.target]]
                attack.outcome = _eclipse_outcome(victim, attackers, deliveries)
        accepted = len(deliveries.published)
        node_bytes = self.net.bytes_sent[:options.nodes]
        simulated = self._drained  # virtual time starts at 0: warm-up, publishing and drain
        seconds = time.perf_counter() - wall
        if cpu is None:
            cpu = time.process_time() - self._cpu
        if peak_rss_mib is None:
            peak_rss_mib = process_peak_rss_mib()
        if stats is None:
            stats = self._check_stats()
        return SimnetReport(
            settings=options.settings(), load_average=os.getloadavg(), wall_seconds=round(seconds, 1),
            simulated_seconds=round(simulated, 3), publishing_seconds=round(self._ended - self._started, 3),
            wall_per_simulated_minute=round(seconds / (simulated / 60), 1), cpu_seconds=round(cpu, 1),
            cpu_per_simulated_minute=round(cpu / (simulated / 60), 1),
            attempted=self.tally["attempted"], accepted=accepted, rejected=self.tally["rejected"],
            failed=self.tally["failed"], missing=deliveries.missing(), duplicates=deliveries.duplicates,
            unknown_hops=deliveries.unknown_hops, latency=everything, steady_latency=steady, latency_by_hop=by_hop,
            hops=deliveries.hop_profile(), bytes_sent=sum(node_bytes),
            bytes_per_message_per_node=round(sum(node_bytes) / max(1, accepted) / options.nodes, 1),
            mean_connections=round(sum(degree) / len(degree), 2) if degree else 0.0,
            message_size=self._message_size, faults=self.faults, attacks=self.attacks,
            rejections=dict(sorted(self.rejections.items())), **stats,
            regions={name: self.regions[:options.nodes].count(i) for i, name in enumerate(REGIONS)},
            missing_examples=deliveries.missing_examples(self.hosts), cost=self.cost(),
            peak_rss_mib=peak_rss_mib, allocator=allocator_in_use())


def process_peak_rss_mib() -> float:
    """This process's peak resident memory so far, MiB (Linux reports ``ru_maxrss`` in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _eclipse_outcome(victim: SimNode, attackers: list[SimNode], deliveries: Deliveries) -> dict[str, Any]:
    missing = sum(1 for record in deliveries.published.values() if record.hops[victim.index] == 255)
    inbound = outbound = 0
    if victim.node is not None and victim.node.diffusion is not None:
        attacker_hosts = {sim.host for sim in attackers}
        for peer in victim.node.diffusion.peers:
            if peer.mux is None:
                continue
            if peer.peer.rpartition(":")[0] in attacker_hosts:
                inbound += 1
            else:
                outbound += 1
    return {"victim_missing": missing, "attacker_connections_at_end": inbound, "honest_connections_at_end": outbound}


def run_simnet(options: SimnetOptions, assemble: Assemble, *, say: Callable[[str], None] = lambda text: None,
               policy: DiffusionPolicy | None = None, processes: int = 1) -> SimnetReport:
    """Run ``options`` in a trio run of its own on a virtual clock; the same seed gives the same report
    (apart from the wall-clock figures), in one process and across processes with one ``PYTHONHASHSEED``.

    With ``processes=2`` the nodes are split between two processes by region (:mod:`.shards`):
    about half the wall time on two cores, the same seed giving the same report for that split
    (not the one-process report of that seed).
    """
    if processes == 1:
        return run_on_virtual_clock(Simnet(options, assemble, say=say, policy=policy))
    if processes != 2:
        raise ValueError(f"a simulated network runs in one process or two, not {processes}")
    problem = split_problem(options)
    if problem is not None:
        raise ValueError(problem)
    wall = time.perf_counter()
    whole = Simnet(options, assemble, say=say, policy=policy)
    uniform = options.uniform_rtt_ms
    owner, lookahead = split_regions(whole.regions[:options.nodes],
                                     lambda a, b: (rtt_ms(a, b) if uniform is None else uniform) / 1000)
    window = lookahead * (1 - WINDOW_MARGIN)
    say(f"two processes: {owner.count(0)} and {owner.count(1)} nodes, windows of {window * 1000:.3f} virtual ms")

    def run_part(shard: Shard) -> dict[str, Any]:
        directory = None if options.directory is None else options.directory / f"process{shard.index}"
        part = Simnet(replace(options, directory=directory), assemble,
                      say=lambda text: say(f"[{shard.index}] {text}"), policy=policy)
        part.split(shard)
        return run_on_virtual_clock(part)

    return whole.merge(run_sharded(run_part, owner, window), wall)


def _by_phase(marks: dict[str, float], begun: float) -> dict[str, float]:
    """What a counter (CPU, wall or waiting seconds) gained in each phase of a run, from its values
    at the milestones (:meth:`Simnet._mark`) and ``begun``, its value when the run began."""
    names = ("pools", "started", "settled", "warm", "published", "drained")
    phases = ("pools", "start", "connect", "idle", "publishing", "drain")
    values = [begun, *(marks[name] for name in names)]
    return {phase: after - before for phase, before, after in zip(phases, values, values[1:])}


def run_on_virtual_clock(simnet: Simnet) -> Any:
    """``simnet.run()`` in a trio run of its own on the virtual clock, scheduled by its seed.

    The cyclic collector is off while the nodes run. Hundreds of nodes in one process hold
    gigabytes of live objects (connections, tasks, message entries) that each automatic collection
    walked again and found none of them garbage: with young collections every million
    allocations, 54 objects collected in a whole 300-node run at mainnet's rate, for 2.6 CPU s, and
    14 CPU s of a 1,000-node run's connecting (the heap grows from 0.8 to 3.6 GiB then). A node's
    own process keeps its collector (``dmq.gc_tuning``). The one place a simulation makes cyclic
    garbage in bulk is a kill (the victims' whole object graphs): a full collection runs there
    (:meth:`Simnet._kill_and_restart`).
    """
    deterministic_scheduling(simnet.options.seed)
    enabled = gc.isenabled()
    gc.disable()
    try:
        with simnet.collector:
            return trio.run(simnet.run, clock=VirtualClock(simnet.shard))
    finally:
        if enabled:
            gc.enable()
