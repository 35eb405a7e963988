"""An older recording still loads: a version-1 recording, written here by a frozen copy of
the version-1 writer, is ingested next to a current one with the fields it lacks defaulted,
and measured on what it has."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from dmq.recorder.schema import NODE_SAMPLES, SCHEMA_VERSION
from spark.ingest import RecordingError, find_recording, ingest, read_table
from spark.measure import measure
from tests.spark.recordings import (
    NODE,
    PROCESS,
    RSS_BASE,
    RSS_PER_MESSAGE,
    SIZE,
    V1_FIELDS,
    write_current_recording,
    write_v1_recording,
)

@pytest.fixture(scope="module")
def ingested(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("evolution")
    old, mixed = root / "old", root / "mixed"
    write_v1_recording(old)
    write_v1_recording(mixed)
    write_current_recording(mixed)
    recordings = [find_recording(old, run="old"), find_recording(mixed, run="mixed")]
    parquet = root / "parquet"
    return parquet, ingest(spark, recordings, parquet), recordings


def test_the_old_writer_really_is_version_1(ingested):
    _, _, (old, mixed) = ingested
    assert [m["schema_version"] for m in old.manifests] == [1]
    assert sorted(m["schema_version"] for m in mixed.manifests) == [1, SCHEMA_VERSION] == [1, 2]
    line = json.loads(old.files["node_samples"][0].read_text().splitlines()[0])
    assert "anon_bytes" not in line and tuple(line) == V1_FIELDS["node_samples"]
    assert set(mixed.files_by_version("node_samples")) == {1, 2}


def test_a_version_1_recording_loads_with_the_missing_field_defaulted(spark, ingested):
    parquet, counts, _ = ingested
    assert counts["old"] == {"message_events": 60, "connection_samples": 60, "node_samples": 60}
    samples = read_table(spark, parquet, "node_samples", "old")
    assert set(NODE_SAMPLES.field_names) <= set(samples.columns)
    rows = samples.orderBy("t").collect()
    assert len(rows) == 60 and all(r["anon_bytes"] is None for r in rows)
    assert [r["rss_bytes"] for r in rows] == [RSS_BASE + s * RSS_PER_MESSAGE for s in range(60)]
    assert rows[-1]["messages_held"] == 59 and rows[-1]["process"] == PROCESS


def test_versions_mix_in_one_run(spark, ingested):
    parquet, counts, _ = ingested
    assert counts["mixed"]["node_samples"] == 60 + 4  # three samples and the final one
    samples = read_table(spark, parquet, "node_samples", "mixed")
    by_node = {r["node"]: (r["n"], r["anon"]) for r in samples.groupBy("node").agg(
        F.count(F.lit(1)).alias("n"), F.count("anon_bytes").alias("anon")).collect()}
    assert by_node == {NODE: (60, 0), "new-relay:3001": (4, 4)}
    assert read_table(spark, parquet, "message_events", "mixed").count() == 63


def test_an_old_recording_is_measured_on_what_it_has(spark, ingested):
    parquet, _, _ = ingested
    m = measure(spark, parquet, "old")
    assert m.memory_basis == "resident"  # no heap figure in version 1: the whole RSS is fitted
    assert m.rss_per_message == pytest.approx(RSS_PER_MESSAGE) and m.rss_fit_r2 == pytest.approx(1.0)
    assert m.accepted == 60 and m.message_bytes_mean == SIZE
    assert m.verify_ns_mean == 60_000
    assert m.cpu_per_message_s == pytest.approx(0.001, rel=0.05)
    assert measure(spark, parquet, "mixed").memory_basis == "resident"  # not every sample has the heap


def test_an_unknown_version_is_refused_before_spark_reads(tmp_path):
    write_v1_recording(tmp_path)
    manifest, = tmp_path.glob("manifest.*.json")
    manifest.write_text(manifest.read_text().replace('"schema_version": 1', '"schema_version": 99'))
    with pytest.raises(RecordingError, match="schema version 99; this reader knows versions 1, 2"):
        find_recording(tmp_path)
