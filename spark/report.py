"""The capacity report: Markdown with the tables side by side, and PNG plots beside it.

Pure formatting of results the jobs already computed; no Spark here, so the layout can be
tested and changed without a cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spark.cip import (
    CIP_POOLS,
    CIP_POOLS_TEXT,
    COLUMNS,
    PERIODS_S,
    PRICE_PER_GB,
    PUBLISHED,
    REDUNDANCY,
    TTL_S,
    VERIFY_S,
    Match,
)
from spark.extrapolate import MeasuredCosts
from spark.measure import Measurement
from spark.message_size import (
    CIP_BODY_BYTES_HIGH,
    CIP_BODY_BYTES_LOW,
    CIP_MESSAGE_BYTES_HIGH,
    CIP_MESSAGE_BYTES_LOW,
    message_size,
)
from spark.model import MONTH_SECONDS
from spark.reproduce import CellComparison, CipTable
from spark.tables import Evaluated

__all__ = ["RunResult", "ReportInputs", "write_report", "REPORT_NAME"]

REPORT_NAME = "capacity-report.md"


@dataclass(frozen=True)
class RunResult:
    """One run (recorded or synthetic) and its tables at mainnet scale."""

    measurement: Measurement
    costs: MeasuredCosts
    tables: list[Evaluated]
    process_cpu_tables: list[Evaluated]
    synthetic: bool = False


@dataclass(frozen=True)
class ReportInputs:
    reproduced: CipTable
    comparisons: list[CellComparison]
    corrections: list[CipTable]
    runs: list[RunResult] = field(default_factory=list)
    master: str = ""
    sources: list[str] = field(default_factory=list)
    stages: list[tuple[str, float]] = field(default_factory=list)
    shuffle_partitions: int | None = None


def _n(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None) -> list[str]:
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |",
            *("| " + " | ".join(row) + " |" for row in rows), ""]


def _period(p: int) -> str:
    return f"{p // 60} min"


def _cip_shaped(table: CipTable, reference: dict[int, dict[str, float]] | None = None) -> list[str]:
    header = ["period", *(f"{c.title} ({c.unit})" for c in COLUMNS)]
    rows = []
    for p in PERIODS_S:
        cells = []
        for c in COLUMNS:
            value = _n(table.rows[p][c.key], 2 if c.key == "cpu" else 1)
            if reference is not None:
                ref = reference[p][c.key]
                value += f" ({(table.rows[p][c.key] / ref - 1) * 100:+.1f}%)" if ref else ""
            cells.append(value)
        rows.append([_period(p), *cells])
    return _table(header, rows)


def _reproduction(inputs: ReportInputs) -> list[str]:
    out = ["## 1. The CIP's tables, reproduced from its assumptions", ""]
    out += _table(["input", "value"], [
        ["pools (tables)", f"{CIP_POOLS:,} (50% eligible: {CIP_POOLS // 2:,} signers per round)"],
        ["send periods", ", ".join(_period(p) for p in PERIODS_S)],
        ["message TTL", f"{TTL_S // 60} min"],
        ["message size", f"{CIP_MESSAGE_BYTES_LOW:,} / {CIP_MESSAGE_BYTES_HIGH:,} B (old layout)"],
        ["KES verification", f"{VERIFY_S * 1e3:g} ms per message"],
        ["redundancy", f"factor {REDUNDANCY:g}"],
        ["price", f"{PRICE_PER_GB:g} $/GB outbound; month = {MONTH_SECONDS // 86400} days"],
    ], "ll")
    out += ["Each cell: **published** / reproduced (Spark, from the formulas of docs/capacity/model.md section 2).", ""]
    by_cell = {(c.period_s, c.column.key): c for c in inputs.comparisons}
    header = ["period", *(f"{c.title} ({c.unit})" for c in COLUMNS)]
    rows = []
    for p in PERIODS_S:
        cells = []
        for col in COLUMNS:
            cmp = by_cell[(p, col.key)]
            mark = {Match.WITHIN: "", Match.ROUNDED_UP: " ↑", Match.MISMATCH: " ✗"}[cmp.match]
            cells.append(f"**{_n(cmp.published)}** / {_n(cmp.reproduced, 2)}{mark}")
        rows.append([_period(p), *cells])
    out += _table(header, rows)
    within = [c for c in inputs.comparisons if c.match is Match.WITHIN]
    up = [c for c in inputs.comparisons if c.match is Match.ROUNDED_UP]
    bad = [c for c in inputs.comparisons if c.match is Match.MISMATCH]
    verdict = "Every cell is reproduced" if not bad else f"**{len(bad)} cells are NOT reproduced**"
    out.append(f"{verdict}: {len(within)} of {len(inputs.comparisons)} within 3 % of the exact formula; "
               f"{len(up)} (marked ↑) only once the exact value is rounded **up** to the CIP's precision, "
               "which the CIP does for several small cells:")
    out.append("")
    for c in up:
        out.append(f"- {_period(c.period_s)}, {c.column.title}: exact {_n(c.reproduced, 3)} {c.column.unit}, "
                   f"published {_n(c.published)} ({c.difference * 100:.1f} % above the exact value)")
    for c in bad:
        out.append(f"- ✗ {_period(c.period_s)}, {c.column.title}: reproduced {_n(c.reproduced, 3)}, "
                   f"published {_n(c.published)}")
    out.append("")
    return out


def _corrections(inputs: ReportInputs) -> list[str]:
    out = ["## 2. What the CIP gets wrong or leaves out", ""]
    pools, layout = inputs.corrections
    out += [f"**1. Pool count.** The CIP's text says {CIP_POOLS_TEXT:,} pools and {CIP_POOLS_TEXT // 2:,} "
            f"signers; its tables use {CIP_POOLS:,} and {CIP_POOLS // 2:,}, {(1 - CIP_POOLS / CIP_POOLS_TEXT) * 100:.1f} % "
            f"fewer. With the text's numbers every cell grows by {(CIP_POOLS_TEXT / CIP_POOLS - 1) * 100:.1f} % "
            f"(difference to the reproduced {CIP_POOLS:,}-pool table in brackets):", ""]
    out += _cip_shaped(pools, inputs.reproduced.rows)
    low, high = message_size(CIP_BODY_BYTES_LOW), message_size(CIP_BODY_BYTES_HIGH)
    out += [f"**2. Message size.** The CIP counts the old layout (id, body, block number, a 304-byte opcert): "
            f"{CIP_MESSAGE_BYTES_LOW:,} / {CIP_MESSAGE_BYTES_HIGH:,} B. The current message "
            "`[id, [body, kesPeriod, expiresAt], kesSig, [hotVk, n, start, coldSig], coldVk]` is "
            f"{low:,} / {high:,} B for the same {CIP_BODY_BYTES_LOW} / {CIP_BODY_BYTES_HIGH:,} B bodies "
            f"({message_size(90):,} B for a 90 B body):", ""]
    out += _cip_shaped(layout, inputs.reproduced.rows)
    recorded = [r for r in inputs.runs if not r.synthetic]
    if not recorded:
        out += ["**3-5. Verification cost, redundancy, memory.** These need a recording "
                "(`dmq-node --record-traffic DIR`); none was given to this report.", ""]
        return out
    rows = []
    for r in recorded:
        m = r.measurement
        rows.append([m.run, _n(m.verify_ns_mean / 1e3 if m.verify_ns_mean else None),
                     _n(m.verify_ns_p50 / 1e3 if m.verify_ns_p50 else None),
                     _n(m.verify_ns_p99 / 1e3 if m.verify_ns_p99 else None),
                     f"{VERIFY_S * 1e9 / m.verify_ns_mean:,.0f}×" if m.verify_ns_mean else "n/a",
                     _n(m.cpu_per_message_s * 1e6 if m.cpu_per_message_s else None)])
    out += ["**3. Verification cost.** The CIP assumes 2 ms per message. Measured, per accepted message "
            "(full validation: decode, checks, Ed25519 and Blake2b through libsodium):", ""]
    out += _table(["run", "mean µs", "p50 µs", "p99 µs", "below 2 ms by", "process CPU µs per message"], rows)
    rows = []
    for r in recorded:
        m = r.measurement
        rows.append([m.run, _n(m.redundancy, 2) if m.redundancy is not None else "not measured (no node-to-node link)",
                     _n(m.bytes_per_message_per_peer), str(max((n.n2n_connections for n in m.nodes), default=0))])
    out += ["**4. Redundancy.** The CIP assumes every message is transmitted twice. Measured: outbound "
            "node-to-node bytes (mini-protocol payloads, id announcements and 8-byte SDU headers) per byte of "
            "messages the node accepted:", ""]
    out += _table(["run", "redundancy factor", "sig-submission bytes per message per peer", "peers (max)"], rows)
    rows = []
    for r in recorded:
        m = r.measurement
        rows.append([m.run, _n(m.rss_per_message), m.memory_basis, _n(m.rss_fit_r2, 3), f"{m.rss_fit_span:,}",
                     _n(m.wire_bytes_per_message_held), "yes" if m.memory_fit_trusted else "no (too few messages or noisy)"])
    out += ["**5. Memory.** The CIP counts message bytes only. Measured: the slope of the process's memory "
            "against the messages it holds; its anonymous resident memory (the heap) where the recording has it, "
            "since the resident pages of the durable mempool's LMDB map are page cache the kernel can drop, "
            "else all of its resident memory:", ""]
    out += _table(["run", "bytes per message", "memory fitted", "fit r²", "messages spanned",
                   "wire bytes per message", "trusted"], rows)
    return out


def _run_section(r: RunResult, plots: dict[str, str]) -> list[str]:
    m = r.measurement
    kind = "synthetic" if r.synthetic else "recorded"
    out = [f"### Run `{m.run}` ({kind})", ""]
    out += _table(["figure", "value"], [
        ["nodes", str(len(m.nodes))],
        ["duration", f"{m.duration_s / 60:,.1f} min"],
        ["messages accepted (all nodes)", f"{m.accepted:,} ({m.unique_messages:,} distinct)"],
        ["bytes accepted", f"{m.accepted_bytes:,}"],
        ["rejected", ", ".join(f"{k}: {v:,}" for k, v in m.rejected_by_reason.items()) or "0"],
        ["expired / notified / offered / sent", f"{m.expired:,} / {m.notified:,} / {m.offered:,} / {m.sent:,}"],
        ["message size mean (min-max)", f"{_n(m.message_bytes_mean)} B ({m.message_bytes_min}-{m.message_bytes_max})"],
        ["TTL measured", f"{m.ttl_s:,.0f} s" if m.ttl_s else "no message expired during the run"],
    ], "ll")
    out += _table(
        ["node", "accepted", "of which local", "rejected", "peak held", "steady held", "final held",
         "n2n out B", "n2n in B", "n2c out B", "n2c in B", "conns n2n / n2c"],
        [[n.node, f"{n.accepted:,}", f"{n.accepted_local:,}", f"{n.rejected:,}", f"{n.peak_held:,}",
          _n(n.steady_held), f"{n.final_held:,}", f"{n.n2n_bytes_out:,}", f"{n.n2n_bytes_in:,}",
          f"{n.n2c_bytes_out:,}", f"{n.n2c_bytes_in:,}", f"{n.n2n_connections} / {n.n2c_connections}"]
         for n in m.nodes])
    if m.protocols:
        out += _table(["link", "mini-protocol", "our mode", "connections", "bytes in", "bytes out", "SDUs in", "SDUs out"],
                      [[p.link, str(p.protocol), p.mode, f"{p.connections:,}", f"{p.bytes_in:,}", f"{p.bytes_out:,}",
                        f"{p.sdus_in:,}", f"{p.sdus_out:,}"] for p in m.protocols])
    c = r.costs
    out += ["Per-message costs put into the model:", ""]
    out += _table(["cost", "used", "CIP"], [
        ["message bytes", _n(c.message_bytes), f"{CIP_MESSAGE_BYTES_LOW:,} / {CIP_MESSAGE_BYTES_HIGH:,}"],
        ["memory per message held (B)", _n(c.memory_per_message), "= message bytes"],
        ["CPU per message (µs), validation", _n(c.verify_s * 1e6), _n(VERIFY_S * 1e6)],
        ["CPU per message (µs), whole process", _n(c.process_cpu_s * 1e6 if c.process_cpu_s else None), "-"],
        ["redundancy", _n(c.redundancy, 2), _n(REDUNDANCY)],
    ], "lrr")
    for name, why in c.assumed:
        out.append(f"- *{name}*: {why}")
    if c.assumed:
        out.append("")
    for key, title in (("held", "messages held"), ("rss", "memory"), ("verify", "validation time"),
                       ("traffic", "traffic")):
        if key in plots:
            out += [f"![{m.run} {title}]({plots[key]})", ""]
    return out


_SIDE_BY_SIDE = (
    ("messages held", "held", "held", "messages_held", 1e3, "k"),
    ("memory", "memory_low", "memory_high", "memory_mb", 1, "MB"),
    ("messages per month", "per_month", "per_month", "messages_per_month_m", 1, "M"),
    ("CPU, one core", "cpu", "cpu", "cpu_percent", 1, "%"),
    ("outbound throughput", "throughput_low", "throughput_high", "throughput_kbps", 1, "kB/s"),
    ("volume per month", "volume_low", "volume_high", "volume_gb", 1, "GB"),
    ("cost per month", "cost_low", "cost_high", "cost_usd", 1, "$"),
)


def _side_by_side(inputs: ReportInputs) -> list[str]:
    out = ["## 4. Side by side: CIP, reproduced, measured", "",
           "Measured columns: the run's per-message costs at mainnet scale (docs/capacity/model.md 5.4); "
           f"`3000` and `3100` are the pool counts of the CIP's tables and text. "
           "CPU in brackets: the whole process's CPU per message instead of validation only.", ""]
    for title, low_key, high_key, cell, scale, unit in _SIDE_BY_SIDE:
        header = ["period", "CIP", "reproduced"]
        for r in inputs.runs:
            header += [f"{r.measurement.run} 3000", f"{r.measurement.run} 3100"]
        rows = []
        for p in PERIODS_S:
            pub = PUBLISHED[p]
            rep = inputs.reproduced.rows[p]
            same = low_key == high_key
            row = [_period(p),
                   _n(pub[low_key]) if same else f"{_n(pub[low_key])} / {_n(pub[high_key])}",
                   _n(rep[low_key], 2) if same else f"{_n(rep[low_key])} / {_n(rep[high_key])}"]
            for r in inputs.runs:
                for pools in (CIP_POOLS, CIP_POOLS_TEXT):
                    value = next(getattr(e.cells, cell) for e in r.tables
                                 if e.scenario.period_s == p and e.scenario.pools == pools) / scale
                    text = _n(value, 2)
                    if cell == "cpu_percent":
                        proc = next((getattr(e.cells, cell) for e in r.process_cpu_tables
                                     if e.scenario.period_s == p and e.scenario.pools == pools), None)
                        if proc is not None:
                            text += f" ({_n(proc, 2)})"
                    row.append(text)
            rows.append(row)
        out += [f"**{title}** ({unit})", ""]
        out += _table(header, rows)
    return out


def write_report(inputs: ReportInputs, output: Path) -> Path:
    """Write ``capacity-report.md`` and its PNGs into ``output``; returns the report's path."""
    from spark import plots as P

    output.mkdir(parents=True, exist_ok=True)
    P.plot_capacity(output / "capacity-by-period.png", inputs.reproduced,
                    [(r.measurement.run, r.tables) for r in inputs.runs])
    lines = ["# DMQ capacity report (CIP-0137)", ""]
    if inputs.sources:
        partitions = f" ({inputs.shuffle_partitions} shuffle partitions)" if inputs.shuffle_partitions else ""
        lines += ["Inputs: " + ", ".join(f"`{s}`" for s in inputs.sources)
                  + f". Spark master: `{inputs.master}`{partitions}.", ""]
    lines += _reproduction(inputs)
    lines += _corrections(inputs)
    lines += ["## 3. Runs", ""]
    if not inputs.runs:
        lines += ["No recording or synthetic run was given.", ""]
    for r in inputs.runs:
        name = r.measurement.run.replace("/", "_")
        plots = {
            "held": P.plot_held(output / f"{name}-held.png", r.measurement).name,
            "verify": P.plot_verify(output / f"{name}-verify.png", r.measurement, VERIFY_S).name,
        }
        if r.measurement.rss_points:
            plots["rss"] = P.plot_rss(output / f"{name}-rss.png", r.measurement).name
        if r.measurement.protocols:
            plots["traffic"] = P.plot_traffic(output / f"{name}-traffic.png", r.measurement).name
        lines += _run_section(r, plots)
    lines += _side_by_side(inputs)
    lines += ["![capacity by period](capacity-by-period.png)", ""]
    if inputs.stages:
        lines += ["<sub>Stages: " + "; ".join(f"{t} {s:.1f} s" for t, s in inputs.stages) + "</sub>", ""]
    path = output / REPORT_NAME
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
