"""The capacity pipeline over a synthetic month of mainnet: 1,500 signers every minute for
30 days, 64.8 million message events, on this machine (Spark local mode unless ``--master``).

The whole pipeline of ``dmq capacity-report --synthetic full``: reproduce the CIP, generate
the month inside Spark straight into partitioned Parquet (message events, a node sample
every second, connection samples every minute), measure it, extrapolate it to mainnet and
write the report. Prints each stage's time and the events per second of the whole run.
Target (issue 9): the month in under 15 minutes.

``--days N`` runs a fraction of the month (on a shared machine the full month competes with
everything else) and projects the month: the stages that grow with the events (generation,
measurement) scaled by 30 / N, the others (Spark's start, the CIP, the report) as they were.

    .venv/bin/python bench/spark_month.py [--days 30] [--master local[*]] [--partitions N]
        [--workdir DIR] [--driver-memory 4g]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark.model import MONTH_SECONDS  # noqa: E402
from spark.pipeline import capacity_report  # noqa: E402
from spark.progress import Progress  # noqa: E402
from spark.session import spark_session  # noqa: E402
from spark.synthetic import SCALES  # noqa: E402

#: Stages whose work grows with the number of events (the rest is fixed cost).
SCALING = ("synthesize", "measure")
TARGET_S = 15 * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=30.0, help="simulated days (30: the whole month)")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    parser.add_argument("--partitions", type=int, default=None, help="shuffle partitions (default: 2 x cores)")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--workdir", type=Path, help="keep the Parquet and the report here")
    args = parser.parse_args()
    month_days = MONTH_SECONDS / 86400
    if not 0 < args.days <= month_days:
        parser.error(f"--days must be in (0, {month_days:g}]")
    spec = SCALES["full"].with_(duration_s=int(args.days * 86400), run="synthetic-month")
    print(f"Spark month: {spec.signers:,} signers every {spec.period_s} s for {args.days:g} days = "
          f"{spec.expected_messages:,} message events, {spec.expected_node_samples:,} node samples, "
          f"{spec.expected_connection_samples:,} connection samples; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="dmq-spark-month-") as tmp:
        workdir = args.workdir or Path(tmp)
        progress = Progress()
        started = time.perf_counter()
        with progress.stage("start Spark"):
            spark = spark_session(args.master, shuffle_partitions=args.partitions, driver_memory=args.driver_memory)
        capacity_report([], workdir / "report", parquet=workdir / "parquet", synthetic=spec, spark=spark,
                        progress=progress)
        total = time.perf_counter() - started
        parquet_bytes = sum(p.stat().st_size for p in (workdir / "parquet").rglob("*.parquet"))
        spark.stop()

    scaling = sum(s for title, s in progress.finished if title.split(" ", 1)[0] in SCALING)
    fixed = total - scaling
    work = total - next(s for title, s in progress.finished if title == "start Spark")
    projected = fixed + scaling * month_days / args.days
    print(f"\n{spec.expected_messages:,} message events in {total:.0f} s ({total / 60:.1f} min) = "
          f"{spec.expected_messages / total:,.0f} events/s overall, "
          f"{spec.expected_messages / scaling:,.0f} events/s in generation and measurement")
    print(f"Parquet written: {parquet_bytes / 1e9:,.2f} GB ({parquet_bytes / spec.expected_messages:.0f} B per event)")
    print(f"stages growing with the events {scaling:.0f} s, fixed {fixed:.0f} s (Spark start, CIP, report; "
          f"after start {work:.0f} s in all)")
    verdict = "met" if projected <= TARGET_S else "NOT met"
    what = "the month" if args.days == month_days else f"projected month ({month_days:g} / {args.days:g} x)"
    print(f"{what}: {projected:.0f} s = {projected / 60:.1f} min  (target < 15 min: {verdict})")


if __name__ == "__main__":
    main()
