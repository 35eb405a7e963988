"""A long life compressed: Mithril-pattern publishers, reconnecting aggregators, restarts, a peer
joining and leaving and topic subscribers against real ``dmq-node`` processes, sampled over time.

What runs (every process is a separate program, started and stopped here):

- three ``dmq-node`` processes in a line (node-1 - node-2 - node-3), started by the devnet's
  launcher (``lab/devnet/node_process.py``) from pools, a Shelley genesis and a stake file made
  as ``dmq devnet`` makes them. They carry ``raw`` and ``blocklace`` (``MithrilNetwork`` false,
  so that topic subscribers have a topic to read) with a token bucket wide enough for the rate;
- Mithril's publisher exactly, at ``--rate`` messages a second spread over the three nodes: the
  pallas harness (``dmq-pallas-interop 1.1.1 signer --connection mithril``, pallas-network
  1.1.1 as Mithril pins it) opens a connection per message, sends MsgDone and drops the client
  without closing it, and the process stays alive for ``--signer-life`` seconds holding every
  such socket. Messages are signed here with the pools' KES keys, with a short ``--ttl``, so
  that the node's window of unexpired messages is full early in the run;
- one Mithril-style aggregator per node (the harness's ``aggregator``, no de-duplication),
  killed and started again every ``--aggregator-life`` seconds;
- node restarts every ``--restart-every`` seconds, in turn over the three nodes (``--restart-nodes``), alternately
  SIGKILL and SIGTERM, each down for ``--down-for`` seconds;
- a fourth node joining (dialling node-2 and node-3) and leaving (SIGTERM), with its own
  aggregator while it is up;
- ``dmq topic subscribe --adapter raw`` on node-2, resubscribing every ``--subscriber-life`` s.

Every ``--sample`` seconds each node's open descriptors (``/proc/<pid>/fd``), RSS and CPU (the
``/proc`` readers of ``lab/netlab/resources.py``), database size on disk, messages held and
accepted (its metrics endpoint), and the messages each aggregator has delivered are written to
``samples.jsonl``; ``soak.png`` plots them and ``soak-summary.json`` holds the verdicts.

The checks (exit status 1 if one fails), on the samples taken while publishing:

- *flat*: for each of the three line nodes, over the second half of the publishing period (and
  only once the TTL window is full), leaving out the ``--settle`` seconds after each (re)start:
  the drift of a least-squares line (its slope times that half's length) is at most
  ``--max-drift`` of the series' mean (descriptors: or ``--fd-slack``, whichever is more, as
  idle connections come and go with each signer process), and RSS's max/min is at most
  ``--max-rss-ratio``;
- *database bounded*: the largest database in the second half is at most ``--max-db-growth``
  times the largest in the first half (after the window is full; when the window fills about
  the middle of a short run, the second half begins ``FIRST_HALF_SAMPLES`` samples later, so
  that the first has something to compare with);
- *nothing acknowledged lost*: every message a node acknowledged to a publisher is delivered to
  the aggregators of each node that could be reached from the acknowledging node for at least
  ``--grace`` seconds of the message's life (from its acknowledgement to its expiry): both up,
  every node between them in the line up as well, and the links between them connected as
  sampled (a dialler retries a restarted peer with a back-off; :func:`owed_messages`). It is delivered
  by the node's own aggregator, or by a later one that the node's store or its peers served after
  a restart;
- *nodes*: none ended unless told to, none wrote a traceback, each ended within its grace
  period of SIGTERM or SIGINT; no publication was rejected, and none failed while its node was
  up (from the submission to the answer);
- *subscribers*: every topic subscription that lived ``--subscriber-life`` seconds got items.
- *links*: each link was connected in at least half the samples in which both its ends ran
  (:func:`link_checks`), so a link that never comes back fails here, not only by what it carried.

Run from the checkout: ``.venv/bin/python bench/soak.py --dir soak-run`` (an hour by default;
the short version, tests/reliability/test_soak.py, runs about a minute).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.mithril import GenesisClockKesPeriod, MessageBuilder, SigningCredentials  # noqa: E402
from dmq.clock import SystemClock  # noqa: E402
from dmq.networks import DEVNET  # noqa: E402
from dmq.ports import free_ports  # noqa: E402
from dmq.stake import load_shelley_genesis  # noqa: E402
from lab.devnet.genesis import write_shelley_genesis, write_stake_file  # noqa: E402
from lab.devnet.node_process import SOCKET_FILE, NodeFiles, NodeProcess  # noqa: E402
from lab.devnet.pools import generate_pools  # noqa: E402
from lab.devnet.probe import Probe, probe_body  # noqa: E402
from lab.devnet.scrape import ScrapeError, scrape_node  # noqa: E402
from lab.devnet.topology import topology_document  # noqa: E402
from lab.netlab.resources import read_cpu_seconds, read_rss_bytes  # noqa: E402
from tests.interop.pallas_harness import harness_path  # noqa: E402

HOST = "127.0.0.1"
#: The pallas-network line current Mithril pins (``internal/mithril-dmq/Cargo.toml``).
PALLAS = "1.1.1"
LINE = ("node-1", "node-2", "node-3")
JOINER = "node-4"
#: Whom each node dials: the only links of the run, so a message reaches node-1 from node-3 only
#: through node-2.
DIALS = {"node-1": (), "node-2": ("node-1",), "node-3": ("node-2",), JOINER: ("node-2", "node-3")}
#: The node the topic subscribers read from.
SUBSCRIBED = "node-2"
STOP_GRACE = 30.0


def message_key(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:32]


def open_descriptors(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def disk_bytes(directory: Path) -> int:
    """Bytes the files under ``directory`` take on disk (allocated blocks, as ``du``)."""
    total = 0
    for root, _, names in os.walk(directory):
        for name in names:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


async def lines_of(stream: trio.abc.ReceiveStream):
    """The lines of ``stream`` as they come (decoded, without the newline)."""
    pending = b""
    while True:
        chunk = await stream.receive_some(1 << 16)
        if not chunk:
            if pending:
                yield pending.decode(errors="replace")
            return
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line.decode(errors="replace")


async def end_process(process: trio.Process, grace: float = 10.0) -> None:
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            process.kill()
        with trio.move_on_after(grace):
            await process.wait()


# ---------------------------------------------------------------------------------------------
@dataclass
class Acknowledged:
    node: str
    acked_at: float
    expires_at: int


@dataclass
class NodeLife:
    """A node and the intervals (wall clock) when it was up, across its restarts."""

    name: str
    files: NodeFiles
    metrics_port: int
    process: NodeProcess | None = None
    up: list[list[float]] = field(default_factory=list)     # [from, to] (to None while up)
    #: (spawned, listening) per start: a node that takes long to start (a busy machine) is not
    #: sampled as settled while it still imports.
    starts: list[tuple[float, float]] = field(default_factory=list)
    stops: list[tuple[float, str]] = field(default_factory=list)
    unexpected_exits: list[str] = field(default_factory=list)
    stopping: bool = False
    #: (signal, seconds to exit, whether it exited before the grace period ran out) per stop.
    stop_times: list[tuple[str, float, bool]] = field(default_factory=list)
    cpu_last: tuple[int, float, float] | None = None

    @property
    def pid(self) -> int | None:
        process = self.process
        if process is None or not process.running or process.process is None:
            return None
        return process.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    async def start(self, timeout: float) -> None:
        self.process = NodeProcess(self.files)
        self.stopping = False
        spawned = time.time()
        await self.process.start()
        await self.process.wait_listening(timeout)
        listening = time.time()
        self.starts.append((spawned, listening))
        self.up.append([listening, None])

    def _mark_down(self, how: str) -> None:
        now = time.time()
        if self.up and self.up[-1][1] is None:
            self.up[-1][1] = now
        self.stops.append((now, how))

    async def stop(self, how: str) -> None:
        """End the node: ``SIGTERM`` or ``SIGKILL``, or ``SIGINT`` (the launcher's clean stop)."""
        process = self.process
        if process is None or process.process is None:
            return
        self.stopping = True
        self._mark_down(how)
        began = time.monotonic()
        if how == "SIGINT":
            await process.stop(STOP_GRACE)
            self.stop_times.append((how, round(time.monotonic() - began, 2), process.ending == "signal"))
            return
        with trio.CancelScope(shield=True):
            if process.process.returncode is None:
                process.process.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
            in_time = False
            with trio.move_on_after(STOP_GRACE):
                await process.process.wait()
                in_time = True
            if not in_time:
                process.process.kill()
                await process.process.wait()
        self.stop_times.append((how, round(time.monotonic() - began, 2), in_time))

    def up_throughout(self, start: float, end: float) -> bool:
        """Whether the node was listening (and not yet told to stop) from ``start`` to ``end``."""
        return any(a <= start and (b is None or end <= b) for a, b in self.up)

    def check_alive(self) -> None:
        if self.process is not None and not self.stopping and self.process.returncode is not None:
            self.unexpected_exits.append(f"{self.name} exited with {self.process.returncode} at "
                                         f"{time.time():.0f}: {self.process.diagnostics()}")
            self._mark_down("exited")
            self.stopping = True


@dataclass
class Soak:
    args: argparse.Namespace

    def __post_init__(self) -> None:
        self.root = Path(self.args.dir).absolute()
        self.program = harness_path()
        self.clock = SystemClock()
        self.nodes: dict[str, NodeLife] = {}
        self.acked: dict[str, Acknowledged] = {}
        self.publications = {"attempted": 0, "accepted": 0}
        self.rejected: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self.failed_while_down = 0
        #: Failures of publications to a node that was up (what they said), the first few.
        self.failure_examples: list[dict[str, Any]] = []
        self.publishing_started = 0.0
        self.interrupted: str | None = None
        self.publishing_ended = math.inf
        #: node -> message keys delivered to any of its aggregators; and connections opened.
        self.delivered: dict[str, set[str]] = {}
        self.aggregator_starts: dict[str, int] = {}
        self.aggregator_errors: dict[str, int] = {}
        self.subscriptions: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.samples_path = self.root / "samples.jsonl"
        self.samples: list[dict[str, Any]] = []
        self.publishing = True
        self.started_at = 0.0

    # -- set-up -------------------------------------------------------------------------------
    def prepare(self) -> None:
        if self.root.exists():
            marker = self.root / ".dmq-soak"
            if any(self.root.iterdir()) and not marker.exists():
                raise SystemExit(f"soak: {self.root} is not empty and holds no previous soak run; choose another --dir")
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        (self.root / ".dmq-soak").write_text("a dmq soak run: the next run in this directory replaces it\n")
        if not os.access(self.program, os.X_OK):
            raise SystemExit(f"soak: the pallas harness is not built at {self.program} ($DMQ_PALLAS_INTEROP); "
                             "run scripts/build-interop.sh")
        self.pools = generate_pools(self.root / "pools", self.args.pools, seed=0)
        start = datetime.fromtimestamp(int(self.clock.now()), timezone.utc)
        genesis_path = self.root / "genesis" / "shelley-genesis.json"
        write_shelley_genesis(genesis_path, self.pools, start, seed=0)
        write_stake_file(self.root / "genesis" / "stake.json", self.pools, seed=0)
        periods = GenesisClockKesPeriod.from_genesis(load_shelley_genesis(genesis_path), self.clock)
        self.builders = [MessageBuilder(SigningCredentials.from_files(p.paths.kes_skey, p.paths.opcert), periods,
                                        self.clock, self.args.ttl) for p in self.pools]
        names = [*LINE, JOINER]
        ports = free_ports(2 * len(names), HOST)
        port_of = dict(zip(names, ports[:len(names)]))
        for index, name in enumerate(names):
            directory = self.root / "nodes" / name
            config = {
                "NetworkMagic": DEVNET.dmq, "CardanoNetworkMagic": DEVNET.cardano, "IPv4": HOST,
                "PortNumber": port_of[name], "LocalAddress": SOCKET_FILE, "DatabasePath": "db",
                "StakeSource": "genesis", "ShelleyGenesisFile": os.path.relpath(genesis_path, directory),
                "PrometheusPort": ports[len(names) + index],
                "LocalIdleTimeout": self.args.idle_timeout,
                # A topic network carrying raw (Mithril's messages) and Blocklace, so that topic
                # subscribers have something to read; the bucket is wide enough for --rate.
                "MithrilNetwork": False, "TopicsCarried": ["raw", "blocklace"],
                "TopicTokenBucket": {"Capacity": 100000, "RefillSeconds": 0.001},
                "TraceOptions": {"": {"severity": "Notice"}},
            }
            peers = [(HOST, port_of[other]) for other in DIALS[name]]
            files = NodeFiles(name, directory, config, topology_document(peers))
            self.nodes[name] = NodeLife(name, files, ports[len(names) + index])
            self.delivered[name] = set()
            self.aggregator_starts[name] = 0
            self.aggregator_errors[name] = 0

    def event(self, kind: str, **detail: Any) -> None:
        record = {"t": round(time.time() - self.started_at, 2), "event": kind, **detail}
        self.events.append(record)
        print(json.dumps(record), flush=True)

    # -- publishers ---------------------------------------------------------------------------
    async def publisher(self, name: str, pools: list[int], rate: float, stop_at: float) -> None:
        """Mithril's publisher, as a harness process renewed every --signer-life seconds."""
        sequence = 0
        due = trio.current_time()
        node = self.nodes[name]
        while trio.current_time() < stop_at:
            process = await trio.lowlevel.open_process(
                [os.fspath(self.program), PALLAS, "signer", "--socket", os.fspath(node.files.socket_path),
                 "--magic", str(DEVNET.dmq), "--connection", "mithril"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            queue: list[tuple[str, int, bool]] = []
            life_end = min(stop_at, trio.current_time() + self.args.signer_life)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._signer_results, name, process, queue)
                    while trio.current_time() < life_end:
                        await trio.sleep_until(due)
                        due = max(due + 1.0 / rate, trio.current_time() - 1.0)
                        index = pools[sequence % len(pools)]
                        body = probe_body(Probe(index, sequence, self.clock.now()))
                        sequence += 1
                        message = self.builders[index].build(body)
                        queue.append((message_key(message.raw), self.builders[index].expires_at(), time.time()))
                        self.publications["attempted"] += 1
                        await process.stdin.send_all(message.raw.hex().encode() + b"\n")
                    await process.stdin.aclose()
                    with trio.move_on_after(60):
                        await process.wait()
                    nursery.cancel_scope.deadline = trio.current_time() + 5
            finally:
                await end_process(process)

    async def _signer_results(self, name: str, process: trio.Process, queue: list) -> None:
        async for line in lines_of(process.stdout):
            if not line.strip():
                continue
            result = json.loads(line)
            key, expires_at, sent_at = queue.pop(0)
            if result.get("verdict") == "accepted":
                self.publications["accepted"] += 1
                self.acked[key] = Acknowledged(name, time.time(), expires_at)
            elif result.get("verdict") == "rejected":
                reason = json.dumps(result.get("reason"))
                self.rejected[reason] = self.rejected.get(reason, 0) + 1
            else:
                stage = f"{result.get('error')}"
                self.failed[stage] = self.failed.get(stage, 0) + 1
                if not self.nodes[name].up_throughout(sent_at, time.time()):
                    self.failed_while_down += 1
                elif len(self.failure_examples) < 20:
                    self.failure_examples.append({"t": round(time.time() - self.started_at, 1), "node": name,
                                                  "stage": stage, "detail": str(result.get("detail"))[:300]})

    # -- aggregators --------------------------------------------------------------------------
    async def aggregator(self, name: str, life: float) -> None:
        """One harness aggregator on ``name``, renewed every ``life`` seconds, until cancelled."""
        node = self.nodes[name]
        while True:
            process = await trio.lowlevel.open_process(
                [os.fspath(self.program), PALLAS, "aggregator", "--socket", os.fspath(node.files.socket_path),
                 "--magic", str(DEVNET.dmq), "--dedupe", "off", "--reconnect-ms", "200"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.aggregator_starts[name] += 1
            try:
                with trio.move_on_after(life):
                    async for line in lines_of(process.stdout):
                        record = json.loads(line)
                        if record.get("event") == "message":
                            self.delivered[name].add(message_key(bytes.fromhex(record["cbor"])))
                        elif record.get("event") == "error":
                            self.aggregator_errors[name] += 1
            finally:
                await end_process(process)

    # -- topic subscribers --------------------------------------------------------------------
    async def subscriber(self, stop_at: float) -> None:
        node = self.nodes[SUBSCRIBED]
        while trio.current_time() < stop_at:
            began = trio.current_time()
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "dmq.cli.tool", "topic", "subscribe", "--socket",
                 os.fspath(node.files.socket_path), "--magic", str(DEVNET.dmq), "--adapter", "raw", "--json"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
            life = {"started": round(time.time() - self.started_at, 1), "items": 0, "node_up": node.running}
            try:
                with trio.move_on_after(min(self.args.subscriber_life, max(0.0, stop_at - began))):
                    async for line in lines_of(process.stdout):
                        if line.startswith("{"):
                            life["items"] += 1
            finally:
                await end_process(process)
                life["seconds"] = round(trio.current_time() - began, 1)
                life["returncode"] = process.returncode
                self.subscriptions.append(life)
            await trio.sleep(0.5)

    # -- schedule -----------------------------------------------------------------------------
    async def restarts(self, stop_at: float) -> None:
        turn = 0
        while True:
            if trio.current_time() + 1.5 * self.args.restart_every > stop_at:
                return
            await trio.sleep(self.args.restart_every)
            name = self.args.restart_nodes[turn % len(self.args.restart_nodes)]
            how = "SIGKILL" if turn % 2 == 0 else "SIGTERM"
            turn += 1
            node = self.nodes[name]
            self.event("restart", node=name, signal=how)
            await node.stop(how)
            await trio.sleep(self.args.down_for)
            await node.start(self.args.start_timeout)
            self.event("restarted", node=name)

    async def joiner(self, stop_at: float) -> None:
        node = self.nodes[JOINER]
        while True:
            if trio.current_time() + self.args.join_every + self.args.join_for > stop_at:
                return
            await trio.sleep(self.args.join_every)
            self.event("join", node=JOINER)
            await node.start(self.args.start_timeout)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.aggregator, JOINER, self.args.join_for)
                await trio.sleep(self.args.join_for)
                nursery.cancel_scope.cancel()
            self.event("leave", node=JOINER)
            await node.stop("SIGTERM")

    # -- sampling -----------------------------------------------------------------------------
    async def sampler(self) -> None:
        with open(self.samples_path, "a") as out:
            while True:
                for node in self.nodes.values():
                    node.check_alive()
                sample = await self.sample()
                self.samples.append(sample)
                out.write(json.dumps(sample) + "\n")
                out.flush()
                await trio.sleep(self.args.sample)

    async def sample(self) -> dict[str, Any]:
        now = time.time()
        record: dict[str, Any] = {"t": round(now - self.started_at, 2), "acknowledged": len(self.acked),
                                  "attempted": self.publications["attempted"], "nodes": {}}
        for name, node in self.nodes.items():
            pid = node.pid
            entry: dict[str, Any] = {"up": pid is not None,
                                     "delivered": len(self.delivered[name]),
                                     "db_bytes": disk_bytes(node.files.directory / "db")}
            if pid is not None:
                entry["pid"] = pid
                entry["fds"] = open_descriptors(pid)
                entry["rss"] = read_rss_bytes(pid)
                cpu = read_cpu_seconds(pid)
                last = node.cpu_last
                if cpu is not None and last is not None and last[0] == pid and now > last[1]:
                    entry["cpu"] = round(100.0 * (cpu - last[2]) / (now - last[1]), 1)
                if cpu is not None:
                    node.cpu_last = (pid, now, cpu)
                try:
                    scraped = await scrape_node(node.metrics_port, host=HOST, timeout=2.0)
                    entry["held"] = scraped.messages_held
                    entry["accepted_local"] = scraped.accepted.get("local", 0)
                    entry["accepted_peer"] = scraped.accepted.get("peer", 0)
                    entry["n2c"] = scraped.connections.get("n2c", 0)
                    entry["n2n_out"] = scraped.outbound_peers
                except ScrapeError:
                    pass
            record["nodes"][name] = entry
        return record

    # -- the run ------------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        self.prepare()
        self.started_at = time.time()
        self.event("start", uptime=Path("/proc/loadavg").read_text().split()[:3])
        # SIGINT or SIGTERM ends the run early but cleanly: every process started here is
        # stopped, and the verdicts say the run was interrupted.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as watcher:
                work = trio.CancelScope()
                watcher.start_soon(self._watch_signals, signals, work)
                try:
                    with work:
                        await self._live()
                finally:
                    with trio.CancelScope(shield=True):
                        async with trio.open_nursery() as stopping:
                            for node in self.nodes.values():
                                if node.running:
                                    stopping.start_soon(node.stop, "SIGINT")
                    watcher.cancel_scope.cancel()
        if self.publishing_ended == math.inf:
            self.publishing_ended = time.time() - self.started_at
        return self.verdicts()

    async def _mark_publishing_end(self, stop_at: float) -> None:
        await trio.sleep_until(stop_at)
        self.publishing_ended = time.time() - self.started_at

    async def _watch_signals(self, signals, work: trio.CancelScope) -> None:
        async for signum in signals:
            self.interrupted = signal.Signals(signum).name
            self.event("interrupted", signal=self.interrupted)
            work.cancel()

    async def _live(self) -> None:
        async with trio.open_nursery() as background:
            for name in LINE:
                await self.nodes[name].start(self.args.start_timeout)
            self.event("nodes listening")
            background.start_soon(self.sampler)
            for name in LINE:
                background.start_soon(self.aggregator, name, self.args.aggregator_life)
            await trio.sleep(2.0)   # the links come up
            stop_at = trio.current_time() + self.args.duration
            self.publishing_started = time.time() - self.started_at
            async with trio.open_nursery() as work:
                work.start_soon(self.restarts, stop_at)
                if self.args.join_every > 0:
                    work.start_soon(self.joiner, stop_at)
                work.start_soon(self.subscriber, stop_at)
                per_node = self.args.rate / len(LINE)
                for k, name in enumerate(LINE):
                    pools = [i for i in range(len(self.pools)) if i % len(LINE) == k]
                    work.start_soon(self.publisher, name, pools, per_node, stop_at)
                work.start_soon(self._mark_publishing_end, stop_at)
            self.event("publishing ended")
            await self.drain()
            background.cancel_scope.cancel()

    def owed(self) -> dict[str, set[str]]:
        """Per node, the acknowledged messages it must have delivered (module docstring)."""
        up = {name: [(a, b if b is not None else math.inf) for a, b in node.up] for name, node in self.nodes.items()}
        return owed_messages(self.acked, up, self.args.grace, link_spans(self.samples, self.started_at))

    async def drain(self) -> None:
        with trio.move_on_after(self.args.drain):
            while True:
                owed = self.owed()
                if all(owed[name] <= self.delivered[name] for name in self.nodes):
                    return
                await trio.sleep(5.0)   # an hour's owed sets take a moment to compute

    # -- verdicts -----------------------------------------------------------------------------
    def verdicts(self) -> dict[str, Any]:
        args = self.args
        starts = {name: [(a - self.started_at, b - self.started_at) for a, b in node.starts]
                  for name, node in self.nodes.items()}
        checks, full_at, half = resource_checks(self.samples, starts, self.publishing_started,
                                                self.publishing_ended, args)
        duration = min(self.samples[-1]["t"] if self.samples else 0.0, self.publishing_ended)
        owed = self.owed()
        for name in self.nodes:
            missing = owed[name] - self.delivered[name]
            examples = sorted((round(self.acked[key].acked_at - self.started_at, 1),
                               round(self.acked[key].expires_at - self.started_at, 1), self.acked[key].node)
                              for key in missing)[:5]
            checks.append({"check": f"{name} nothing acknowledged lost", "ok": not missing,
                           "detail": f"{len(owed[name])} owed, {len(owed[name]) - len(missing)} delivered, "
                                     f"{len(missing)} missing; aggregator started {self.aggregator_starts[name]} "
                                     f"times" + (f"; first missing (acknowledged at, expiring at, by): {examples}"
                                                 if missing else ""), "missing": len(missing)})
        checks.extend(link_checks(self.samples))
        exits = [e for node in self.nodes.values() for e in node.unexpected_exits]
        checks.append({"check": "the run went to its end", "ok": self.interrupted is None,
                       "detail": f"interrupted by {self.interrupted}" if self.interrupted else "yes"})
        checks.append({"check": "no node ended by itself", "ok": not exits, "detail": "; ".join(exits) or "none"})
        tracebacks = [name for name, node in self.nodes.items()
                      if node.files.stderr_path.exists() and "Traceback" in node.files.stderr_path.read_text()]
        checks.append({"check": "no traceback on a node's stderr", "ok": not tracebacks,
                       "detail": ", ".join(tracebacks) or "none"})
        late = [f"{name} {how} {seconds:g} s" for name, node in self.nodes.items()
                for how, seconds, in_time in node.stop_times if not in_time and how != "SIGKILL"]
        checks.append({"check": f"nodes end within {STOP_GRACE:g} s of SIGTERM or SIGINT", "ok": not late,
                       "detail": "; ".join(late) or "all did"})
        checks.append({"check": "no publication to a node that was up failed", "ok": not self.failure_examples,
                       "detail": json.dumps(self.failure_examples[:3]) if self.failure_examples else "none"})
        checks.append({"check": "no publication rejected", "ok": not self.rejected,
                       "detail": json.dumps(self.rejected) if self.rejected else "none"})
        lived = [s for s in self.subscriptions if s["seconds"] >= args.subscriber_life - 1 and s["node_up"]]
        checks.append({"check": "topic subscriptions got items", "ok": bool(lived) and all(s["items"] for s in lived),
                       "detail": f"{len(self.subscriptions)} subscriptions, items per full one: "
                                 f"{[s['items'] for s in lived]}"})
        return {
            "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "harness": f"{self.program} {PALLAS}",
            "duration_seconds": duration, "window_full_at": full_at, "second_half_from": half,
            "publishing": [self.publishing_started, self.publishing_ended],
            "starts": starts,
            "publications": {**self.publications, "rejected": self.rejected, "failed": self.failed,
                             "failed_while_target_down": self.failed_while_down},
            "delivered": {name: len(keys) for name, keys in self.delivered.items()},
            "aggregator_connections_failed": self.aggregator_errors,
            "publication_failures_while_up": self.failure_examples,
            "stops": {name: node.stop_times for name, node in self.nodes.items()},
            "subscriptions": self.subscriptions,
            "events": self.events,
            "lives": {name: lives(self.samples, self.events, name, args.settle) for name in self.nodes},
            "checks": checks,
            "ok": all(c["ok"] for c in checks),
        }


def _dials_open(entry: dict[str, Any], dialled: tuple[str, ...]) -> bool:
    """Whether a sampled node ran with every connection it dials open (its count of open outbound
    connections says so only when it equals its dials)."""
    return bool(entry.get("up")) and entry.get("n2n_out", 0) >= len(dialled)


def link_spans(samples: list[dict[str, Any]], started_at: float = 0.0) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """Per link of :data:`DIALS` (``(dialler, dialled)``), when it was connected, as sampled: from
    one sample to the next when both saw the dialler's outbound connections all open (its count
    says so only when it equals its dials, so a joiner's two links count as up only together).
    A link is not up the moment both its ends are: the dialler retries a peer that went away
    with a back-off (``dmq.diffusion.policy.BackoffPolicy``), seconds after a long restart.
    Sample times are from ``started_at``."""
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for dialler, dialled in DIALS.items():
        if not dialled:
            continue
        connected: list[tuple[float, float]] = []
        previous = None
        for sample in samples:
            entry = sample["nodes"].get(dialler, {})
            t = sample["t"] + started_at
            if _dials_open(entry, dialled):
                if previous is not None:
                    if connected and connected[-1][1] == previous:
                        connected[-1] = (connected[-1][0], t)
                    else:
                        connected.append((previous, t))
                previous = t
            else:
                previous = None
        for peer in dialled:
            spans[(dialler, peer)] = connected
    return spans


#: A link must be connected in at least this share of the samples in which both its ends run: the
#: back-off after a restart keeps it down for a while, a link that never comes back fails.
LINK_UP_SHARE = 0.5


def link_checks(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per link of :data:`DIALS`, whether it was connected (:func:`link_spans`) in at least
    :data:`LINK_UP_SHARE` of the samples in which both its ends ran: what the owed messages
    leave out while a link is down must not hide a link that stays down."""
    checks = []
    for dialler, dialled in DIALS.items():
        for peer in dialled:
            both = [sample["nodes"][dialler] for sample in samples
                    if sample["nodes"].get(dialler, {}).get("up") and sample["nodes"].get(peer, {}).get("up")]
            if not both:
                continue
            connected = sum(1 for entry in both if _dials_open(entry, dialled))
            share = connected / len(both)
            checks.append({"check": f"{dialler} -> {peer} connected while both ran", "ok": share >= LINK_UP_SHARE,
                           "detail": f"{connected} of {len(both)} samples ({100 * share:.0f} %; at least "
                                     f"{100 * LINK_UP_SHARE:.0f} %)"})
    return checks


def reachable(up: dict[str, list[tuple[float, float]]],
              links: dict[tuple[str, str], list[tuple[float, float]]] | None = None
              ) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """For each pair of nodes (``a``, ``b``, ``a`` itself included), the intervals in which a message
    held by ``a`` could reach ``b``: both up, and joined by :data:`DIALS`' links through nodes that
    were up too. ``up`` is each node's up intervals (``(from, to)``, ``to`` inf while up);
    ``links``, when given, each link's connected intervals (:func:`link_spans`): a link counts only
    while connected."""
    names = list(up)
    edges = [(a, b) for a, dialled in DIALS.items() for b in dialled if a in up and b in up]
    times = sorted({t for spans in up.values() for span in spans for t in span}
                   | ({t for spans in links.values() for span in spans for t in span} if links else set()))
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for start, end in zip(times, times[1:]):
        alive = {name for name in names if any(a <= start and end <= b for a, b in up[name])}
        group = {name: name for name in alive}

        def root(name: str) -> str:
            while group[name] != name:
                name = group[name]
            return name

        for a, b in edges:
            if a in alive and b in alive and (links is None or any(
                    x <= start and end <= y for x, y in links.get((a, b), ()))):
                group[root(a)] = root(b)
        for a in alive:
            for b in alive:
                if root(a) == root(b):
                    spans = out.setdefault((a, b), [])
                    if spans and spans[-1][1] == start:
                        spans[-1] = (spans[-1][0], end)
                    else:
                        spans.append((start, end))
    return out


def owed_messages(acked: dict[str, Acknowledged], up: dict[str, list[tuple[float, float]]],
                  grace: float, links: dict[tuple[str, str], list[tuple[float, float]]] | None = None
                  ) -> dict[str, set[str]]:
    """Per node, the acknowledged messages it must have delivered: those whose life (from the
    acknowledgement to the expiry) held ``grace`` seconds in which the acknowledging node could
    reach it (:func:`reachable`, over ``links`` when given). A message acknowledged at node-3 just
    before node-2 goes down, and expired before node-2 is back and linked again, is owed to node-3
    and not to node-1: no path ever carried it."""
    paths = reachable(up, links)
    return {name: {key for key, ack in acked.items()
                   if any(min(b, ack.expires_at) - max(a, ack.acked_at) >= grace
                          for a, b in paths.get((ack.node, name), ()))}
            for name in up}


#: Samples the first half holds at least, from the moment the window is full: a short run whose
#: publishing starts late (a slow machine's start-up) would otherwise leave it none.
FIRST_HALF_SAMPLES = 3


def resource_checks(samples: list[dict[str, Any]], starts: dict[str, list[tuple[float, float]]], began: float,
                    ended: float, args: argparse.Namespace) -> tuple[list[dict[str, Any]], float, float]:
    """The flatness and database checks (module docstring) of the line nodes, from the samples
    alone: ``starts`` are each node's (re)starts, when it was spawned and when it listened (a
    sample from the one to ``--settle`` seconds after the other is left out), ``began`` and ``ended`` the publishing
    period, all in seconds from the run's start. Returns the checks, when the window was full
    and where the second half begins."""
    duration = min(samples[-1]["t"] if samples else 0.0, ended)
    full_at = began + args.ttl + args.settle   # the TTL window is full (and the nodes settled)
    half = max((began + duration) / 2, full_at + FIRST_HALF_SAMPLES * args.sample)
    checks: list[dict[str, Any]] = []

    def steady(name: str, key: str, since: float, until: float = math.inf) -> list[tuple[float, float]]:
        points = []
        for sample in samples:
            entry = sample["nodes"][name]
            t = sample["t"]
            if entry.get(key) is None or not since <= t < min(until, ended):
                continue
            if key != "db_bytes" and any(spawned <= t < listening + args.settle for spawned, listening in starts[name]):
                continue   # the store on disk is the same file while its node starts: only the process settles
            points.append((t, float(entry[key])))
        return points

    for name in LINE:
        for key, label in (("fds", "descriptors"), ("rss", "RSS")):
            points = steady(name, key, half)
            if len(points) < 3:
                checks.append({"check": f"{name} {label} flat", "ok": False, "detail": "too few samples"})
                continue
            allowed = args.max_drift if key == "rss" else (args.max_drift, args.fd_slack)
            ok, figures = flatness(points, duration - half, allowed,
                                   args.max_rss_ratio if key == "rss" else None)
            slope, drift, mean, ratio = (figures[k] for k in ("slope", "drift", "mean", "max_min_ratio"))
            if key == "rss":
                detail = (f"slope {slope * 3600 / 2**20:+.2f} MiB/h, drift {drift / 2**20:+.2f} MiB "
                          f"({100 * drift / mean:+.1f}% of mean {mean / 2**20:.1f} MiB; at most "
                          f"{100 * args.max_drift:.0f}%), max/min {ratio:.2f} (at most {args.max_rss_ratio})")
            else:
                detail = (f"slope {slope * 3600:+.1f}/h, drift over the second half {drift:+.1f} "
                          f"(mean {mean:.1f}; at most {figures['allowed']:.1f}: {100 * args.max_drift:.0f}% "
                          f"of the mean or {args.fd_slack:g}), max/min {ratio:.2f}")
            checks.append({"check": f"{name} {label} flat", "ok": ok, "detail": detail, **figures})
        first = [y for _, y in steady(name, "db_bytes", full_at, half)]
        second = [y for _, y in steady(name, "db_bytes", half)]
        if first and second:
            growth = max(second) / max(1.0, max(first))
            checks.append({"check": f"{name} database bounded", "ok": growth <= args.max_db_growth,
                           "detail": f"largest {max(first) / 2**20:.1f} MiB in the first half (window full), "
                                     f"{max(second) / 2**20:.1f} MiB in the second: x{growth:.2f} "
                                     f"(at most x{args.max_db_growth})"})
        else:
            checks.append({"check": f"{name} database bounded", "ok": False, "detail": "too few samples"})
    return checks, full_at, half


def slope_of(points: list[tuple[float, float]]) -> float:
    """The slope of the least-squares line through ``points`` (x, y)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return 0.0 if sxx == 0 else sum((x - mx) * (y - my) for x, y in points) / sxx


def flatness(points: list[tuple[float, float]], span: float, allowed: float | tuple[float, float],
             max_ratio: float | None = None) -> tuple[bool, dict[str, float]]:
    """Whether a series is flat: the drift of its least-squares line over ``span`` seconds is at
    most ``allowed`` of its mean (or ``(share, floor)``: that share of the mean or ``floor``,
    whichever is more), and, with ``max_ratio``, its max/min is at most that."""
    slope = slope_of(points)
    mean = sum(y for _, y in points) / len(points)
    share, floor = allowed if isinstance(allowed, tuple) else (allowed, 0.0)
    limit = max(share * abs(mean), floor)
    drift = slope * span
    ratio = max(y for _, y in points) / max(1.0, min(y for _, y in points))
    ok = abs(drift) <= limit and (max_ratio is None or ratio <= max_ratio)
    return ok, {"slope": slope, "drift": drift, "mean": mean, "allowed": limit, "max_min_ratio": ratio}


def lives(samples: list[dict[str, Any]], events: list[dict[str, Any]], name: str,
          settle: float) -> list[dict[str, float]]:
    """Each life of node ``name`` (between two of its restarts or outages) that outlasted ``2 * settle``:
    its RSS and descriptors after ``settle`` seconds, at its end, and the RSS slope over its
    second half: whether a node that is never restarted levels off."""
    runs: list[list[dict[str, Any]]] = [[]]
    ends = sorted(e["t"] for e in events if e.get("node") == name and e["event"] in ("restart", "leave"))
    for sample in samples:
        entry = sample["nodes"][name]
        while ends and sample["t"] >= ends[0]:
            ends.pop(0)
            if runs[-1]:
                runs.append([])
        if entry.get("rss") is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append({"t": sample["t"], "rss": entry["rss"], "fds": entry.get("fds")})
    out = []
    for run in runs:
        if len(run) < 4 or run[-1]["t"] - run[0]["t"] < 2 * settle:
            continue
        settled = [p for p in run if p["t"] - run[0]["t"] >= settle]
        second = [p for p in run if p["t"] >= (run[0]["t"] + run[-1]["t"]) / 2]
        out.append({"from": run[0]["t"], "to": run[-1]["t"], "rss_settled_mib": settled[0]["rss"] / 2**20,
                    "rss_end_mib": run[-1]["rss"] / 2**20, "rss_max_mib": max(p["rss"] for p in run) / 2**20,
                    "rss_slope_second_half_mib_per_h": slope_of([(p["t"], p["rss"]) for p in second]) * 3600 / 2**20,
                    "fds_max": max(p["fds"] or 0 for p in settled)})
    return out


def plot(samples: list[dict[str, Any]], events: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(samples[0]["nodes"]) if samples else []
    panels = (("fds", "open descriptors", 1), ("rss", "RSS (MiB)", 2**20),
              ("db_bytes", "database on disk (MiB)", 2**20),
              ("cpu", "CPU (% of a core)", 1), ("delivered", "delivered to aggregators", 1))
    figure, axes = plt.subplots(len(panels) + 1, 1, figsize=(11, 15), sharex=True)
    for axis, (key, label, scale) in zip(axes, panels):
        for name in names:
            # A node that is down has no sample: its line breaks there.
            xs = [s["t"] / 60 for s in samples]
            ys = [math.nan if s["nodes"][name].get(key) is None else s["nodes"][name][key] / scale for s in samples]
            axis.plot(xs, ys, ".-" if key != "delivered" else "-", markersize=2, linewidth=0.8, label=name)
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    axes[-1].plot([s["t"] / 60 for s in samples], [s["acknowledged"] for s in samples], label="acknowledged")
    axes[-1].plot([s["t"] / 60 for s in samples], [s["attempted"] for s in samples], label="attempted")
    axes[-1].set_ylabel("publications")
    axes[-1].grid(alpha=0.3)
    axes[-1].legend(loc="upper left", fontsize=8)
    axes[0].legend(loc="upper left", fontsize=8, ncol=4)
    for event in events:
        if event["event"] in ("restart", "join", "leave"):
            colour = {"restart": "red" if event.get("signal") == "SIGKILL" else "orange",
                      "join": "green", "leave": "grey"}[event["event"]]
            for axis in axes:
                axis.axvline(event["t"] / 60, color=colour, linewidth=0.6, alpha=0.6)
    axes[-1].set_xlabel("minutes (red: SIGKILL, orange: SIGTERM restart; green/grey: node-4 joins/leaves)")
    axes[0].set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--dir", default="soak-run", help="where the run's files go (replaced on the next run)")
    parser.add_argument("--duration", type=float, default=3600.0, help="seconds of publishing")
    parser.add_argument("--rate", type=float, default=50.0, help="publications a second, over the three nodes")
    parser.add_argument("--pools", type=int, default=12)
    parser.add_argument("--ttl", type=int, default=180, help="seconds a message lives")
    parser.add_argument("--idle-timeout", type=float, default=10.0, help="the nodes' LocalIdleTimeout")
    parser.add_argument("--signer-life", type=float, default=120.0, help="seconds a signer process lives")
    parser.add_argument("--aggregator-life", type=float, default=300.0, help="seconds between aggregator reconnects")
    parser.add_argument("--subscriber-life", type=float, default=120.0, help="seconds between topic resubscriptions")
    parser.add_argument("--restart-every", type=float, default=300.0, help="seconds between node restarts")
    parser.add_argument("--restart-nodes", type=lambda text: text.split(","), default=list(LINE),
                        help="the nodes restarted in turn, comma-separated (leave one out to watch a whole life)")
    parser.add_argument("--down-for", type=float, default=3.0, help="seconds a restarted node stays down")
    parser.add_argument("--join-every", type=float, default=600.0, help="seconds between node-4's joins (0: never)")
    parser.add_argument("--join-for", type=float, default=240.0, help="seconds node-4 stays")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after a (re)start left out of the fits")
    parser.add_argument("--grace", type=float, default=30.0,
                        help="a node up for this long of a message's life must deliver it: time enough for a "
                             "restarted node's peers to dial it again and offer what they hold")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds after publishing for deliveries")
    parser.add_argument("--start-timeout", type=float, default=120.0)
    parser.add_argument("--recheck", metavar="DIR",
                        help="print the flatness and database checks and the lives again from a finished run's "
                             "samples.jsonl and soak-summary.json (with this command's thresholds and "
                             "--duration), running nothing")
    parser.add_argument("--max-drift", type=float, default=0.10)
    parser.add_argument("--fd-slack", type=float, default=16.0,
                        help="descriptors the drift may reach whatever the mean (idle connections come and go)")
    parser.add_argument("--max-rss-ratio", type=float, default=1.5)
    parser.add_argument("--max-db-growth", type=float, default=1.5)
    return parser.parse_args(argv)


def recheck(args: argparse.Namespace) -> int:
    """``--recheck DIR``: the checks of the samples alone, again, over ``--duration`` of publishing."""
    root = Path(args.recheck)
    for needed in ("samples.jsonl", "soak-summary.json"):
        if not (root / needed).is_file():
            print(f"soak: --recheck {root}: no {needed} there (a finished run's --dir)", file=sys.stderr)
            return 2
    samples = [json.loads(line) for line in (root / "samples.jsonl").read_text().splitlines() if line.strip()]
    summary = json.loads((root / "soak-summary.json").read_text())
    events = summary["events"]
    settings = summary["settings"]
    for key in ("ttl", "settle"):
        setattr(args, key, settings[key])
    began = summary["publishing"][0] if "publishing" in summary else \
        summary["window_full_at"] - settings["ttl"] - settings["settle"]
    starts = summary.get("starts") or {
        name: [e["t"] for e in events if (e["event"] == "nodes listening" and name in LINE)
               or (e.get("node") == name and e["event"] in ("restart", "restarted", "join"))]
        for name in samples[0]["nodes"]}
    # An older summary has one time per start: settled from there, as it was then checked.
    starts = {name: [tuple(s) if isinstance(s, list) else (s, s) for s in times] for name, times in starts.items()}
    checks, full_at, half = resource_checks(samples, starts, began, began + args.duration, args)
    print(f"publishing {began:.0f}-{began + args.duration:.0f} s; window full at {full_at:.0f} s, second half "
          f"from {half:.0f} s")
    for name in samples[0]["nodes"]:
        for life in lives(samples, events, name, args.settle):
            print(f"{name} life {life['from']:.0f}-{life['to']:.0f} s: RSS {life['rss_settled_mib']:.1f} MiB after "
                  f"settling, {life['rss_end_mib']:.1f} at its end (max {life['rss_max_mib']:.1f}), "
                  f"{life['rss_slope_second_half_mib_per_h']:+.1f} MiB/h over its second half; "
                  f"descriptors at most {life['fds_max']}")
    for check in checks:
        print(f"{'PASS' if check['ok'] else 'FAIL'}  {check['check']}: {check['detail']}")
    return 0 if all(check["ok"] for check in checks) else 1


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.recheck:
        return recheck(args)
    unknown = [name for name in args.restart_nodes if name not in LINE]
    if unknown or not args.restart_nodes:
        print(f"soak: --restart-nodes takes nodes of {', '.join(LINE)}, got {','.join(args.restart_nodes)}",
              file=sys.stderr)
        return 2
    # Mithril's publisher holds a socket per publication for its process's life: the signer
    # processes (children of this one) may open as many as the hard limit allows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soak = Soak(args)
    load_before = os.getloadavg()
    summary = trio.run(soak.run)
    summary["load_average"] = {"start": load_before, "end": os.getloadavg()}
    root = soak.root
    (root / "soak-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    p = summary["publications"]
    title = (f"dmq soak: {args.duration / 60:.0f} min, {args.rate:g} msg/s Mithril-pattern, TTL {args.ttl} s, "
             f"{p['accepted']} acknowledged")
    plot(soak.samples, soak.events, root / "soak.png", title)
    print(f"\n{p['attempted']} publications, {p['accepted']} acknowledged, rejected {p['rejected'] or 0}, "
          f"failed {p['failed'] or 0} ({p['failed_while_target_down']} while the target node was down)")
    print(f"delivered per node: {summary['delivered']}; window full at {summary['window_full_at']:.0f} s, "
          f"second half from {summary['second_half_from']:.0f} s")
    for name, spans in summary["lives"].items():
        for life in spans:
            print(f"{name} life {life['from']:.0f}-{life['to']:.0f} s: RSS {life['rss_settled_mib']:.1f} MiB after "
                  f"settling, {life['rss_end_mib']:.1f} at its end (max {life['rss_max_mib']:.1f}), "
                  f"{life['rss_slope_second_half_mib_per_h']:+.1f} MiB/h over its second half; "
                  f"descriptors at most {life['fds_max']}")
    for check in summary["checks"]:
        print(f"{'PASS' if check['ok'] else 'FAIL'}  {check['check']}: {check['detail']}")
    print(f"samples {soak.samples_path}; plot {root / 'soak.png'}; summary {root / 'soak-summary.json'}")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
