"""What a recorded run measured: per-message costs and per-node figures (docs/capacity/model.md 5.3).

From the ingested Parquet of one run this computes, with Spark:

* message counts and bytes per event, per node and in total (accepted, rejected by reason,
  expired, offered, sent, notified), and the message-size distribution;
* messages and bytes held: peak, final and steady state (the mean once the first messages
  could have expired, i.e. after one TTL; absent when the run was shorter);
* memory per message held: the least-squares slope of the process's anonymous resident
  memory (its heap; schema version 2) against the messages held by the nodes in that
  process, sampled on the same second; of the whole RSS for recordings without it;
* CPU per message: the measured validation time of every accepted message, and the process
  CPU time spent per accepted message (everything the node did, sockets included);
* network: final byte counters of every connection and mini-protocol (SDU headers
  included), the outbound bytes per accepted message byte on node-to-node links (the real
  redundancy factor), and bytes per message per peer.

Only small aggregates are collected to the driver; the rows stay in Spark.
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from dmq.recorder.schema import LOCAL_ORIGIN, N2C_LINK, N2N_LINKS, MessageEventKind
from spark.ingest import read_table
from spark.storage import Location

__all__ = ["NodeFigures", "ProtocolTraffic", "Measurement", "measure", "runs_in", "SIG_SUBMISSION"]

#: The node-to-node protocol that carries messages (docs/protocol: sig submission, protocol 11).
SIG_SUBMISSION = 11
#: Memory slopes are trusted only from a fit this good over at least this many messages.
MIN_FIT_R2 = 0.8
MIN_FIT_SPAN = 1000
_PLOT_POINTS = 600
#: Mithril sets every message's expiry at the maximum the node accepts.
DEFAULT_TTL_S = 1800
_HISTOGRAM_BINS_PER_DECADE = 10
_FINE_BINS_PER_DECADE = 100


@dataclass(frozen=True, slots=True)
class NodeFigures:
    node: str
    duration_s: float
    accepted: int
    accepted_bytes: int
    accepted_local: int
    rejected: int
    expired: int
    notified: int
    peak_held: int
    peak_bytes_held: int
    final_held: int
    final_bytes_held: int
    steady_held: float | None
    steady_bytes_held: float | None
    n2n_bytes_out: int
    n2n_bytes_in: int
    n2c_bytes_out: int
    n2c_bytes_in: int
    n2n_connections: int
    n2c_connections: int
    sig_bytes_out: int


@dataclass(frozen=True, slots=True)
class ProtocolTraffic:
    link: str
    protocol: int
    mode: str
    connections: int
    bytes_in: int
    bytes_out: int
    sdus_in: int
    sdus_out: int


@dataclass(frozen=True)
class Measurement:
    run: str
    nodes: tuple[NodeFigures, ...]
    duration_s: float
    accepted: int
    accepted_bytes: int
    unique_messages: int
    rejected_by_reason: dict[str, int]
    expired: int
    notified: int
    offered: int
    sent: int
    message_bytes_mean: float | None
    message_bytes_min: int | None
    message_bytes_max: int | None
    verify_ns_mean: float | None
    verify_ns_p50: float | None
    verify_ns_p99: float | None
    verify_ns_max: int | None
    verify_histogram: list[tuple[float, float, int]]
    ttl_s: float | None
    rss_per_message: float | None
    rss_fit_r2: float | None
    rss_fit_span: int
    wire_bytes_per_message_held: float | None
    cpu_per_message_s: float | None
    redundancy: float | None
    bytes_per_message_per_peer: float | None
    outbound_bytes_per_s: float | None
    outbound_bytes_per_s_per_peer: float | None
    protocols: tuple[ProtocolTraffic, ...]
    #: What the memory slope was fitted on: "anonymous" (the heap) or "resident" (all of RSS).
    memory_basis: str = "resident"
    held_series: dict[str, list[tuple[float, int, int]]] = field(default_factory=dict)
    rss_points: list[tuple[int, int]] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return sum(self.rejected_by_reason.values())

    @property
    def memory_fit_trusted(self) -> bool:
        """Whether the RSS slope is a measurement or noise (too few messages, poor fit)."""
        return (self.rss_per_message is not None and self.rss_per_message > 0
                and (self.rss_fit_r2 or 0) >= MIN_FIT_R2 and self.rss_fit_span >= MIN_FIT_SPAN)


def runs_in(spark: SparkSession, parquet_root: Location) -> list[str]:
    """The runs present in an ingested dataset."""
    frame = read_table(spark, parquet_root, "node_samples")
    return sorted(row["run"] for row in frame.select("run").distinct().collect())


def _num(value, kind=float):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else kind(value)


#: Up to this many processes, their sampled windows are counted in the pass over the events.
_WINDOWS_IN_PASS = 64
_SUMS = ("records", "messages", "bytes", "verify_sum", "verify_n")


def _process_windows(samples: DataFrame) -> list[dict]:
    """Per process: when it was sampled, the CPU it spent meanwhile and its nodes."""
    return [{**r.asDict(), "nodes": sorted(r["nodes"])} for r in samples.groupBy("process").agg(
        F.min("t").alias("t0"), F.max("t").alias("t1"),
        (F.max("cpu_seconds") - F.min("cpu_seconds")).alias("cpu"), F.collect_set("node").alias("nodes"),
    ).orderBy("process").collect()]


def _event_pass(events: DataFrame, windows: list[dict]) -> tuple[list[dict], list[tuple[int, int]], list[int] | None]:
    """Everything that needs every event row, in one pass over them (they are the big table).

    Returns, per node, event, origin and rejection reason: records, messages, bytes, sizes
    and validation time; ``(bin, messages)`` with ``_FINE_BINS_PER_DECADE`` logarithmic bins
    of the validation time of accepted messages; and per window of :func:`_process_windows`
    the messages its nodes accepted while it was sampled (None when there are too many
    processes to count them here).
    """
    accepted = F.col("event") == MessageEventKind.ACCEPTED.value
    in_pass = len(windows) <= _WINDOWS_IN_PASS
    sampled = [
        F.sum(F.when(accepted & F.col("node").isin(*w["nodes"]) & (F.col("t") > F.lit(w["t0"]))
                     & (F.col("t") <= F.lit(w["t1"])), F.col("count")).otherwise(0)).alias(f"window{i}")
        for i, w in enumerate(windows)] if in_pass else []
    rows = events.groupBy(
        "node", "event", (F.col("peer") == LOCAL_ORIGIN).alias("local"),
        F.split("reason", " ").getItem(0).alias("reason"),
        F.when(accepted & (F.col("verify_ns") > 0),
               F.floor(F.log10("verify_ns") * _FINE_BINS_PER_DECADE)).alias("bin"),
    ).agg(
        F.count(F.lit(1)).alias("records"), F.sum("count").alias("messages"), F.sum("size").alias("bytes"),
        F.min("size").alias("size_min"), F.max("size").alias("size_max"),
        F.sum("verify_ns").alias("verify_sum"), F.count("verify_ns").alias("verify_n"), F.max("verify_ns").alias("verify_max"),
        *sampled,
    ).collect()
    groups: dict[tuple, dict] = {}
    bins: dict[int, int] = {}
    per_window = [0] * len(windows)
    for r in rows:
        key = (r["node"], r["event"], r["local"], r["reason"])
        g = groups.get(key)
        if g is None:
            groups[key] = {k: r[k] for k in ("node", "event", "local", "reason", "size_min", "size_max", "verify_max",
                                             *_SUMS)}
        else:
            for k in _SUMS:
                g[k] = (g[k] or 0) + (r[k] or 0) if (g[k] is not None or r[k] is not None) else None
            g["size_min"] = min((v for v in (g["size_min"], r["size_min"]) if v is not None), default=None)
            g["size_max"] = max((v for v in (g["size_max"], r["size_max"]) if v is not None), default=None)
            g["verify_max"] = max((v for v in (g["verify_max"], r["verify_max"]) if v is not None), default=None)
        if r["bin"] is not None:
            bins[int(r["bin"])] = bins.get(int(r["bin"]), 0) + r["records"]
        for i in range(len(per_window) if in_pass else 0):
            per_window[i] += r[f"window{i}"] or 0
    return list(groups.values()), sorted(bins.items()), per_window if in_pass else None


def _quantile(bins: list[tuple[int, int]], q: float) -> float | None:
    """The q-quantile from fine bins (the geometric middle of its bin: within 1.2 %)."""
    total = sum(n for _, n in bins)
    if not total:
        return None
    seen = 0
    for b, n in bins:
        seen += n
        if seen >= q * total:
            return 10 ** ((b + 0.5) / _FINE_BINS_PER_DECADE)
    return None


def _histogram(bins: list[tuple[int, int]]) -> list[tuple[float, float, int]]:
    """Fine bins merged into ``_HISTOGRAM_BINS_PER_DECADE`` for the plot."""
    k = _FINE_BINS_PER_DECADE // _HISTOGRAM_BINS_PER_DECADE
    merged: dict[int, int] = {}
    for b, n in bins:
        merged[b // k] = merged.get(b // k, 0) + n
    step = _HISTOGRAM_BINS_PER_DECADE
    return [(10 ** (b / step), 10 ** ((b + 1) / step), n) for b, n in sorted(merged.items())]


#: Expiry times are averaged over about this many messages at most (a deterministic sample).
TTL_SAMPLE = 1_000_000


def _identities(events: DataFrame, accepted_records: int, expired_records: int) -> tuple[int, float | None]:
    """Distinct messages accepted anywhere, and the mean time from acceptance to expiry.

    Ids are compared by two independent hashes (96 bits: for 65 million messages the chance
    of a single collision is below 1e-13) rather than as 64-character strings, which shuffles
    a tenth of the bytes. The time to expiry is the same for every message a node holds, so
    it is averaged over a deterministic sample of ids when a run has more than
    :data:`TTL_SAMPLE` of them, and not looked for when nothing expired; the grouping of
    acceptances with expiries is the costly part.
    """
    accepted, expired = MessageEventKind.ACCEPTED.value, MessageEventKind.EXPIRED.value
    key = [F.xxhash64("message_id").alias("h1"), F.hash("message_id").alias("h2")]
    unique = (events.where((F.col("event") == accepted) & F.col("message_id").isNotNull())
              .select(*key).distinct().count())
    if not expired_records:
        return int(unique), None
    every = max(1, -(-accepted_records // TTL_SAMPLE))
    copies = events.where(F.col("event").isin(accepted, expired))
    if every > 1:
        copies = copies.where(F.pmod(F.xxhash64("message_id", F.lit("ttl")), F.lit(every)) == 0)
    per_copy = copies.groupBy("node", "session", *key).agg(
        F.min(F.when(F.col("event") == accepted, F.col("t"))).alias("t_accepted"),
        F.min(F.when(F.col("event") == expired, F.col("t"))).alias("t_expired"))
    ttl = per_copy.agg(F.avg(F.col("t_expired") - F.col("t_accepted")).alias("ttl")).first()["ttl"]
    return int(unique), _num(ttl)


def _node_holdings(samples: DataFrame, ttl_s: float | None) -> dict[str, dict]:
    per_node = Window.partitionBy("node")
    marked = samples.withColumn("start", F.min("t").over(per_node))
    steady = (F.col("t") >= F.col("start") + F.lit(ttl_s)) if ttl_s else F.lit(False)
    rows = marked.groupBy("node").agg(
        (F.max("t") - F.min("t")).alias("duration"),
        F.max("messages_held").alias("peak"), F.max("bytes_held").alias("peak_bytes"),
        F.max_by("messages_held", "t").alias("final"), F.max_by("bytes_held", "t").alias("final_bytes"),
        F.avg(F.when(steady, F.col("messages_held"))).alias("steady"),
        F.avg(F.when(steady, F.col("bytes_held"))).alias("steady_bytes"),
    ).collect()
    return {r["node"]: r.asDict() for r in rows}


def _memory_basis(samples: DataFrame) -> str:
    """"anonymous" when every sample has the heap (schema version 2), else "resident"."""
    row = samples.agg(F.count(F.lit(1)).alias("n"), F.count("anon_bytes").alias("anon")).first()
    return "anonymous" if row["n"] and row["n"] == row["anon"] else "resident"


def _process_points(samples: DataFrame, interval: float, basis: str = "resident") -> DataFrame:
    """One point per process and sampling second: messages held by its nodes and its memory
    (``rss``: the anonymous part or all of RSS, as ``basis`` says)."""
    memory = "anon_bytes" if basis == "anonymous" else "rss_bytes"
    bucketed = samples.withColumn("bucket", F.floor(F.col("t") / F.lit(interval)))
    per_node = bucketed.groupBy("process", "node", "bucket").agg(
        F.max_by("messages_held", "t").alias("held"), F.max_by("bytes_held", "t").alias("held_bytes"),
        F.max(memory).alias("rss"),
    )
    # Nodes of one process sample on their own timers: a point counts only when every node
    # of the process sampled in that second, or its messages held would be partial.
    points = per_node.groupBy("process", "bucket").agg(
        F.sum("held").alias("held"), F.sum("held_bytes").alias("held_bytes"), F.max("rss").alias("rss"),
        F.count(F.lit(1)).alias("nodes"))
    complete = per_node.groupBy("process").agg(F.countDistinct("node").alias("all_nodes"))
    return (points.join(complete, "process").where(F.col("nodes") == F.col("all_nodes"))
            .drop("nodes", "all_nodes"))


def _memory_fit(points: DataFrame) -> tuple[float | None, float | None, int, float | None]:
    """Pooled least-squares slope of RSS on messages held (per-process intercepts), r², span.

    Computed from exact integer sums (held and memory are whole numbers), so the result does
    not depend on how Spark partitioned the points or merged the partial sums: a run gives
    the same slope in local mode and on any cluster.
    """
    exact = "decimal(38,0)"
    h, r = F.col("held").cast(exact), F.col("rss").cast(exact)
    stats = points.where(F.col("held").isNotNull() & F.col("rss").isNotNull()).groupBy("process").agg(
        F.count(F.lit(1)).alias("n"), F.sum(h).alias("sh"), F.sum(r).alias("sr"),
        F.sum(h * h).alias("shh"), F.sum(h * r).alias("shr"), F.sum(r * r).alias("srr"),
        (F.max("held") - F.min("held")).alias("span"),
        F.sum(F.col("held_bytes").cast(exact)).alias("bytes"),
    ).orderBy("process").collect()
    # n times the centred sums of each process, as exact integers, then pooled.
    sxy = sxx = syy = 0
    for row in stats:
        n, sh, sr = row["n"], int(row["sh"]), int(row["sr"])
        sxy += Fraction(n * int(row["shr"]) - sh * sr, n)
        sxx += Fraction(n * int(row["shh"]) - sh * sh, n)
        syy += Fraction(n * int(row["srr"]) - sr * sr, n)
    span = max((row["span"] or 0 for row in stats), default=0)
    messages = sum(int(row["sh"]) for row in stats)
    wire = sum(int(row["bytes"] or 0) for row in stats) / messages if messages else None
    if sxx <= 0:
        return None, None, int(span), wire
    slope = float(sxy / sxx)
    r2 = float(sxy * sxy / (sxx * syy)) if syy > 0 else None
    return slope, r2, int(span), wire


def _process_cpu(windows: list[dict], in_window: list[int] | None, accepted: DataFrame) -> float | None:
    """Process CPU seconds spent per message accepted by the process's nodes while sampled.

    ``in_window`` comes from the pass over the events; with too many processes for that,
    the accepted events are joined with the windows instead.
    """
    if in_window is None:
        spark = accepted.sparkSession
        frame = spark.createDataFrame([(i, w["t0"], w["t1"], n) for i, w in enumerate(windows) for n in w["nodes"]],
                                      "window int, t0 double, t1 double, node string")
        counted = {r["window"]: r["messages"] for r in (
            accepted.select("node", "t", "count").join(F.broadcast(frame), "node")
            .where((F.col("t") > F.col("t0")) & (F.col("t") <= F.col("t1")))
            .groupBy("window").agg(F.sum("count").alias("messages")).collect())}
        in_window = [counted.get(i, 0) or 0 for i in range(len(windows))]
    cpu = sum(w["cpu"] or 0.0 for w in windows)
    messages = sum(in_window)
    return cpu / messages if messages else None


def _traffic(conns: DataFrame) -> list[dict]:
    """Per node, link, protocol and mode: final counters summed over connections, and how many."""
    final = conns.groupBy("node", "session", "conn", "link", "protocol", "mode").agg(
        F.max("bytes_in").alias("bytes_in"), F.max("bytes_out").alias("bytes_out"),
        F.max("sdus_in").alias("sdus_in"), F.max("sdus_out").alias("sdus_out"))
    return [r.asDict() for r in final.groupBy("node", "link", "protocol", "mode").agg(
        F.count(F.lit(1)).alias("connections"),
        F.sum("bytes_in").alias("bytes_in"), F.sum("bytes_out").alias("bytes_out"),
        F.sum("sdus_in").alias("sdus_in"), F.sum("sdus_out").alias("sdus_out"),
    ).collect()]


def _plot_points(points: DataFrame) -> list[tuple[int, int]]:
    """At most about 2,000 (messages held, RSS) points, spread over the run, in a fixed order.

    The points kept are chosen by a hash of their process and second, not by a random sample
    (whose draw depends on the partitioning), so a plot is the same in local mode and on a cluster.
    """
    n = points.count()
    frame = points.where(F.col("held").isNotNull())
    if n > 2000:
        frame = frame.where(F.pmod(F.xxhash64("process", "bucket"), F.lit(n)) < 2000)
    return [(r["held"], r["rss"]) for r in frame.orderBy("process", "bucket").select("held", "rss").collect()]


def _held_series(samples: DataFrame, duration: float, interval: float) -> dict[str, list[tuple[float, int, int]]]:
    step = max(interval, duration / _PLOT_POINTS) if duration > 0 else interval
    rows = (samples.groupBy("node", F.floor(F.col("t") / F.lit(step)).alias("b"))
            .agg(F.min("t").alias("t"), F.max("messages_held").alias("held"), F.max("bytes_held").alias("bytes"))
            .orderBy("node", "b").collect())
    series: dict[str, list[tuple[float, int, int]]] = {}
    for r in rows:
        series.setdefault(r["node"], []).append((r["t"], r["held"] or 0, r["bytes"] or 0))
    return series


def measure(spark: SparkSession, parquet_root: Location, run: str, *, sample_interval: float = 1.0,
            ttl_hint_s: float = DEFAULT_TTL_S) -> Measurement:
    """Everything :class:`Measurement` holds, for one ingested run.

    The steady state starts one TTL after a node's first sample: the measured TTL (expiry
    time minus acceptance time) when messages expired during the run, else ``ttl_hint_s``.
    """
    # Not cached: each pass reads only the Parquet columns it needs, which at mainnet scale
    # (65 million rows) is cheaper than holding every column in memory.
    events = read_table(spark, parquet_root, "message_events", run)
    samples = read_table(spark, parquet_root, "node_samples", run).cache()
    conns = read_table(spark, parquet_root, "connection_samples", run)
    accepted = events.where(F.col("event") == MessageEventKind.ACCEPTED.value)

    windows = _process_windows(samples)
    counts, bins, in_window = _event_pass(events, windows)

    def total(event: MessageEventKind, node: str | None = None, local: bool | None = None,
              what: str = "messages") -> int:
        return sum(r[what] or 0 for r in counts if r["event"] == event.value
                   and (node is None or r["node"] == node) and (local is None or bool(r["local"]) == local))

    reasons: dict[str, int] = {}
    for r in counts:
        if r["event"] == MessageEventKind.REJECTED.value:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + r["messages"]
    accepted_rows = [r for r in counts if r["event"] == MessageEventKind.ACCEPTED.value]
    accepted_n = sum(r["messages"] or 0 for r in accepted_rows)
    verify_n = sum(r["verify_n"] for r in accepted_rows)
    unique, ttl_s = _identities(events, sum(r["records"] for r in accepted_rows),
                                total(MessageEventKind.EXPIRED, what="records"))

    holdings = _node_holdings(samples, ttl_s or ttl_hint_s)
    basis = _memory_basis(samples)
    points = _process_points(samples, sample_interval, basis).cache()
    slope, r2, span, wire_per_message = _memory_fit(points)
    rss_points = _plot_points(points)
    cpu_per_message = _process_cpu(windows, in_window, accepted)

    traffic = _traffic(conns)
    per_node_links: dict[tuple[str, str], dict[str, int]] = {}
    by_protocol: dict[tuple[str, int, str], list[int]] = {}
    # Every connection of a link carries all of the link's protocols: the busiest one counts them.
    link_connections: dict[tuple[str, str], int] = {}
    for r in traffic:
        key = (r["node"], r["link"])
        link_connections[key] = max(link_connections.get(key, 0), r["connections"])
    for r in traffic:
        cls = "n2n" if r["link"] in N2N_LINKS else "n2c" if r["link"] == N2C_LINK else "other"
        agg = per_node_links.setdefault((r["node"], cls), {"out": 0, "in": 0, "connections": 0, "sig_out": 0})
        agg["out"] += r["bytes_out"]
        agg["in"] += r["bytes_in"]
        if r["protocol"] == SIG_SUBMISSION:
            agg["sig_out"] += r["bytes_out"]
        acc = by_protocol.setdefault((r["link"], r["protocol"], r["mode"]), [0] * 5)
        for i, key in enumerate(("connections", "bytes_in", "bytes_out", "sdus_in", "sdus_out")):
            acc[i] += r[key]
    for (node, link), n in link_connections.items():
        cls = "n2n" if link in N2N_LINKS else "n2c" if link == N2C_LINK else "other"
        per_node_links[(node, cls)]["connections"] += n
    protocols = tuple(ProtocolTraffic(link, protocol, mode, *values)
                      for (link, protocol, mode), values in sorted(by_protocol.items()))

    node_names = sorted(set(holdings) | {r["node"] for r in counts})
    nodes = []
    for name in node_names:
        h = holdings.get(name, {})
        n2n = per_node_links.get((name, "n2n"), {})
        n2c = per_node_links.get((name, "n2c"), {})
        nodes.append(NodeFigures(
            node=name, duration_s=float(h.get("duration") or 0.0),
            accepted=total(MessageEventKind.ACCEPTED, name),
            accepted_bytes=total(MessageEventKind.ACCEPTED, name, what="bytes"),
            accepted_local=total(MessageEventKind.ACCEPTED, name, local=True),
            rejected=total(MessageEventKind.REJECTED, name), expired=total(MessageEventKind.EXPIRED, name),
            notified=total(MessageEventKind.NOTIFIED, name),
            peak_held=int(h.get("peak") or 0), peak_bytes_held=int(h.get("peak_bytes") or 0),
            final_held=int(h.get("final") or 0), final_bytes_held=int(h.get("final_bytes") or 0),
            steady_held=_num(h.get("steady")), steady_bytes_held=_num(h.get("steady_bytes")),
            n2n_bytes_out=int(n2n.get("out") or 0), n2n_bytes_in=int(n2n.get("in") or 0),
            n2c_bytes_out=int(n2c.get("out") or 0), n2c_bytes_in=int(n2c.get("in") or 0),
            n2n_connections=int(n2n.get("connections") or 0), n2c_connections=int(n2c.get("connections") or 0),
            sig_bytes_out=int(n2n.get("sig_out") or 0),
        ))

    duration = max((n.duration_s for n in nodes), default=0.0)
    diffusing = [n for n in nodes if n.n2n_connections and n.accepted_bytes]
    redundancy = (sum(n.n2n_bytes_out for n in diffusing) / sum(n.accepted_bytes for n in diffusing)
                  if diffusing else None)
    per_peer = (sum(n.sig_bytes_out for n in diffusing)
                / sum(n.accepted * n.n2n_connections for n in diffusing)) if diffusing else None
    outbound = (sum(n.n2n_bytes_out / n.duration_s for n in diffusing if n.duration_s) / len(diffusing)
                if diffusing else None)
    outbound_per_peer = (sum(n.n2n_bytes_out / n.duration_s / n.n2n_connections for n in diffusing if n.duration_s)
                         / len(diffusing)) if diffusing else None
    measurement = Measurement(
        run=run, nodes=tuple(nodes), duration_s=duration,
        accepted=accepted_n, accepted_bytes=total(MessageEventKind.ACCEPTED, what="bytes"),
        unique_messages=unique,
        rejected_by_reason=dict(sorted(reasons.items())), expired=total(MessageEventKind.EXPIRED),
        notified=total(MessageEventKind.NOTIFIED), offered=total(MessageEventKind.OFFERED),
        sent=total(MessageEventKind.SENT),
        message_bytes_mean=total(MessageEventKind.ACCEPTED, what="bytes") / accepted_n if accepted_n else None,
        message_bytes_min=min((r["size_min"] for r in accepted_rows if r["size_min"] is not None), default=None),
        message_bytes_max=max((r["size_max"] for r in accepted_rows if r["size_max"] is not None), default=None),
        verify_ns_mean=sum(r["verify_sum"] or 0 for r in accepted_rows) / verify_n if verify_n else None,
        verify_ns_p50=_quantile(bins, 0.5), verify_ns_p99=_quantile(bins, 0.99),
        verify_ns_max=max((r["verify_max"] for r in accepted_rows if r["verify_max"] is not None), default=None),
        verify_histogram=_histogram(bins),
        ttl_s=ttl_s, rss_per_message=slope, rss_fit_r2=r2, rss_fit_span=span,
        wire_bytes_per_message_held=wire_per_message, cpu_per_message_s=cpu_per_message,
        redundancy=redundancy, bytes_per_message_per_peer=per_peer,
        outbound_bytes_per_s=outbound, outbound_bytes_per_s_per_peer=outbound_per_peer,
        protocols=protocols, memory_basis=basis, held_series=_held_series(samples, duration, sample_interval), rss_points=rss_points,
    )
    for frame in (samples, points):
        frame.unpersist()
    return measurement
