"""UPSYCLE adapter throughput: group fan-out to 100 subscribers, and queue replay after 10,000 misses.

Prints two figures measured on a real LMDB store (one write transaction per accepted message,
as the ingress pipeline commits): how many group messages per second one node validates and
queues for 100 joined subscribers (and the resulting deliveries per second), and how fast a
subscriber that was away for 10,000 messages drains its queue (read and acknowledge in
batches of 1000, as protocol 1000 allows). DMQ messages are built and KES-signed before the
clock starts: the figures are the adapter's own cost.

``--batch N`` commits N messages per write transaction instead of one, to show what grouping
the commits of consecutive arrivals would gain (the pipeline commits one message at a time:
each validation must see the state of every message accepted before it).

    .venv/bin/python bench/topics_upsycle.py [--messages 2000] [--subscribers 100] [--missed 10000] [--batch 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dmq.codec import build_message  # noqa: E402
from tests.dmq.diffusion.network import pool as test_pool  # noqa: E402
from tests.topics.upsycle.harness import MAGIC, NOW, Driver, key, multicast, routed_body  # noqa: E402
from topics.adapter import Accepted, DmqFacts, Origin, Reject, ValidationContext  # noqa: E402
from topics.upsycle.params import UpsycleParams  # noqa: E402


def _prepared(driver: Driver, count: int, group, tag: str) -> list[tuple]:
    signer = test_pool(1)
    out = []
    for n in range(count):
        body = routed_body(multicast(group, f"{tag}{n}".encode() * 8, ttl=86400))
        inner = driver.adapter.decode(body)
        expires_at = driver.adapter.expires_at(inner, driver.now)
        dmq = build_message(body, 0, expires_at, signer.kes, signer.opcert, signer.cold_vk)
        out.append((inner, dmq, DmqFacts(dmq.message_id, dmq.pool_id, 0, expires_at, Origin.PEER)))
    return out


def _ingest(driver: Driver, prepared: list[tuple], batch: int = 1) -> float:
    started = time.perf_counter()
    for first in range(0, len(prepared), batch):
        with driver.store.write() as txn:
            for inner, dmq, facts in prepared[first:first + batch]:
                context = ValidationContext(driver.clock, facts, None, txn, {}, MAGIC)
                verdict = driver.adapter.validate(inner, context)
                if isinstance(verdict, Reject):
                    raise SystemExit(f"unexpected reject: {verdict}")
                driver.adapter.on_accept(Accepted(dmq, facts, inner, driver.now), txn)
    return time.perf_counter() - started


def fan_out(directory: Path, messages: int, subscribers: int, batch: int) -> None:
    driver = Driver(directory / "fanout")
    group = key(1)
    members = [key(1000 + i) for i in range(subscribers)]
    for member in members:
        driver.join(member, group)
    prepared = _prepared(driver, messages, group, "f")
    elapsed = _ingest(driver, prepared, batch)
    started = time.perf_counter()
    delivered = 0
    for member in members:
        items = driver.read(member, max_items=messages)
        delivered += len(items)
        driver.ack(member, items[-1].dseq)
    drained = time.perf_counter() - started
    driver.close()
    print(f"fan-out: {messages} group messages to {subscribers} subscribers, {batch} per write transaction")
    print(f"  accepted and queued: {messages / elapsed:,.0f} messages/s "
          f"({messages * subscribers / elapsed:,.0f} queue appends/s)")
    print(f"  read and acknowledged: {delivered:,} items in {drained:.2f} s ({delivered / drained:,.0f} items/s)")


def replay(directory: Path, missed: int) -> None:
    driver = Driver(directory / "replay", params=UpsycleParams(queue_max_items=missed + 16))
    group, member = key(2), key(3)
    driver.join(member, group)
    _ingest(driver, _prepared(driver, missed, group, "r"))
    driver.restart()
    started = time.perf_counter()
    delivered = 0
    while True:
        items = driver.read(member, max_items=1000)
        if not items:
            break
        delivered += len(items)
        driver.ack(member, items[-1].dseq)
    elapsed = time.perf_counter() - started
    driver.close()
    print(f"replay: a subscriber returning after {missed:,} missed messages (after a restart)")
    print(f"  {delivered:,} items read and acknowledged in {elapsed:.2f} s ({delivered / elapsed:,.0f} items/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--missed", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1, help="messages per write transaction (fan-out)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        fan_out(Path(directory), args.messages, args.subscribers, args.batch)
        replay(Path(directory), args.missed)
    print(f"(simulated time starts at {NOW}; the machine may be shared, figures are indicative)")


if __name__ == "__main__":
    main()
