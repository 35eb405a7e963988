"""``dmq capacity-report``: the CIP-0137 capacity tables from recorded traffic, as Markdown + PNG.

Runs the Spark pipeline (``spark.pipeline``) in local mode, on ``--master``, or on a
standalone cluster it starts for the run (``--start-cluster N``): reproduces the CIP's tables
from its assumptions, ingests the recordings (``dmq-node --record-traffic DIR``), measures
them, extrapolates to mainnet and writes ``capacity-report.md`` with its plots into the
output directory. Recordings and outputs are paths or URIs (``file://``, ``hdfs://``,
``s3a://``). Every failure is one line; Spark is imported only when the command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from dmq.errors import OperatorError
from spark.options import SparkOptions, add_spark_arguments, spark_options
from spark.storage import Location, location

__all__ = ["add_parser", "run", "write_report", "DEFAULT_OUTPUT"]

DEFAULT_OUTPUT = Path("capacity-report")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "capacity-report", help="write the CIP-0137 capacity report from recorded traffic (Spark)",
        description="Reproduce CIP-0137's capacity tables, measure recorded traffic and extrapolate it to mainnet.")
    parser.add_argument("recordings", nargs="*", type=location, metavar="RECORDING",
                        help="directories written by dmq-node --record-traffic (one run each): paths or URIs")
    parser.add_argument("--output", "-o", type=location, default=DEFAULT_OUTPUT,
                        help=f"where the report and its plots go, a path or a URI (default: {DEFAULT_OUTPUT})")
    parser.add_argument("--parquet", type=location, default=None,
                        help="where the ingested Parquet dataset goes (default: OUTPUT/parquet)")
    parser.add_argument("--synthetic", choices=("small", "full"), default=None,
                        help="also generate and measure synthetic mainnet traffic (full: a month, 64.8 M messages)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    add_spark_arguments(parser)


def write_report(recordings: Sequence[Location], output: Location = DEFAULT_OUTPUT, *, master: str | None = None,
                 parquet: Location | None = None, synthetic: str | None = None, quiet: bool = False,
                 options: SparkOptions | None = None) -> Location:
    """Run the pipeline; returns the report's location. Operator mistakes raise :class:`OperatorError`."""
    try:
        from spark.failures import JobFailed
        from spark.ingest import RecordingError
        from spark.pipeline import capacity_report
        from spark.progress import Progress
        from spark.session import SparkUnavailable
        from spark.storage import StorageError
    except ImportError as exc:
        raise OperatorError(f"the Spark pipeline is unavailable ({exc}); install the spark extra "
                            "into the node's environment: pip install 'dmq-node[spark]'") from None
    try:
        return capacity_report(list(recordings), output, parquet=parquet, synthetic=synthetic,
                               progress=Progress(enabled=not quiet), options=options or SparkOptions(master=master))
    except (RecordingError, SparkUnavailable, StorageError) as exc:
        raise OperatorError(str(exc)) from None
    except JobFailed as exc:
        raise OperatorError(f"the Spark job failed: {exc}") from None


def run(args: argparse.Namespace) -> int:
    path = write_report(args.recordings, args.output, parquet=args.parquet, synthetic=args.synthetic,
                        quiet=args.quiet, options=spark_options(args))
    print(f"capacity report: {path}")
    return 0
