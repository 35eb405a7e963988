"""Where a simulated network's memory per message per node goes, by allocation site.

A simulated run holds every node's state of every message it accepted (a message lives 30
minutes), so its heap grows with messages x nodes: whether a long run of a thousand nodes fits
in the machine's memory is this figure (docs/network-scale.md, "What remains (simulated time)").
This runs a small ``dmq simnet`` under ``tracemalloc`` and compares two snapshots taken inside the
publishing phase (at ``--from`` and ``--to``, fractions of it): what was allocated between them and
is still held, over the deliveries (a node accepting a message) between them, by allocation site.
Each site is named by the innermost frame and, where that is not project code, by the innermost
frame that is (``dmq/``, ``lab/``, ``topics/``, ``apps/``).

    PYTHONHASHSEED=0 nice -n 10 .venv/bin/python bench/simnet_memory.py --nodes 30 --pools 3000 --duration 20

tracemalloc slows the run several times; the figures are bytes, not time. ``--frames 0`` runs
without it and gives only the process's own heap (``RssAnon``) at the two points: what the
allocator really holds, fragmentation included, over the same deliveries.
"""

from __future__ import annotations

import argparse
import json
import sys
import os
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from dmq.cli.wiring import assemble_node  # noqa: E402
from dmq.trace import MessageAccepted  # noqa: E402
from lab.netlab.resources import read_memory_bytes  # noqa: E402
from lab.simnet import Simnet, SimnetOptions  # noqa: E402
from lab.simnet.run import run_on_virtual_clock  # noqa: E402

ROOT = str(Path(__file__).resolve().parent.parent)
PROJECT = ("/dmq/", "/lab/", "/topics/", "/apps/")


class MeasuredSimnet(Simnet):
    """A run that counts deliveries and takes a tracemalloc snapshot at two points of publishing."""

    def __init__(self, *args, points: tuple[float, float], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.points = points
        self.delivered = 0
        self.snapshots: list[tuple[tracemalloc.Snapshot | None, int]] = []
        self.heap: list[int] = []

    def _sink(self, index: int):
        inner = super()._sink(index)

        def sink(event) -> None:
            if type(event) is MessageAccepted:
                self.delivered += 1
            inner(event)
        return sink

    async def _publish(self, pools, started: float, nursery: trio.Nursery) -> None:
        nursery.start_soon(self._snapshots, started)
        await super()._publish(pools, started, nursery)

    async def _snapshots(self, started: float) -> None:
        for fraction in self.points:
            await trio.sleep_until(started + fraction * self.options.duration)
            self.snapshots.append((tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None,
                                   self.delivered))
            self.heap.append((read_memory_bytes(os.getpid()) or {}).get("RssAnon", 0))


def _site(traceback) -> str:
    frames = list(traceback)[::-1]     # tracemalloc keeps the oldest frame first
    names = [f"{f.filename.removeprefix(ROOT + '/')}:{f.lineno}" for f in frames]
    inner = names[0]
    project = next((n for n, f in zip(names, frames) if f.filename.startswith(ROOT)
                    and any(p in f.filename for p in PROJECT)), None)
    return inner if project is None or project == inner else f"{inner} <- {project}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--pools", type=int, default=3000)
    parser.add_argument("--period", type=float, default=120.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=30.0)
    parser.add_argument("--active-peers", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--from", type=float, default=0.25, dest="start", help="first snapshot, a fraction of publishing")
    parser.add_argument("--to", type=float, default=1.0, help="second snapshot, a fraction of publishing")
    parser.add_argument("--frames", type=int, default=10, help="frames kept per allocation; 0: no tracemalloc")
    parser.add_argument("--top", type=int, default=30, help="sites printed")
    parser.add_argument("--output", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args()
    options = SimnetOptions(nodes=args.nodes, pools=args.pools, period=args.period, duration=args.duration,
                            warmup=args.warmup, drain=1.0, kill_fraction=0.0, partition_fraction=0.0,
                            seed=args.seed, active_peers=args.active_peers, flood=False)
    simnet = MeasuredSimnet(options, assemble_node, say=lambda text: print(text, flush=True),
                            points=(args.start, args.to))
    if args.frames:
        tracemalloc.start(args.frames)
    report = run_on_virtual_clock(simnet)
    tracemalloc.stop()
    (first, delivered_first), (second, delivered_second) = simnet.snapshots
    deliveries = delivered_second - delivered_first
    heap = simnet.heap[1] - simnet.heap[0]
    print(f"\n{options.nodes} nodes, {report.accepted} messages accepted; {deliveries:,} deliveries between the "
          f"snapshots at {args.start:g} and {args.to:g} of publishing")
    traced = " (tracemalloc's own traces included)" if first is not None else ""
    print(f"process heap (RssAnon){traced}: {heap / 2**20:,.1f} MiB more, {heap / max(1, deliveries):,.0f} bytes "
          f"per message per node")
    if first is None or second is None:
        if args.output is not None:
            args.output.write_text(json.dumps({"nodes": options.nodes, "deliveries": deliveries, "heap_bytes": heap,
                                               "heap_bytes_per_delivery": round(heap / max(1, deliveries), 1)},
                                              indent=2) + "\n")
        return 0 if report.complete else 1
    sites: dict[str, list[int]] = {}
    for stat in second.compare_to(first, "traceback"):
        site = _site(stat.traceback)
        held = sites.setdefault(site, [0, 0])
        held[0] += stat.size_diff
        held[1] += stat.count_diff
    total = sum(size for size, _ in sites.values())
    ranked = sorted(sites.items(), key=lambda item: -item[1][0])
    print(f"held (tracemalloc): {total / 2**20:,.1f} MiB, {total / max(1, deliveries):,.0f} bytes per message per node")
    for site, (size, count) in ranked[:args.top]:
        print(f"{size / max(1, deliveries):8.1f} B {count / max(1, deliveries):6.2f} blocks  {site}")
    if args.output is not None:
        args.output.write_text(json.dumps({
            "nodes": options.nodes, "deliveries": deliveries, "heap_bytes": heap, "bytes": total,
            "bytes_per_delivery": round(total / max(1, deliveries), 1),
            "sites": [{"site": site, "bytes_per_delivery": round(size / max(1, deliveries), 1),
                       "blocks_per_delivery": round(count / max(1, deliveries), 3)} for site, (size, count) in ranked
                      if abs(size) >= deliveries]}, indent=2) + "\n")
    return 0 if report.complete else 1


if __name__ == "__main__":
    sys.exit(main())
