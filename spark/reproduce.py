"""The CIP's tables from the CIP's assumptions, cell by cell, and what the CIP gets wrong.

:func:`reproduce_cip` evaluates the CIP's scenarios (3,000 pools, each period, both message
sizes) in Spark and compares every published cell (docs/capacity/model.md section 2).
:func:`corrections` evaluates the same tables with one assumption corrected at a time
(docs/capacity/model.md section 3): the pool count the CIP's text states, and the current message
layout. The measured corrections (verification cost, redundancy, memory) come from a
recording, in :mod:`spark.extrapolate`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

from spark.cip import (
    CIP_POOLS,
    CIP_POOLS_TEXT,
    COLUMNS,
    PERIODS_S,
    PUBLISHED,
    Bound,
    Column,
    Match,
    cip_scenario,
    column_value,
    compare,
)
from spark.message_size import CIP_BODY_BYTES_HIGH, CIP_BODY_BYTES_LOW, message_size
from spark.model import Cells
from spark.tables import evaluate

__all__ = ["CellComparison", "CipTable", "reproduce_cip", "cip_table", "corrections"]


@dataclass(frozen=True, slots=True)
class CellComparison:
    period_s: int
    column: Column
    published: float
    reproduced: float
    match: Match
    difference: float


@dataclass(frozen=True, slots=True)
class CipTable:
    """A table in the CIP's shape: per period, every column's number in the CIP's units."""

    title: str
    rows: dict[int, dict[str, float]]


def _rows(spark: SparkSession, pools: int = CIP_POOLS,
          sizes: dict[Bound, int] | None = None) -> dict[int, tuple[Cells, Cells]]:
    """Per period, the low- and high-size rows of the model under the CIP's assumptions."""
    sizes = sizes or {bound: bound.message_bytes for bound in Bound}
    scenarios = [cip_scenario(p, bound, pools=pools, message_bytes=sizes[bound]) for p in PERIODS_S for bound in Bound]
    evaluated = evaluate(spark, scenarios)
    return {p: (evaluated[2 * k].cells, evaluated[2 * k + 1].cells) for k, p in enumerate(PERIODS_S)}


def cip_table(title: str, rows: dict[int, tuple[Cells, Cells]]) -> CipTable:
    return CipTable(title, {p: {c.key: column_value(c, low, high) for c in COLUMNS} for p, (low, high) in rows.items()})


def reproduce_cip(spark: SparkSession) -> tuple[CipTable, list[CellComparison]]:
    """The CIP's tables recomputed from its assumptions, and every cell compared."""
    table = cip_table("reproduced from the CIP's assumptions", _rows(spark))
    comparisons = []
    for period in PERIODS_S:
        for column in COLUMNS:
            published = PUBLISHED[period][column.key]
            reproduced = table.rows[period][column.key]
            match, difference = compare(reproduced, published, column.precision)
            comparisons.append(CellComparison(period, column, published, reproduced, match, difference))
    return table, comparisons


def corrections(spark: SparkSession) -> list[CipTable]:
    """The CIP's tables with the pool count of its text, and with the current message layout."""
    text_pools = cip_table(f"{CIP_POOLS_TEXT:,} pools ({CIP_POOLS_TEXT // 2:,} signers), as the CIP's text says",
                           _rows(spark, pools=CIP_POOLS_TEXT))
    low, high = message_size(CIP_BODY_BYTES_LOW), message_size(CIP_BODY_BYTES_HIGH)
    layout = cip_table(
        f"current message layout: {low:,} / {high:,} B for {CIP_BODY_BYTES_LOW} / {CIP_BODY_BYTES_HIGH:,} B bodies",
        _rows(spark, sizes={Bound.LOW: low, Bound.HIGH: high}),
    )
    return [text_pools, layout]
