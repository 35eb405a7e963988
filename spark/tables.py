"""Evaluating capacity scenarios as a Spark job: one row per scenario, one column per cell.

The reproduction of the CIP's tables, the corrected tables and the extrapolations of a
recording are all the same computation on different inputs, so they all go through
:func:`evaluate`, which applies :func:`spark.model.cells` to DataFrame columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark.model import CELL_NAMES, Cells, Scenario, cells

__all__ = ["Evaluated", "evaluate"]

_PARAMETERS = [f.name for f in fields(Scenario) if f.name != "label"]
_SCHEMA = T.StructType(
    [T.StructField("i", T.IntegerType(), False), T.StructField("label", T.StringType(), False)]
    + [T.StructField(name, T.DoubleType(), False) for name in _PARAMETERS]
)


@dataclass(frozen=True, slots=True)
class Evaluated:
    scenario: Scenario
    cells: Cells


def evaluate(spark: SparkSession, scenarios: Sequence[Scenario]) -> list[Evaluated]:
    """The model's cells for every scenario, computed by Spark, in the given order."""
    if not scenarios:
        return []
    rows = [(i, s.label, *(float(getattr(s, name)) for name in _PARAMETERS)) for i, s in enumerate(scenarios)]
    frame = spark.createDataFrame(rows, _SCHEMA)
    model = cells(**{name: F.col(name) for name in _PARAMETERS})
    # Put back in order here, not by Spark: an ``orderBy`` adds a sampling job and a shuffle to
    # what is otherwise one job, for a handful of rows (a third of the report's Spark jobs).
    out = frame.select("i", *(getattr(model, name).alias(name) for name in CELL_NAMES)).collect()
    by_index = {row["i"]: row for row in out}
    return [Evaluated(scenario, Cells(**{name: by_index[i][name] for name in CELL_NAMES}))
            for i, scenario in enumerate(scenarios)]
