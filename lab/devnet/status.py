"""What the live view shows at one moment: plain values, so any view (table, lines) can draw them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NodeStatus", "DevnetStatus"]


@dataclass(frozen=True, slots=True)
class NodeStatus:
    name: str
    port: int
    pools: int                 # pools publishing to this node
    links: int                 # links the topology gives it
    peers: int | None          # node-to-node connections open (None: metrics unavailable)
    held: int | None           # messages in its mempool (None: metrics unavailable)
    received: int | None       # distinct messages its aggregator received (None: no aggregator)
    duplicates: int
    rate: float                # messages per second arriving at its aggregator, recently
    p50: float | None          # seconds
    p99: float | None


@dataclass(frozen=True, slots=True)
class DevnetStatus:
    phase: str                 # "starting", "publishing", "draining", "stopping"
    elapsed: float
    duration: float
    attempted: int
    accepted: int
    rejected: int
    failed: int
    nodes: tuple[NodeStatus, ...]
