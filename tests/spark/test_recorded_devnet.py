"""A recorded devnet run through the whole pipeline: ingest, measure, report.

The measured figures must agree with what the node's own Prometheus metrics and its
clients' muxes counted during the run.
"""

from __future__ import annotations

import pytest
import trio

from dmq.cli.tool import run as dmq
from spark.extrapolate import measured_costs
from spark.ingest import find_recording, ingest, read_table
from spark.measure import measure
from tests.dmq.recorder.devnet import record_devnet_run


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    directory = tmp_path_factory.mktemp("devnet")
    return trio.run(record_devnet_run, directory)


@pytest.fixture(scope="module")
def measured(spark, recorded, tmp_path_factory):
    parquet = tmp_path_factory.mktemp("parquet")
    recording = find_recording(recorded.recording, run="devnet")
    counts = ingest(spark, [recording], parquet)
    return parquet, counts, measure(spark, parquet, "devnet")


def test_ingest_keeps_every_record(spark, recorded, measured):
    parquet, counts, _ = measured
    lines = {name: sum(len(p.read_text().splitlines()) for p in (recorded.recording / name).glob("*.jsonl"))
             for name in ("message_events", "connection_samples", "node_samples")}
    assert counts == {"devnet": lines}
    events = read_table(spark, parquet, "message_events", "devnet")
    assert {r["day"] for r in events.select("day").distinct().collect()} != set()
    assert set(events.columns) >= {"t", "event", "message_id", "run", "node", "day"}


def test_measured_tables_agree_with_the_node_metrics(recorded, measured):
    _, _, m = measured
    metrics = recorded.metrics
    assert m.accepted == metrics["accepted"] == 12
    assert m.unique_messages == 12
    assert m.accepted_bytes == metrics["accepted_bytes"]
    assert m.rejected_by_reason == {reason: int(n) for reason, n in metrics["rejected"].items()}
    assert m.expired == metrics["expired"] > 0
    assert m.notified == metrics["notified"] == len(recorded.notified)
    node, = m.nodes
    assert node.accepted == node.accepted_local == 12
    assert node.final_held == recorded.mempool_len == metrics["mempool_messages"]
    assert node.final_bytes_held == recorded.mempool_bytes == metrics["mempool_bytes"]
    assert node.peak_held >= node.final_held
    # The node's side of every local connection mirrors its client's side, SDU headers included.
    assert node.n2c_connections == recorded.connections
    assert node.n2c_bytes_in == recorded.client_bytes_out
    assert node.n2c_bytes_out == recorded.client_bytes_in
    assert {p.protocol for p in m.protocols} == {14, 15} and {p.link for p in m.protocols} == {"n2c"}
    # Real validation with libsodium: far below the CIP's 2 ms, and the same size as the messages.
    assert 0 < m.verify_ns_p50 <= m.verify_ns_p99 and m.verify_ns_mean < 2_000_000
    assert m.message_bytes_min == m.message_bytes_max == m.accepted_bytes / 12
    assert m.cpu_per_message_s is not None and m.cpu_per_message_s > 0


def test_costs_fall_back_where_a_one_node_run_cannot_measure(measured):
    _, _, m = measured
    assert m.redundancy is None
    costs = measured_costs(m)
    assumed = dict(costs.assumed)
    assert set(assumed) == {"memory per message", "redundancy"}
    assert costs.redundancy == 2.0 and costs.memory_per_message == m.wire_bytes_per_message_held
    assert costs.verify_s == pytest.approx(m.verify_ns_mean / 1e9)


def test_capacity_report_command(spark, recorded, tmp_path):
    out = tmp_path / "report"
    status = dmq(["capacity-report", str(recorded.recording), "--output", str(out), "--master", "local[2]", "-q"])
    assert status == 0
    text = (out / "capacity-report.md").read_text()
    assert "Every cell is reproduced: 33 of 44 within 3 %" in text
    assert "### Run `recording` (recorded)" in text
    assert "**3. Verification cost.**" in text and "not measured (no node-to-node link)" in text
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["capacity-by-period.png", "recording-held.png", "recording-rss.png",
                    "recording-traffic.png", "recording-verify.png"]
    for name in pngs:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({name})" in text
    assert (out / "parquet" / "message_events").is_dir()


def test_capacity_report_names_a_bad_recording(tmp_path, capsys):
    assert dmq(["capacity-report", str(tmp_path), "-q"]) == 1
    assert "no manifest.*.json" in capsys.readouterr().err
