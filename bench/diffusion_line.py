"""Three real ``dmq-node`` processes in a line on loopback: throughput, latency, bytes per hop.

    signer(s) --N2C--> node 1 --N2N--> node 2 --N2N--> node 3 --N2C--> aggregator

Each node is the real command (``python -m dmq.cli.node``) with its own LMDB directory,
Unix socket and TCP port; node 2 has node 1 as its local root, node 3 has node 2. Pools
are generated here (Sum6KES keys, operational certificates) and given stake in a JSON stake
file, so every hop runs the full validation. The bench process plays the Mithril side:
signers submit over node 1's socket (one request at a time per connection, several
connections), an aggregator reads node 3's socket with blocking notification requests.

Printed figures:

* sustained end-to-end throughput: messages received by the aggregator per second, from
  the first submission to the last arrival, with submitters running flat out;
* latency at the CIP's mainnet load (1 550 pools a minute, about 26 messages per second):
  submission start at node 1 to arrival at the aggregator, p50 / p99 / max;
* bytes on the wire per message on the hop node 1 <-> node 2 (both directions, every
  mini-protocol, SDU headers included), read from node 2's per-peer Prometheus counters,
  and its ratio to the message size, to compare with the CIP's redundancy factor of 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dmq.codec import build_message  # noqa: E402
from dmq.kes import KesSigningKey  # noqa: E402
from dmq.message import pool_id_of  # noqa: E402
from dmq.opcert import cold_verification_key, issue_opcert  # noqa: E402
from handshake.driver import run_client  # noqa: E402
from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions  # noqa: E402
from miniprotocols.local_msg_notification import LocalMsgNotificationClient  # noqa: E402
from miniprotocols.local_msg_submission import ACCEPTED, LocalMsgSubmissionClient  # noqa: E402
from ouroboros_mux.bearer import connect_unix  # noqa: E402
from ouroboros_mux.mux import Mode, Mux, Role  # noqa: E402

MAGIC = 2147483690  # Mithril devnet: a short --min-sig-delay is allowed
#: CIP-0137 mainnet load: 1 550 signers every minute.
CIP_RATE = 1550 / 60
CIP_REDUNDANCY = 2.0
BODY_SIZE = 451  # a Mithril signature body (conformance mithril_body)


#: ``dmq-node`` under cProfile, counting CPU time (not wall time: the machine may be shared)
#: and leaving the imports out of the figures.
PROFILED_NODE = """
import cProfile, sys, time
import dmq.node
from dmq.cli.node import run
out = sys.argv.pop(1)
profiler = cProfile.Profile(time.process_time)
profiler.enable()
try:
    run(sys.argv[1:])
finally:
    profiler.disable()
    profiler.dump_stats(out)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_messages(count: int, pools: int, ttl: int) -> list:
    keys = []
    for n in range(pools):
        cold = n.to_bytes(4, "big") * 8
        kes = KesSigningKey.generate(bytes(reversed(cold)))
        keys.append((cold_verification_key(cold), kes, issue_opcert(cold, kes.verification_key(), 0, 0)))
    expires = int(time.time()) + ttl
    messages = []
    for i in range(count):
        cold_vk, kes, opcert = keys[i % pools]
        body = i.to_bytes(8, "big") * (BODY_SIZE // 8) + bytes(BODY_SIZE % 8)
        messages.append(build_message(body, 0, expires, kes, opcert, cold_vk))
    return keys, messages


class NodeProcess:
    def __init__(self, name: str, workdir: Path, stake: Path, upstream: int | None, profile: bool = False) -> None:
        self.name = name
        self.dir = workdir / name
        self.dir.mkdir()
        self.port = free_port()
        self.metrics_port = free_port()
        self.socket = self.dir / "s"
        roots = [] if upstream is None else [{"accessPoints": [{"address": "127.0.0.1", "port": upstream}],
                                                "valency": 1}]
        (self.dir / "topology.json").write_text(json.dumps({"localRoots": roots, "publicRoots": []}))
        self.log = self.dir / "log.jsonl"
        #: cProfile statistics, written when the node exits (``--profile``).
        self.profile = self.dir / "profile.pstats" if profile else None
        runner = ["-c", PROFILED_NODE, str(self.profile)] if profile else ["-m", "dmq.cli.node"]
        args = [sys.executable, *runner,
                "--host-addr", "127.0.0.1", "--port", str(self.port), "--local-socket", str(self.socket),
                "--configuration-file", str(self.dir / "absent.json"), "--topology-file",
                str(self.dir / "topology.json"), "--stake-source", str(stake), "--database-path",
                str(self.dir / "db"), "--dmq-network-magic", str(MAGIC), "--min-sig-delay", "0",
                "--prometheus-port", str(self.metrics_port)]
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)

    def connected(self, link: str) -> bool:
        return self.log.exists() and f'"link":"{link}"' in self.log.read_text() and \
            '"kind":"ConnectionOpened"' in self.log.read_text()

    def accepted_at(self) -> dict[str, float]:
        """When the node accepted each message (its ``MessageAccepted`` log lines, after the disk commit)."""
        times = {}
        with open(self.log, encoding="utf-8") as log:
            for line in log:
                if '"kind":"MessageAccepted"' in line:
                    event = json.loads(line)
                    times[event["message_id"]] = event["at"]
        return times

    def scrape(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as reply:
            return reply.read().decode()

    def peer_bytes(self, peer_port: int) -> int:
        """Bytes in plus out with the outbound peer at ``peer_port`` (from the per-peer counters)."""
        text = self.scrape()
        total = 0
        for name in ("dmq_node_peer_bytes_in_total", "dmq_node_peer_bytes_out_total"):
            match = re.search(rf'^{name}{{direction="outbound",peer="127.0.0.1:{peer_port}"}} (\S+)$', text, re.M)
            if match is None:
                raise RuntimeError(f"{self.name}: no {name} for peer {peer_port} in its metrics")
            total += int(float(match.group(1)))
        return total

    def cpu_seconds(self) -> float:
        """User plus system CPU time the node process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Local:
    """One node-to-client connection (handshake 4097, protocols 14 and 15)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def open(self, nursery: trio.Nursery) -> Local:
        bearer = await connect_unix(self.path)
        await run_client(bearer, dmq_node_to_client_versions(MAGIC), DMQ_NODE_TO_CLIENT)
        self.mux = Mux(bearer, Role.INITIATOR)
        self.submission = LocalMsgSubmissionClient(self.mux.register(14, Mode.INITIATOR, 0xFFFFFFFF))
        self.notification = LocalMsgNotificationClient(self.mux.register(15, Mode.INITIATOR, 0xFFFFFFFF))
        nursery.start_soon(self._run)
        return self

    async def _run(self) -> None:
        try:
            await self.mux.run()
        except Exception:
            pass


class Aggregator:
    def __init__(self) -> None:
        self.arrivals: dict[bytes, float] = {}
        self.changed = trio.Event()

    async def run(self, local: Local) -> None:
        while True:
            messages, _ = await local.notification.request(blocking=True)
            now = time.perf_counter()
            for raw in messages:
                self.arrivals.setdefault(raw[3:35], now)
            self.changed.set()
            self.changed = trio.Event()

    async def wait_for(self, ids: set[bytes], timeout: float) -> None:
        with trio.move_on_after(timeout):
            while not ids <= self.arrivals.keys():
                await self.changed.wait()
            return
        missing = len(ids - self.arrivals.keys())
        raise RuntimeError(f"{missing} of {len(ids)} messages never reached the aggregator")


async def submit_all(clients: list[Local], messages: list, sent: dict[bytes, float], rate: float | None) -> None:
    """Submit every message once; flat out over all connections, or paced at ``rate`` per second."""
    queue_send, queue_recv = trio.open_memory_channel(len(messages))
    for m in messages:
        queue_send.send_nowait(m)
    queue_send.close()
    start = time.perf_counter()
    counter = iter(range(len(messages)))

    async def worker(client: Local) -> None:
        async for m in queue_recv:
            if rate is not None:
                due = start + next(counter) / rate
                await trio.sleep(max(0.0, due - time.perf_counter()))
            sent[m.message_id] = time.perf_counter()
            verdict = await client.submission.submit(m.raw)
            if verdict is not ACCEPTED:
                raise RuntimeError(f"node 1 refused a message: {verdict}")

    async with trio.open_nursery() as nursery:
        for client in clients:
            nursery.start_soon(worker, client)


async def run_bench(args: argparse.Namespace, nodes: list[NodeProcess], messages: list) -> dict:
    first, second, third = nodes
    results: dict = {}
    async with trio.open_nursery() as nursery:
        aggregator = Aggregator()
        nursery.start_soon(aggregator.run, await Local(third.socket).open(nursery))
        submitters = [await Local(first.socket).open(nursery) for _ in range(args.connections)]
        size = len(messages[0].raw)

        # -- throughput: everything at once --------------------------------------------
        burst = messages[:args.messages]
        sent: dict[bytes, float] = {}
        hop_before = second.peer_bytes(first.port)
        cpu_before = [n.cpu_seconds() for n in nodes]
        own_cpu_before = time.process_time()
        started = time.perf_counter()
        await submit_all(submitters, burst, sent, rate=None)
        submitted = time.perf_counter()
        await aggregator.wait_for({m.message_id for m in burst}, timeout=120)
        last = max(aggregator.arrivals[m.message_id] for m in burst)
        hop_bytes = second.peer_bytes(first.port) - hop_before
        cpu = [n.cpu_seconds() - before for n, before in zip(nodes, cpu_before)]
        own_cpu = time.process_time() - own_cpu_before
        results["throughput"] = {
            "messages": len(burst),
            "submit_rate": len(burst) / (submitted - started),
            "end_to_end_rate": len(burst) / (last - started),
            "hop_bytes_per_message": hop_bytes / len(burst),
            "message_size": size,
            "cpu_us_per_message": [1e6 * c / len(burst) for c in cpu],
            "bench_cpu_us_per_message": 1e6 * own_cpu / len(burst),
            "seconds": last - started,
        }

        # -- latency at the CIP's mainnet rate -------------------------------------------
        paced = messages[args.messages:args.messages + int(args.latency_seconds * CIP_RATE)]
        sent = {}
        await submit_all(submitters, paced, sent, rate=CIP_RATE)
        await aggregator.wait_for({m.message_id for m in paced}, timeout=60)
        latencies = sorted((aggregator.arrivals[m.message_id] - sent[m.message_id]) * 1000 for m in paced)
        results["latency"] = {
            "messages": len(paced),
            "p50_ms": statistics.median(latencies),
            "p99_ms": percentile(latencies, 0.99),
            "max_ms": latencies[-1],
        }
        nursery.cancel_scope.cancel()
    return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(q * len(ordered))) - 1)]


def hop_latencies(nodes: list[NodeProcess], ids: list[str]) -> list[tuple[str, float, float]]:
    """Per hop of the paced run: ``(hop, p50 ms, p99 ms)`` from acceptance at one node to the next."""
    accepted = [n.accepted_at() for n in nodes]
    hops = []
    for (a, at_a), (b, at_b) in zip(zip(nodes, accepted), zip(nodes[1:], accepted[1:])):
        gaps = [(at_b[i] - at_a[i]) * 1000 for i in ids if i in at_a and i in at_b]
        if gaps:
            hops.append((f"{a.name} -> {b.name}", percentile(gaps, 0.5), percentile(gaps, 0.99)))
    return hops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="messages in the throughput burst")
    parser.add_argument("--latency-seconds", type=float, default=30.0, help="duration of the paced run")
    parser.add_argument("--connections", type=int, default=32, help="concurrent signer connections to node 1")
    parser.add_argument("--pools", type=int, default=100)
    parser.add_argument("--keep", action="store_true", help="keep the working directory (logs, databases)")
    parser.add_argument("--profile", type=int, choices=(1, 2, 3), metavar="N",
                        help="run node N under cProfile and print its hottest functions")
    args = parser.parse_args()

    total = args.messages + int(args.latency_seconds * CIP_RATE) + 1
    t = time.perf_counter()
    keys, messages = make_messages(total, args.pools, ttl=1700)
    print(f"signed {len(messages)} messages of {len(messages[0].raw)} bytes from {args.pools} pools "
          f"in {time.perf_counter() - t:.1f} s")
    workdir = Path(tempfile.mkdtemp(prefix="dqb"))
    stake = workdir / "stake.json"
    stake.write_text(json.dumps({"epoch": 1, "maxKESEvolutions": 62,
                                 "pools": {pool_id_of(cold_vk).hex(): 1_000_000 for cold_vk, _, _ in keys}}))
    nodes: list[NodeProcess] = []
    try:
        for name in ("node1", "node2", "node3"):
            nodes.append(NodeProcess(name, workdir, stake, nodes[-1].port if nodes else None,
                                     profile=args.profile == len(nodes) + 1))
        deadline = time.time() + 120  # a loaded machine imports slowly
        while not (all(n.socket.exists() for n in nodes) and nodes[1].connected("n2n-out")
                   and nodes[2].connected("n2n-out")):
            if time.time() > deadline or any(n.process.poll() is not None for n in nodes):
                tails = "\n".join(f"{n.name}: {n.log.read_text()[-500:]}" for n in nodes if n.log.exists())
                raise RuntimeError(f"nodes did not start in time:\n{tails}")
            time.sleep(0.1)
        results = trio.run(run_bench, args, nodes, messages)
        paced = messages[args.messages:args.messages + results["latency"]["messages"]]
        results["hops"] = hop_latencies(nodes, [m.message_id.hex() for m in paced])
    finally:
        for node in nodes:
            node.stop()
        for node in nodes:
            if node.profile is not None and node.profile.exists():
                import pstats
                print(f"{node.name} profile (cumulative, then own time):")
                stats = pstats.Stats(str(node.profile))
                stats.sort_stats("cumulative").print_stats(30)
                stats.sort_stats("tottime").print_stats(30)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"working directory kept: {workdir}")

    tp, lat = results["throughput"], results["latency"]
    factor = tp["hop_bytes_per_message"] / tp["message_size"]
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"throughput burst: {tp['messages']} messages of {tp['message_size']} B through 3 nodes, "
          f"{args.connections} signer connections")
    print(f"  submitted at node 1        : {tp['submit_rate']:8.0f} msg/s")
    print(f"  sustained end to end       : {tp['end_to_end_rate']:8.0f} msg/s   (target >= 2000)")
    per_node = ", ".join(f"node {i + 1} {us:.0f}" for i, us in enumerate(tp["cpu_us_per_message"]))
    print(f"  CPU per message (µs)       : {per_node}; signers and aggregator {tp['bench_cpu_us_per_message']:.0f}")
    print(f"latency at the CIP mainnet rate ({CIP_RATE:.1f} msg/s, {lat['messages']} messages):")
    print(f"  p50 {lat['p50_ms']:.1f} ms   p99 {lat['p99_ms']:.1f} ms   max {lat['max_ms']:.1f} ms   "
          f"(target p99 < 100 ms)")
    for hop, p50, p99 in results["hops"]:
        print(f"  hop {hop} (accepted to accepted): p50 {p50:.1f} ms   p99 {p99:.1f} ms")
    print(f"wire bytes per message, hop node 1 <-> node 2 (both directions, SDU headers included):")
    print(f"  {tp['hop_bytes_per_message']:.0f} B per message = {factor:.2f} x the message size "
          f"(CIP assumes {CIP_REDUNDANCY:.0f} x; ratio to the CIP {factor / CIP_REDUNDANCY:.2f})")


if __name__ == "__main__":
    main()
