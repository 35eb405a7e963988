"""The capacity pipeline: PySpark jobs that turn recorded traffic into CIP-0137's tables.

Ingest recordings to Parquet (:mod:`spark.ingest`), reproduce the CIP from its assumptions
(:mod:`spark.reproduce`), measure a run (:mod:`spark.measure`), extrapolate it to mainnet
(:mod:`spark.extrapolate`), synthesize mainnet traffic (:mod:`spark.synthetic`) and write the
report (:mod:`spark.report`); :mod:`spark.pipeline` runs them all. From ``dmq`` this package
imports only the recorder's schema module.
"""
