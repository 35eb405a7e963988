"""The result of a devnet run: what was published, what each aggregator got, how late.

Printed as tables at the end of a run and written as ``devnet-summary.json`` beside the
run's files, so scripts and tests read the same figures a person sees. "Loss" is a
message some node accepted from a publisher that an aggregator never received; a run is
*complete* when nothing was lost, nothing arrived twice on one connection, every
submission was accepted and the run was not interrupted.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["AggregatorSummary", "NodeSummary", "DevnetSummary", "SUMMARY_FILE"]

SUMMARY_FILE = "devnet-summary.json"
#: How ``dmq-node`` exits when interrupted (130, as shells report SIGINT) or when it returns.
CLEAN_EXIT_STATUSES = (0, 130)


@dataclass(frozen=True, slots=True)
class AggregatorSummary:
    node: str
    received: int           # distinct published messages received
    missing: int            # published messages never received
    duplicates: int         # deliveries of a message already received on the same connection
    replays: int            # deliveries repeated by a new connection (the node's mempool again)
    unexpected: int         # distinct messages received that no publisher saw accepted
    foreign: int            # bodies that are not devnet probes
    connections: int        # connections opened (each one after the first replays the mempool)
    errors: dict[str, int]
    latency: dict[str, float | None]


@dataclass(frozen=True, slots=True)
class NodeSummary:
    name: str
    port: int
    metrics_port: int
    dials: list[str]
    pools: int
    held: int | None        # messages in the mempool at the end (None: metrics unavailable)
    ending: str | None      # "signal", "killed" or "exited"
    returncode: int | None


@dataclass(frozen=True)
class DevnetSummary:
    directory: str
    settings: dict[str, Any]
    started_at: str
    publishing_seconds: float
    attempted: int
    accepted: int
    rejected: dict[str, int]
    failed: dict[str, int]
    mean_message_size: float | None
    aggregators: tuple[AggregatorSummary, ...]
    nodes: tuple[NodeSummary, ...]
    latency: dict[str, float | None]
    recording: str | None
    interrupted: str | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def loss(self) -> int:
        return sum(a.missing for a in self.aggregators)

    @property
    def complete(self) -> bool:
        return (self.interrupted is None and self.accepted > 0 and self.accepted == self.attempted
                and self.loss == 0 and all(a.duplicates == 0 for a in self.aggregators))

    @property
    def stopped_cleanly(self) -> bool:
        """Every node ended on the devnet's SIGINT, with the status of an interrupt or of success."""
        return all(n.ending == "signal" and n.returncode in CLEAN_EXIT_STATUSES for n in self.nodes)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["aggregators"] = [asdict(a) for a in self.aggregators]
        document["nodes"] = [asdict(n) for n in self.nodes]
        document["warnings"] = list(self.warnings)
        document["loss"] = self.loss
        document["complete"] = self.complete
        document["stopped_cleanly"] = self.stopped_cleanly
        return document

    def write(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return target

    def render(self, console: Console) -> None:
        """The end-of-run report: totals, then one row per aggregator."""
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:.0f} ms"

        def number(value: float | None) -> str:
            return "-" if value is None else f"{value:.0f}"

        head = (f"devnet: {self.settings['nodes']} nodes ({self.settings['topology']}), "
                f"{self.settings['pools']} pools, one message per pool every {self.settings['period']:g} s "
                f"for {self.publishing_seconds:.0f} s")
        console.print(head, highlight=False)
        if self.interrupted:
            console.print(f"interrupted by {self.interrupted}", highlight=False)
        reasons = {**self.rejected, **{f"failed: {k}": v for k, v in self.failed.items()}}
        extra = "".join(f", {count} {reason}" for reason, count in sorted(reasons.items()))
        size = "" if self.mean_message_size is None else f" of {self.mean_message_size:.0f} bytes on average"
        console.print(f"published {self.attempted} messages{size}: {self.accepted} accepted{extra}", highlight=False)
        table = Table(title="aggregators (latency in ms)", title_justify="left")
        for header in ("node", "received", "missing", "dup", "conn", "p50", "p90", "p99", "max", "held"):
            table.add_column(header, justify="left" if header == "node" else "right", no_wrap=True)
        held = {n.name: n.held for n in self.nodes}
        for a in self.aggregators:
            table.add_row(a.node, str(a.received), str(a.missing), str(a.duplicates), str(a.connections),
                          number(a.latency["p50_ms"]), number(a.latency["p90_ms"]), number(a.latency["p99_ms"]),
                          number(a.latency["max_ms"]), "?" if held.get(a.node) is None else str(held[a.node]))
        console.print(table)
        lat = self.latency
        console.print(f"end-to-end latency over all deliveries: p50 {ms(lat['p50_ms'])}, p90 {ms(lat['p90_ms'])}, "
                      f"p99 {ms(lat['p99_ms'])}, max {ms(lat['max_ms'])}", highlight=False)
        total = self.accepted * len(self.aggregators)
        share = 0.0 if total == 0 else 100.0 * self.loss / total
        console.print(f"loss: {self.loss} of {total} deliveries ({share:.2f} %)", highlight=False)
        for warning in self.warnings:
            console.print(f"warning: {warning}", highlight=False)
        unclean = [n for n in self.nodes if n.ending != "signal" or n.returncode not in CLEAN_EXIT_STATUSES]
        if unclean:
            console.print("nodes that did not stop cleanly on SIGINT: "
                          + ", ".join(f"{n.name} ({n.ending}, status {n.returncode})" for n in unclean),
                          highlight=False)
        else:
            console.print(f"all {len(self.nodes)} nodes stopped cleanly on SIGINT", highlight=False)
