"""Prometheus series of the Blocklace adapter, read live from the lace.

The proofs an operator must see (docs/topics-design.md 5.5) are exposed as a gauge per proof kind,
``dmq_node_blocklace_equivocation_proofs{kind=...}``, beside the blocks held and the
highest final epoch. The gauges read the adapter when scraped, so they always agree with
what ``dmq topic equivocations`` reports and need no trace event to stay in step.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, Gauge

from .lace import Lace
from .signing import OwnSigning

__all__ = ["PROOF_KINDS", "HoldsLace", "BlocklaceMetrics"]

#: Proof kinds by number (docs/topics-design.md 5.2 ``proofKind``).
PROOF_KINDS = {0: "same_seq", 1: "double_vote", 2: "owner_equivocation", 3: "epoch_conflict"}


class HoldsLace(Protocol):
    """What the gauges read: the adapter's lace (a Protocol, so the adapter may import this module)."""

    lace: Lace
    signing: OwnSigning


class BlocklaceMetrics:
    """Gauges bound to one adapter, registered in the node's registry."""

    def __init__(self, adapter: HoldsLace, registry: CollectorRegistry, prefix: str = "dmq_node_") -> None:
        self.adapter = adapter
        self.proofs = Gauge(f"{prefix}blocklace_equivocation_proofs", "Equivocation proofs held, by kind",
                            ["kind"], registry=registry)
        for number, label in PROOF_KINDS.items():
            self.proofs.labels(label).set_function(lambda n=number: self._count(n))
        self.blocks = Gauge(f"{prefix}blocklace_blocks", "Blocklace blocks held", registry=registry)
        self.blocks.set_function(lambda: len(adapter.lace.blocks))
        self.final_epoch = Gauge(f"{prefix}blocklace_final_epoch", "Highest final epoch over the topics held",
                                 registry=registry)
        self.final_epoch.set_function(lambda: max((t.final for t in adapter.lace.topics.values()), default=0))
        # Misconfiguration (:mod:`.signing`): where the node stopped signing for its pool, and
        # the blocks of the pool it saw but did not sign.
        self.stopped = Gauge(f"{prefix}blocklace_signing_stopped_topics",
                             "Topics where the node stopped signing: a block of its pool it did not sign was seen",
                             registry=registry)
        self.stopped.set_function(lambda: len(adapter.signing.halted))
        self.foreign = Gauge(f"{prefix}blocklace_foreign_own_blocks",
                             "Blocks of this node's pool it did not sign, seen since start", registry=registry)
        self.foreign.set_function(lambda: adapter.signing.foreign)

    def _count(self, kind: int) -> int:
        return sum(1 for p in self.adapter.lace.proofs.values() if p.kind == kind)
