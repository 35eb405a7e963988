"""Faults at a ``dmq-node`` process, at length, with the figures.

1. SIGKILL at a random moment under load, ``--trials`` times (default 20) on one database,
   each followed by a restart: acknowledged messages lost (must be 0), expired messages
   served (0), messages served that were never submitted (0), restart times.
2. Torn pages: random bytes over one random page of ``data.mdb``, ``--torn`` times: how often
   the node refused to start with one line, how often it started, how many records a started
   node dropped at load (checksum, decoder or id check) and whether it served any byte that
   was not stored (must be 0).
3. Disk full (``prlimit --fsize``): acknowledged, refused, lost after a restart with space.
4. Restart time with ``--held`` messages (default 45 000) in the database: process start to
   socket accepting (target < 2 s), the node's CPU time until then, and start to a new
   subscriber's first reply of 1 000 messages.

Clock jumps and cardano-node vanishing run in the test suite (in simulated time, or with
the fake cardano-node): ``tests/reliability/test_faults.py``.

    .venv/bin/python bench/reliability_faults.py [--trials 20] [--torn 20] [--held 45000]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from bench.local_service import cpu_seconds  # noqa: E402
from tests.e2e.messages import devnet_signers  # noqa: E402
from tests.e2e.node_process import NodeExited  # noqa: E402
from tests.e2e.raw_n2c import (  # noqa: E402
    ACCEPT, ConnectionLost, RawN2CClient, accept_version, publish_like_mithril_signer,
)
from tests.reliability.faults import (  # noqa: E402
    MAGIC, SizeLimitedNode, devnet_node, fill_database, kill_trial, served_now, tear_a_page,
)


async def sigkill_trials(root: Path, trials: int, signers, rng) -> None:
    if not trials:
        return
    print(f"== SIGKILL under load: {trials} trials, 6 signers publishing, TTL 2 s for 1 in 5 messages")
    node = devnet_node(root / "kill").start()
    earlier: set[bytes] = set()
    totals = dict(acknowledged=0, rejected=0, unanswered=0, lost=0, expired_served=0, unexpected=0)
    restarts = []
    try:
        for n in range(trials):
            t = await kill_trial(node, signers, rng, earlier=earlier)
            earlier |= set(t.acknowledged) | set(t.unanswered)
            restarts.append(t.restart_s)
            for key in totals:
                totals[key] += len(getattr(t, key))
            print(f"  trial {n + 1:2}: killed after {t.killed_after:.2f} s, acknowledged {len(t.acknowledged):4}, "
                  f"rejected {len(t.rejected):3}, in flight {len(t.unanswered)}, restart {t.restart_s:.2f} s, "
                  f"lost {len(t.lost)}, expired served {len(t.expired_served)}", flush=True)
    finally:
        node.kill()
    print(f"  total: {totals}; restart median {statistics.median(restarts):.2f} s, max {max(restarts):.2f} s")


async def torn_pages(root: Path, trials: int, signers, rng) -> None:
    if not trials:
        return
    print(f"== torn page: 64 random bytes over one random page of data.mdb, {trials} trials (200 messages held)")
    refused = started = altered_served = dropped = 0
    lines = set()
    for n in range(trials):
        workdir = root / f"torn{n}"
        node = devnet_node(workdir)
        stored = set(fill_database(workdir / "db", signers, 200))
        page = tear_a_page(workdir / "db" / "data.mdb", rng)
        try:
            node.start()
        except NodeExited:
            refused += 1
            err = node.stderr_path.read_text().strip().splitlines()
            lines.add(len(err))
            print(f"  trial {n + 1:2}: page {page:3}: refused: {err[-1][:150] if err else '(no output)'}")
            continue
        try:
            served, _ = await served_now(node)
        finally:
            node.kill()
        started += 1
        bad = [raw for raw in served if raw not in stored]
        altered_served += len(bad)
        reasons = dropped_at_load(node.stderr_path.read_text())
        dropped += len(reasons)
        print(f"  trial {n + 1:2}: page {page:3}: started, served {len(served)} of 200, "
              f"dropped at load {len(reasons)}{f' ({reasons[0]})' if reasons else ''}, altered bytes served {len(bad)}")
    print(f"  total: refused with one line {refused} (stderr line counts {sorted(lines)}), started {started}, "
          f"records dropped at load {dropped}, altered messages served {altered_served}")


def dropped_at_load(stderr: str) -> list[str]:
    """The reasons of the records the store dropped at load (one warning line each)."""
    return [line.rsplit("): ", 1)[-1] for line in stderr.splitlines() if "dropped record" in line]


async def disk_full(root: Path, signers) -> None:
    limit = SizeLimitedNode.fsize
    print(f"== disk full: data.mdb limited to {limit} bytes, 1.5 kB messages")
    workdir = root / "full"
    node = devnet_node(workdir, SizeLimitedNode).start()
    acknowledged, refused = [], []
    try:
        for i in range(2000):
            raw = signers[i % 2].sign(body=os.urandom(1500)).raw
            try:
                reply = await publish_like_mithril_signer(node.socket_path, MAGIC, raw)
            except ConnectionLost:
                refused.append(raw)
                if len(refused) >= 100:
                    break
                continue
            (acknowledged if reply == ACCEPT else refused).append(raw)
        alive = node.running
    finally:
        node.kill()
    again = devnet_node(workdir).start()
    try:
        served, _ = await served_now(again)
    finally:
        again.kill()
    lost = [raw for raw in acknowledged if raw not in set(served)]
    print(f"  acknowledged {len(acknowledged)}, refused (closed without a reply) {len(refused)}, node still running "
          f"{alive}, lost after restart {len(lost)}")


async def restart_time(root: Path, held: int, signers) -> None:
    print(f"== restart with {held} messages held")
    workdir = root / "held"
    node = devnet_node(workdir)
    node.start_timeout = 120.0   # a loaded machine; the figure printed is the measured time
    began = time.monotonic()
    fill_database(workdir / "db", signers, held)
    print(f"  database filled in {time.monotonic() - began:.1f} s "
          f"({(workdir / 'db' / 'data.mdb').stat().st_size / 1e6:.0f} MB)")
    listening, first, cpu = [], [], []
    for _ in range(3):
        began = time.monotonic()
        node.start()
        listening.append(time.monotonic() - began)
        cpu.append(cpu_seconds(node.pid))
        async with await RawN2CClient.connect(node.socket_path) as client:
            assert await client.handshake(MAGIC) == accept_version(MAGIC)
            reply = await client.request(blocking=False)
        first.append(time.monotonic() - began)
        assert reply[:3] == b"\x83\x01\x9f" and reply.endswith(b"\xff\xf5"), "a full first batch, more to come"
        node.kill()
    print(f"  start to socket accepting: {', '.join(f'{s:.2f}' for s in listening)} s "
          f"(median {statistics.median(listening):.2f} s, target < 2 s); CPU time of the node until then "
          f"{', '.join(f'{s:.2f}' for s in cpu)} s (wall time includes waiting for a loaded CPU)")
    print(f"  start to a new subscriber's first 1000 messages: {', '.join(f'{s:.2f}' for s in first)} s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--torn", type=int, default=20)
    parser.add_argument("--held", type=int, default=45_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-disk-full", action="store_true")
    args = parser.parse_args()
    signers = devnet_signers()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="dqf") as tmp:
        root = Path(tmp)
        await sigkill_trials(root, args.trials, signers, rng)
        await torn_pages(root, args.torn, signers, rng)
        if not args.skip_disk_full:
            await disk_full(root, signers)
        await restart_time(root, args.held, signers)
    print("(figures from a shared 2-core machine loaded by other jobs)")


if __name__ == "__main__":
    trio.run(main)
