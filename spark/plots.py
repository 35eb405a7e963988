"""PNG plots of the capacity report (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from spark.cip import PERIODS_S, PUBLISHED  # noqa: E402
from spark.measure import Measurement  # noqa: E402
from spark.reproduce import CipTable  # noqa: E402
from spark.tables import Evaluated  # noqa: E402

__all__ = ["plot_capacity", "plot_held", "plot_rss", "plot_verify", "plot_traffic"]

_PANELS = (
    ("memory (MB)", "memory_low", "memory_high", "memory_mb"),
    ("CPU (% of one core)", "cpu", "cpu", "cpu_percent"),
    ("outbound (kB/s)", "throughput_low", "throughput_high", "throughput_kbps"),
    ("$ per month", "cost_low", "cost_high", "cost_usd"),
)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_capacity(path: Path, reproduced: CipTable, measured: Sequence[tuple[str, list[Evaluated]]]) -> Path:
    """Per period: the CIP's published range, the reproduction, and each run at 3,000 pools."""
    minutes = [p / 60 for p in PERIODS_S]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, (title, low_key, high_key, cell) in zip(axes.flat, _PANELS):
        low = [PUBLISHED[p][low_key] for p in PERIODS_S]
        high = [PUBLISHED[p][high_key] for p in PERIODS_S]
        ax.fill_between(minutes, low, high, alpha=0.2, label="CIP (published range)")
        ax.plot(minutes, [reproduced.rows[p][low_key] for p in PERIODS_S], "o--", label="reproduced, low")
        if high_key != low_key:
            ax.plot(minutes, [reproduced.rows[p][high_key] for p in PERIODS_S], "s--", label="reproduced, high")
        for label, rows in measured:
            at_cip = {e.scenario.period_s: getattr(e.cells, cell) for e in rows if e.scenario.pools == 3000}
            ax.plot(minutes, [at_cip[p] for p in PERIODS_S], "^-", label=f"{label} (measured, 3,000 pools)")
        ax.set_xscale("log")
        if cell == "cpu_percent" and measured:
            ax.set_yscale("log")  # measured validation is orders of magnitude under the CIP's 2 ms
        ax.set_xticks(minutes, [f"{m:g}" for m in minutes])
        ax.set_xlabel("send period (minutes)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    return _save(fig, path)


def plot_held(path: Path, m: Measurement) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4))
    for node, series in sorted(m.held_series.items()):
        if series:
            t0 = series[0][0]
            ax.plot([(t - t0) / 60 for t, _, _ in series], [h for _, h, _ in series], label=node)
    ax.set_xlabel("minutes since the node's first sample")
    ax.set_ylabel("messages held")
    ax.set_title(f"{m.run}: messages held per node")
    ax.grid(alpha=0.3)
    if len(m.held_series) <= 12:
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_rss(path: Path, m: Measurement) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    if m.rss_points:
        xs = [h for h, _ in m.rss_points]
        ys = [r / 1e6 for _, r in m.rss_points]
        ax.scatter(xs, ys, s=4, alpha=0.5, label="samples")
        if m.rss_per_message is not None:
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            lo, hi = min(xs), max(xs)
            slope = m.rss_per_message / 1e6
            ax.plot([lo, hi], [my + slope * (lo - mx), my + slope * (hi - mx)], "r-",
                    label=f"fit: {m.rss_per_message:,.0f} B per message")
        ax.legend(fontsize=7)
    ax.set_xlabel("messages held (all nodes of the process)")
    ax.set_ylabel(f"{m.memory_basis} resident memory (MB)")
    ax.set_title(f"{m.run}: memory against messages held")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_verify(path: Path, m: Measurement, cip_seconds: float) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    if m.verify_histogram:
        lows = [lo / 1e3 for lo, _, _ in m.verify_histogram]
        widths = [(hi - lo) / 1e3 for lo, hi, _ in m.verify_histogram]
        ax.bar(lows, [c for _, _, c in m.verify_histogram], width=widths, align="edge")
    ax.axvline(cip_seconds * 1e6, color="r", linestyle="--", label=f"CIP assumption ({cip_seconds * 1e3:g} ms)")
    ax.set_xscale("log")
    ax.set_xlabel("validation time per message (µs)")
    ax.set_ylabel("messages")
    ax.set_title(f"{m.run}: measured validation time")
    ax.legend(fontsize=7)
    return _save(fig, path)


def plot_traffic(path: Path, m: Measurement) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{p.link} {p.protocol} {p.mode[:4]}" for p in m.protocols]
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], [p.bytes_out / 1e3 for p in m.protocols], width=0.4, label="out")
    ax.bar([x + 0.2 for x in xs], [p.bytes_in / 1e3 for p in m.protocols], width=0.4, label="in")
    ax.set_xticks(list(xs), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("kB (SDU headers included)")
    ax.set_title(f"{m.run}: bytes per link and mini-protocol")
    ax.legend(fontsize=7)
    return _save(fig, path)
