"""``python -m spark``: the capacity jobs one at a time (``dmq capacity-report`` runs them all).

    python -m spark ingest RECORDING... --parquet DIR        recordings -> partitioned Parquet
    python -m spark synthesize --scale full --parquet DIR    a month of mainnet, 64.8 M messages
    python -m spark report [RECORDING...] --output DIR       the whole pipeline and the report

Every job runs in local mode unless ``--master`` names a cluster or ``--start-cluster N``
starts one; paths may be URIs (see :mod:`spark.storage`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from spark.options import add_spark_arguments, spark_options
from spark.storage import location

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark", description="DMQ capacity pipeline (CIP-0137)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    add_spark_arguments(parser)
    sub = parser.add_subparsers(dest="job", required=True, metavar="JOB")

    ingest = sub.add_parser("ingest", help="convert recordings to partitioned Parquet")
    ingest.add_argument("recordings", nargs="+", type=location)
    ingest.add_argument("--parquet", type=location, required=True)

    synth = sub.add_parser("synthesize", help="generate synthetic mainnet traffic in the recorder's schema")
    synth.add_argument("--scale", choices=("small", "full"), default="small")
    synth.add_argument("--parquet", type=location, required=True)
    synth.add_argument("--pools", type=int, help="override the scale's pool count")
    synth.add_argument("--period", type=int, help="send period in seconds")
    synth.add_argument("--days", type=float, help="duration in days")
    synth.add_argument("--partitions", type=int, help="Spark partitions of the message rows")
    synth.add_argument("--measure", action="store_true", help="measure the generated run and print its costs")

    report = sub.add_parser("report", help="the whole pipeline: reproduce, ingest, measure, extrapolate, report")
    report.add_argument("recordings", nargs="*", type=location)
    report.add_argument("--output", "-o", type=location, default=Path("capacity-report"))
    report.add_argument("--parquet", type=location, default=None)
    report.add_argument("--synthetic", choices=("small", "full"), default=None)
    return parser


def _job(args: argparse.Namespace, spark, progress) -> int:
    from spark.ingest import find_recording, ingest

    if args.job == "ingest":
        found = [find_recording(r, spark=spark) for r in args.recordings]
        counts = ingest(spark, found, args.parquet, progress)
        for run, tables in counts.items():
            print(run, " ".join(f"{name}={rows:,}" for name, rows in tables.items()))
        return 0
    from spark.synthetic import SCALES, generate

    spec = SCALES[args.scale]
    if args.pools:
        spec = spec.with_(pools=args.pools)
    if args.period:
        spec = spec.with_(period_s=args.period)
    if args.days:
        spec = spec.with_(duration_s=int(args.days * 86400))
    counts = generate(spark, spec, args.parquet, progress, partitions=args.partitions)
    print(spec.run, " ".join(f"{name}={rows:,}" for name, rows in counts.items()))
    if args.measure:
        from spark.pipeline import run_result

        with progress.stage(f"measure {spec.run}"):
            result = run_result(spark, args.parquet, spec.run, sample_interval=spec.node_sample_interval,
                                ttl_hint_s=spec.ttl_s, synthetic=True)
        print(result.costs)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from spark.failures import JobFailed, spark_failures
    from spark.ingest import RecordingError
    from spark.progress import Progress
    from spark.session import SparkUnavailable, open_session
    from spark.storage import StorageError

    progress = Progress(enabled=not args.quiet)
    options = spark_options(args)
    try:
        if args.job == "report":
            from spark.pipeline import capacity_report

            path = capacity_report(args.recordings, args.output, parquet=args.parquet, synthetic=args.synthetic,
                                   progress=progress, options=options)
            print(f"capacity report: {path}")
            return 0
        with open_session(options, progress) as spark, spark_failures():
            return _job(args, spark, progress)
    except (RecordingError, SparkUnavailable, StorageError) as exc:
        print(f"python -m spark {args.job}: {exc}", file=sys.stderr)
        return 1
    except JobFailed as exc:
        print(f"python -m spark {args.job}: the Spark job failed: {exc}", file=sys.stderr)
        return 1
