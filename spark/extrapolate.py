"""From a recording's measured per-message costs to mainnet scale (docs/capacity/model.md 5.4).

A recording measures what one message costs the node: its wire size, the memory per
message held, the CPU to validate it, and the outbound bytes per accepted byte on
node-to-node links. Mainnet differs from a devnet only in how many messages arrive, which
the model derives from the pool count and the send period, so the measured costs are put
into the CIP's scenarios (3,000 and 3,100 pools, every period, the CIP's TTL and price).

A cost the recording could not measure (no node-to-node link in a one-node run, a memory
fit drowned in noise on a short run) falls back to the CIP's assumption and is listed in
:attr:`MeasuredCosts.assumed`, so the report says which numbers are measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from spark.cip import CIP_POOLS, CIP_POOLS_TEXT, PERIODS_S, PRICE_PER_GB, REDUNDANCY, SIGNER_SHARE, TTL_S, VERIFY_S
from spark.measure import Measurement
from spark.model import MONTH_SECONDS, Scenario
from spark.tables import Evaluated, evaluate

__all__ = ["MeasuredCosts", "measured_costs", "scenarios_for", "extrapolate", "MAINNET_POOLS"]

MAINNET_POOLS = (CIP_POOLS, CIP_POOLS_TEXT)


@dataclass(frozen=True, slots=True)
class MeasuredCosts:
    """Per-message costs of one run, ready for the model."""

    run: str
    message_bytes: float
    memory_per_message: float
    verify_s: float
    process_cpu_s: float | None
    redundancy: float
    #: Names of the costs that fell back to the CIP's assumption, with why.
    assumed: tuple[tuple[str, str], ...]


def measured_costs(m: Measurement) -> MeasuredCosts:
    assumed: list[tuple[str, str]] = []
    size = m.message_bytes_mean
    if size is None:
        raise ValueError(f"run {m.run}: no accepted message, nothing to extrapolate from")
    if m.memory_fit_trusted:
        memory = m.rss_per_message
    else:
        memory = m.wire_bytes_per_message_held or size
        assumed.append(("memory per message",
                        f"RSS fit not trusted (r² {m.rss_fit_r2 if m.rss_fit_r2 is not None else 'n/a'}, "
                        f"span {m.rss_fit_span} messages): wire bytes held per message used"))
    if m.verify_ns_mean:
        verify = m.verify_ns_mean / 1e9
    else:
        verify = VERIFY_S
        assumed.append(("verification CPU", "no validation time recorded: the CIP's 2 ms used"))
    if m.redundancy is not None:
        redundancy = m.redundancy
    else:
        redundancy = REDUNDANCY
        assumed.append(("redundancy", "no node-to-node traffic recorded: the CIP's factor 2 used"))
    assert memory is not None
    return MeasuredCosts(m.run, size, memory, verify, m.cpu_per_message_s, redundancy, tuple(assumed))


def scenarios_for(costs: MeasuredCosts, pools: Sequence[int] = MAINNET_POOLS,
                  periods: Sequence[int] = PERIODS_S, *, process_cpu: bool = False) -> list[Scenario]:
    """The CIP's scenarios with the measured costs, pools-major then period."""
    cpu = costs.process_cpu_s if process_cpu and costs.process_cpu_s is not None else costs.verify_s
    return [
        Scenario(label=f"{costs.run} {n} pools", pools=n, signer_share=SIGNER_SHARE, period_s=p, ttl_s=TTL_S,
                 message_bytes=costs.message_bytes, memory_per_message=costs.memory_per_message,
                 cpu_per_message_s=cpu, redundancy=costs.redundancy, price_per_gb=PRICE_PER_GB,
                 month_s=MONTH_SECONDS)
        for n in pools for p in periods
    ]


def extrapolate(spark: SparkSession, costs: MeasuredCosts, pools: Sequence[int] = MAINNET_POOLS,
                periods: Sequence[int] = PERIODS_S, *, process_cpu: bool = False) -> list[Evaluated]:
    """The measured tables at mainnet scale, evaluated by Spark."""
    return evaluate(spark, scenarios_for(costs, pools, periods, process_cpu=process_cpu))
