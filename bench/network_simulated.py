"""Delivery, latency, bytes and recovery of thousands of simulated DMQ nodes, and what it costs to run.

Runs ``dmq simnet`` (:mod:`lab.simnet`): N full nodes in one process on trio's
virtual clock, over links with inter-region round-trip times, jitter and bandwidth;
mainnet's load (3,000 pools, 1,500 signing a minute); netlab's kill-and-restart and
partition, a flooding peer. Prints the report, writes it as JSON, and says how long the
simulation took (wall and CPU seconds per simulated minute), which is the figure to watch
when changing the simulation itself.

    .venv/bin/python bench/network_simulated.py [--nodes 100] [--duration 60] [--seed 0] [--output FILE]

With ``--series 100,300`` it runs one simulation per node count and writes one JSON list;
``--plots DIR`` draws that list (or the one ``--from FILE`` names, without running anything)
as PNG files: cost, latency and bytes per message against the node count, latency by hop for
each node count. The number of messages is ``--pools`` times the periods in ``--duration``: a
series at a fixed, small number of messages measures latency and bytes per message against the
network's size at a realistic degree, and the cost figures (CPU per message, per idle
node-second) extrapolate it to other rates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dmq.cli.wiring import assemble_node  # noqa: E402
from lab.simnet import SimnetOptions, run_simnet  # noqa: E402
from lab.simnet.heap import ALLOCATORS, restart_with  # noqa: E402


def plot(reports: list[dict], directory: Path, prefix: str = "simnet") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    nodes = [r["settings"]["nodes"] for r in reports]
    figures = {
        f"{prefix}-cost.png": ("what the simulation costs", "CPU seconds",
                            {"CPU per message (beyond the idle cost)": [r["cost"]["cpu_ms_per_message"] / 1000
                                                                         for r in reports],
                             "CPU per idle simulated second (all nodes)": [
                                 r["cost"]["idle_cpu_us_per_node_second"] * r["settings"]["nodes"] / 1e6
                                 for r in reports]}),
        f"{prefix}-latency.png": ("publication to acceptance, every node", "milliseconds (virtual)",
                               {f"{q} (outside faults)": [r["steady_latency"][f"{q}_ms"] for r in reports]
                                for q in ("p50", "p90", "p99")}),
        f"{prefix}-bytes.png": ("bytes sent per message per node", "bytes",
                             {"all node-to-node bytes": [r["bytes_per_message_per_node"] for r in reports],
                              "one message": [r["message_size"] for r in reports]}),
    }
    for name, (title, unit, series) in figures.items():
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, values in series.items():
            ax.plot(nodes, values, marker="o", label=label)
        ax.set(title=title, xlabel="nodes (logarithmic: 100 to thousands)", ylabel=unit, xscale="log")
        ax.set_xticks(nodes, [f"{n:,}" for n in nodes])
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(directory / name, dpi=100)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for report in sorted(reports, key=lambda r: r["settings"]["nodes"]):
        by_hop = {int(hop): values for hop, values in report["latency_by_hop"].items() if values["count"]}
        hops = sorted(by_hop)
        line, = ax.plot(hops, [by_hop[h]["p50_ms"] for h in hops], marker="o",
                        label=f"{report['settings']['nodes']} nodes, p50")
        ax.plot(hops, [by_hop[h]["p99_ms"] for h in hops], linestyle="--", color=line.get_color(),
                label=f"{report['settings']['nodes']} nodes, p99")
    ax.set(title="latency by hop count", xlabel="hops from the home node", ylabel="milliseconds (virtual)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(directory / f"{prefix}-hops.png", dpi=100)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--series", type=str, default=None, help="comma-separated node counts, one run each")
    parser.add_argument("--pools", type=int, default=3000)
    parser.add_argument("--period", type=float, default=120.0)
    parser.add_argument("--duration", type=float, default=60.0, help="virtual seconds of publishing")
    parser.add_argument("--warmup", type=float, default=60.0)
    parser.add_argument("--drain", type=float, default=300.0)
    parser.add_argument("--kill-fraction", type=float, default=0.1)
    parser.add_argument("--partition-fraction", type=float, default=1 / 3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--active-peers", type=int, default=20)
    parser.add_argument("--hold-after-known", type=float, default=None, dest="hold_after_known_ms", metavar="MS",
                        help="every node's SigSubmissionHoldAfterKnown in milliseconds, 0 for none "
                             "(default: the node's default)")
    parser.add_argument("--hold-after-known-max", type=float, default=None, dest="hold_after_known_max_ms",
                        metavar="MS", help="every node's SigSubmissionHoldAfterKnownMax in milliseconds "
                                           "(default: the node's default)")
    parser.add_argument("--no-flood", action="store_true", help="no flooding peer")
    parser.add_argument("--dir", type=Path, default=None, dest="directory",
                        help="the nodes' stores go here (kept), not on a tmpfs: a long run's stores outgrow memory")
    parser.add_argument("--processes", type=int, choices=(1, 2), default=1,
                        help="run the nodes in two processes, split by region (no faults or flood)")
    parser.add_argument("--allocator", choices=ALLOCATORS, default="auto",
                        help="huge-pages, python or auto (huge pages from 500 nodes): lab/simnet/heap.py")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--plots", type=Path, default=None, help="draw the series as PNG files here")
    parser.add_argument("--from", type=Path, default=None, dest="source", help="plot this series, run nothing")
    parser.add_argument("--plot-prefix", default="simnet", help="the PNG files' names begin with this")
    args = parser.parse_args()
    if args.source is not None:
        loaded = json.loads(args.source.read_text())
        plot(loaded if isinstance(loaded, list) else [loaded], args.plots or Path("."), args.plot_prefix)
        return 0
    counts = [int(n) for n in args.series.split(",")] if args.series else [args.nodes]
    restart_with(args.allocator, max(counts), lambda text: print(text, flush=True))
    reports = []
    for nodes in counts:
        options = SimnetOptions(nodes=nodes, pools=args.pools, period=args.period, duration=args.duration,
                                warmup=args.warmup, drain=args.drain, kill_fraction=args.kill_fraction,
                                partition_fraction=args.partition_fraction, seed=args.seed,
                                active_peers=args.active_peers, flood=not args.no_flood,
                                hold_after_known_ms=args.hold_after_known_ms,
                                hold_after_known_max_ms=args.hold_after_known_max_ms,
                                directory=None if args.directory is None else args.directory / f"n{nodes}")
        report = run_simnet(options, assemble_node, say=lambda text: print(text, flush=True), processes=args.processes)
        print("\n".join(report.lines()), flush=True)
        reports.append(report.to_json())
        if args.output is not None:
            args.output.write_text(json.dumps(reports if args.series else reports[0], indent=2) + "\n")
    if args.plots is not None:
        plot(reports, args.plots, args.plot_prefix)
    return 0 if all(report["complete"] for report in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
