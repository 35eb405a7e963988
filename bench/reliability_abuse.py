"""Protocol abuse at a node, every violation of ``tests/reliability/abuse.py``, with figures.

One in-process node X (LMDB, Unix socket, TCP), a peer B linked to it, an aggregator with a
blocking request and a Mithril-style signer publishing every 100 ms. Each immediate
violation runs on its own connection, one after the other; then the timed ones (stalled
handshake, no proposal, stalled SDU, slow reader) run all at once. Printed per violation:
the reference limit, how long X took to end the connection and what it named; then the
violations tried, the connections that survived wrongly (must be 0), and the honest
signer's submissions and latencies during the attacks.

    .venv/bin/python bench/reliability_abuse.py [--skip-timed]
"""

from __future__ import annotations

import argparse
from collections import Counter
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from tests.reliability.abuse import IMMEDIATE, TIMED, abuse_while_serving  # noqa: E402
from tests.reliability.world import start_world  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-timed", action="store_true", help="only the immediate violations (seconds, not a minute)")
    args = parser.parse_args()
    results, honest = [], []
    with tempfile.TemporaryDirectory(prefix="dqa") as tmp:
        async with trio.open_nursery() as nursery:
            world = await start_world(nursery, Path(tmp), MinSigDelay="0")
            batches = [(IMMEDIATE, False)] + ([] if args.skip_timed else [(TIMED, True)])
            for abuses, concurrently in batches:
                found, traffic = await abuse_while_serving(world, abuses, concurrently=concurrently)
                results += found
                honest.append(traffic)
            await world.assert_only_honest_messages_everywhere()
            nursery.cancel_scope.cancel()
    print(f"{'violation':<32}{'link':<6}{'limit s':>8}{'closed after s':>16}  error named by the node")
    for r in results:
        closed = f"{r.closed_after:.2f}" if r.closed_after is not None else "NOT CLOSED"
        print(f"{r.abuse.name:<32}{r.abuse.link:<6}{r.abuse.limit:>8.0f}{closed:>16}  {(r.error or '')[:90]}")
    wrong = [r for r in results if not r.in_time]
    latencies = [x for t in honest for x in t.latencies]
    failures = [f for t in honest for f in t.failures]
    print(f"violations tried: {len(results)}; connections that survived wrongly or were cut outside the limit: "
          f"{len(wrong)}")
    print(f"honest signer during the attacks: {len(latencies)} published, {len(failures)} failed; latency p50 "
          f"{percentile(latencies, 0.5) * 1e3:.0f} ms, p99 {percentile(latencies, 0.99) * 1e3:.0f} ms, "
          f"max {max(latencies) * 1e3:.0f} ms; aggregator and peer B saw exactly the honest messages")
    if failures:
        print(f"honest failures: {Counter(f[:80] for f in failures).most_common(5)}")
    print("(figures from a shared 2-core machine loaded by other jobs)")


if __name__ == "__main__":
    trio.run(main)
