"""Synthetic traffic generated inside Spark: the expected counts, and measurements that
give back what the generator was told (the measurement jobs checked against known truth)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from spark.cip import Bound, cip_scenario
from spark.extrapolate import extrapolate, measured_costs
from spark.ingest import read_table
from spark.measure import measure
from spark.model import cells_of
from spark.synthetic import SCALES, SyntheticSpec, generate

# 40 pools, 20 signers, one message each per minute for 70 minutes; TTL 10 minutes.
SPEC = SyntheticSpec(pools=40, period_s=60, duration_s=4200, ttl_s=600, size_min=1148, size_max=1148,
                     peers=6, connection_sample_interval=30, run="synthetic-test", seed=7)


@pytest.fixture(scope="module")
def synthetic(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic-parquet")
    counts = generate(spark, SPEC, root, partitions=3)
    return root, counts


@pytest.fixture(scope="module")
def measured(spark, synthetic):
    root, _ = synthetic
    return measure(spark, root, SPEC.run, ttl_hint_s=SPEC.ttl_s)


def test_counts_follow_the_formula(spark, synthetic):
    root, counts = synthetic
    assert counts == {"message_events": 20 * 70, "node_samples": 4201, "connection_samples": 6 * 141}
    assert SPEC.expected_messages == SPEC.signers * (SPEC.duration_s // SPEC.period_s) == 1400
    for name, expected in counts.items():
        assert read_table(spark, root, name, SPEC.run).count() == expected, name
    events = read_table(spark, root, "message_events", SPEC.run)
    assert events.select("message_id").distinct().count() == 1400
    per_round = events.groupBy(F.floor((F.col("t") - SPEC.start) / SPEC.period_s).alias("r")).count().collect()
    assert sorted(r["count"] for r in per_round) == [20] * 70  # every signer once per round
    pools = events.groupBy("pool_id").count().collect()
    assert len(pools) == 40 and {r["count"] for r in pools} == {35}  # the two halves of the pools alternate
    assert events.where(F.col("t") >= SPEC.start + SPEC.duration_s).count() == 0


def test_full_scale_is_a_month_of_one_minute_rounds():
    full = SCALES["full"]
    assert full.signers == 1500 and full.rounds == 43_200
    assert full.expected_messages == 64_800_000
    assert full.expected_node_samples == 2_592_001


def test_generation_is_deterministic_whatever_the_partitioning(spark):
    from spark.synthetic import message_frame

    spec = SPEC.with_(duration_s=600)
    a = message_frame(spark, spec, partitions=1).orderBy("message_id").collect()
    b = message_frame(spark, spec, partitions=4).orderBy("message_id").collect()
    assert a == b


def test_measurement_recovers_the_generator_parameters(measured):
    m = measured
    assert m.accepted == m.unique_messages == 1400
    assert m.message_bytes_mean == 1148
    node, = m.nodes
    # Steady state: S x T / P messages held, once one TTL has passed.
    assert node.steady_held == pytest.approx(20 * 600 / 60, rel=0.02)
    assert node.peak_held <= 20 * (600 // 60 + 1)
    assert m.verify_ns_mean == pytest.approx(SPEC.verify_ns_mean, rel=0.03)
    # Uniform in [0.5, 1.5] x mean: the median is the mean, the 99th percentile 1.49 x mean.
    assert m.verify_ns_p50 == pytest.approx(SPEC.verify_ns_mean, rel=0.05)
    assert m.verify_ns_p99 == pytest.approx(1.49 * SPEC.verify_ns_mean, rel=0.03)
    assert sum(n for _, _, n in m.verify_histogram) == 1400
    assert m.redundancy == pytest.approx(SPEC.redundancy, rel=1e-3)
    assert m.rss_per_message == pytest.approx(1148 * SPEC.memory_overhead, rel=0.01) and m.memory_fit_trusted is False
    assert m.rss_fit_r2 > 0.99
    assert m.cpu_per_message_s == pytest.approx(SPEC.verify_ns_mean / 1e9, rel=0.05)
    assert m.bytes_per_message_per_peer == pytest.approx(2 * 1148 / 6, rel=1e-3)


def test_synthetic_cip_traffic_extrapolates_to_the_cip_tables(spark, measured):
    """Generated with the CIP's assumptions, measured and extrapolated: the CIP's low row."""
    costs = measured_costs(measured)
    for evaluated in extrapolate(spark, costs, pools=(3000,)):
        expected = cells_of(cip_scenario(evaluated.scenario.period_s, Bound.LOW))
        got = evaluated.cells
        assert got.messages_held == pytest.approx(expected.messages_held)
        assert got.messages_per_month_m == pytest.approx(expected.messages_per_month_m)
        assert got.memory_mb == pytest.approx(expected.memory_mb, rel=0.01)
        assert got.throughput_kbps == pytest.approx(expected.throughput_kbps, rel=1e-3)
        assert got.cost_usd == pytest.approx(expected.cost_usd, rel=1e-3)
        assert got.cpu_percent == pytest.approx(expected.cpu_percent, rel=0.03)
