"""Spark schemas derived from the recorder's schema module, never written by hand twice."""

from __future__ import annotations

from pyspark.sql import types as T

from dmq.recorder.schema import FieldType, RecordType

__all__ = ["spark_type", "struct_type", "PARTITIONS"]

_TYPES = {
    FieldType.STRING: T.StringType(),
    FieldType.LONG: T.LongType(),
    FieldType.INT: T.IntegerType(),
    FieldType.DOUBLE: T.DoubleType(),
    FieldType.BOOLEAN: T.BooleanType(),
}

#: Partition columns of the ingested Parquet, per record type (``day`` only where data is big).
PARTITIONS: dict[str, tuple[str, ...]] = {
    "message_events": ("run", "node", "day"),
    "connection_samples": ("run", "node"),
    "node_samples": ("run", "node"),
}


def spark_type(field_type: FieldType) -> T.DataType:
    return _TYPES[field_type]


def struct_type(record_type: RecordType, version: int | None = None) -> T.StructType:
    """The record type as Spark reads it from JSON lines (every field nullable): all current
    fields, or those a file of schema ``version`` holds."""
    fields = record_type.fields if version is None else record_type.fields_in(version)
    return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in fields])
