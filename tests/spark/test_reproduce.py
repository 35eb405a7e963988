"""The CIP's tables reproduced by Spark from the CIP's assumptions, every cell checked."""

from __future__ import annotations

import pytest

from spark.cip import CIP_POOLS_TEXT, COLUMNS, PERIODS_S, PUBLISHED, Bound, Match, cip_scenario
from spark.extrapolate import MeasuredCosts, extrapolate
from spark.model import CELL_NAMES, cells_of
from spark.reproduce import corrections, reproduce_cip
from spark.tables import evaluate


def test_every_published_cell_is_reproduced(spark):
    table, comparisons = reproduce_cip(spark)
    assert len(comparisons) == 44
    assert {(c.period_s, c.column.key) for c in comparisons} == {(p, c.key) for p in PERIODS_S for c in COLUMNS}
    assert [c for c in comparisons if c.match is Match.MISMATCH] == []
    within = [c for c in comparisons if c.match is Match.WITHIN]
    assert all(c.difference <= 0.03 for c in within)
    # The cells the CIP rounded up, and nothing else: all are small numbers shown as whole units.
    rounded = {(c.period_s, c.column.key) for c in comparisons if c.match is Match.ROUNDED_UP}
    assert rounded == {
        (120, "cost_low"), (300, "memory_low"), (300, "throughput_low"), (300, "cost_high"),
        (600, "held"), (600, "memory_low"), (600, "memory_high"), (600, "per_month"),
        (600, "throughput_low"), (600, "cost_low"), (600, "cost_high"),
    }
    for c in comparisons:
        if c.match is Match.ROUNDED_UP:
            assert c.published > c.reproduced  # rounding up, never down
    # The 1-minute row as docs/capacity/model.md states it.
    row = table.rows[60]
    assert row["held"] == pytest.approx(45) and row["memory_low"] == pytest.approx(51.66)
    assert row["per_month"] == pytest.approx(64.8) and row["cpu"] == pytest.approx(5.0)
    assert row["throughput_high"] == pytest.approx(139.4) and row["volume_low"] == pytest.approx(148.78, abs=0.01)


def test_spark_evaluates_the_same_model_as_python(spark):
    scenarios = [cip_scenario(p, b) for p in PERIODS_S for b in Bound]
    for evaluated in evaluate(spark, scenarios):
        expected = cells_of(evaluated.scenario)
        for name in CELL_NAMES:
            assert getattr(evaluated.cells, name) == pytest.approx(getattr(expected, name), rel=1e-12)


def test_corrections_scale_with_pools_and_message_layout(spark):
    pools, layout = corrections(spark)
    reproduced, _ = reproduce_cip(spark)
    for p in PERIODS_S:
        for key, value in pools.rows[p].items():
            assert value == pytest.approx(reproduced.rows[p][key] * CIP_POOLS_TEXT / 3000)
        # Current layout: 997 and 2 637 bytes instead of 1 148 and 2 788; counts and CPU unchanged.
        assert layout.rows[p]["memory_low"] == pytest.approx(reproduced.rows[p]["memory_low"] * 997 / 1148)
        assert layout.rows[p]["throughput_high"] == pytest.approx(reproduced.rows[p]["throughput_high"] * 2637 / 2788)
        assert layout.rows[p]["per_month"] == reproduced.rows[p]["per_month"]
        assert layout.rows[p]["cpu"] == reproduced.rows[p]["cpu"]
    assert PUBLISHED[60]["held"] == 45


def test_extrapolation_is_consistent_across_pools_and_periods(spark):
    costs = MeasuredCosts("r", message_bytes=1000.0, memory_per_message=1500.0, verify_s=60e-6,
                          process_cpu_s=400e-6, redundancy=1.3, assumed=())
    rows = extrapolate(spark, costs, pools=(3000, 6000), periods=(60, 120, 600))
    by = {(e.scenario.pools, e.scenario.period_s): e.cells for e in rows}
    for name in CELL_NAMES:
        for period in (60, 120, 600):  # doubling the pools doubles everything
            assert getattr(by[(6000, period)], name) == pytest.approx(2 * getattr(by[(3000, period)], name))
        # one message per signer per period: twice the period, half of everything
        assert getattr(by[(3000, 120)], name) == pytest.approx(getattr(by[(3000, 60)], name) / 2)
        assert getattr(by[(3000, 600)], name) == pytest.approx(getattr(by[(3000, 60)], name) / 10)
    one_minute = by[(3000, 60)]
    assert one_minute.messages_held == pytest.approx(45_000)
    assert one_minute.memory_mb == pytest.approx(45_000 * 1500 / 1e6)
    assert one_minute.cpu_percent == pytest.approx(25 * 60e-6 * 100)  # 25 messages/s x 60 µs
    assert one_minute.throughput_kbps == pytest.approx(1.3 * 25 * 1000 / 1e3)
    process = extrapolate(spark, costs, pools=(3000,), periods=(60,), process_cpu=True)[0].cells
    assert process.cpu_percent == pytest.approx(25 * 400e-6 * 100)
