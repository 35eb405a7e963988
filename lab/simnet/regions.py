"""Where simulated nodes are and how far apart: regions, their round-trip times, node placement.

Round-trip times (milliseconds) between ten AWS regions, as published in the table "Latency
Between AWS Global Regions" (average latency, FROM/TO, 2017), reproduced at
https://acomputerscientistlearnsaws.blogspot.com/2017/04/aws-regions.html . The published
table is measured in both directions; the two directions differ by at most a few tenths of a
millisecond, and each pair here is their mean (the São Paulo row is cut short in the
reproduction and is taken from its column). Within one region the round trip is a figure
assumed here, :data:`SAME_REGION_RTT_MS` (two hosts of one region but not of one data centre).

Node placement: the share of stake-pool relays in each region is an assumption stated here,
not a measurement: Cardano's relays are reported to sit mostly in Europe (Germany above
all), then North America, then East Asia and Oceania, with few in South America. The shares
below follow that order; change :data:`RELAY_SHARE` to study another placement.
"""

from __future__ import annotations

import random

__all__ = ["REGIONS", "RTT_MS", "SAME_REGION_RTT_MS", "RELAY_SHARE", "rtt_ms", "place_nodes"]

REGIONS: tuple[str, ...] = (
    "us-east-1",       # US East (N. Virginia)
    "us-west-1",       # US West (N. California)
    "us-west-2",       # US West (Oregon)
    "eu-west-1",       # EU (Ireland)
    "eu-central-1",    # EU (Frankfurt)
    "ap-northeast-1",  # Asia Pacific (Tokyo)
    "ap-northeast-2",  # Asia Pacific (Seoul)
    "ap-southeast-1",  # Asia Pacific (Singapore)
    "ap-southeast-2",  # Asia Pacific (Sydney)
    "sa-east-1",       # South America (São Paulo)
)

#: Lower triangle of the published table, both directions averaged; row i lists RTT(i, 0..i-1).
_LOWER: tuple[tuple[float, ...], ...] = (
    (),
    (72.2,),
    (87.8, 19.3),
    (80.5, 153.2, 137.0),
    (88.6, 166.6, 159.5, 19.6),
    (145.3, 102.5, 89.1, 212.4, 236.6),
    (177.5, 132.1, 118.3, 242.4, 265.8, 31.4),
    (216.7, 174.0, 161.4, 238.6, 325.9, 73.8, 71.6),
    (229.9, 157.7, 162.1, 309.6, 323.4, 103.9, 134.0, 175.4),
    (119.5, 192.7, 182.7, 191.3, 194.9, 256.8, 286.3, 328.1, 322.5),
)

#: Two hosts in one region (an assumption: different data centres of one metropolitan area).
SAME_REGION_RTT_MS = 2.0

RTT_MS: tuple[tuple[float, ...], ...] = tuple(
    tuple(SAME_REGION_RTT_MS if i == j else (_LOWER[i][j] if j < i else _LOWER[j][i]) for j in range(len(REGIONS)))
    for i in range(len(REGIONS))
)

#: Assumed share of relays per region (sums to 1); see the module's docstring.
RELAY_SHARE: dict[str, float] = {
    "us-east-1": 0.17,
    "us-west-1": 0.05,
    "us-west-2": 0.06,
    "eu-west-1": 0.12,
    "eu-central-1": 0.35,
    "ap-northeast-1": 0.07,
    "ap-northeast-2": 0.03,
    "ap-southeast-1": 0.07,
    "ap-southeast-2": 0.05,
    "sa-east-1": 0.03,
}


def rtt_ms(a: int, b: int) -> float:
    """Round trip between regions ``a`` and ``b`` (indices into :data:`REGIONS`)."""
    return RTT_MS[a][b]


def place_nodes(count: int, seed: int) -> list[int]:
    """Each node's region index: the shares of :data:`RELAY_SHARE` (largest remainders), shuffled by ``seed``."""
    shares = [RELAY_SHARE[name] for name in REGIONS]
    exact = [count * share for share in shares]
    counts = [int(value) for value in exact]
    by_remainder = sorted(range(len(REGIONS)), key=lambda i: (exact[i] - counts[i], -i), reverse=True)
    for i in by_remainder[:count - sum(counts)]:
        counts[i] += 1
    regions = [region for region, n in enumerate(counts) for _ in range(n)]
    random.Random(f"dmq-simnet-regions/{seed}").shuffle(regions)
    return regions
