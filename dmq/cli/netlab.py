"""``dmq netlab``: real ``dmq-node`` processes, each in its own network namespace.

Each node gets a namespace and an address from 198.18.0.0/15, and a veth pair to one bridge
with no way out; its peers come from public roots and peer sharing. The devnet's pools publish
to their home nodes, an aggregator on every node counts deliveries, some nodes are killed and
restarted, some partitioned and healed, a flooding peer and a stake-less cluster attack some
nodes (``--faults``), and the report says whether every accepted message reached every node
exactly once, whether nothing invalid got through, and what CPU and memory every node used. Needs root (namespaces); without it, one line points to
``dmq devnet``. The lab itself is :mod:`lab.netlab`, imported only when run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dmq.errors import OperatorError

__all__ = ["add_parser", "run"]


def _number(kind: type, *, low: float, low_inclusive: bool = False, high: float | None = None):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value < low or (value == low and not low_inclusive) or (high is not None and value >= high):
            bound = f"{'at least' if low_inclusive else 'above'} {low:g}" + ("" if high is None else f", below {high:g}")
            raise argparse.ArgumentTypeError(f"expected a number {bound}, got {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _faults(text: str) -> tuple[str, ...]:
    """The names only; :class:`lab.netlab.NetlabOptions` refuses an unknown one in one line."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _inbound_limit(text: str) -> tuple[int, int, float]:
    parts = text.split(",")
    try:
        hard = int(parts[0])
        soft = int(parts[1]) if len(parts) > 1 else hard * 3 // 4
        delay = float(parts[2]) if len(parts) > 2 else 5.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HARD[,SOFT[,DELAY]], got {text!r}") from None
    if len(parts) > 3 or not 0 <= soft <= hard or hard < 1 or delay < 0:
        raise argparse.ArgumentTypeError(f"expected HARD[,SOFT[,DELAY]] with 0 <= SOFT <= HARD, got {text!r}")
    return hard, soft, delay



def add_workload_arguments(parser: argparse.ArgumentParser, *, nodes: int, pools: int, period: float,
                           duration: float, partition_fraction: float, partition_default: str,
                           period_note: str = "", time_word: str = "seconds") -> None:
    """The workload and fault options the real (``dmq netlab``) and the simulated (``dmq simnet``)
    network share, with each command's defaults: the two runs take the same plan."""
    parser.add_argument("--nodes", type=_number(int, low=2, low_inclusive=True), default=nodes,
                        help=f"number of nodes (default: {nodes})")
    parser.add_argument("--pools", type=_number(int, low=1, low_inclusive=True), default=pools,
                        help=f"stake pools, spread over the nodes (default: {pools})")
    parser.add_argument("--period", type=_number(float, low=0), default=period,
                        help=f"seconds between two messages of one pool (default: {period:g}{period_note})")
    parser.add_argument("--duration", type=_number(float, low=0), default=duration,
                        help=f"{time_word} of publishing (default: {duration:g})")
    parser.add_argument("--roots", type=_number(int, low=1, low_inclusive=True), default=3,
                        help="public roots in each node's topology (default: 3)")
    parser.add_argument("--kill-fraction", type=_number(float, low=0, low_inclusive=True, high=1), default=0.1,
                        help="fraction of nodes killed with SIGKILL and restarted (default: 0.1; 0: none)")
    parser.add_argument("--partition-fraction", type=_number(float, low=0, low_inclusive=True, high=1),
                        default=partition_fraction,
                        help=f"fraction of nodes cut off and reconnected (default: {partition_default}; 0: none)")

def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "netlab", help="run N dmq-node processes in network namespaces with faults, and check delivery",
        description="Start N dmq-node processes, each in its own network namespace joined to one isolated "
                    "bridge, publish from simulated stake pools, kill and restart some nodes, partition and "
                    "heal others, and report whether every accepted message reached every node exactly once. "
                    "Needs root. Every namespace is removed at the end, also on Ctrl-C.")
    add_workload_arguments(parser, nodes=50, pools=100, period=10.0, duration=60.0, partition_fraction=0.2,
                           partition_default="0.2")
    parser.add_argument("--faults", type=_faults, default=("kill", "partition"),
                        help="comma-separated faults and attacks: kill, partition, flood (a peer offering invalid "
                             "messages to --flood-targets nodes), stakeless (a cluster of stake-less peers filling "
                             "one victim's inbound slots) (default: kill,partition)")
    parser.add_argument("--flood-targets", type=_number(int, low=1, low_inclusive=True), default=3,
                        help="honest nodes the flooding peer dials (default: 3)")
    parser.add_argument("--flood-rate", type=_number(float, low=0), default=20.0,
                        help="invalid messages offered per second on each flood connection (default: 20)")
    parser.add_argument("--stakeless-peers", type=_number(int, low=1, low_inclusive=True), default=4,
                        help="processes, each with its own address, in the stake-less cluster (default: 4)")
    parser.add_argument("--inbound-limit", type=_inbound_limit, default=None, metavar="HARD[,SOFT[,DELAY]]",
                        help="every node's AcceptedConnectionsLimit (default: the node's, 512,384,5)")
    parser.add_argument("--rate-mbit", type=_number(float, low=0), default=None,
                        help="limit each node's sending rate with tc tbf (default: no limit)")
    parser.add_argument("--niceness", type=_number(int, low=-20, low_inclusive=True, high=20), default=19,
                        help="the nodes' scheduling niceness, and their sessions' autogroups', once they listen "
                             "(default: 19, the lowest priority)")
    parser.add_argument("--run-niceness", type=_number(int, low=-20, low_inclusive=True, high=20), default=-10,
                        help="this process's own niceness while it runs: it signs for every pool, reads every "
                             "aggregator and times the faults, and a hundred busy nodes must not starve it "
                             "(default: -10)")
    parser.add_argument("--drain", type=_number(float, low=0, low_inclusive=True), default=30.0,
                        help="seconds allowed after publishing for delivery and recovery (default: 30)")
    parser.add_argument("--record", action="store_true", help="record traffic into DIR/traffic")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pools, public roots and fault victims")
    parser.add_argument("--dir", type=Path, default=Path("netlab"), dest="directory",
                        help="where the run's files go; a previous run there is replaced (default: netlab)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless every node got every accepted message exactly once and every attack "
                             "was withstood")


def run(args: argparse.Namespace) -> int:
    import trio

    from lab.netlab import NetlabOptions, run_netlab

    options = NetlabOptions(nodes=args.nodes, pools=args.pools, period=args.period, duration=args.duration,
                            directory=args.directory, seed=args.seed, roots=args.roots,
                            kill_fraction=args.kill_fraction, partition_fraction=args.partition_fraction,
                            rate_mbit=args.rate_mbit, record_traffic=args.record, faults=args.faults,
                            flood_targets=args.flood_targets, flood_rate=args.flood_rate,
                            stakeless_peers=args.stakeless_peers, inbound_limit=args.inbound_limit,
                            niceness=args.niceness, run_niceness=args.run_niceness,
                            drain_timeout=args.drain)
    report = trio.run(run_netlab, options)
    if args.check and not (report.complete and report.defended):
        failed = [attack.kind for attack in report.attacks if not attack.held]
        raise OperatorError(f"the run was not complete: {report.missing} deliveries missing, "
                            f"{report.duplicates} duplicated"
                            + (f", attacks not withstood: {', '.join(failed)}" if failed else "")
                            + (f", interrupted by {report.interrupted}" if report.interrupted else ""))
    return 0
