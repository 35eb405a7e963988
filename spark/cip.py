"""CIP-0137's capacity estimates as published: its inputs, its four tables, and how a
reproduced number is compared with a published one (docs/capacity/model.md sections 1 and 2).

The published cells are display-rounded, and not consistently: most are the exact value
to the nearest unit, but several small ones are rounded *up* (2 $ for 1.49 $, 5 k for 4.5 k
messages held). A reproduced cell therefore matches when it is within 3 % of the published
number, or when rounding it up to the published precision gives a number within 3 %; the
report says which of the two it was, so the rounding up is visible rather than hidden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from spark.message_size import CIP_MESSAGE_BYTES_HIGH, CIP_MESSAGE_BYTES_LOW
from spark.model import MONTH_SECONDS, Cells, Scenario

__all__ = [
    "TOLERANCE",
    "CIP_POOLS",
    "CIP_POOLS_TEXT",
    "SIGNER_SHARE",
    "PERIODS_S",
    "TTL_S",
    "VERIFY_S",
    "REDUNDANCY",
    "PRICE_PER_GB",
    "Bound",
    "Column",
    "COLUMNS",
    "PUBLISHED",
    "Match",
    "compare",
    "cip_scenario",
    "column_value",
]

TOLERANCE = 0.03
#: The tables are consistent with 3,000 pools; the text says 3,100 (section 3, item 1).
CIP_POOLS = 3000
CIP_POOLS_TEXT = 3100
SIGNER_SHARE = 0.5
PERIODS_S = (60, 120, 300, 600)
TTL_S = 1800
VERIFY_S = 0.002
REDUNDANCY = 2.0
PRICE_PER_GB = 0.1


class Bound(str, Enum):
    """The CIP's two message sizes."""

    LOW = "low"
    HIGH = "high"

    @property
    def message_bytes(self) -> int:
        return CIP_MESSAGE_BYTES_LOW if self is Bound.LOW else CIP_MESSAGE_BYTES_HIGH


@dataclass(frozen=True, slots=True)
class Column:
    """One published column: the model cell it shows, its unit and display precision."""

    key: str
    title: str
    cell: str                 # a field of spark.model.Cells
    bound: Bound | None       # which message size, for size-dependent columns
    scale: float              # published number = cell value / scale
    precision: float          # the unit of the published number's last digit
    unit: str


COLUMNS: tuple[Column, ...] = (
    Column("held", "messages held", "messages_held", None, 1e3, 1, "k"),
    Column("memory_low", "memory low", "memory_mb", Bound.LOW, 1, 1, "MB"),
    Column("memory_high", "memory high", "memory_mb", Bound.HIGH, 1, 1, "MB"),
    Column("per_month", "messages per month", "messages_per_month_m", None, 1, 1, "M"),
    Column("cpu", "CPU core", "cpu_percent", None, 1, 0.1, "%"),
    Column("throughput_low", "outbound low", "throughput_kbps", Bound.LOW, 1, 1, "kB/s"),
    Column("throughput_high", "outbound high", "throughput_kbps", Bound.HIGH, 1, 1, "kB/s"),
    Column("volume_low", "GB per month low", "volume_gb", Bound.LOW, 1, 1, "GB"),
    Column("volume_high", "GB per month high", "volume_gb", Bound.HIGH, 1, 1, "GB"),
    Column("cost_low", "$ per month low", "cost_usd", Bound.LOW, 1, 1, "$"),
    Column("cost_high", "$ per month high", "cost_usd", Bound.HIGH, 1, 1, "$"),
)

#: The CIP's tables, period in seconds -> published number per column key.
PUBLISHED: dict[int, dict[str, float]] = {
    60: dict(held=45, memory_low=51, memory_high=124, per_month=64, cpu=5.0, throughput_low=57,
             throughput_high=138, volume_low=147, volume_high=356, cost_low=15, cost_high=36),
    120: dict(held=23, memory_low=26, memory_high=62, per_month=32, cpu=2.5, throughput_low=29,
              throughput_high=69, volume_low=74, volume_high=178, cost_low=8, cost_high=18),
    300: dict(held=9, memory_low=11, memory_high=25, per_month=13, cpu=1.0, throughput_low=12,
              throughput_high=28, volume_low=30, volume_high=72, cost_low=3, cost_high=8),
    600: dict(held=5, memory_low=6, memory_high=13, per_month=7, cpu=0.5, throughput_low=6,
              throughput_high=14, volume_low=15, volume_high=36, cost_low=2, cost_high=4),
}


def cip_scenario(period_s: float, bound: Bound, *, pools: float = CIP_POOLS,
                 message_bytes: float | None = None) -> Scenario:
    """The CIP's assumptions for one period and message-size bound."""
    size = bound.message_bytes if message_bytes is None else message_bytes
    return Scenario(
        label=f"CIP {bound.value}", pools=pools, signer_share=SIGNER_SHARE, period_s=period_s, ttl_s=TTL_S,
        message_bytes=size, memory_per_message=size, cpu_per_message_s=VERIFY_S, redundancy=REDUNDANCY,
        price_per_gb=PRICE_PER_GB, month_s=MONTH_SECONDS,
    )


def column_value(column: Column, low: Cells, high: Cells) -> float:
    """A column's number, in the published unit, from the low- and high-size rows."""
    source = high if column.bound is Bound.HIGH else low
    return getattr(source, column.cell) / column.scale


class Match(str, Enum):
    WITHIN = "within 3%"
    ROUNDED_UP = "CIP rounded up"
    MISMATCH = "mismatch"


def _relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b) if b else (0.0 if a == 0 else math.inf)


def compare(reproduced: float, published: float, precision: float) -> tuple[Match, float]:
    """How a reproduced number matches a published one, and their relative difference."""
    difference = _relative(reproduced, published)
    if difference <= TOLERANCE:
        return Match.WITHIN, difference
    steps = reproduced / precision
    rounded_up = math.ceil(steps - 1e-9) * precision
    if _relative(rounded_up, published) <= TOLERANCE:
        return Match.ROUNDED_UP, difference
    return Match.MISMATCH, difference
