"""Recordings (JSON lines) to partitioned Parquet, the layout every other job reads.

A recording directory holds one or many nodes' sessions (docs/capacity/model.md section 4); each
becomes one *run* in the Parquet dataset, named after the directory unless told otherwise::

    <parquet>/<record type>/run=<run>/node=<node>[/day=<yyyy-mm-dd>]/part-*.parquet

Every data file must belong to a session whose manifest states a schema version this
reader knows: the manifests are read first, and a recording from an unknown version, or
data without a manifest, is refused before Spark reads a byte. Files of an older version are
read with that version's fields and given the current ones with their defaults (see
:mod:`dmq.recorder.schema`), so one run may mix sessions of several versions, as a node
upgraded mid-recording leaves them. A torn last line (a node killed mid-write, or a
recording still being written) is dropped, not fatal. Ingesting a run again replaces that
run's partitions only. Recordings and the dataset may be local paths or URIs
(:mod:`spark.storage`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from dmq.recorder.schema import (
    DATA_SUFFIX,
    RECORD_TYPES,
    RecordType,
    decode_manifest,
    parse_data_file_name,
    safe_name,
)
from spark.progress import Progress
from spark.storage import HadoopFiles, Location, StorageError, basename, is_uri, join, spark_path
from spark.structs import PARTITIONS, spark_type, struct_type

__all__ = ["RecordingError", "Recording", "find_recording", "ingest", "read_recording", "read_table", "with_day"]


class RecordingError(ValueError):
    """A recording directory cannot be ingested; the message names the file and the reason."""


@dataclass(frozen=True, slots=True)
class Recording:
    """What a recording directory holds, from its manifests and file names."""

    directory: Location
    run: str
    manifests: tuple[dict, ...]
    files: dict[str, tuple[Location, ...]]

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(sorted({m["node"] for m in self.manifests}))

    def version_of(self, path: Location) -> int:
        """The schema version of a data file: its session's manifest's."""
        parsed = parse_data_file_name(basename(path))
        for m in self.manifests:
            if parsed is not None and parsed[:2] == (safe_name(m["node"]), safe_name(m["session"])):
                return int(m["schema_version"])
        raise RecordingError(f"{path}: no manifest for this file")

    def files_by_version(self, record_type: str) -> dict[int, tuple[Location, ...]]:
        """A record type's data files, grouped by schema version, oldest first."""
        groups: dict[int, list[Location]] = {}
        for path in self.files.get(record_type, ()):
            groups.setdefault(self.version_of(path), []).append(path)
        return {version: tuple(paths) for version, paths in sorted(groups.items())}


def find_recording(directory: Location, run: str | None = None, *, spark: SparkSession | None = None) -> Recording:
    """Check a recording directory's manifests and list its data files.

    A local directory is read with :mod:`pathlib` (no Spark needed, so a mistake is reported
    before the JVM starts); a URI through ``spark``'s Hadoop file system.
    """
    if is_uri(directory):
        if spark is None:
            raise RecordingError(f"recording {directory}: a URI is read through a Spark session, and none was given")
        return _find_remote(str(directory), run, HadoopFiles(spark))
    directory = Path(directory)
    if not directory.is_dir():
        raise RecordingError(f"recording {directory}: not a directory")
    manifests = [(str(p), p.read_text(encoding="utf-8")) for p in sorted(directory.glob("manifest.*.json"))]
    listing = {}
    for name in RECORD_TYPES:
        folder = directory / name
        paths = sorted(folder.glob(f"*{DATA_SUFFIX}")) if folder.is_dir() else []
        listing[name] = [(p, p.stat().st_size) for p in paths]
    return _recording(directory, run or directory.resolve().name, manifests, listing)


def _find_remote(directory: str, run: str | None, files: HadoopFiles) -> Recording:
    try:
        if not files.is_dir(directory):
            raise RecordingError(f"recording {directory}: not a directory")
        manifests = [(uri, files.read_text(uri)) for uri, _ in files.files(directory, ".json")
                     if basename(uri).startswith("manifest.")]
        listing = {name: files.files(join(directory, name), DATA_SUFFIX) for name in RECORD_TYPES}
    except StorageError as exc:
        raise RecordingError(f"recording {exc}") from None
    return _recording(directory, run or basename(directory), manifests, listing)


def _recording(directory: Location, run: str, manifest_texts: list[tuple[str, str]],
               listing: dict[str, list[tuple[Location, int]]]) -> Recording:
    """The checks shared by local and remote recordings: manifests first, then every data file."""
    manifests = []
    for source, text in manifest_texts:
        try:
            manifests.append(decode_manifest(text, source=source))
        except ValueError as exc:
            raise RecordingError(str(exc)) from None
    if not manifests:
        raise RecordingError(f"recording {directory}: no manifest.*.json (is this a --record-traffic directory?)")
    known = {(safe_name(m["node"]), safe_name(m["session"])) for m in manifests}
    files: dict[str, tuple[Location, ...]] = {}
    for name, entries in listing.items():
        found = []
        for path, size in entries:
            parsed = parse_data_file_name(basename(path))
            if parsed is None:
                continue
            if parsed[:2] not in known:
                raise RecordingError(f"{path}: no manifest for node {parsed[0]} session {parsed[1]}")
            if size:
                found.append(path)
        files[name] = tuple(found)
    return Recording(directory, run, tuple(manifests), files)


def with_day(frame: DataFrame) -> DataFrame:
    """Add the ``day`` partition column (UTC date of ``t``)."""
    return frame.withColumn("day", F.date_format(F.timestamp_seconds(F.col("t")), "yyyy-MM-dd"))


def _read_json(spark: SparkSession, record_type: RecordType, paths: Sequence[Location], version: int) -> DataFrame:
    """Files of one schema version, with every current field (older ones' missing fields defaulted)."""
    frame = (
        spark.read.schema(struct_type(record_type, version))
        .option("mode", "DROPMALFORMED")
        .json([spark_path(p) for p in paths])
    )
    for missing in record_type.missing_in(version):
        frame = frame.withColumn(missing.name, F.lit(missing.default).cast(spark_type(missing.type)))
    return frame.select(*record_type.field_names)


def read_recording(spark: SparkSession, recording: Recording, record_type: RecordType) -> DataFrame | None:
    """One record type of a recording, every version's files in the current schema; None if none."""
    frames = [_read_json(spark, record_type, paths, version)
              for version, paths in recording.files_by_version(record_type.name).items()]
    if not frames:
        return None
    frame = frames[0]
    for more in frames[1:]:
        frame = frame.unionByName(more)
    return frame


def write_table(frame: DataFrame, parquet_root: Location, record_type: str) -> None:
    """Append or replace (per partition) a table of the Parquet dataset."""
    if "day" in PARTITIONS[record_type] and "day" not in frame.columns:
        frame = with_day(frame)
    # Message ids are random: a dictionary of them is built, overflows and is thrown away on
    # every page, which doubles the cost of writing a month of events for nothing.
    (frame.write.mode("overwrite").partitionBy(*PARTITIONS[record_type])
     .option("parquet.enable.dictionary#message_id", "false")
     .parquet(spark_path(join(parquet_root, record_type))))


def ingest(
    spark: SparkSession,
    recordings: Sequence[Recording],
    parquet_root: Location,
    progress: Progress | None = None,
) -> dict[str, dict[str, int]]:
    """Convert recordings to Parquet; returns ``{run: {record type: rows}}``."""
    progress = progress or Progress(enabled=False)
    rows: dict[str, dict[str, int]] = {}
    for recording in recordings:
        counts = rows.setdefault(recording.run, {})
        for name, record_type in RECORD_TYPES.items():
            paths = recording.files.get(name, ())
            if not paths:
                counts[name] = 0
                continue
            with progress.stage(f"ingest {recording.run}: {name} ({len(paths)} files)"):
                frame = read_recording(spark, recording, record_type)
                assert frame is not None
                # The rows are counted as they are written, in the same pass: caching a
                # recording to count it first would hold (or spill) every row of it, which
                # for a network's recording is gigabytes, and read the files twice.
                written = Observation(f"ingest-{name}")
                frame = frame.where(F.col("t").isNotNull()).withColumn("run", F.lit(recording.run))
                write_table(frame.observe(written, F.count(F.lit(1)).alias("rows")), parquet_root, name)
                counts[name] = int(written.get["rows"])
    return rows


def read_table(spark: SparkSession, parquet_root: Location, record_type: str, run: str | None = None) -> DataFrame:
    """A table of the Parquet dataset, optionally one run's rows; empty if never written."""
    path = join(parquet_root, record_type)
    if not (HadoopFiles(spark).is_dir(path) if is_uri(path) else Path(path).is_dir()):
        schema = struct_type(RECORD_TYPES[record_type])
        for column in PARTITIONS[record_type]:
            if column not in schema.fieldNames():
                schema = schema.add(column, "string")
        return spark.createDataFrame([], schema)
    # Runs ingested from different schema versions sit side by side: merge their columns.
    frame = spark.read.option("mergeSchema", "true").parquet(spark_path(path))
    return frame.where(F.col("run") == run) if run is not None else frame
