"""Delivery, latency and recovery of real dmq-node processes in network namespaces.

Runs ``dmq netlab`` (:mod:`lab.netlab`): N nodes, each in its own namespace with an
address from 198.18.0.0/15 on one isolated bridge, peers from public roots and peer sharing,
pools publishing to their home nodes, SIGKILL and restart of some nodes, a partition that
heals, a flooding peer and a stake-less cluster (``--faults``); writes the report (JSON, with
every node's CPU% and RSS) and prints it. Needs root; without it, says so and exits 0.

    .venv/bin/python bench/network_namespaces.py [--nodes 50] [--duration 60] [--faults kill,partition,flood,stakeless]
        [--output FILE]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from dmq.errors import OperatorError  # noqa: E402
from lab.netlab import NamespacesUnavailable, NetlabOptions, run_netlab  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pools", type=int, default=100)
    parser.add_argument("--period", type=float, default=10.0)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--rate-mbit", type=float, default=None)
    parser.add_argument("--faults", default="kill,partition,flood,stakeless")
    parser.add_argument("--output", type=Path, default=None, help="also copy the JSON report here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="netlab-"))
    try:
        report = trio.run(run_netlab, NetlabOptions(nodes=args.nodes, pools=args.pools, period=args.period,
                                                    duration=args.duration, directory=workdir / "run",
                                                    rate_mbit=args.rate_mbit,
                                                    faults=tuple(args.faults.split(","))))
    except NamespacesUnavailable as exc:
        # Not a failure of the code measured: `make bench` goes on to the next script.
        print(f"network_namespaces: skipped: {exc}", file=sys.stderr)
        return 0
    except OperatorError as exc:
        print(f"network_namespaces: {exc}", file=sys.stderr)
        return 2
    if args.output is not None:
        report.write(args.output)
    shutil.rmtree(workdir, ignore_errors=True)
    return 0 if report.complete and report.defended else 1


if __name__ == "__main__":
    sys.exit(main())
