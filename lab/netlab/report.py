"""The result of a netlab run: what was published, what every node's aggregator got, the faults.

Completeness is judged against what the home nodes accepted: every accepted message must reach
every aggregator, and no aggregator may get a message twice on one connection (copies after a
reconnect, ``replays``, are expected and counted apart; see :mod:`lab.devnet.aggregator`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

__all__ = ["REPORT_FILE", "FaultRecord", "AttackRecord", "NodeDelivery", "NetlabReport", "fault_windows"]

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
    #: When the plan had it begin: ``began_at`` later than this is the run's own process late.
    planned_at: float | None = None


@dataclass
class AttackRecord:
    """One attack: whom it aimed at, from which attacker processes and addresses, when (seconds
    from the start of publishing), and its outcome (:mod:`.attacks`); ``outcome["held"]`` says
    whether the nodes withstood it."""

    kind: str
    nodes: list[str]
    attackers: list[str]
    addresses: list[str]
    began_at: float
    ended_at: float | None = None
    outcome: dict[str, Any] = field(default_factory=dict)

    @property
    def held(self) -> bool:
        return bool(self.outcome.get("held"))


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
    #: Messages its aggregator got that no pool's publisher saw accepted: submissions the node
    #: accepted whose publisher saw them fail (the connection lost before the verdict came), or, in
    #: an interrupted run, submissions the node accepted as the publisher was stopped.
    unexpected: int = 0
    #: Messages its aggregator got whose body is not a pool's probe (must be 0: nothing but the
    #: pools' messages exists in a netlab, so anything else was relayed from an attacker).
    foreign: int = 0
    #: The most inbound node-to-node connections its metrics showed (None: never read).
    inbound_peak: int | None = None
    #: Messages the node itself accepted (from clients and from peers) since it last started, by its
    #: metrics read after the drain: the node's own count, where a message accepted twice would
    #: show as more than the distinct messages its aggregator got (None: never read).
    node_accepted: int | None = None


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
    attacks: list[AttackRecord] = field(default_factory=list)
    #: CPU% and RSS of every node process (:class:`~lab.netlab.resources.ResourceSampler`).
    resources: dict[str, Any] = field(default_factory=dict)
    publishing_seconds: float = 0.0
    #: Whether the run's own process kept time: its CPU from the start of publishing to the end
    #: of the drain, and how late the submissions started after their due times.
    harness: dict[str, Any] = field(default_factory=dict)
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

    @property
    def defended(self) -> bool:
        """Every attack of the run was withstood (true when there was none)."""
        return all(attack.held for attack in self.attacks)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document.update(missing=self.missing, duplicates=self.duplicates, complete=self.complete,
                        defended=self.defended)
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
        if self.harness:
            late = self.harness["publish_lateness"]
            say(f"the run's own process: {self.harness['cpu_seconds']} s of CPU ({self.harness['cpu_percent']} % of "
                f"one core; {self.harness['run_queue_wait_seconds']} s waiting for a CPU) at niceness "
                f"{self.harness['niceness']} (autogroup {self.harness['autogroup_niceness']}), the nodes at "
                f"{self.harness['nodes_niceness']}; "
                f"submissions late by p50 {late['p50_ms']} ms, p99 {late['p99_ms']} ms, max {late['max_ms']} ms")
        for fault in self.faults:
            recovery = "not recovered" if fault.recovery_seconds is None else f"recovered in {fault.recovery_seconds:.2f} s"
            ended = "did not end" if fault.ended_at is None else f"ended at {fault.ended_at:.1f} s"
            say(f"  {fault.kind} of {', '.join(fault.nodes)} at {fault.began_at:.1f} s, {ended}: {recovery}")
        for attack in self.attacks:
            ended = "did not end" if attack.ended_at is None else f"to {attack.ended_at:.1f} s"
            say(f"  {attack.kind} of {', '.join(attack.nodes)} by {len(attack.attackers)} attacker processes "
                f"({', '.join(attack.addresses)}) from {attack.began_at:.1f} s {ended}: "
                f"{'held' if attack.held else 'NOT HELD'}")
            self._render_outcome(say, attack)
        self._render_resources(say)
        verdict = "COMPLETE" if self.complete else "INCOMPLETE"
        say(f"{verdict}: {self.missing} deliveries missing, {self.duplicates} duplicated"
            + (f"; interrupted by {self.interrupted}" if self.interrupted else "")
            + (f"; namespaces left: {', '.join(self.leftovers)}" if self.leftovers else "; every namespace removed"))


    @staticmethod
    def _render_outcome(say, attack: AttackRecord) -> None:
        outcome = attack.outcome
        at, elsewhere = outcome.get("latency_at_attacked", {}), outcome.get("latency_elsewhere", {})
        say(f"    latency of messages published meanwhile: at the attacked p50 {at.get('p50_ms')} ms, "
            f"p99 {at.get('p99_ms')} ms; elsewhere p50 {elsewhere.get('p50_ms')} ms, p99 {elsewhere.get('p99_ms')} ms")
        if attack.kind == "flood":
            for kind, c in outcome.get("classes", {}).items():
                say(f"    {kind:<12} ({c['error']}, {c['reaction']}): offered {c['offered']}, fetched {c['served']}, "
                    f"connections {c['opened']}, closed by the node {c['closed_by_node']}"
                    + ("" if c["as_documented"] else "  NOT AS DOCUMENTED"))
            say(f"    flood messages delivered to aggregators {outcome.get('delivered_to_aggregators')}, "
                f"deliveries of anything but the pools' messages {outcome.get('foreign_deliveries')}, flood rejections at non-targets "
                f"{outcome.get('flood_rejections_elsewhere') or 'none'}")
        else:
            say(f"    victim inbound connections peak {outcome.get('victim_peak_inbound')} of hard limit "
                f"{outcome.get('victim_hard_limit')} (refused {outcome.get('victim_refusals_at_hard_limit')} "
                f"connections at it); cluster held {outcome.get('cluster_peak_holding')} at most, "
                f"{outcome.get('cluster_refused')} dials refused; victim missing {outcome.get('victim_missing')}")

    def _render_resources(self, say) -> None:
        processes = self.resources.get("processes", [])
        if not processes:
            return
        cpu = [p["cpu_percent"]["median"] for p in processes if p["cpu_percent"]["median"] is not None]
        rss = [p["rss_mib"]["max"] for p in processes if p["rss_mib"]["max"] is not None]
        total = self.resources["total"]
        say(f"resources of {len(processes)} nodes: median CPU% per node {min(cpu, default=0):.1f}.."
            f"{max(cpu, default=0):.1f}, peak RSS per node {min(rss, default=0):.0f}..{max(rss, default=0):.0f} MiB; "
            f"total CPU {total['cpu_seconds']} s (mean {total['cpu_percent_mean']} % of one core), "
            f"peak total RSS {total['rss_mib_peak']} MiB")


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()
