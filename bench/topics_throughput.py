"""Per-topic throughput of a ``dmq-node`` process: client publications accepted per second, per adapter.

Starts one node carrying every topic (signing with its own pool's Sum6KES key, as
``tests/e2e/topic_node.py`` sets one up), then, for each topic in turn, has ``--clients``
protocol 1000 connections publish as fast as the node answers for ``--seconds`` seconds:
raw bodies, UPSYCLE multicasts (signed by a group key), Blocklace Event drafts (the node
builds and signs each block of its pool) and dmsg server entries (each of a new key: a node
publishes one refresh per key per 60 s). Every publication goes the whole way: the body's checks, the KES signature, the
topic ingress and the commit. The figure is accepted publications per second, with the node's
CPU time per publication (``/proc``) and the machine's load before and after.

The per-topic budgets and the per-key limit are opened for the run: the figures are what the
node can carry, not what the defaults let a pool publish (docs/topics.md, "Publication budgets").

    .venv/bin/python bench/topics_throughput.py [--seconds 5] [--clients 4] [--topics raw,upsycle,blocklace,dmsg]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.local_service import cpu_seconds  # noqa: E402
from clients.topics import TopicRequestRefused, TopicOwners, advertisement_draft, event_draft  # noqa: E402
from clients.topics import dmsg, open_topic_connection, upsycle  # noqa: E402
from tests.e2e.topic_node import ALL_ADAPTERS, TOPIC_MAGIC, topic_node  # noqa: E402
from tests.topics.blocklace.world import ALL, pool  # noqa: E402

OPEN = {"Capacity": 1_000_000, "RefillSeconds": 0.000001}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Bodies:
    """Distinct bodies of one topic, made on demand (a client's cost, not the node's)."""

    def __init__(self, topic: str, blocklace_topic: bytes) -> None:
        self.topic, self.blocklace_topic, self.n = topic, blocklace_topic, 0
        self.group = os.urandom(32)

    def next(self) -> bytes:
        self.n += 1
        n, payload = self.n, b"%08d" % self.n + os.urandom(120)
        if self.topic == "raw":
            return b"\x00" + payload
        if self.topic == "upsycle":
            return upsycle.routed_body(upsycle.multicast(self.group, payload, time.time()))
        if self.topic == "blocklace":
            return event_draft(self.blocklace_topic, payload)
        return dmsg.entry_body(dmsg.server_entry(os.urandom(32), 1, "203.0.113.7:8081", 4))


async def publish_for(socket: Path, topic: str, bodies: Bodies, seconds: float, clients: int) -> tuple[int, int]:
    accepted = refused = 0
    deadline = trio.current_time() + seconds

    async def client() -> None:
        nonlocal accepted, refused
        async with open_topic_connection(socket, TOPIC_MAGIC) as conn:
            while trio.current_time() < deadline:
                try:
                    await conn.ask(conn.topics.publish(bodies.next()))
                    accepted += 1
                except TopicRequestRefused as exc:
                    refused += 1
                    if refused == 1:
                        print(f"  {topic}: first refusal: {exc}", file=sys.stderr)

    async with trio.open_nursery() as nursery:
        for _ in range(clients):
            nursery.start_soon(client)
    return accepted, refused


async def create_topic(socket: Path) -> bytes:
    owners = TopicOwners([os.urandom(32)], 1)
    async with open_topic_connection(socket, TOPIC_MAGIC) as conn:
        await conn.ask(conn.topics.publish(advertisement_draft(owners.advertisement(0, {pool(0).id: ALL}))))
    return owners.topic_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of publishing per topic (default 5)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent client connections (default 4)")
    parser.add_argument("--topics", default=",".join(ALL_ADAPTERS), help="topics to measure, in order")
    args = parser.parse_args()
    topics = [t for t in args.topics.split(",") if t]
    with tempfile.TemporaryDirectory(prefix="dmq-topics-bench-") as tmp:
        node = topic_node(Path(tmp) / "node", TopicBudgets={t: OPEN for t in ALL_ADAPTERS},
                          TopicKeyLimit={"Count": 1_000_000, "WindowSeconds": 1})
        node.start()
        try:
            print(f"load before: {_load()}; {args.clients} clients, {args.seconds:g} s per topic")
            blocklace_topic = trio.run(create_topic, node.socket_path)
            print(f"{'topic':<10} {'accepted':>8} {'refused':>7} {'msg/s':>8} {'node CPU ms/msg':>15}")
            for topic in topics:
                bodies = Bodies(topic, blocklace_topic)
                cpu = cpu_seconds(node.pid)
                started = time.perf_counter()
                accepted, refused = trio.run(publish_for, node.socket_path, topic, bodies, args.seconds, args.clients)
                elapsed = time.perf_counter() - started
                used = cpu_seconds(node.pid) - cpu
                per = f"{1000 * used / accepted:.2f}" if accepted else "-"
                print(f"{topic:<10} {accepted:>8} {refused:>7} {accepted / elapsed:>8.1f} {per:>15}", flush=True)
            node.check_running()
            print(f"load after: {_load()}")
        finally:
            node.kill()


if __name__ == "__main__":
    main()
