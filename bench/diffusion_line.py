"""Three real ``dmq-node`` processes in a line on loopback: throughput, latency, bytes per hop.

    signer(s) --N2C--> node 1 --N2N--> node 2 --N2N--> node 3 --N2C--> aggregator

Each node is the real command (``python -m dmq.cli.node``), started by the devnet's launcher
(``lab.devnet.node_process``) in its own directory with its configuration and
topology files, LMDB database, Unix socket and TCP port; node 2 has node 1 as its local root,
node 3 has node 2. Pools are generated here (Sum6KES keys, operational certificates) and
given stake in a JSON stake file, so every hop runs the full validation. The bench process
plays the Mithril side: signers submit over node 1's socket (one request at a time per
connection, several connections), an aggregator reads node 3's socket with blocking
notification requests. Both speak raw Pallas bytes over plain sockets (``bench/rawclient.py``),
so the bench process, which shares the cores with the nodes, spends little more than its
socket calls.

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
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import cbor2
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.local_service import cpu_seconds  # noqa: E402
from bench.rawclient import RawConnection, connect_unix, sdu  # noqa: E402
from dmq.codec import build_message, decode_message  # noqa: E402
from dmq.kes import KesSigningKey  # noqa: E402
from dmq.message import message_id_of, pool_id_of  # noqa: E402
from dmq.networks import DEVNET  # noqa: E402
from dmq.opcert import cold_verification_key, issue_opcert  # noqa: E402
from dmq.ports import free_ports  # noqa: E402
from dmq.trace import read_log  # noqa: E402
from lab.devnet.node_process import SOCKET_FILE, NodeExited, NodeFiles, NodeProcess, stop_all  # noqa: E402
from lab.devnet.scrape import scrape_text  # noqa: E402
from lab.devnet.topology import topology_document  # noqa: E402
from miniprotocols.sig_submission.sig_message import checked_id  # noqa: E402
from ouroboros_mux.cbor import item_end  # noqa: E402
from tests.e2e.raw_n2c import ACCEPT, MSG_DONE, submit_message  # noqa: E402
from tests.e2e.raw_n2c import REQUEST_BLOCKING as REQUEST_BLOCKING_MESSAGE  # noqa: E402

MAGIC = DEVNET.dmq  # Mithril devnet (2147483690): a short MinSigDelay is allowed
HOST = "127.0.0.1"
#: CIP-0137 mainnet load: 1 550 signers every minute.
CIP_RATE = 1550 / 60
CIP_REDUNDANCY = 2.0
BODY_SIZE = 451  # a Mithril signature body (conformance mithril_body)

# Local message submission (protocol 14) and notification (15): the bytes Pallas writes.
SUBMIT_WORD, SUBMIT_REPLY_WORD, NOTIFY_WORD = 0x000E, 0x800E, 0x000F
SUBMISSION_DONE = sdu(SUBMIT_WORD, MSG_DONE)
REQUEST_BLOCKING = sdu(NOTIFY_WORD, REQUEST_BLOCKING_MESSAGE)
#: Arrivals whose carried id is checked against the codec's reading and the payload's hash;
#: after them the aggregator trusts the slice, as every message is built the same way.
CHECKED_ARRIVALS = 16


#: ``dmq-node`` under cProfile, counting CPU time (not wall time: the machine may be shared)
#: and leaving the imports out of the figures.
PROFILED_NODE = """
import cProfile, sys, time
import dmq.cli.wiring
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

#: Where a profiled node writes its statistics when it exits, in its own directory.
PROFILE_FILE = "profile.pstats"


def make_messages(count: int, pools: int, ttl: int, spacing: float = 0) -> list:
    """``count`` messages from ``pools`` pools in turn, expiring ``ttl`` s from now.

    A pool's k-th message expires ``k * spacing`` seconds after its first: check 3 runs on
    the times pools signed, so a node with a ``MinSigDelay`` needs them that far apart.
    """
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
        messages.append(build_message(body, 0, expires + int(i // pools * spacing), kes, opcert, cold_vk))
    return keys, messages


@dataclass(frozen=True, slots=True)
class ProfiledNodeFiles(NodeFiles):
    """A node's files, its command the profiled runner (``PROFILED_NODE``) in place of
    ``-m dmq.cli.node``; the statistics go to ``PROFILE_FILE`` in the node's directory."""

    def command(self) -> list[str]:
        command = NodeFiles.command(self)
        at = command.index("dmq.cli.node") - 1  # the "-m" before the module
        return [*command[:at], "-c", PROFILED_NODE, PROFILE_FILE, *command[at + 2:]]


def write_stake(workdir: Path, keys: list) -> Path:
    """A stake file giving every pool of ``keys`` (from ``make_messages``) the same stake."""
    stake = workdir / "stake.json"
    stake.write_text(json.dumps({"epoch": 1, "maxKESEvolutions": 62,
                                 "pools": {pool_id_of(cold_vk).hex(): 1_000_000 for cold_vk, _, _ in keys}}))
    return stake


def node_config(directory: Path, stake: Path, port: int, metrics_port: int, *, min_sig_delay: float) -> dict:
    """A loopback node's configuration on the devnet magic, its paths relative to ``directory``."""
    return {
        "NetworkMagic": MAGIC,
        "CardanoNetworkMagic": DEVNET.cardano,
        "IPv4": HOST,
        "PortNumber": port,
        "LocalAddress": SOCKET_FILE,
        "DatabasePath": "db",
        "StakeSource": os.path.relpath(stake, directory),
        "MinSigDelay": min_sig_delay,
        "PrometheusPort": metrics_port,
    }


def line_files(workdir: Path, stake: Path, profile: int | None) -> list[NodeFiles]:
    """Nodes 1, 2, 3 in ``workdir``: node 2 has node 1 as its local root, node 3 has node 2.

    ``profile``: the node (1..3) run under cProfile, if any."""
    ports = free_ports(6, HOST)
    files = []
    for index in range(3):
        directory = workdir / f"node{index + 1}"
        config = node_config(directory, stake, ports[index], ports[3 + index], min_sig_delay=0)
        # Debug: a message accepted from a peer is logged at Debug, as by the reference node.
        config["TraceOptions"] = {"": {"severity": "Debug"}}
        topology = topology_document([(HOST, ports[index - 1])] if index else [])
        kind = ProfiledNodeFiles if profile == index + 1 else NodeFiles
        files.append(kind(directory.name, directory, config, topology))
    return files


def port_of(node: NodeFiles) -> int:
    return node.config["PortNumber"]


def connected(node: NodeFiles, link: str) -> bool:
    """Whether the node has logged an open connection on ``link`` (``n2n-out``: to its local root)."""
    log = node.log_path
    return log.exists() and any(e.data["link"] == link for e in read_log(log.read_text(), "ConnectionOpened"))


def accepted_at(node: NodeFiles) -> dict[str, float]:
    """When the node accepted each message (its ``MessageAccepted`` log lines, after the disk commit)."""
    return {e.data["message_id"]: e.timestamp
            for e in read_log(node.log_path.read_text(encoding="utf-8"), "MessageAccepted")}


async def peer_bytes(node: NodeFiles, peer_port: int) -> int:
    """Bytes in plus out with the outbound peer at ``peer_port`` (from the per-peer counters)."""
    text = await scrape_text(node.config["PrometheusPort"], host=HOST, timeout=5)
    total = 0
    for name in ("dmq_node_peer_bytesIn_counter", "dmq_node_peer_bytesOut_counter"):
        match = re.search(rf'^{name}{{direction="outbound",peer="{HOST}:{peer_port}"}} (\S+)$', text, re.M)
        if match is None:
            raise RuntimeError(f"{node.name}: no {name} for peer {peer_port} in its metrics")
        total += int(float(match.group(1)))
    return total


def node_cpu_seconds(node: NodeProcess) -> float:
    """User plus system CPU time the node process has used so far."""
    return cpu_seconds(node.process.pid)


async def wait_linked(nodes: list[NodeProcess], timeout: float) -> None:
    """Until every node listens and nodes 2 and 3 have their connection to the previous one open."""
    deadline = trio.current_time() + timeout
    for node in nodes:
        await node.wait_listening(max(0.0, deadline - trio.current_time()))
    with trio.move_on_after(max(0.0, deadline - trio.current_time())):
        while not all(connected(node.files, "n2n-out") for node in nodes[1:]):
            for node in nodes:
                if not node.running:
                    raise NodeExited(f"{node.name} exited with status {node.returncode}; {node.diagnostics()}")
            await trio.sleep(0.1)
        return
    tails = " || ".join(f"{node.name}: {node.diagnostics()}" for node in nodes)
    raise RuntimeError(f"nodes 2 and 3 did not connect within {timeout:g} s: {tails}")


async def run_line(args: argparse.Namespace, files: list[NodeFiles], messages: list) -> dict:
    """Start the three nodes, run the bench on them once linked, and stop them, whatever happens."""
    nodes = [NodeProcess(f) for f in files]
    try:
        for node in nodes:
            await node.start()
        await wait_linked(nodes, timeout=120)  # a loaded machine imports slowly
        return await run_bench(args, nodes, messages)
    finally:
        await stop_all(nodes, grace=10)


async def open_local(path: Path) -> RawConnection:
    """A node-to-client connection after the handshake Pallas does (version 4097 only)."""
    connection = RawConnection(connect_unix(str(path)))
    await connection.handshake(MAGIC)
    return connection


#: Size of an unsigned-integer item by its first byte (0..27; anything else is no integer).
UINT_SIZE = bytes([1] * 24 + [2, 3, 5, 9])


def message_end(buf: bytearray, pos: int, end: int) -> int:
    """Offset just past the DMQ message at ``buf[pos]``, as ``item_end`` finds it, in a few steps.

    Follows the layout every encoder writes (one-byte array heads, the usual byte-string
    heads, fixed key and signature sizes) and steps over body and signatures by their sizes,
    where ``item_end`` reads some fifteen heads; any other spelling, or a message not yet
    whole, goes to ``item_end``, which knows every case.
    """
    try:
        if buf[pos] != 0x85 or buf[pos + 1] != 0x58 or buf[pos + 2] != 0x20 or buf[pos + 35] != 0x83:
            return item_end(buf, pos, end)
        head = buf[pos + 36]
        if head == 0x58:
            p = pos + 38 + buf[pos + 37]
        elif head == 0x59:
            p = pos + 39 + (buf[pos + 37] << 8 | buf[pos + 38])
        else:
            return item_end(buf, pos, end)
        p += UINT_SIZE[buf[p]]  # kesPeriod
        p += UINT_SIZE[buf[p]]  # expiresAt
        if (buf[p] != 0x59 or buf[p + 1] != 0x01 or buf[p + 2] != 0xC0  # 448-byte KES signature
                or buf[p + 451] != 0x84 or buf[p + 452] != 0x58 or buf[p + 453] != 0x20):  # opcert, hot key
            return item_end(buf, pos, end)
        p += 486
        p += UINT_SIZE[buf[p]]  # issueNumber
        p += UINT_SIZE[buf[p]]  # startKesPeriod
        if buf[p] != 0x58 or buf[p + 1] != 0x40 or buf[p + 66] != 0x58 or buf[p + 67] != 0x20:  # cold sig, key
            return item_end(buf, pos, end)
    except IndexError:
        return item_end(buf, pos, end)
    p += 100
    return p if p <= end else item_end(buf, pos, end)


def shown(reply: bytes) -> str:
    """A reply for an error line: its bytes, and its CBOR reading when there is one."""
    try:
        return f"{reply.hex()} = {cbor2.loads(reply)!r}"
    except Exception:
        return reply.hex()


class Aggregator:
    """Blocking notification requests on node 3, timing each message as its bytes arrive."""

    def __init__(self) -> None:
        self.arrivals: dict[bytes, float] = {}
        #: The ids ``wait_for`` still waits for; ``complete`` is set when none is left.
        self.missing: set[bytes] = set()
        self.complete = trio.Event()
        self.checked = 0

    async def run(self, connection: RawConnection) -> None:
        while True:
            await connection.stream.send_all(REQUEST_BLOCKING)
            await connection.blocking_reply(self._arrived, message_end)

    def _arrived(self, buffer: bytearray, start: int, end: int) -> None:
        now = time.perf_counter()
        raw = bytes(buffer[start:end])
        message_id = checked_id(raw)
        if self.checked < CHECKED_ARRIVALS:
            self._check(raw, message_id)
        if message_id not in self.arrivals:
            self.arrivals[message_id] = now
            if message_id in self.missing:
                self.missing.discard(message_id)
                if not self.missing:
                    self.complete.set()

    def _check(self, raw: bytes, message_id: bytes) -> None:
        """The slice is the codec's id, and ``message_end`` cut exactly one message."""
        decoded = decode_message(raw)
        computed = message_id_of(decoded.signed_bytes)
        if message_id != decoded.message_id or message_id != computed:
            raise RuntimeError(f"aggregator read id {message_id.hex()} where the codec reads "
                               f"{decoded.message_id.hex()} (payload hash {computed.hex()})")
        self.checked += 1

    async def wait_for(self, ids: set[bytes], timeout: float) -> None:
        self.missing = ids - self.arrivals.keys()
        self.complete = trio.Event()
        if self.missing:
            with trio.move_on_after(timeout):
                await self.complete.wait()
        if self.missing:
            raise RuntimeError(f"{len(self.missing)} of {len(ids)} messages never reached the aggregator")


async def submit_all(signers: list[RawConnection], messages: list, sent: dict[bytes, float],
                     rate: float | None) -> None:
    """Submit every message once; flat out over all connections, or paced at ``rate`` per second.

    Each signer has one ``[0, msg]`` in flight and waits for exactly the accept bytes."""
    queue = iter(enumerate(messages))
    start = time.perf_counter()

    async def signer(connection: RawConnection) -> None:
        send_all = connection.stream.send_all
        for index, m in queue:
            if rate is not None:
                await trio.sleep(max(0.0, start + index / rate - time.perf_counter()))
            sent[m.message_id] = time.perf_counter()
            await send_all(sdu(SUBMIT_WORD, submit_message(m.raw)))
            reply = await connection.reply(SUBMIT_REPLY_WORD)
            if reply != ACCEPT:
                raise RuntimeError(f"node 1 refused message {m.message_id.hex()}: {shown(reply)}")

    async with trio.open_nursery() as nursery:
        for connection in signers:
            nursery.start_soon(signer, connection)


async def run_bench(args: argparse.Namespace, nodes: list[NodeProcess], messages: list) -> dict:
    first, second, third = nodes
    results: dict = {}
    async with trio.open_nursery() as nursery:
        aggregator = Aggregator()
        reader = await open_local(third.files.socket_path)
        nursery.start_soon(aggregator.run, reader)
        signers = [await open_local(first.files.socket_path) for _ in range(args.connections)]
        size = len(messages[0].raw)

        # -- throughput: everything at once --------------------------------------------
        burst = messages[:args.messages]
        sent: dict[bytes, float] = {}
        hop_before = await peer_bytes(second.files, port_of(first.files))
        cpu_before = [node_cpu_seconds(n) for n in nodes]
        own_cpu_before = time.process_time()
        started = time.perf_counter()
        await submit_all(signers, burst, sent, rate=None)
        submitted = time.perf_counter()
        await aggregator.wait_for({m.message_id for m in burst}, timeout=120)
        last = max(aggregator.arrivals[m.message_id] for m in burst)
        hop_bytes = await peer_bytes(second.files, port_of(first.files)) - hop_before
        cpu = [node_cpu_seconds(n) - before for n, before in zip(nodes, cpu_before)]
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
        await submit_all(signers, paced, sent, rate=CIP_RATE)
        await aggregator.wait_for({m.message_id for m in paced}, timeout=60)
        latencies = sorted((aggregator.arrivals[m.message_id] - sent[m.message_id]) * 1000 for m in paced)
        results["latency"] = {
            "messages": len(paced),
            "p50_ms": statistics.median(latencies),
            "p99_ms": percentile(latencies, 0.99),
            "max_ms": latencies[-1],
        }
        for connection in signers:
            await connection.stream.send_all(SUBMISSION_DONE)
            await connection.stream.aclose()
        nursery.cancel_scope.cancel()
    await reader.stream.aclose()
    return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(q * len(ordered))) - 1)]


def hop_latencies(nodes: list[NodeFiles], ids: list[str]) -> list[tuple[str, float, float]]:
    """Per hop of the paced run: ``(hop, p50 ms, p99 ms)`` from acceptance at one node to the next."""
    accepted = [accepted_at(n) for n in nodes]
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
    stake = write_stake(workdir, keys)
    files = line_files(workdir, stake, args.profile)
    try:
        results = trio.run(run_line, args, files, messages)
        paced = messages[args.messages:args.messages + results["latency"]["messages"]]
        results["hops"] = hop_latencies(files, [m.message_id.hex() for m in paced])
    finally:
        for node in files:
            profile = node.directory / PROFILE_FILE
            if isinstance(node, ProfiledNodeFiles) and profile.exists():
                import pstats
                print(f"{node.name} profile (cumulative, then own time):")
                stats = pstats.Stats(str(profile))
                stats.sort_stats("cumulative").print_stats(30)
                stats.sort_stats("tottime").print_stats(30)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"working directory kept: {workdir}")

    tp, lat = results["throughput"], results["latency"]
    factor = tp["hop_bytes_per_message"] / tp["message_size"]
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average "
          f"{os.getloadavg()[0]:.1f} at the start (other work on the cores lowers every figure)")
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
