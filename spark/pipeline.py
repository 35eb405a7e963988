"""The whole capacity pipeline in one call: what ``dmq capacity-report`` and the demo run.

reproduce the CIP -> ingest recordings -> (optionally) synthesize mainnet traffic ->
measure every run -> extrapolate to mainnet -> write the report. Each stage shows a status
line while it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from spark.extrapolate import extrapolate, measured_costs
from spark.ingest import find_recording, ingest
from spark.measure import measure
from spark.progress import Progress
from spark.report import ReportInputs, RunResult, write_report
from spark.reproduce import corrections, reproduce_cip
from spark.session import DEFAULT_MASTER, spark_session
from spark.synthetic import SCALES, SyntheticSpec, generate

__all__ = ["capacity_report", "run_result"]


def run_result(spark: SparkSession, parquet: Path, run: str, *, sample_interval: float = 1.0,
               ttl_hint_s: float | None = None, synthetic: bool = False) -> RunResult:
    """Measure one ingested run and put its costs into the mainnet scenarios."""
    kwargs = {"ttl_hint_s": ttl_hint_s} if ttl_hint_s else {}
    m = measure(spark, parquet, run, sample_interval=sample_interval, **kwargs)
    costs = measured_costs(m)
    return RunResult(m, costs, extrapolate(spark, costs), extrapolate(spark, costs, process_cpu=True), synthetic)


def capacity_report(
    recordings: Sequence[Path],
    output: Path,
    *,
    master: str | None = None,
    parquet: Path | None = None,
    synthetic: str | SyntheticSpec | None = None,
    spark: SparkSession | None = None,
    progress: Progress | None = None,
) -> Path:
    """Write the capacity report for ``recordings`` (and a synthetic run) into ``output``."""
    progress = progress or Progress()
    output = Path(output)
    parquet = Path(parquet) if parquet is not None else output / "parquet"
    found = [find_recording(Path(r)) for r in recordings]
    if spark is None:
        with progress.stage(f"start Spark ({master or DEFAULT_MASTER})"):
            spark = spark_session(master)
    with progress.stage("reproduce the CIP's tables"):
        reproduced, comparisons = reproduce_cip(spark)
        corrected = corrections(spark)
    ingest(spark, found, parquet, progress)
    runs: list[RunResult] = []
    for recording in found:
        interval = max((float(m.get("sample_interval", 1.0)) for m in recording.manifests), default=1.0)
        with progress.stage(f"measure {recording.run} ({len(recording.nodes)} nodes)"):
            runs.append(run_result(spark, parquet, recording.run, sample_interval=interval))
    if synthetic is not None:
        spec = SCALES[synthetic] if isinstance(synthetic, str) else synthetic
        generate(spark, spec, parquet, progress)
        with progress.stage(f"measure {spec.run}"):
            runs.append(run_result(spark, parquet, spec.run, sample_interval=spec.node_sample_interval,
                                   ttl_hint_s=spec.ttl_s, synthetic=True))
    with progress.stage(f"write the report into {output}"):
        inputs = ReportInputs(reproduced, comparisons, corrected, runs,
                              master=spark.sparkContext.master, sources=[str(r) for r in recordings],
                              stages=list(progress.finished))
        path = write_report(inputs, output)
    return path
