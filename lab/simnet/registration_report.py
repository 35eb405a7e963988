"""The result of a simulated registration run (:mod:`.registration`), as JSON and as a few lines.

A round **agreed** when every node fixed its set, all with one digest, with the expected
number of signers (every honest signer) and of excluded pools (every equivocator). The time to
agreement is from the round's close, the virtual time its Cardano epoch began, to the node's
``MithrilRegistrationAgreed``; also from the first ``close`` any elector published. Bytes are
what each node sent during one Cardano epoch (every byte on its links: registrations, the
topic's Epoch blocks, the closes and notices, keep-alive, peer sharing, mux headers); over all
nodes the mean sent is also the mean received.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RegistrationReport"]


@dataclass
class RegistrationReport:
    settings: dict[str, Any]
    load_average: tuple[float, float, float]
    #: False in a report written while the run goes on (its rounds so far).
    finished: bool
    wall_seconds: float
    cpu_seconds: float
    simulated_seconds: float
    nodes: int
    electors: int
    electors_that_fit: int
    signers: int
    equivocators: int
    topic: str
    sent: dict[str, int]
    #: The first (empty) round, then one per registration epoch.
    rounds: list[dict[str, Any]]
    #: One per Cardano epoch in which registrations were sent.
    traffic: list[dict[str, Any]]
    disagreements: int
    problems: dict[str, int] = field(default_factory=dict)
    rejections: dict[str, int] = field(default_factory=dict)
    registration_checks: dict[str, int] = field(default_factory=dict)
    kes_checks: dict[str, int] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    peak_rss_mib: float = 0.0

    @staticmethod
    def round_agreed(entry: dict[str, Any]) -> bool:
        return (entry["nodes_agreed"] == entry["nodes"] and len(entry["digests"]) == 1
                and entry["signers"] == {entry["expected_signers"]: entry["nodes"]}
                and entry["excluded"] == {entry["expected_excluded"]: entry["nodes"]})

    @property
    def agreed(self) -> bool:
        """Every round agreed at every node, and no node saw another digest announced."""
        return (self.finished and bool(self.rounds) and all(map(self.round_agreed, self.rounds))
                and self.disagreements == 0)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["agreed"] = self.agreed
        for entry in document["rounds"]:
            entry["agreed"] = self.round_agreed(entry)
        return document

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def lines(self) -> list[str]:
        s = self.settings
        out = [f"registration simnet: {self.nodes} nodes ({self.electors} electors), {self.signers:,} signers and "
               f"{self.equivocators} equivocating, {s['epochs']} epochs of {s['epoch_length']} s, Blocklace epochs of "
               f"{s['interval']} s, {s['quorum']} quorum; {self.wall_seconds:.0f} s wall, {self.cpu_seconds:.0f} s "
               f"CPU, {self.simulated_seconds:.0f} virtual s, peak RSS {self.peak_rss_mib:,.0f} MiB, load average "
               f"{' '.join(f'{v:.2f}' for v in self.load_average)}",
               f"sent {self.sent}"]
        for entry in self.rounds:
            after = entry["agreement_after_close"]
            out.append(f"  round {entry['epoch']}: {'agreed' if self.round_agreed(entry) else 'NOT agreed'} at "
                       f"{entry['nodes_agreed']}/{entry['nodes']} nodes, digests {len(entry['digests'])}, signers "
                       f"{entry['signers']}, excluded {entry['excluded']}; first close +{entry['first_close_after']} s;"
                       f" agreement after the close p50 {after['p50_ms']} ms, p99 {after['p99_ms']} ms, max "
                       f"{after['max_ms']} ms")
        for entry in self.traffic:
            b = entry["bytes_sent_per_node"]
            out.append(f"  epoch {entry['cardano_epoch']}: bytes sent per node mean {b['mean']:,}, min {b['min']:,}, "
                       f"max {b['max']:,}; {entry['cpu_seconds']} s CPU")
        out.append(f"registration checks {self.registration_checks}, KES checks {self.kes_checks}, "
                   f"disagreements {self.disagreements}, problems {self.problems}")
        out.append("AGREED" if self.agreed else "NOT AGREED" if self.finished else "so far (the run goes on)")
        return out
