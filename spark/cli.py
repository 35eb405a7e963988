"""``python -m spark``: the capacity jobs one at a time (``dmq capacity-report`` runs them all).

    python -m spark ingest RECORDING... --parquet DIR        recordings -> partitioned Parquet
    python -m spark synthesize --scale full --parquet DIR    a month of mainnet, 64.8 M messages
    python -m spark report [RECORDING...] --output DIR       the whole pipeline and the report

Every job runs in local mode unless ``--master`` names a cluster.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark", description="DMQ capacity pipeline (CIP-0137)")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    sub = parser.add_subparsers(dest="job", required=True, metavar="JOB")

    ingest = sub.add_parser("ingest", help="convert recordings to partitioned Parquet")
    ingest.add_argument("recordings", nargs="+", type=Path)
    ingest.add_argument("--parquet", type=Path, required=True)

    synth = sub.add_parser("synthesize", help="generate synthetic mainnet traffic in the recorder's schema")
    synth.add_argument("--scale", choices=("small", "full"), default="small")
    synth.add_argument("--parquet", type=Path, required=True)
    synth.add_argument("--pools", type=int, help="override the scale's pool count")
    synth.add_argument("--period", type=int, help="send period in seconds")
    synth.add_argument("--days", type=float, help="duration in days")
    synth.add_argument("--partitions", type=int, help="Spark partitions of the message rows")
    synth.add_argument("--measure", action="store_true", help="measure the generated run and print its costs")

    report = sub.add_parser("report", help="the whole pipeline: reproduce, ingest, measure, extrapolate, report")
    report.add_argument("recordings", nargs="*", type=Path)
    report.add_argument("--output", "-o", type=Path, default=Path("capacity-report"))
    report.add_argument("--parquet", type=Path, default=None)
    report.add_argument("--synthetic", choices=("small", "full"), default=None)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from spark.ingest import RecordingError, find_recording, ingest
    from spark.progress import Progress
    from spark.session import SparkUnavailable, spark_session

    progress = Progress(enabled=not args.quiet)
    try:
        if args.job == "report":
            from spark.pipeline import capacity_report

            path = capacity_report(args.recordings, args.output, master=args.master, parquet=args.parquet,
                                   synthetic=args.synthetic, progress=progress)
            print(f"capacity report: {path}")
            return 0
        if args.job == "ingest":
            found = [find_recording(r) for r in args.recordings]
            counts = ingest(spark_session(args.master), found, args.parquet, progress)
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
        spark = spark_session(args.master)
        counts = generate(spark, spec, args.parquet, progress, partitions=args.partitions)
        print(spec.run, " ".join(f"{name}={rows:,}" for name, rows in counts.items()))
        if args.measure:
            from spark.pipeline import run_result

            with progress.stage(f"measure {spec.run}"):
                result = run_result(spark, args.parquet, spec.run, sample_interval=spec.node_sample_interval,
                                    ttl_hint_s=spec.ttl_s, synthetic=True)
            print(result.costs)
        return 0
    except (RecordingError, SparkUnavailable) as exc:
        print(f"python -m spark {args.job}: {exc}", file=sys.stderr)
        return 1
