"""The result of a netlab run: what was published, what every node's aggregator got, the faults.

Completeness is judged against what the home nodes accepted: every accepted message must reach
every aggregator, and no aggregator may get a message twice on one connection (copies after a
reconnect, ``replays``, are expected and counted apart; see :mod:`integrations.devnet.aggregator`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

__all__ = ["REPORT_FILE", "FaultRecord", "NodeDelivery", "NetlabReport", "fault_windows"]

REPORT_FILE = "netlab-report.json"


@dataclass
class FaultRecord:
    """One fault: what it did to which nodes, when (seconds from the start of publishing), and
    how long after it ended every aggregator held every message accepted until then."""

    kind: str
    nodes: list[str]
    began_at: float
    ended_at: float | None = None
    recovery_seconds: float | None = None


def fault_windows(faults: list[FaultRecord], origin: float) -> list[tuple[float, float]]:
    """Each fault's span from its start to its recovery (open-ended if it never recovered), its
    times counted from ``origin`` (the clock's reading when publishing started)."""
    windows = []
    for fault in faults:
        end = float("inf")
        if fault.ended_at is not None and fault.recovery_seconds is not None:
            end = origin + fault.ended_at + fault.recovery_seconds
        windows.append((origin + fault.began_at, end))
    return windows


@dataclass(frozen=True)
class NodeDelivery:
    node: str
    address: str
    delivered: int
    missing: int
    duplicates: int
    replays: int
    connections: int
    ending: str | None
    returncode: int | None


@dataclass
class NetlabReport:
    settings: dict[str, Any]
    run_id: str
    load_average: tuple[float, float, float]
    attempted: int = 0
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    nodes: list[NodeDelivery] = field(default_factory=list)
    latency: dict[str, float | None] = field(default_factory=dict)
    #: The same over messages published outside every fault's span (start to recovery).
    steady_latency: dict[str, float | None] = field(default_factory=dict)
    faults: list[FaultRecord] = field(default_factory=list)
    publishing_seconds: float = 0.0
    interrupted: str | None = None
    #: Namespaces of this run still present after the teardown (must be empty).
    leftovers: list[str] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return sum(node.missing for node in self.nodes)

    @property
    def duplicates(self) -> int:
        return sum(node.duplicates for node in self.nodes)

    @property
    def complete(self) -> bool:
        return self.accepted > 0 and self.missing == 0 and self.duplicates == 0 and bool(self.nodes)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document.update(missing=self.missing, duplicates=self.duplicates, complete=self.complete)
        return document

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def render(self, console: Console) -> None:
        say = lambda text: console.print(text, highlight=False)  # noqa: E731
        load = " ".join(f"{value:.2f}" for value in self.load_average)
        say(f"netlab {self.run_id}: {len(self.nodes)} nodes in namespaces, load average {load}")
        say(f"published {self.attempted} (accepted {self.accepted}, rejected {sum(self.rejected.values())}, "
            f"failed {sum(self.failed.values())}) in {self.publishing_seconds:.1f} s")
        for node in self.nodes:
            say(f"  {node.node:>9} {node.address:<15} delivered {node.delivered:>6}  missing {node.missing:>4}  "
                f"duplicates {node.duplicates}  replays {node.replays}  connections {node.connections}")
        p50, p99 = self.latency.get("p50_ms"), self.latency.get("p99_ms")
        say(f"latency publish->aggregator: p50 {p50} ms, p99 {p99} ms; outside the faults: p50 "
            f"{self.steady_latency.get('p50_ms')} ms, p99 {self.steady_latency.get('p99_ms')} ms")
        for fault in self.faults:
            recovery = "not recovered" if fault.recovery_seconds is None else f"recovered in {fault.recovery_seconds:.2f} s"
            ended = "did not end" if fault.ended_at is None else f"ended at {fault.ended_at:.1f} s"
            say(f"  {fault.kind} of {', '.join(fault.nodes)} at {fault.began_at:.1f} s, {ended}: {recovery}")
        verdict = "COMPLETE" if self.complete else "INCOMPLETE"
        say(f"{verdict}: {self.missing} deliveries missing, {self.duplicates} duplicated"
            + (f"; interrupted by {self.interrupted}" if self.interrupted else "")
            + (f"; namespaces left: {', '.join(self.leftovers)}" if self.leftovers else "; every namespace removed"))


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()
