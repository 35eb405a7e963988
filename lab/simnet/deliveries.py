"""What reached which node, when, and over how many hops: the simulated network's measurements.

Every node's tracer reports each message it accepts (``MessageAccepted``, with the origin:
``local`` or the peer's label). For each message published the record keeps, per node, the
hop count at which it was accepted (0 at the home node, one more than the sender's
otherwise) or :data:`UNSEEN`. A second acceptance of one message at one node is a defect
(``duplicates``): a node holds a message once, across restarts too (its store survives).

Latencies (acceptance minus publication, virtual seconds) are kept in flat arrays, sorted
once at the end: a 1,000-node run has millions of them.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable

from lab.devnet.stats import nearest_rank

__all__ = ["UNSEEN", "Deliveries", "Published", "summarise"]

UNSEEN = 255


class Published:
    """One accepted publication and where it has arrived."""

    __slots__ = ("home", "sent_at", "hops", "reached")

    def __init__(self, home: int, sent_at: float, nodes: int) -> None:
        self.home = home
        self.sent_at = sent_at
        self.hops = bytearray([UNSEEN]) * nodes
        self.reached = 0


def summarise(values: array | list[float]) -> dict[str, float | int | None]:
    """Count, p50, p90, p99 and max in milliseconds (nearest rank), from seconds."""
    ordered = sorted(values)
    if not ordered:
        return {"count": 0, "p50_ms": None, "p90_ms": None, "p99_ms": None, "max_ms": None}
    ms = lambda value: round(value * 1000, 3)  # noqa: E731
    return {"count": len(ordered), "p50_ms": ms(nearest_rank(ordered, 0.5)), "p90_ms": ms(nearest_rank(ordered, 0.9)),
            "p99_ms": ms(nearest_rank(ordered, 0.99)), "max_ms": ms(ordered[-1])}


class Deliveries:
    """Acceptances of published messages at ``nodes`` nodes.

    ``relays`` more nodes (the stake-less ones of an eclipse attempt, numbered after the
    nodes) are followed for their hop counts only: they run the node's code and pass on what
    they accept, so a node may get a message through one of them, one hop further. They are not
    counted in completeness, latency or hops.
    """

    def __init__(self, nodes: int, index_of_host: dict[str, int], relays: int = 0) -> None:
        self.nodes = nodes
        self.width = nodes + relays
        self.index_of_host = index_of_host
        self.published: dict[bytes, Published] = {}
        #: (latency seconds, hop count, publication time) of every acceptance away from home.
        self.latencies = array("d")
        self.hops = array("B")
        self.sent = array("d")
        self.duplicates = 0
        #: Acceptances of published messages from a peer whose hop is not known yet (should stay 0).
        self.unknown_hops = 0
        #: Every record's ``reached``, summed (kept as they change: a run asks for ``missing()`` often).
        self.reached_total = 0

    def expect(self, message_id: bytes, home: int, sent_at: float) -> Published:
        self.withdraw(message_id)  # published again: counted afresh
        record = self.published[message_id] = Published(home, sent_at, self.width)
        return record

    def withdraw(self, message_id: bytes) -> None:
        """The home node refused the message: nobody is expected to hold it."""
        record = self.published.pop(message_id, None)
        if record is not None:
            self.reached_total -= record.reached

    def accepted(self, node: int, message_id: bytes, origin: str, at: float) -> None:
        record = self.published.get(message_id)
        if record is None or node >= self.width:
            return
        hops = record.hops
        if hops[node] != UNSEEN:
            self.duplicates += 1
            return
        counted = node < self.nodes
        if origin == "local":
            hop = 0
        else:
            sender = self.index_of_host.get(origin.rpartition(":")[0], -1)
            previous = hops[sender] if 0 <= sender < self.width else UNSEEN
            if previous == UNSEEN:
                self.unknown_hops += 1
                hop = UNSEEN - 1
            else:
                hop = min(previous + 1, UNSEEN - 1)
            if counted:
                self.latencies.append(at - record.sent_at)
                self.hops.append(hop)
                self.sent.append(record.sent_at)
        hops[node] = hop
        if counted:
            record.reached += 1
            self.reached_total += 1

    def complete(self, message_id: bytes) -> bool:
        record = self.published.get(message_id)
        return record is None or record.reached >= self.nodes

    def incomplete(self, ids: Iterable[bytes] | None = None) -> list[bytes]:
        wanted = self.published if ids is None else ids
        return [message_id for message_id in wanted if not self.complete(message_id)]

    def missing(self) -> int:
        """Deliveries still missing: (message, node) pairs not accepted."""
        return self.missing_at(self.nodes)

    def missing_at(self, nodes: int) -> int:
        """Deliveries still missing when only ``nodes`` nodes report acceptances here (a process of a
        run over two: :mod:`.shards`)."""
        return nodes * len(self.published) - self.reached_total

    def missing_examples(self, hosts: list[str], limit: int = 10) -> list[dict[str, object]]:
        """Up to ``limit`` missing deliveries: which node lacks which message (its home, when published)."""
        found: list[dict[str, object]] = []
        for message_id, record in self.published.items():
            for node, hop in enumerate(record.hops[:self.nodes]):
                if hop == UNSEEN:
                    found.append({"node": hosts[node], "message": message_id.hex()[:16], "home": hosts[record.home],
                                  "published_at": round(record.sent_at, 3)})
                    if len(found) >= limit:
                        return found
        return found

    def latency_summary(self, outside: list[tuple[float, float]] = ()) -> tuple[dict, dict, dict]:
        """Every delivery; those of messages published outside every ``(begin, end)`` window; and by hop."""
        steady = [latency for latency, sent in zip(self.latencies, self.sent)
                  if not any(begin <= sent <= end for begin, end in outside)]
        by_hop: dict[int, list[float]] = {}
        for latency, hop in zip(self.latencies, self.hops):
            by_hop.setdefault(hop, []).append(latency)
        return (summarise(self.latencies), summarise(steady),
                {str(hop): summarise(values) for hop, values in sorted(by_hop.items())})

    def hop_profile(self) -> dict[str, float | int]:
        counts: dict[int, int] = {}
        for hop in self.hops:
            counts[hop] = counts.get(hop, 0) + 1
        total = sum(counts.values())
        mean = sum(h * c for h, c in counts.items()) / total if total else math.nan
        return {"max": max(counts) if counts else 0, "mean": round(mean, 3) if total else None}
