"""Synthetic mainnet traffic, generated in parallel inside Spark, in the recorder's schema.

What one node would record in a month of mainnet (docs/capacity/model.md 5.5): every round, each
eligible signer's message arrives once and is accepted (64.8 million messages for 1,500
signers every minute), the node samples its mempool every second and its node-to-node
connections every minute. The rows go straight into the ingested Parquet layout, so the
measurement and report jobs run on them exactly as on a real recording, at the size a real
operator would feed them.

Every random choice is a hash of the row number and the seed, never ``rand()``: the same
spec gives the same rows whatever the partitioning or the cluster. Messages held, memory,
CPU and connection counters are not drawn but derived from the generated messages (running
sums over a dense per-second timeline), so the samples agree with the events by
construction:

* messages held at time t = messages accepted in (t - TTL, t];
* resident memory, and its anonymous part = a base each + bytes held x ``memory_overhead``;
* process CPU = a base + the validation time of every message accepted so far;
* each of ``peers`` connections carries ``redundancy`` / ``peers`` of the accepted bytes out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from dmq.recorder.schema import (
    CONNECTION_SAMPLES,
    LOCAL_ORIGIN,
    MESSAGE_EVENTS,
    NODE_SAMPLES,
    MessageEventKind,
)
from spark.cip import CIP_POOLS, PRICE_PER_GB, REDUNDANCY, SIGNER_SHARE, TTL_S, VERIFY_S
from spark.ingest import read_table, write_table
from spark.measure import SIG_SUBMISSION
from spark.message_size import CIP_MESSAGE_BYTES_HIGH, CIP_MESSAGE_BYTES_LOW
from spark.model import MONTH_SECONDS
from spark.progress import Progress
from spark.storage import Location

__all__ = ["SyntheticSpec", "SCALES", "generate", "message_frame"]

_UNIT = float(1 << 53)
_MASK = (1 << 53) - 1


@dataclass(frozen=True, slots=True)
class SyntheticSpec:
    """What to generate. Defaults: the CIP's mainnet assumptions for a 30-day month."""

    pools: int = CIP_POOLS
    signer_share: float = SIGNER_SHARE
    period_s: int = 60
    duration_s: int = MONTH_SECONDS
    ttl_s: int = TTL_S
    size_min: int = CIP_MESSAGE_BYTES_LOW
    size_max: int = CIP_MESSAGE_BYTES_HIGH
    verify_ns_mean: int = int(VERIFY_S * 1e9)
    memory_overhead: float = 1.0
    redundancy: float = REDUNDANCY
    peers: int = 20
    node_sample_interval: int = 1
    connection_sample_interval: int = 60
    start: float = 1_800_000_000.0
    base_rss: int = 200_000_000
    base_anon: int = 150_000_000
    base_cpu_s: float = 10.0
    seed: int = 137
    run: str = "synthetic"
    node: str = "synthetic:3141"
    price_per_gb: float = PRICE_PER_GB

    def __post_init__(self) -> None:
        if self.duration_s < self.period_s or self.signers < 1 or self.peers < 1:
            raise ValueError("a synthetic run needs at least one round, one signer and one peer")
        if not 0 < self.size_min <= self.size_max:
            raise ValueError("message sizes must satisfy 0 < size_min <= size_max")

    @property
    def signers(self) -> int:
        return round(self.pools * self.signer_share)

    @property
    def rounds(self) -> int:
        return self.duration_s // self.period_s

    @property
    def expected_messages(self) -> int:
        return self.signers * self.rounds

    @property
    def expected_node_samples(self) -> int:
        return self.duration_s // self.node_sample_interval + 1

    @property
    def expected_connection_samples(self) -> int:
        return self.peers * (self.duration_s // self.connection_sample_interval + 1)

    @property
    def session(self) -> str:
        return f"synthetic-{self.seed}"

    def with_(self, **changes) -> "SyntheticSpec":
        return replace(self, **changes)


#: ``full``: a month of mainnet (64.8 M messages); ``small``: 300 pools for 2 hours (18,000).
SCALES: dict[str, SyntheticSpec] = {
    "full": SyntheticSpec(),
    "small": SyntheticSpec(pools=300, duration_s=7200, run="synthetic-small"),
}


def _uniform(salt: int, seed: int) -> Column:
    """A uniform number in [0, 1) from the row id, the seed and a salt."""
    return F.xxhash64(F.col("id"), F.lit(seed), F.lit(salt)).bitwiseAND(F.lit(_MASK)) / F.lit(_UNIT)


def pool_ids(spec: SyntheticSpec) -> list[str]:
    """Hex pool ids of the synthetic pools (Blake2b-224-sized: SHA-224 of a per-pool text)."""
    return [hashlib.sha224(f"pool:{spec.seed}:{k}".encode()).hexdigest() for k in range(spec.pools)]


def peer_names(spec: SyntheticSpec) -> list[str]:
    return [f"peer-{k}" for k in range(spec.peers)]


def _constants(values: list[str]) -> Column:
    return F.array(*(F.lit(v) for v in values))


def message_frame(spark: SparkSession, spec: SyntheticSpec, partitions: int | None = None) -> DataFrame:
    """One accepted-message event per signer per round, in the message-events schema."""
    s = spec.signers
    frame = spark.range(0, spec.expected_messages, numPartitions=partitions or spark.sparkContext.defaultParallelism)
    rnd = F.floor(F.col("id") / F.lit(s))
    signer = F.col("id") % F.lit(s)
    pool = (signer + (rnd % 2) * F.lit(s)) % F.lit(spec.pools)
    columns = {
        "t": F.lit(spec.start) + rnd * F.lit(spec.period_s) + _uniform(1, spec.seed) * F.lit(spec.period_s / 2),
        "node": F.lit(spec.node),
        "session": F.lit(spec.session),
        "event": F.lit(MessageEventKind.ACCEPTED.value),
        "message_id": F.sha2(F.concat_ws(":", F.lit(spec.seed), F.col("id").cast("string")), 256),
        # Per-pool and per-peer values come from a constant array: one lookup, not a hash, per row.
        "pool_id": F.element_at(_constants(pool_ids(spec)), (pool + 1).cast("int")),
        "size": (F.lit(spec.size_min) + F.floor(_uniform(2, spec.seed) * F.lit(spec.size_max - spec.size_min + 1)))
        .cast("long"),
        "count": F.lit(1),
        "peer": F.when(pool == 0, F.lit(LOCAL_ORIGIN)).otherwise(F.element_at(
            _constants(peer_names(spec)),
            (F.abs(F.xxhash64(F.col("id"), F.lit(spec.seed), F.lit(3))) % spec.peers + 1).cast("int"))),
        "reason": F.lit(None).cast("string"),
        "reaction": F.lit(None).cast("string"),
        "verify_ns": F.floor(F.lit(spec.verify_ns_mean) * (F.lit(0.5) + _uniform(4, spec.seed))).cast("long"),
    }
    return frame.select(*(columns[name].cast(_cast(name, MESSAGE_EVENTS)).alias(name)
                          for name in MESSAGE_EVENTS.field_names))


def _cast(name: str, record_type) -> str:
    return next(f.type.value for f in record_type.fields if f.name == name)


def _timeline(spark: SparkSession, spec: SyntheticSpec, messages: DataFrame) -> DataFrame:
    """Per second of the run: messages and bytes held, and cumulative bytes and CPU."""
    arrivals = (messages.groupBy(F.floor(F.col("t") - F.lit(spec.start)).cast("long").alias("s"))
                .agg(F.count(F.lit(1)).alias("n"), F.sum("size").alias("b"), F.sum("verify_ns").alias("v")))
    seconds = spark.range(0, spec.duration_s + 1).withColumnRenamed("id", "s")
    dense = seconds.join(arrivals, "s", "left").na.fill(0, ["n", "b", "v"])
    # Running sums are one pass; what arrived in the last TTL is the difference of two of them
    # (a sliding ``rowsBetween(-ttl, -1)`` frame would re-add the whole TTL for every second).
    order = Window.orderBy("s")
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    running = dense.select(
        "s",
        F.coalesce(F.sum("n").over(before), F.lit(0)).alias("total"),
        F.coalesce(F.sum("b").over(before), F.lit(0)).alias("total_bytes"),
        F.coalesce(F.sum("v").over(before), F.lit(0)).alias("total_verify_ns"),
    )
    return running.select(
        "s",
        (F.col("total") - F.lag("total", spec.ttl_s, 0).over(order)).alias("held"),
        (F.col("total_bytes") - F.lag("total_bytes", spec.ttl_s, 0).over(order)).alias("held_bytes"),
        "total", "total_bytes", "total_verify_ns",
    )


def _node_samples(spec: SyntheticSpec, timeline: DataFrame) -> DataFrame:
    t = F.lit(spec.start) + F.col("s")
    columns = {
        "t": t, "node": F.lit(spec.node), "session": F.lit(spec.session), "process": F.lit("synthetic:1"),
        "messages_held": F.col("held"), "bytes_held": F.col("held_bytes"),
        "rss_bytes": F.lit(spec.base_rss) + F.floor(F.col("held_bytes") * F.lit(spec.memory_overhead)),
        "cpu_seconds": F.lit(spec.base_cpu_s) + F.col("total_verify_ns") / F.lit(1e9),
        "anon_bytes": F.lit(spec.base_anon) + F.floor(F.col("held_bytes") * F.lit(spec.memory_overhead)),
    }
    return (timeline.where(F.col("s") % spec.node_sample_interval == 0)
            .select(*(columns[n].cast(_cast(n, NODE_SAMPLES)).alias(n) for n in NODE_SAMPLES.field_names)))


def _connection_samples(spark: SparkSession, spec: SyntheticSpec, timeline: DataFrame) -> DataFrame:
    peers = spark.range(0, spec.peers).withColumnRenamed("id", "k")
    last = spec.duration_s - spec.duration_s % spec.connection_sample_interval
    outbound = F.lit(spec.redundancy / spec.peers)
    columns = {
        "t": F.lit(spec.start) + F.col("s"), "node": F.lit(spec.node), "session": F.lit(spec.session),
        "conn": F.col("k") + 1, "peer": F.concat(F.lit("peer-"), F.col("k").cast("string")),
        "link": F.when(F.col("k") % 2 == 0, "n2n-out").otherwise("n2n-in"),
        "protocol": F.lit(SIG_SUBMISSION),
        "mode": F.when(F.col("k") % 2 == 0, "initiator").otherwise("responder"),
        "bytes_in": F.floor(F.col("total_bytes") / F.lit(spec.peers)),
        "bytes_out": F.floor(F.col("total_bytes") * outbound),
        "sdus_in": F.floor(F.col("total") / F.lit(spec.peers)),
        "sdus_out": F.floor(F.col("total") * outbound),
        "final": F.col("s") == F.lit(last),
    }
    sampled = timeline.where(F.col("s") % spec.connection_sample_interval == 0).crossJoin(peers)
    return sampled.select(*(columns[n].cast(_cast(n, CONNECTION_SAMPLES)).alias(n)
                            for n in CONNECTION_SAMPLES.field_names))


def generate(spark: SparkSession, spec: SyntheticSpec, parquet_root: Location,
             progress: Progress | None = None, partitions: int | None = None) -> dict[str, int]:
    """Write a synthetic run into the Parquet dataset; returns the expected row counts."""
    progress = progress or Progress(enabled=False)
    run = F.lit(spec.run)
    messages = message_frame(spark, spec, partitions)
    with progress.stage(f"synthesize {spec.run}: {spec.expected_messages:,} messages"):
        write_table(messages.withColumn("run", run), parquet_root, MESSAGE_EVENTS.name)
    written = read_table(spark, parquet_root, MESSAGE_EVENTS.name, spec.run).select("t", "size", "verify_ns")
    timeline = _timeline(spark, spec, written).cache()
    with progress.stage(f"synthesize {spec.run}: {spec.expected_node_samples:,} node samples"):
        write_table(_node_samples(spec, timeline).withColumn("run", run), parquet_root, NODE_SAMPLES.name)
    with progress.stage(f"synthesize {spec.run}: {spec.expected_connection_samples:,} connection samples"):
        write_table(_connection_samples(spark, spec, timeline).withColumn("run", run), parquet_root,
                    CONNECTION_SAMPLES.name)
    timeline.unpersist()
    return {
        MESSAGE_EVENTS.name: spec.expected_messages,
        NODE_SAMPLES.name: spec.expected_node_samples,
        CONNECTION_SAMPLES.name: spec.expected_connection_samples,
    }
