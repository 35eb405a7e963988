"""The CIP-0137 capacity model: from a scenario's inputs to the cells of its tables.

The formulas are written once, with plain arithmetic, so the same function computes a cell
from Python numbers (unit tests, the report) and from Spark columns (the jobs that evaluate
every scenario as a DataFrame): ``pyspark.sql.Column`` overloads ``+ - * /`` exactly as
numbers do. docs/capacity/model.md section 2 states them:

    messages held        = S x T / P
    memory               = held x (memory per message)
    messages per month   = S x month / P
    CPU share            = messages per month x (CPU per message) / month
    outbound throughput  = redundancy x S x (message bytes) / P
    volume per month     = throughput x month
    cost per month       = volume x price per GB

with S the eligible signers per round (pools x share), P the send period and T the TTL.
Units follow the CIP: MB = 10^6 B, kB = 10^3 B, GB = 10^9 B.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = [
    "MONTH_SECONDS",
    "Scenario",
    "Cells",
    "CELL_NAMES",
    "cells",
    "cells_of",
]

#: The CIP's month: 30 days.
MONTH_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything one row of a capacity table depends on."""

    label: str
    pools: float
    signer_share: float
    period_s: float
    ttl_s: float
    #: Wire bytes of one message (what crosses the network).
    message_bytes: float
    #: Memory the node spends per message held (the CIP: the message bytes).
    memory_per_message: float
    #: CPU seconds per message (the CIP: 2 ms of KES verification).
    cpu_per_message_s: float
    #: Outbound bytes per byte of message accepted (the CIP: 2).
    redundancy: float
    price_per_gb: float
    month_s: float = MONTH_SECONDS

    @property
    def signers(self) -> float:
        return self.pools * self.signer_share

    def with_(self, **changes: Any) -> "Scenario":
        return replace(self, **changes)

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Cells:
    """One row of the capacity tables, in the CIP's units."""

    messages_held: Any
    memory_mb: Any
    messages_per_month_m: Any
    cpu_percent: Any
    throughput_kbps: Any
    volume_gb: Any
    cost_usd: Any


CELL_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Cells))


def cells(
    *,
    pools: Any,
    signer_share: Any,
    period_s: Any,
    ttl_s: Any,
    message_bytes: Any,
    memory_per_message: Any,
    cpu_per_message_s: Any,
    redundancy: Any,
    price_per_gb: Any,
    month_s: Any = MONTH_SECONDS,
) -> Cells:
    """The model; every argument may be a number or a Spark column."""
    signers = pools * signer_share
    held = signers * ttl_s / period_s
    per_month = signers * month_s / period_s
    throughput = redundancy * signers * message_bytes / period_s
    volume = throughput * month_s
    return Cells(
        messages_held=held,
        memory_mb=held * memory_per_message / 1e6,
        messages_per_month_m=per_month / 1e6,
        cpu_percent=per_month * cpu_per_message_s / month_s * 100,
        throughput_kbps=throughput / 1e3,
        volume_gb=volume / 1e9,
        cost_usd=volume / 1e9 * price_per_gb,
    )


def cells_of(scenario: Scenario) -> Cells:
    """The model evaluated on a scenario's numbers."""
    row = scenario.as_row()
    row.pop("label")
    return cells(**row)
