"""Blocklace figures: causal delivery throughput with 100 publishers, and equivocation-to-proof time.

1. A DAG of ``--publishers`` creators (default 100, in topics of 25) over ``--rounds`` rounds: each block points
   to its self-parent and to up to 15 blocks of the previous round. The blocks are offered in
   a random order (so most wait for pointers) to
   a. the lace alone (:class:`~topics.blocklace.node.LaceNode`, in memory): the causal
      engine's cost;
   b. one node's topic pipeline (DMQ validation with KES and opcert checks, LMDB commit,
      adapter, a subscription): what a node delivers per second.
2. Five in-process nodes with the real pipeline flood each other; one pool sends two blocks
   with the same seq to two nodes; the figure is the wall time (and flood rounds) until every
   node holds the proof. In-process: no network latency, so on a real network add one
   diffusion delay per round.

Usage: ``.venv/bin/python bench/topics_blocklace.py [--publishers 100] [--rounds 8]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dmq.clock import ManualClock  # noqa: E402
from topics.blocklace.node import LaceNode  # noqa: E402
from tests.topics.blocklace.cluster import Cluster, open_node, pools_for  # noqa: E402
from tests.topics.blocklace.world import (  # noqa: E402
    ALL, NOW, Author, ad_payload, advertisement, block_of, event, owner_seeds, pool,
)
from topics.blocklace.ads import owner_of  # noqa: E402

PER_TOPIC = 25


def build_dag(publishers: int, rounds: int, seed: int = 3):
    """Blocks of ``publishers`` creators in topics of at most 25 publishers each: an
    advertisement is a block, so at most 31 publishers fit in its 1280 bytes (docs/topics-design.md 5.2)."""
    rng = random.Random(seed)
    messages, groups = [], []
    for start in range(0, publishers, PER_TOPIC):
        seeds = owner_seeds(f"bench-topic-{start}")
        topic = owner_of(seeds, 2).topic_id
        members = list(range(start, min(start + PER_TOPIC, publishers)))
        authors = [Author(pool(i), topic=topic) for i in members]
        ad = authors[0].block(ad_payload(advertisement(0, {pool(i).id: ALL for i in members}, owner_seeds=seeds)))
        messages.append(ad)
        groups.append((authors, [ad.message_id]))
    for _ in range(rounds):
        for index, (authors, previous) in enumerate(groups):
            current = []
            for author in authors:
                message = author.block(event(rng.randbytes(64)), others=rng.sample(previous, min(15, len(previous))))
                messages.append(message)
                current.append(message.message_id)
            groups[index] = (authors, current)
    return messages


def bench_lace(messages, seed: int = 5) -> tuple[float, int]:
    order = messages[:]
    random.Random(seed).shuffle(order)
    node = LaceNode()
    started = time.perf_counter()
    for message in order:
        node.offer(message, block_of(message), int(NOW))
    elapsed = time.perf_counter() - started
    return elapsed, len(node.delivered)


async def bench_pipeline(messages, publishers: int, seed: int = 5) -> tuple[float, int]:
    clock = ManualClock(NOW)
    with tempfile.TemporaryDirectory() as tmp:
        node = open_node(Path(tmp) / "n", "n", pool(0), clock, pools_for(publishers))
        async with trio.open_nursery() as nursery:
            await nursery.start(node.run)
            order = messages[:]
            random.Random(seed).shuffle(order)
            started = time.perf_counter()
            for start in range(0, len(order), 100):
                clock.advance(10)      # the per-pool bucket refills one token per 10 s
                await node.ingress.submit_from_peer([m.raw for m in order[start:start + 100]], peer="bench")
            elapsed = time.perf_counter() - started
            delivered = len(node.delivered_blocks())
            await node.stop()
            nursery.cancel_scope.cancel()
    return elapsed, delivered


async def bench_equivocation(nodes_count: int = 5) -> tuple[float, int]:
    clock = ManualClock(NOW)
    with tempfile.TemporaryDirectory() as tmp:
        nodes = [open_node(Path(tmp) / f"n{i}", f"n{i}", pool(i), clock, pools_for(nodes_count), seed=i)
                 for i in range(nodes_count)]
        async with trio.open_nursery() as nursery:
            for node in nodes:
                await nursery.start(node.run)
            cluster = Cluster(nodes)
            authors = [Author(pool(i)) for i in range(nodes_count)]
            ad = authors[0].block(ad_payload(advertisement(0, {pool(i).id: ALL for i in range(nodes_count)})))
            await nodes[0].submit_local(ad.raw)
            await cluster.settle()
            culprit = authors[-1]
            left = culprit.block(event(b"left"), others=[ad.message_id])
            culprit.seq, culprit.last = 0, None
            right = culprit.block(event(b"right"), others=[ad.message_id])
            started = time.perf_counter()
            await nodes[0].submit_local(left.raw)
            await nodes[1].submit_local(right.raw)
            rounds = 0
            while not all(n.blocklace.equivocations() for n in nodes):
                await cluster.round()
                rounds += 1
            elapsed = time.perf_counter() - started
            for node in nodes:
                await node.stop()
            nursery.cancel_scope.cancel()
    return elapsed, rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--publishers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8, help="blocks per publisher (at most 8: the rate bucket)")
    args = parser.parse_args()
    started = time.perf_counter()
    messages = build_dag(args.publishers, min(args.rounds, 8))
    print(f"DAG: {args.publishers} publishers, {len(messages)} blocks, built and signed in "
          f"{time.perf_counter() - started:.1f} s")
    elapsed, delivered = bench_lace(messages)
    print(f"lace only (random order): {delivered} delivered in {elapsed:.2f} s = {delivered / elapsed:,.0f} blocks/s")
    elapsed, delivered = trio.run(bench_pipeline, messages, args.publishers)
    print(f"node pipeline (KES, LMDB, random order): {delivered} delivered in {elapsed:.2f} s = "
          f"{delivered / elapsed:,.0f} blocks/s")
    elapsed, rounds = trio.run(bench_equivocation)
    print(f"equivocation to proof at all 5 nodes: {elapsed * 1000:.0f} ms, {rounds} flood round(s) (in-process)")


if __name__ == "__main__":
    main()
