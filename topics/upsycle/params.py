"""The numbers of the UPSYCLE adapter (docs/topics-design.md 4), gathered so an instance can tune them.

Every default marked (P) in the specification is provisional; keeping them in one frozen
record lets tests run with small caps and lets an operator change one without touching code.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["UpsycleParams", "TAG", "ADAPTER_NAME", "ADAPTER_NUMBER"]

#: The CBOR tag of UPSYCLE bodies (docs/topics-design.md 2.2, P).
TAG = 38137
ADAPTER_NAME = "upsycle"
#: The adapter number in protocol 1000 selectors and item metadata (docs/topics-design.md 3.5).
ADAPTER_NUMBER = 1


@dataclass(frozen=True, slots=True)
class UpsycleParams:
    #: F: floor of the network lifetime, so that ``ttl = 0`` does not expire on arrival (4.4).
    lifetime_floor: int = 120
    #: M: topic maximum network lifetime, below the core's 1800 s with room for skew (2.6).
    max_network_lifetime: int = 1740
    #: S: tolerated clock skew (2.6).
    skew: int = 30
    #: Q: longest store-and-forward lifetime of a queued item (4.4).
    queue_lifetime: int = 7 * 24 * 3600
    #: D: how long a seen id may stay unknown before it is a gap (4.6).
    gap_delay: int = 10
    #: R: answers accepted per (request, item) (2.8).
    answers_per_item: int = 2
    #: Network lifetime of a pull request (2.8).
    request_lifetime: int = 120
    #: How long the node serves pulls from its store for groups with a local member (4.5).
    pull_window: int = 3600
    #: Encoded size limit of a routed message, so that a reissue of it fits in a body (4.3).
    max_routed_size: int = 1940
    max_seen: int = 16
    max_pull_ids: int = 8
    #: Queue caps per subscriber (4.5).
    queue_max_items: int = 10_000
    queue_max_bytes: int = 64 << 20
    #: Membership caps (4.5): groups per subscriber, durable subscribers per instance.
    max_groups_per_subscriber: int = 256
    max_subscribers: int = 10_000
    #: Pull requests per pool per group key in a sliding window (2.8, P: 6 per 10 minutes).
    requests_per_window: int = 6
    request_window: int = 600
