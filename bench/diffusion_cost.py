"""What diffusion costs on real ``dmq-node`` processes: CPU per message per node, beside the validation floor.

Three cases, each on real node processes started by the devnet's launcher
(``lab.devnet.node_process``) on loopback, with full validation at every hop:

* **mesh**: 6 nodes, every pair linked (5 peers each), at mainnet's rate: 25 messages a
  second (300 pools, one message each every 12 s), 1,084-byte messages, submitted over
  node-to-client sockets spread over the 6 nodes; every node receives every message;
* **line**: 3 nodes in a chain (1 or 2 peers each) at the same rate, submitted at node 1;
* **idle**: the same mesh with no traffic at all, measured before its traffic starts; nothing
  scrapes the nodes during that window (a real Prometheus scrapes every 15 s at most).

CPU time is read from ``/proc/<pid>/stat`` (user + system, every thread of the process,
``lab.netlab.resources``) at the start and the end of a stated window that begins
after a warm-up, so start-up, connection set-up and the first rounds are left out. Per node:
CPU seconds in the window over the messages submitted in it (every node handles every
message once), and over the window's wall time (% of one core). The kernel's part (system
time) is also given apart: on this machine it moves from window to window with the host (8 to
36 % of the same tree's CPU), while the node's own part (user time) per message holds to a few
per cent, so two trees compare best by their user time.

The validation floor is measured in this same process and run: per message, one Ed25519
verification and seven Blake2b-256 hashes with the libraries the node uses (libsodium
through PyNaCl, ``hashlib``), on the run's own messages (``bench/validation_throughput.py``
has the one floor loop), before the first case and after each, the lowest kept. The ratio is
a case's CPU per message per node over that floor.

``--tree PATH`` (repeatable) runs the node of another checkout (its ``dmq`` package first
on the node's path, this checkout's interpreter): two trees given run case by case in turn,
so a before/after comes from one window of the machine's load. ``PATH::Key=value,...``
adds settings to that tree's node configuration files (``value`` as JSON, e.g.
``--tree .::ProtocolIdleTimeout=10``), so one run can compare settings of one tree; a tree
whose node does not know a key ignores it. ``--profile`` samples node 1
of the mesh's CPU time with py-spy (``pip install py-spy``, a development tool, not a
dependency of the node) over the loaded and the idle windows, counting only samples where a
thread holds the GIL (its Python work, not its waits in epoll or fsync), and prints the
hottest functions. ``--cprofile`` runs every node under cProfile instead (CPU time, imports
left out: ``bench.diffusion_line.PROFILED_NODE``) and prints, per message per node, the Python
function calls and a few counts that say where the work goes (socket reads and writes, rounds of
trio's run loop); the profiler multiplies the nodes' CPU time, so only the counts mean anything
then, and they do not depend on the machine's load. ``--keep-profiles DIR`` keeps each node's
statistics there (``pstats`` files) for a closer look. ``--count-wakes`` has every case's
nodes count their event-loop wakes in its window, by the first task each wake ran
(``bench/wake_count.py``), per second when idle and per message under traffic: a wake after the
process slept costs several times what the same work costs warm (``bench/sig_submission_rounds.py
--idle``), so a node's CPU time at a low rate follows its count of wakes (the probe adds a little
to each, so the CPU figures of such a run read high).

    .venv/bin/python bench/diffusion_cost.py [--warmup 10] [--window 45] [--idle-window 60]
        [--tree PATH ...] [--cases mesh,line,idle] [--count-wakes]
        [--profile | --cprofile [--keep-profiles DIR]]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.diffusion_line import (  # noqa: E402
    PROFILE_FILE,
    PROFILED_NODE,
    make_messages,
    node_config,
    open_local,
    shown,
    write_stake,
)
from bench.rawclient import RawConnection, sdu  # noqa: E402
from bench import wake_count  # noqa: E402
from bench.validation_throughput import floor_inputs, run_floor  # noqa: E402
from dmq.ports import free_ports  # noqa: E402
from lab.devnet.node_process import NodeExited, NodeFiles, NodeProcess, stop_all  # noqa: E402
from lab.devnet.scrape import ScrapeError, scrape_node, scrape_text  # noqa: E402
from lab.devnet.topology import Shape, dials_of, links_of, topology_document  # noqa: E402
from lab.netlab.resources import read_cpu_split  # noqa: E402
from tests.e2e.raw_n2c import ACCEPT, MSG_DONE, submit_message  # noqa: E402

HOST = "127.0.0.1"
#: Mainnet's rate: 300 pools, one message each every 12 s.
POOLS = 300
PERIOD = 12.0
RATE = POOLS / PERIOD
#: Below the 12 s between a pool's messages, so check 3 (the rate limit) runs and passes.
MIN_SIG_DELAY = 6
SUBMIT_WORD, SUBMIT_REPLY_WORD = 0x000E, 0x800E
SUBMISSION_DONE = sdu(SUBMIT_WORD, MSG_DONE)
#: Signer connections per node submitted to: one request in flight on each.
SIGNERS_PER_NODE = 2
CASES = ("mesh", "line", "idle")
#: Seconds from a message's submission to its expiry (a pool's messages expire PERIOD apart, as they
#: are submitted): within the nodes' bound on a message's lifetime.
TTL = 1700
#: Functions listed per profile view.
TOP = 70

#: A node of another checkout: its directory first on the path (an empty one: this checkout), then
#: the operator's entry point, or the profiled runner.
TREE_PATH = """
import sys
tree = sys.argv.pop(1)
if tree:
    sys.path.insert(0, tree)
"""
TREE_NODE = TREE_PATH + """
from dmq.cli.node import main
main(sys.argv[1:])
"""
PROFILED_TREE_NODE = TREE_PATH + PROFILED_NODE

#: What ``--cprofile`` counts per message per node: (label, what a profiled function's key matches).
COUNTED = (
    ("socket reads (recv)", lambda key: key[0] == "~" and "'recv' of '_socket.socket'" in key[2]),
    ("socket writes (sendmsg)", lambda key: key[0] == "~" and "'sendmsg' of '_socket.socket'" in key[2]),
    ("rounds of trio's run loop (epoll)", lambda key: key[0] == "~" and "'poll' of 'select.epoll'" in key[2]),
    ("Enum.__hash__", lambda key: key[0].endswith("enum.py") and key[2] == "__hash__"),
    ("__post_init__ (messages, records)", lambda key: key[2] == "__post_init__"),
    ("CBOR item walks (item_end)", lambda key: key[2] == "item_end"),
)
#: Where the calls are, by the path of the profiled function (the first that matches).
PACKAGES = ("ouroboros_mux", "protocol_engine", "handshake", "miniprotocols", "dmq", "trio")


@dataclass(frozen=True, slots=True)
class TreeNodeFiles(NodeFiles):
    """A node run from the checkout ``tree`` (None: this one), under cProfile if ``profiled``."""

    tree: str | None = None
    profiled: bool = False

    def command(self) -> list[str]:
        command = NodeFiles.command(self)
        if self.tree is None and not self.profiled:
            return command
        at = command.index("dmq.cli.node") - 1  # the "-m" before the module
        runner = [PROFILED_TREE_NODE, self.tree or "", PROFILE_FILE] if self.profiled else [TREE_NODE, self.tree]
        return [*command[:at], "-c", *runner, *command[at + 2:]]


def split_tree(spec: str | None) -> tuple[str | None, dict]:
    """``PATH::Key=json,...`` (a ``--tree``) as the checkout and the settings added to its nodes' configuration."""
    if spec is None:
        return None, {}
    path, _, settings = spec.partition("::")
    added = {}
    for item in filter(None, settings.split(",")):
        key, _, value = item.partition("=")
        added[key] = json.loads(value)
    return path, added


def resolved_tree(spec: str) -> str:
    """A ``--tree`` with its checkout's path made absolute, its settings as given."""
    path, separator, settings = spec.partition("::")
    return str(Path(path).resolve()) + separator + settings


def node_files(workdir: Path, stake: Path, links, count: int, tree: str | None,
               profiled: bool = False) -> list[TreeNodeFiles]:
    """``count`` nodes in ``workdir``, node i dialling the nodes ``links`` says."""
    tree, settings = split_tree(tree)
    ports = free_ports(2 * count, HOST)
    files = []
    for index in range(count):
        directory = workdir / f"node{index + 1}"
        config = node_config(directory, stake, ports[index], ports[count + index], min_sig_delay=MIN_SIG_DELAY)
        config.update(settings)
        topology = topology_document([(HOST, ports[other]) for other in dials_of(links, index)])
        files.append(TreeNodeFiles(directory.name, directory, config, topology, tree, profiled))
    return files


def cpu_of(nodes: list[NodeProcess]) -> list[float]:
    """Each node's CPU seconds so far, every thread (it must still run)."""
    return [user + system for user, system in cpu_split_of(nodes)]


def cpu_split_of(nodes: list[NodeProcess]) -> list[tuple[float, float]]:
    """Each node's user and system CPU seconds so far, every thread (it must still run)."""
    seconds = []
    for node in nodes:
        value = read_cpu_split(node.process.pid)
        if value is None:
            raise NodeExited(f"{node.name} is gone; {node.diagnostics()}")
        seconds.append(value)
    return seconds


async def wait_linked(nodes: list[NodeProcess], dials: list[int], timeout: float) -> None:
    """Until every node listens and has its outbound links up (read from its metrics)."""
    deadline = trio.current_time() + timeout
    for node in nodes:
        await node.wait_listening(max(0.0, deadline - trio.current_time()))
    while trio.current_time() < deadline:
        for node in nodes:
            if not node.running:
                raise NodeExited(f"{node.name} exited with status {node.returncode}; {node.diagnostics()}")
        try:
            samples = [await scrape_node(n.files.config["PrometheusPort"], host=HOST, timeout=5) for n in nodes]
        except ScrapeError:
            samples = None
        if samples and all(s.outbound_peers >= want for s, want in zip(samples, dials)):
            return
        await trio.sleep(0.5)
    raise RuntimeError(f"links not up within {timeout:g} s: "
                       + " || ".join(f"{n.name}: {n.diagnostics()}" for n in nodes))


async def wire_bytes(nodes: list[NodeProcess]) -> list[int]:
    """Each node's bytes in and out with all its peers so far (per-peer counters, SDU headers included)."""
    totals = []
    for node in nodes:
        text = await scrape_text(node.files.config["PrometheusPort"], host=HOST, timeout=10)
        totals.append(sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                          if line.startswith(("dmq_node_peer_bytesIn_counter{", "dmq_node_peer_bytesOut_counter{"))))
    return totals


async def held(nodes: list[NodeProcess]) -> list[int]:
    return [(await scrape_node(n.files.config["PrometheusPort"], host=HOST, timeout=10)).messages_held for n in nodes]


class Submitter:
    """Submits messages at ``RATE`` over signer connections; counts what was accepted."""

    def __init__(self, connections: list[RawConnection], messages: list) -> None:
        self.connections = connections
        self.messages = messages
        self.next = 0
        self.accepted = 0
        self.started = time.perf_counter()

    @property
    def submitted(self) -> int:
        return self.next

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for connection in self.connections:
                nursery.start_soon(self._signer, connection)

    async def _signer(self, connection: RawConnection) -> None:
        while self.next < len(self.messages):
            index = self.next
            self.next += 1
            await trio.sleep(max(0.0, self.started + index / RATE - time.perf_counter()))
            message = self.messages[index]
            await connection.stream.send_all(sdu(SUBMIT_WORD, submit_message(message.raw)))
            reply = await connection.reply(SUBMIT_REPLY_WORD)
            if reply != ACCEPT:
                raise RuntimeError(f"a node refused message {message.message_id.hex()}: {shown(reply)}")
            self.accepted += 1
        raise RuntimeError("the run used every prepared message before its window ended")


def per_node(cpu: list[float], messages: int, seconds: float) -> dict:
    return {"cpu_ms_per_message": [1e3 * c / messages for c in cpu] if messages else None,
            "core_percent": [100 * c / seconds for c in cpu], "messages": messages, "seconds": seconds}


async def run_case(case: str, tree: str | None, workdir: Path, stake: Path, messages: list,
                   args: argparse.Namespace) -> dict:
    """Start the case's nodes, measure, stop them whatever happens."""
    count, shape = (3, Shape.LINE) if case == "line" else (6, Shape.FULL)
    links = links_of(shape, count)
    files = node_files(workdir / f"{case}-{abs(hash(tree))}", stake, links, count, tree, args.cprofile)
    nodes = [NodeProcess(f) for f in files]
    wakes = workdir / f"wakes-{case}-{abs(hash(tree))}"
    if args.count_wakes:
        wake_count.enable(wakes)
    try:
        for node in nodes:
            await node.start()
        await wait_linked(nodes, [len(dials_of(links, i)) for i in range(count)], timeout=120)
        if case == "idle":
            await trio.sleep(args.warmup)
            before, t0, m0 = cpu_of(nodes), time.perf_counter(), time.monotonic()
            profile = None
            if args.profile:
                profile = await start_profile(nodes[0], args.idle_window, workdir / f"idle-{abs(hash(tree))}.txt")
            await trio.sleep(args.idle_window)
            after, t1, m1 = cpu_of(nodes), time.perf_counter(), time.monotonic()
            result = per_node([b - a for a, b in zip(before, after)], 0, t1 - t0)
            if profile is not None:
                result["profile"] = await finish_profile(*profile)
            if args.count_wakes:
                result["wake_window"] = (str(wakes), m0, m1)  # read once the nodes have written them
            return result
        targets = nodes[:1] if case == "line" else nodes
        connections = [await open_local(n.files.socket_path) for n in targets for _ in range(SIGNERS_PER_NODE)]
        submitter = Submitter(connections, messages)
        result: dict = {}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(submitter.run)
            await trio.sleep(args.warmup)
            bytes_before = await wire_bytes(nodes)  # scraped outside the CPU window
            before, sent_before, t0 = cpu_split_of(nodes), submitter.accepted, time.perf_counter()
            own_before, m0 = time.process_time(), time.monotonic()
            profile = None
            if args.profile and case == "mesh":
                profile = await start_profile(nodes[0], args.window, workdir / f"profile-{abs(hash(tree))}.txt")
            await trio.sleep(args.window)
            after, sent_after, t1 = cpu_split_of(nodes), submitter.accepted, time.perf_counter()
            m1 = time.monotonic()
            result = per_node([sum(b) - sum(a) for a, b in zip(before, after)], sent_after - sent_before, t1 - t0)
            result["system_share"] = [(b[1] - a[1]) / max(1e-9, sum(b) - sum(a)) for a, b in zip(before, after)]
            result["bench_core_percent"] = 100 * (time.process_time() - own_before) / (t1 - t0)
            if args.count_wakes:
                result["wake_window"] = (str(wakes), m0, m1)  # read once the nodes have written them
            result["wire_bytes_per_message"] = [(b - a) / max(1, result["messages"])
                                                for a, b in zip(bytes_before, await wire_bytes(nodes))]
            nursery.cancel_scope.cancel()
        if profile is not None:
            result["profile"] = await finish_profile(*profile)
        # Every message accepted reaches every node: the figures are those of complete diffusion.
        total = submitter.accepted
        with trio.move_on_after(60):
            while min(counts := await held(nodes)) < total:
                await trio.sleep(1)
        counts = await held(nodes)
        if min(counts) < total:
            raise RuntimeError(f"{case}: {total} messages accepted, the nodes hold {counts}")
        result["held"] = counts
        for connection in connections:
            await connection.stream.send_all(SUBMISSION_DONE)
            await connection.stream.aclose()
    finally:
        await stop_all(nodes, grace=60 if args.cprofile else 10)  # a profiled node writes its statistics at exit
        killed = [node.name for node in nodes if node.ending == "killed"]
        if killed:
            print(f"  {case}: {', '.join(killed)} did not stop on SIGINT and were killed", file=sys.stderr)
    if args.cprofile:
        # Every node handles every message accepted in the run (warm-up and drain included, as
        # the profile covers the whole run).
        lost = [f"{f.directory.name} ({node.ending})" for f, node in zip(files, nodes)
                if not (f.directory / PROFILE_FILE).exists()]
        if lost:
            raise RuntimeError(f"{case}: no profile written by " + ", ".join(lost))
        result["calls"] = [call_counts(f.directory / PROFILE_FILE, submitter.accepted) for f in files]
        if args.keep_profiles is not None:
            args.keep_profiles.mkdir(parents=True, exist_ok=True)
            label = f"{Path(tree).name if tree else 'this'}-{case}-{workdir.name}"
            for f in files:
                shutil.copyfile(f.directory / PROFILE_FILE, args.keep_profiles / f"{label}-{f.directory.name}.pstats")
    return result


def call_counts(stats_file: Path, messages: int) -> dict:
    """Per message: every Python function call of a profiled node, by package, and the :data:`COUNTED` ones."""
    import pstats

    stats = pstats.Stats(str(stats_file)).stats  # type: ignore[attr-defined]
    by_package: collections.Counter = collections.Counter()
    counted: collections.Counter = collections.Counter()
    for key, (_, calls, *_rest) in stats.items():
        package = next((p for p in PACKAGES if f"/{p}/" in key[0]), "other")
        by_package[package] += calls
        for label, matches in COUNTED:
            if matches(key):
                counted[label] += calls
    total = sum(by_package.values())
    return {"calls": total / messages, "by_package": {p: n / messages for p, n in by_package.items()},
            "counted": {label: counted[label] / messages for label, _ in COUNTED}}


async def start_profile(node: NodeProcess, seconds: float, out: Path):
    """py-spy sampling ``node`` (CPU samples only, every thread) for ``seconds``, in raw folded stacks."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("--profile needs py-spy (pip install py-spy)")
    process = await trio.lowlevel.open_process(
        [spy, "record", "--pid", str(node.process.pid), "--duration", str(int(seconds)), "--rate", "250",
         "--format", "raw", "--output", str(out), "--threads", "--gil"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, out


async def finish_profile(process, out: Path) -> dict:
    await process.wait()
    own: collections.Counter = collections.Counter()
    inclusive: collections.Counter = collections.Counter()
    total = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")"
                  if " (" in f else f for f in stack.split(";")]
        n = int(count)
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    return {"samples": total, "own": own.most_common(TOP), "inclusive": inclusive.most_common(TOP)}


def measure_floor(messages: list, repeat: int = 5) -> float:
    """Seconds per message of 1 Ed25519 verification + 7 Blake2b-256 on the run's messages (best of ``repeat``)."""
    inputs = floor_inputs([m.raw for m in messages[:POOLS]])
    return min(run_floor(inputs, 3) for _ in range(repeat))


def print_case(case: str, tree: str, result: dict, floor: float) -> None:
    print(f"  {case} on {tree}, load average {result['load']:.2f} at its end:")
    pct = result["core_percent"]
    if case == "idle":
        print(f"        {result['seconds']:.0f} s window, % of a core per node: "
              + ", ".join(f"{p:.2f}" for p in pct) + f"  (mean {statistics.mean(pct):.2f} %)")
        if "wakes" in result:
            wakes = result["wakes"]
            print(f"        event-loop wakes per second per node: {wakes['per_second']:.2f} "
                  f"(mean of {wakes['nodes']}); by the first task each ran:")
            for name, rate in wakes["by_cause"]:
                print(f"          {rate:6.3f}  {name}")
        return
    ms = result["cpu_ms_per_message"]
    mean = statistics.mean(ms)
    print(f"        {result['messages']} messages in {result['seconds']:.0f} s "
          f"({result['messages'] / result['seconds']:.1f} msg/s), bench itself {result['bench_core_percent']:.1f} % of a core")
    print(f"        CPU per message per node (ms): " + ", ".join(f"{v:.2f}" for v in ms)
          + f"  mean {mean:.2f} = {mean / (floor * 1e3):.0f} x the floor")
    print(f"        % of a core per node        : " + ", ".join(f"{p:.1f}" for p in pct)
          + f"  mean {statistics.mean(pct):.1f}")
    if "system_share" in result:
        user = [m * (1 - share) for m, share in zip(ms, result["system_share"])]
        print(f"        of it the kernel's (system time): " + ", ".join(f"{100 * v:.0f} %" for v in result["system_share"])
              + f"  mean {100 * statistics.mean(result['system_share']):.0f} %; the node's own (user time) "
              + f"{statistics.mean(user):.2f} ms per message")
    print(f"        wire bytes per message per node: " + ", ".join(f"{b:.0f}" for b in result["wire_bytes_per_message"]))
    if "wakes" in result:
        wakes, rate = result["wakes"], result["messages"] / result["seconds"]
        print(f"        event-loop wakes per message per node: "
              + ", ".join(f"{n / rate:.2f}" for n in wakes["by_node"])
              + f"  mean {wakes['per_second'] / rate:.2f}; by the first task each ran:")
        for name, per_second in wakes["by_cause"][:12]:
            print(f"          {per_second / rate:6.3f}  {name}")


def print_calls(case: str, tree: str, calls: list[dict]) -> None:
    print(f"  {case} on {tree}, under cProfile, per message per node (node 1 .. {len(calls)}):")
    print("        Python function calls: " + ", ".join(f"{c['calls']:.0f}" for c in calls))
    for package in PACKAGES + ("other",):
        print(f"          in {package:<16}: " + ", ".join(f"{c['by_package'].get(package, 0):.0f}" for c in calls))
    for label, _ in COUNTED:
        print(f"        {label:<34}: " + ", ".join(f"{c['counted'][label]:.1f}" for c in calls))


def print_profile(case: str, tree: str, profile: dict) -> None:
    total = profile["samples"] or 1
    print(f"profile of {case} node1 ({tree}), py-spy, {profile['samples']} CPU samples:")
    print("  own time:")
    for frame, n in profile["own"]:
        print(f"    {100 * n / total:5.1f} %  {frame}")
    print("  inclusive:")
    for frame, n in profile["inclusive"]:
        print(f"    {100 * n / total:5.1f} %  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of traffic before each window")
    parser.add_argument("--window", type=float, default=45.0, help="seconds measured under traffic")
    parser.add_argument("--idle-window", type=float, default=60.0, help="seconds measured on the idle mesh")
    parser.add_argument("--tree", action="append", default=None, metavar="PATH",
                        help="checkout whose node to run (repeat for a before/after; default: this one)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--profile", action="store_true", help="py-spy node 1 of the mesh over its windows")
    parser.add_argument("--cprofile", action="store_true",
                        help="every node under cProfile: calls per message per node (CPU figures then inflated)")
    parser.add_argument("--keep-profiles", type=Path, metavar="DIR",
                        help="with --cprofile: copy each node's statistics here (<tree>-<case>-<round>-<node>.pstats)")
    parser.add_argument("--count-wakes", action="store_true",
                        help="count the nodes' event-loop wakes by cause (bench/wake_count.py)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of every case and tree, alternated (a before/after on a busy machine)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.profile and args.cprofile:
        parser.error("--profile (py-spy) and --cprofile do not go together: the one would sample the other")
    sys.stdout.reconfigure(line_buffering=True)
    cases = [c for c in args.cases.split(",") if c]
    if bad := [c for c in cases if c not in CASES]:
        parser.error(f"unknown case {', '.join(bad)}; the cases are {', '.join(CASES)}")
    trees = [resolved_tree(t) for t in args.tree] if args.tree else [None]
    for tree in trees:
        path = split_tree(tree)[0]
        if path is not None and not (Path(path) / "dmq" / "cli" / "node.py").exists():
            parser.error(f"--tree {tree}: no dmq/cli/node.py there")

    started = time.perf_counter()
    count = int((args.warmup + args.window + 30) * RATE)
    keys, messages = make_messages(count, POOLS, ttl=TTL, spacing=PERIOD)
    print(f"signed {len(messages)} messages of {len(messages[0].raw)} bytes from {POOLS} pools "
          f"in {time.perf_counter() - started:.0f} s")
    workdir = Path(tempfile.mkdtemp(prefix="dqc"))
    stake = write_stake(workdir, keys)
    load = os.getloadavg()
    floors = [measure_floor(messages)]
    results: dict = {}
    try:
        for round_ in range(args.repeat):
            for case in cases:
                for tree in trees:
                    # Signed afresh for each run: expiry stays within what the nodes accept.
                    _, messages = make_messages(count, POOLS, ttl=TTL, spacing=PERIOD)
                    result = trio.run(run_case, case, tree, workdir / str(round_), stake, messages, args)
                    result["load"] = os.getloadavg()[0]
                    if "wake_window" in result:
                        directory, start, end = result.pop("wake_window")
                        result["wakes"] = wake_count.summarize(Path(directory), start, end)
                    results[(case, tree, round_)] = result
                    floors.append(measure_floor(messages))
                    print_case(case, tree or "this tree", result, min(floors))  # progress, as each run ends
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    # The lowest is the floor: other work on the cores only ever adds to a measurement.
    floor = min(floors)
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    print(f"validation floor (1 Ed25519 + 7 Blake2b-256, libsodium and hashlib): {floor * 1e6:.1f} µs per message "
          f"(lowest of {len(floors)}: " + ", ".join(f"{f * 1e6:.0f}" for f in floors) + ")")
    print(f"rate {RATE:.0f} msg/s, warm-up {args.warmup:g} s, window {args.window:g} s, idle window {args.idle_window:g} s")
    for (case, tree, _), result in results.items():
        print_case(case, tree or "this tree", result, floor)
    if args.repeat > 1:
        print(f"median over {args.repeat} rounds of the mean per node:")
        for case in cases:
            for tree in trees:
                runs = [r for (c, t, _), r in results.items() if (c, t) == (case, tree)]
                pct = statistics.median(statistics.mean(r["core_percent"]) for r in runs)
                line = f"  {case:<5} {tree or 'this tree'}: {pct:.2f} % of a core"
                if case != "idle":
                    ms = statistics.median(statistics.mean(r["cpu_ms_per_message"]) for r in runs)
                    line += f", {ms:.2f} ms per message = {ms / (floor * 1e3):.0f} x the floor"
                print(line)
    for (case, tree, _), result in results.items():
        if "profile" in result:
            print_profile(case, tree or "this tree", result["profile"])
        if "calls" in result:
            print_calls(case, tree or "this tree", result["calls"])
    if args.json:
        args.json.write_text(json.dumps({"floor_us": floor * 1e6, "load": load,
                                         "results": [{"case": c, "tree": t, "round": n,
                                                      **{k: v for k, v in r.items() if k != "profile"}}
                                                     for (c, t, n), r in results.items()]}, indent=1))


if __name__ == "__main__":
    main()
