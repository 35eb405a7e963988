"""The result of a simulated-network run, as JSON and as a few lines for the terminal.

Completeness is judged as in ``dmq netlab`` (:mod:`lab.netlab.report`): every message
its home node accepted must be accepted by every node, exactly once (``duplicates`` counts a
second acceptance at one node, a defect). Latency is from publication to acceptance at each
other node, in virtual time; ``steady_latency`` leaves out messages published during a fault
(from its start to its recovery), and ``latency_by_hop`` splits deliveries by how many hops
the message had made when the node accepted it. ``bytes_per_message_per_node`` is every byte
the nodes sent (sig submission with its id announcements, keep-alive, peer sharing, the mux
headers) over the accepted messages and the nodes; divided by ``message_size`` it is the
redundancy factor at this degree.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lab.netlab.report import FaultRecord

from .attacks import AttackRecord

__all__ = ["REPORT_FILE", "SimnetReport"]

REPORT_FILE = "simnet-report.json"


@dataclass
class SimnetReport:
    settings: dict[str, Any]
    load_average: tuple[float, float, float]
    wall_seconds: float
    simulated_seconds: float
    publishing_seconds: float
    #: Wall seconds (and this process's CPU seconds) per simulated minute, from node start to the end
    #: of the drain: the machine's load stretches the first, hardly the second.
    wall_per_simulated_minute: float
    cpu_seconds: float
    cpu_per_simulated_minute: float
    attempted: int
    accepted: int
    rejected: int
    failed: int
    missing: int
    duplicates: int
    unknown_hops: int
    latency: dict[str, Any]
    steady_latency: dict[str, Any]
    latency_by_hop: dict[str, Any]
    hops: dict[str, Any]
    bytes_sent: int
    bytes_per_message_per_node: float
    mean_connections: float
    message_size: int
    faults: list[FaultRecord] = field(default_factory=list)
    attacks: list[AttackRecord] = field(default_factory=list)
    rejections: dict[str, int] = field(default_factory=dict)
    kes_checks: dict[str, int] = field(default_factory=dict)
    opcert_checks: dict[str, int] = field(default_factory=dict)
    #: Messages received from peers and decoded, and how many distinct ones all the nodes kept (``SharedDecodes``).
    received_messages: dict[str, int] = field(default_factory=dict)
    regions: dict[str, int] = field(default_factory=dict)
    #: Up to ten missing deliveries (node, message, its home node, publication time), for a diagnosis.
    missing_examples: list[dict[str, Any]] = field(default_factory=list)
    #: Where the CPU went (``Simnet.cost``): by phase, per idle node-second, per message.
    cost: dict[str, Any] = field(default_factory=dict)
    peak_rss_mib: float = 0.0
    #: The memory allocator the nodes ran on (``lab.simnet.heap``): ``python`` or ``huge-pages``.
    allocator: str = "python"

    @property
    def complete(self) -> bool:
        return self.accepted > 0 and self.missing == 0 and self.duplicates == 0

    @property
    def redundancy(self) -> float:
        return round(self.bytes_per_message_per_node / self.message_size, 2) if self.message_size else 0.0

    @property
    def bytes_per_message_per_peer(self) -> float:
        return round(self.bytes_per_message_per_node / self.mean_connections, 1) if self.mean_connections else 0.0

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document.update(complete=self.complete, redundancy=self.redundancy,
                        bytes_per_message_per_peer=self.bytes_per_message_per_peer)
        return document

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def lines(self) -> list[str]:
        s = self.settings
        out = [f"simnet: {s['nodes']} nodes, {s['pools']} pools every {s['period']:g} s, {self.publishing_seconds:.0f} "
               f"virtual s of publishing; {self.wall_seconds:.0f} s wall, {self.cpu_seconds:.0f} s CPU "
               f"({self.wall_per_simulated_minute:.1f} s wall, {self.cpu_per_simulated_minute:.1f} s CPU per simulated "
               f"minute), load average {' '.join(f'{v:.2f}' for v in self.load_average)}",
               f"published {self.attempted} (accepted {self.accepted}, rejected {self.rejected}, failed {self.failed})",
               f"latency p50 {self.latency['p50_ms']} ms, p99 {self.latency['p99_ms']} ms, max {self.latency['max_ms']} ms;"
               f" outside faults p50 {self.steady_latency['p50_ms']} ms, p99 {self.steady_latency['p99_ms']} ms;"
               f" hops mean {self.hops['mean']}, max {self.hops['max']}",
               f"bytes sent per message per node {self.bytes_per_message_per_node:.0f} ({self.redundancy}x a "
               f"{self.message_size}-byte body), per peer {self.bytes_per_message_per_peer:.0f}; mean connections "
               f"{self.mean_connections}"]
        if self.cost:
            c = self.cost
            out.append(f"cost: {c.get('publishing_cpu_per_simulated_second')} CPU s per simulated second of publishing; "
                       f"idle {c['idle_cpu_us_per_node_second']:,.0f} us CPU per node-second, "
                       f"{c['cpu_ms_per_message']:,.1f} ms CPU per message ({c['link_writes_per_message']:,.0f} link "
                       f"writes, {c['cpu_us_per_link_write']} us each); by phase {c['cpu_seconds_by_phase']}; "
                       f"peak RSS {self.peak_rss_mib:,.0f} MiB; allocator {self.allocator}; link tick "
                       f"{self.settings.get('link_tick_ms', 0)} ms")
            if "collector" in c:
                out.append(f"collector: {c['collector']['collections']} collections by generation, "
                           f"{c['collector']['cpu_seconds']} CPU s")
        for fault in self.faults:
            recovery = "not recovered" if fault.recovery_seconds is None else f"recovered in {fault.recovery_seconds:.2f} s"
            out.append(f"  {fault.kind} of {len(fault.nodes)} nodes at {fault.began_at:.1f} s, ended at "
                       f"{fault.ended_at} s: {recovery}")
        for attack in self.attacks:
            out.append(f"  {attack.kind} on {attack.target}: {attack.outcome}")
        for example in self.missing_examples:
            out.append(f"  missing: {example}")
        verdict = "COMPLETE" if self.complete else "INCOMPLETE"
        out.append(f"{verdict}: {self.missing} deliveries missing, {self.duplicates} duplicated")
        return out
