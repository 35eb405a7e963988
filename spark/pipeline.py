"""The whole capacity pipeline in one call: what ``dmq capacity-report`` and the demo run.

reproduce the CIP -> ingest recordings -> (optionally) synthesize mainnet traffic ->
measure every run -> extrapolate to mainnet -> write the report. Each stage shows a status
line while it runs.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from spark.extrapolate import extrapolate, measured_costs
from spark.failures import JobFailed, spark_failures
from spark.ingest import Recording, find_recording, ingest
from spark.measure import measure
from spark.options import SparkOptions
from spark.progress import Progress
from spark.report import REPORT_NAME, ReportInputs, RunResult, write_report
from spark.reproduce import corrections, reproduce_cip
from spark.session import SHUFFLE_PARTITIONS, open_session
from spark.storage import HadoopFiles, Location, StorageError, is_uri, join, location
from spark.synthetic import SCALES, SyntheticSpec, generate

__all__ = ["capacity_report", "run_result"]


def run_result(spark: SparkSession, parquet: Location, run: str, *, sample_interval: float = 1.0,
               ttl_hint_s: float | None = None, synthetic: bool = False) -> RunResult:
    """Measure one ingested run and put its costs into the mainnet scenarios."""
    kwargs = {"ttl_hint_s": ttl_hint_s} if ttl_hint_s else {}
    m = measure(spark, parquet, run, sample_interval=sample_interval, **kwargs)
    costs = measured_costs(m)
    return RunResult(m, costs, extrapolate(spark, costs), extrapolate(spark, costs, process_cpu=True), synthetic)


def capacity_report(
    recordings: Sequence[Location],
    output: Location,
    *,
    master: str | None = None,
    parquet: Location | None = None,
    synthetic: str | SyntheticSpec | None = None,
    spark: SparkSession | None = None,
    progress: Progress | None = None,
    options: SparkOptions | None = None,
) -> Location:
    """Write the capacity report for ``recordings`` (and a synthetic run) into ``output``.

    Recordings, ``output`` and ``parquet`` may be local paths or URIs (:mod:`spark.storage`).
    Without ``spark``, a session is opened from ``options`` (or on ``master``) and, if it
    started a local cluster, closed with it. A failed Spark job raises :class:`JobFailed`.
    """
    progress = progress or Progress()
    options = options or SparkOptions(master=master)
    output = location(str(output)) if not isinstance(output, Path) else output
    parquet = parquet if parquet is not None else join(output, "parquet")
    # Local recordings are checked before the JVM starts; URIs need the session.
    checked = {i: find_recording(r) for i, r in enumerate(recordings) if not is_uri(r)}
    with contextlib.ExitStack() as stack:
        if spark is None:
            spark = stack.enter_context(open_session(options, progress))
        with spark_failures():
            found = [checked[i] if i in checked else find_recording(r, spark=spark) for i, r in enumerate(recordings)]
            return _run(spark, found, [str(r) for r in recordings], output, parquet, synthetic, progress)


def _run(spark: SparkSession, found: list[Recording], sources: list[str], output: Location, parquet: Location,
         synthetic: str | SyntheticSpec | None, progress: Progress) -> Location:
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
                              master=spark.sparkContext.master, sources=sources,
                              stages=list(progress.finished),
                              shuffle_partitions=int(spark.conf.get(SHUFFLE_PARTITIONS)))
        if not is_uri(output):
            return write_report(inputs, Path(output))
        # Markdown and PNGs are written by Python: into a local directory, then copied.
        with tempfile.TemporaryDirectory(prefix="dmq-capacity-report-") as staging:
            write_report(inputs, Path(staging))
            try:
                HadoopFiles(spark).upload(Path(staging), str(output))
            except StorageError as exc:
                raise JobFailed(f"cannot write the report: {exc}") from None
        return join(output, REPORT_NAME)
