"""``dmq devnet``: a local network of ``dmq-node`` processes with Mithril-style traffic.

Generates the stake pools (cold keys, Sum6KES keys, operational certificates, a Shelley
genesis giving them stake), starts the nodes on loopback in the chosen topology, publishes
one message per pool per period and counts what every aggregator receives, live; then stops
every node and prints the summary. The run's files stay under ``--dir`` for a look
afterwards (node logs, ``devnet-summary.json``, the traffic recording with ``--record``).
The devnet itself is :mod:`lab.devnet`, imported only when the command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "parse_node_list", "SHAPES"]

SHAPES = ("line", "ring", "star", "full", "random")


def parse_node_list(text: str) -> tuple[int, ...] | None:
    """``all`` or node numbers such as ``1,3`` (as the devnet names them) -> 0-based indexes."""
    if text.strip().lower() == "all":
        return None
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'all' or node numbers such as 1,3, got {text!r}") from None
    if not numbers or min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"node numbers start at 1, got {text!r}")
    return tuple(number - 1 for number in numbers)


def _positive(kind: type):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


def add_run_arguments(parser: argparse.ArgumentParser, *, directory: Path) -> None:
    """The flags ``dmq devnet`` and ``dmq demo`` share."""
    parser.add_argument("--dir", type=Path, default=directory, dest="directory",
                        help=f"where the run's files go; a previous devnet there is replaced (default: {directory})")
    parser.add_argument("--no-live", action="store_true",
                        help="print a status line every few seconds instead of the live table")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "devnet", help="run a local devnet: N nodes, P simulated pools, publishers and aggregators",
        description="Start N dmq-node processes on loopback in a topology, publish one message per simulated "
                    "stake pool per period for DURATION seconds, count what each aggregator receives, then stop "
                    "every node and print a summary. Ctrl-C stops early, cleanly.")
    parser.add_argument("--nodes", type=_positive(int), default=4, help="number of nodes (default: 4)")
    parser.add_argument("--topology", choices=SHAPES, default="ring",
                        help="who connects to whom (default: ring; random is connected, seeded by --seed)")
    parser.add_argument("--pools", type=_positive(int), default=12,
                        help="simulated stake pools, spread over the nodes (default: 12)")
    parser.add_argument("--period", type=_positive(float), default=5.0,
                        help="seconds between two messages of one pool; pools are spread over it (default: 5)")
    parser.add_argument("--duration", type=_positive(float), default=45.0,
                        help="seconds of publishing (default: 45)")
    parser.add_argument("--record", action="store_true",
                        help="record traffic into DIR/traffic for dmq capacity-report")
    parser.add_argument("--aggregators", type=parse_node_list, default=None, metavar="all|1,3",
                        help="nodes that get an aggregator (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pools' keys and of a random topology")
    parser.add_argument("--body-size", type=int, default=None,
                        help="bytes of each message body (default: 451, a Mithril signature's)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless every aggregator got every message exactly once and every node "
                             "stopped cleanly")
    add_run_arguments(parser, directory=Path("devnet"))


def run(args: argparse.Namespace) -> int:
    import trio

    from lab.devnet import DevnetOptions, run_devnet

    extra = {} if args.body_size is None else {"body_size": args.body_size}
    options = DevnetOptions(nodes=args.nodes, pools=args.pools, topology=args.topology, period=args.period,
                            duration=args.duration, directory=args.directory, seed=args.seed,
                            live=not args.no_live, record_traffic=args.record, aggregators=args.aggregators,
                            **extra)
    summary = trio.run(run_devnet, options)
    if args.check and not (summary.complete and summary.stopped_cleanly):
        raise OperatorError(f"the run was not complete: {summary.loss} deliveries lost, "
                            f"{sum(a.duplicates for a in summary.aggregators)} duplicated, "
                            f"{summary.attempted - summary.accepted} publications not accepted"
                            + ("" if summary.stopped_cleanly else ", a node did not stop cleanly")
                            + (f", interrupted by {summary.interrupted}" if summary.interrupted else ""))
    return 0
