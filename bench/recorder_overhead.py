"""What recording traffic costs: the local service's ingest path with and without ``RecordTraffic``.

Two ``dmq-node`` processes run side by side, the same configuration except that one records
its traffic (``RecordTraffic``). Clients in another process publish in the Mithril signer
pattern (``bench/local_service.py``: a connection per message, handshake, submit, done).
Each repetition sends the same fresh batch of signed messages to both nodes, one after the
other, alternating which goes first, so that the load of a shared machine falls on both
alike. Figures: accepted messages per second, and the node's CPU time per accepted message
(less sensitive to other processes than wall time); the ratio recording / not recording of
each, over all repetitions. Target (issue 9): recording costs at most 10 % of throughput.

    .venv/bin/python bench/recorder_overhead.py [--messages 5000] [--repeat 3] [--size 2650]
        [--pools 512] [--publishers 64]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.local_service import (  # noqa: E402
    MAGIC,
    cpu_seconds,
    generate_messages,
    generate_pools,
    run_client,
    write_messages,
)
from dmq.message import pool_id_of  # noqa: E402
from tests.e2e.node_process import NodeProcess  # noqa: E402


def start_node(directory: Path, stake: dict, record: Path | None) -> NodeProcess:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "stake.json").write_text(json.dumps(stake))
    config = {"NetworkMagic": MAGIC, "StakeSource": "stake.json", "DatabasePath": "db",
              "LocalAddress": "dmq.socket", "MinSigDelay": 0}
    if record is not None:
        config["RecordTraffic"] = str(record)
    node = NodeProcess(directory, config)
    node.start()
    return node


def publish(node: NodeProcess, batch: Path, publishers: int) -> tuple[int, float, float]:
    """(accepted, seconds, node CPU seconds) of one batch."""
    cpu = cpu_seconds(node.pid)
    result = run_client("publish", node.socket_path, messages_file=batch, publishers=publishers)
    return result["replies"].get("accepted", 0), result["elapsed"], cpu_seconds(node.pid) - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5_000, help="messages per batch")
    parser.add_argument("--repeat", type=int, default=3, help="batches per node")
    parser.add_argument("--size", type=int, default=2_650)
    parser.add_argument("--pools", type=int, default=512)
    parser.add_argument("--publishers", type=int, default=64)
    args = parser.parse_args()

    print(f"Recorder overhead: {args.repeat} batches of {args.messages:,} messages of {args.size:,} bytes "
          f"per node, {args.publishers} publishers (Mithril signer pattern), same batches to both nodes")
    with tempfile.TemporaryDirectory(prefix="dmq-rec-bench-") as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        pools = generate_pools(args.pools)
        expires_at = int(time.time()) + 1700
        batches = []
        for k in range(args.repeat):
            path = root / f"batch{k}.bin"
            write_messages(path, generate_messages(pools, args.messages, args.size, expires_at, serial=k * 10**8))
            batches.append(path)
        stake = {"epoch": 1, "maxKESEvolutions": 62,
                 "pools": {pool_id_of(cold_vk).hex(): 1_000_000 for _, _, cold_vk in pools}}
        print(f"  signed {args.repeat * args.messages:,} messages in {time.perf_counter() - t:.1f} s")

        recording = root / "recording"
        nodes = {"plain": start_node(root / "plain", stake, None),
                 "recording": start_node(root / "recorded", stake, recording)}
        results: dict[str, list[tuple[int, float, float]]] = {name: [] for name in nodes}
        try:
            time.sleep(0.5)
            for k, batch in enumerate(batches):
                order = ["plain", "recording"] if k % 2 == 0 else ["recording", "plain"]
                for name in order:
                    accepted, elapsed, cpu = publish(nodes[name], batch, args.publishers)
                    results[name].append((accepted, elapsed, cpu))
                    print(f"  batch {k + 1} {name:>9}: {accepted:,} accepted in {elapsed:.2f} s = "
                          f"{accepted / elapsed:,.0f}/s, node CPU {cpu / max(accepted, 1) * 1e6:,.0f} µs per message",
                          flush=True)
        finally:
            for node in nodes.values():
                node.kill(2)  # SIGINT: the recording node flushes and closes its files

        rate = {name: sum(a for a, _, _ in r) / sum(e for _, e, _ in r) for name, r in results.items()}
        cpu = {name: sum(c for _, _, c in r) / sum(a for a, _, _ in r) for name, r in results.items()}
        per_batch = [rec[0] / rec[1] / (plain[0] / plain[1])
                     for plain, rec in zip(results["plain"], results["recording"])]
        recorded_bytes = sum(p.stat().st_size for p in recording.rglob("*.jsonl"))
        events = sum(1 for p in (recording / "message_events").glob("*.jsonl") for _ in open(p))
        ratio = rate["recording"] / rate["plain"]
        print(f"\nthroughput: {rate['plain']:,.0f}/s without recording, {rate['recording']:,.0f}/s with: "
              f"ratio {ratio:.3f} (per batch {', '.join(f'{r:.3f}' for r in per_batch)}; "
              f"median {statistics.median(per_batch):.3f})  "
              f"(target >= 0.90: {'met' if ratio >= 0.9 else 'NOT met'})")
        print(f"node CPU per message: {cpu['plain'] * 1e6:,.0f} µs without, {cpu['recording'] * 1e6:,.0f} µs with: "
              f"+{(cpu['recording'] / cpu['plain'] - 1) * 100:.1f} %")
        print(f"recorded: {events:,} message events, {recorded_bytes / 1e6:,.1f} MB of JSON lines "
              f"({recorded_bytes / max(events, 1):,.0f} B per event, all record types)")
        print(f"load average while running: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
