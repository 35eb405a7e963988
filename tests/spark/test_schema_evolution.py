"""An older recording still loads: a version-1 recording, written here by a frozen copy of
the version-1 writer, is ingested next to a current one with the fields it lacks defaulted,
and measured on what it has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dmq.recorder import TrafficRecorder
from dmq.recorder.schema import NODE_SAMPLES, SCHEMA_VERSION
from dmq.trace import MessageAccepted
from spark.ingest import RecordingError, find_recording, ingest, read_table
from spark.measure import measure

#: The version-1 format as it was released: field names in file order, frozen here on purpose
#: (deriving them from the current schema would let a change to version 1 go unnoticed).
V1_FIELDS = {
    "message_events": ("t", "node", "session", "event", "message_id", "pool_id", "size", "count", "peer",
                       "reason", "reaction", "verify_ns"),
    "connection_samples": ("t", "node", "session", "conn", "peer", "link", "protocol", "mode", "bytes_in",
                           "bytes_out", "sdus_in", "sdus_out", "final"),
    "node_samples": ("t", "node", "session", "process", "messages_held", "bytes_held", "rss_bytes", "cpu_seconds"),
}
NODE, SESSION, PROCESS = "old-relay:3001", "20250101T000000-0ld0ld", "old-host:42"
START = 1_750_000_000.0
SIZE = 1_100
RSS_BASE, RSS_PER_MESSAGE = 180_000_000, 1_500


def write_v1_recording(directory: Path, seconds: int = 60) -> None:
    """What a version-1 node wrote: a manifest, and JSON lines of the version-1 fields only.

    One message accepted per second, none expiring, RSS growing by exactly
    ``RSS_PER_MESSAGE`` per message held.
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"manifest.old-relay_3001.{SESSION}.json").write_text(json.dumps({
        "schema_version": 1, "node": NODE, "session": SESSION, "process": PROCESS,
        "started_at": START, "sample_interval": 1.0}, indent=2, sort_keys=True) + "\n")
    rows: dict[str, list[tuple]] = {name: [] for name in V1_FIELDS}
    for s in range(seconds):
        t = START + s
        rows["message_events"].append((t + 0.5, NODE, SESSION, "accepted", f"{s:064x}", "ab" * 28, SIZE, 1,
                                       "10.0.0.9:3001", None, None, 60_000))
        rows["node_samples"].append((t, NODE, SESSION, PROCESS, s, s * SIZE, RSS_BASE + s * RSS_PER_MESSAGE,
                                     2.0 + s / 1000))
        rows["connection_samples"].append((t, NODE, SESSION, 1, "10.0.0.9:3001", "n2n-in", 11, "responder",
                                           s * (SIZE + 8), 40 * s, s, s, s == seconds - 1))
    for name, records in rows.items():
        folder = directory / name
        folder.mkdir(exist_ok=True)
        with open(folder / f"old-relay_3001.{SESSION}.000000.jsonl", "x") as out:
            for values in records:
                out.write(json.dumps(dict(zip(V1_FIELDS[name], values)), separators=(",", ":")) + "\n")


def write_current_recording(directory: Path) -> None:
    recorder = TrafficRecorder(directory, "new-relay:3001", now=lambda: START + 100)
    for k in range(3):
        recorder(MessageAccepted(START + 100 + k, bytes([k]) * 32, bytes(28), 900, "local", 50_000))
        recorder.sample()
    recorder.close()


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
