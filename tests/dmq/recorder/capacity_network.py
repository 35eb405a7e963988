"""A recorded network of in-process nodes under mainnet-shaped load, on a scaled clock.

What the capacity report needs from a devnet and a one-node run cannot give: node-to-node
diffusion (the real redundancy factor, bytes per message per peer) and a mempool in steady
state, one TTL after the first message. Every node is a full :class:`dmq.node.Node` with
diffusion on loopback and ``RecordTraffic`` into one shared recording directory; they share
one :class:`ManualClock`, which the driver moves in steps of ``period / steps`` simulated
seconds once the previous step's messages have reached every node. Expiry, rate limits and
every recorded timestamp follow that clock, so 50 simulated minutes of mainnet (1,500
signers a minute) take a few real minutes; the network itself (keep-alives, timeouts) runs
in real time.

Pools are generated with the project's KES and opcert code and staked in a JSON stake file,
so every hop runs all ten validation checks. As in the synthetic generator, half of the
pools sign in each round (the CIP's 50 % eligible signers), alternating. Each pool's
messages are submitted to its home node over one local connection per node; all messages
are signed before the nodes start, so signing costs none of the recorded process CPU.

Used by the Spark test (a few nodes and rounds, checked against the nodes' own metrics) and
by ``bench/capacity_devnet.py`` (mainnet signer count, past the TTL).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio
import trio.testing

from dmq.clock import ManualClock
from dmq.mempool import DEFAULT_EXPIRY_INTERVAL
from dmq.config import read_config
from dmq.diffusion import BackoffPolicy, DiffusionPolicy
from dmq.kes import KesSigningKey
from dmq.cli.wiring import assemble_node
from dmq.node import Node
from dmq.opcert import cold_verification_key, issue_opcert
from dmq.ports import free_ports
from dmq.trace import MessageAccepted, MessageRejected, Tracer
from miniprotocols.local_msg_submission import ACCEPTED
from tests.dmq.diffusion.network import (HOST, MAGIC, NOW, LocalClient, Pool, local_roots, purged, wait_until,
                                         write_stake_file)

__all__ = ["LoadSpec", "NetworkRun", "NodeTotals", "make_pools", "record_network"]

#: Real-time timings: quick to connect, quiet once connected (keep-alive every 30 s, no
#: peer sharing), so the bytes on the wire are the messages' and their announcements'.
QUIET = DiffusionPolicy(
    connect_timeout=5.0,
    keep_alive_interval=30.0,
    blocking_reply_timeout=5.0,
    peer_share_interval=3600.0,
    backoff=BackoffPolicy(base=0.2, cap=1.0, jitter=0.5, stable_after=5.0, forget_after=3),
    seed=137,
)


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """The simulated network and its load."""

    nodes: int = 4
    #: Each node dials the next ``degree`` nodes of a ring (``nodes - 1``: a full mesh).
    degree: int = 2
    pools: int = 3000
    signer_share: float = 0.5
    period_s: int = 60
    rounds: int = 50
    ttl_s: int = 1800
    body_size: int = 451
    #: Clock steps per round; each step's messages reach every node before the next step.
    steps: int = 6
    #: Real seconds the whole network may take to diffuse one step.
    step_timeout: float = 120.0

    @property
    def signers(self) -> int:
        return round(self.pools * self.signer_share)

    @property
    def messages(self) -> int:
        return self.signers * self.rounds

    @property
    def simulated_s(self) -> int:
        return self.period_s * self.rounds

    def edges(self) -> list[tuple[int, int]]:
        degree = min(self.degree, self.nodes - 1)
        return [(i, (i + k) % self.nodes) for i in range(self.nodes) for k in range(1, degree + 1)]


@dataclass
class NodeTotals:
    """One node's own account of the run, read from its metrics and peer table at the end."""

    name: str
    accepted: int
    accepted_bytes: int
    rejected: int
    expired: int
    mempool_messages: int
    mempool_bytes: int
    #: (direction, peer) -> (bearer bytes in, bearer bytes out, mux bytes in, mux bytes out).
    peers: dict[tuple[str, str], tuple[int, int, int, int]] = field(default_factory=dict)


@dataclass
class NetworkRun:
    spec: LoadSpec
    recording: Path
    nodes: list[NodeTotals] = field(default_factory=list)
    submitted: int = 0
    real_seconds: float = 0.0
    signing_seconds: float = 0.0
    #: One-minute load average of the machine when the run ended (what else was running).
    load_average: float = 0.0


def make_pools(count: int, *, first: int = 0) -> list[Pool]:
    """``count`` pools with deterministic keys (any count, unlike the diffusion tests' ``pool``)."""
    pools = []
    for n in range(first, first + count):
        cold = b"capacity-cold" + n.to_bytes(19, "big")
        kes = KesSigningKey.generate(b"capacity-kes-" + n.to_bytes(19, "big"))
        pools.append(Pool(cold, cold_verification_key(cold), kes, issue_opcert(cold, kes.verification_key(), 0, 0)))
    return pools


def _schedule(spec: LoadSpec, pools: list[Pool]) -> list[list[tuple[int, bytes]]]:
    """Per clock step, the (home node, raw message) pairs submitted at that step."""
    steps: list[list[tuple[int, bytes]]] = []
    step_s = spec.period_s / spec.steps
    per_step = math.ceil(spec.signers / spec.steps)
    for r in range(spec.rounds):
        offset = (r % 2) * spec.signers
        for k in range(spec.steps):
            at = NOW + r * spec.period_s + k * step_s
            batch = []
            for signer in range(k * per_step, min(spec.signers, (k + 1) * per_step)):
                index = (signer + offset) % len(pools)
                # The id hashes the body: a body unique to the pool and round keeps ids apart.
                # Expiry: the latest the node accepts (expiresAt < now + 1800), as Mithril sets it.
                expires_at = int(at) + spec.ttl_s - 1
                raw = pools[index].sign(r * len(pools) + index, expires_at, body_size=spec.body_size).raw
                batch.append((index % spec.nodes, raw))
            steps.append(batch)
    return steps


def _metric(node: Node, name: str, labels: dict | None = None) -> int:
    return int(node.metrics.registry.get_sample_value(f"dmq_node_{name}", labels or {}) or 0)


def _totals(name: str, node: Node) -> NodeTotals:
    accepted = _metric(node, "localSubmissions_accepted_counter") + _metric(node, "submissions_accepted_counter")
    rejected = _metric(node, "localSubmissions_rejected_counter") + _metric(node, "submissions_rejected_counter")
    totals = NodeTotals(name, accepted, _metric(node, "mempool_acceptedBytes_counter"), rejected,
                        _metric(node, "mempool_expired_counter"), _metric(node, "txsInMempool_int"),
                        _metric(node, "mempoolBytes_int"))
    assert node.diffusion is not None
    for peer in node.diffusion.peers:
        counters = peer.mux.counters().values() if peer.mux is not None else ()
        totals.peers[(peer.provenance.value, peer.peer)] = (
            peer.bytes_in, peer.bytes_out, sum(c.bytes_in for c in counters), sum(c.bytes_out for c in counters))
    return totals


async def record_network(directory: Path, spec: LoadSpec, *, report: Callable[[str], None] | None = None) -> NetworkRun:
    """Run the network under ``spec``'s load; the recording is complete when this returns."""
    say = report or (lambda text: None)
    started = time.perf_counter()
    run = NetworkRun(spec, Path(directory) / "recording")
    pools = make_pools(spec.pools)
    say(f"{len(pools):,} pools generated ({time.perf_counter() - started:.0f} s)")
    t = time.perf_counter()
    steps = _schedule(spec, pools)
    run.signing_seconds = time.perf_counter() - t
    say(f"{spec.messages:,} messages signed ({run.signing_seconds:.0f} s)")

    # Unix socket paths must stay short (108 bytes): the nodes live in a short private directory.
    root = Path(tempfile.mkdtemp(prefix="dqc"))
    stake_file = write_stake_file(root / "stake.json", pools)
    clock = ManualClock(now=NOW)
    accepted = [0] * spec.nodes
    nodes: list[Node] = []
    try:
        async with trio.open_nursery() as nursery:
            # Distinct ports, so that every node has its own name (host:port) in the recording.
            for i, port in enumerate(free_ports(spec.nodes, HOST)):
                home = root / f"n{i}"
                home.mkdir()
                config = read_config({
                    "ConfigFile": str(home / "absent.json"), "NetworkMagic": str(MAGIC), "IPv4": HOST,
                    "PortNumber": str(port), "LocalAddress": str(home / "s"), "StakeSource": str(stake_file),
                    "DatabasePath": str(home / "db"), "MinSigDelay": "0", "RecordTraffic": str(run.recording),
                })
                tracer = Tracer(clock.now)
                tracer.add_sink(_counter(accepted, i))
                # The scaled clock jumps each step while the purge sleeps toward the soonest
                # expiry in real time: it sweeps every 50 ms instead, so each step waits briefly.
                node = assemble_node(config, None, clock=clock, tracer=tracer, diffusion_policy=QUIET,
                                     expiry_max_sleep=DEFAULT_EXPIRY_INTERVAL)
                await nursery.start(node.run)
                nodes.append(node)
            dials: dict[int, list[int]] = {}
            for a, b in spec.edges():
                dials.setdefault(a, []).append(nodes[b].diffusion.port)
            for a, ports in dials.items():
                nodes[a].diffusion.update_topology(local_roots(*ports))
            await wait_until(lambda: all(len(nodes[a].diffusion.peers.hot()) >= len(p) for a, p in dials.items()),
                             30, what="every link up")
            say(f"{spec.nodes} nodes linked ({len(spec.edges())} links)")
            await _drive(nodes, clock, steps, spec, accepted, run, say)
            # The nodes' own account, taken once every task waits and with no checkpoint before
            # the cancellation: nothing moves between this and the recorders' final samples. (A
            # task woken in the same pass as the cancellation would still run one step first.)
            await trio.testing.wait_all_tasks_blocked()
            run.nodes = [_totals(f"n{i}", node) for i, node in enumerate(nodes)]
            nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    run.real_seconds = time.perf_counter() - started
    run.load_average = os.getloadavg()[0]
    return run


def _counter(accepted: list[int], index: int) -> Callable:
    def sink(event) -> None:
        if type(event) is MessageAccepted:
            accepted[index] += 1
        elif type(event) is MessageRejected:
            raise AssertionError(f"node {index} rejected a message: {event.reason}")
    return sink


async def _drive(nodes: list[Node], clock: ManualClock, steps, spec: LoadSpec, accepted: list[int],
                 run: NetworkRun, say: Callable[[str], None]) -> None:
    step_s = spec.period_s / spec.steps
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(LocalClient(node.config.local_address)) for node in nodes]
        for index, batch in enumerate(steps):
            by_node: dict[int, list[bytes]] = {}
            for home, raw in batch:
                by_node.setdefault(home, []).append(raw)

            async def submit_all(client: LocalClient, raws: list[bytes]) -> None:
                for raw in raws:
                    verdict = await client.submission.submit(raw)
                    if verdict is not ACCEPTED:
                        raise AssertionError(f"submission refused: {verdict}")

            async with trio.open_nursery() as nursery:
                for home, raws in by_node.items():
                    nursery.start_soon(submit_all, clients[home], raws)
            run.submitted += len(batch)
            target = run.submitted
            await wait_until(lambda: min(accepted) >= target, spec.step_timeout,
                             what=f"step {index}: {target:,} messages at every node")
            clock.advance(step_s)
            await wait_until(lambda: purged([node.mempool for node in nodes], clock), spec.step_timeout,
                             what=f"step {index}: the purge after the clock's jump")
            if (index + 1) % spec.steps == 0:
                round_number = (index + 1) // spec.steps
                held = len(nodes[0].mempool)
                say(f"round {round_number}/{spec.rounds}: {target:,} messages everywhere, "
                    f"{held:,} held per node, simulated minute {round_number * spec.period_s / 60:.0f}")
