"""Trace events of the topic pipeline (same stream and sinks as the core's, docs/architecture.md 2.7)."""

from __future__ import annotations

from dataclasses import dataclass

from dmq.trace import TraceEvent

__all__ = ["TopicDeferred", "TopicPendingDropped", "TopicAcceptedLate", "TopicPublicationRefused"]


@dataclass(frozen=True, slots=True)
class TopicDeferred(TraceEvent):
    """A message waits in an adapter's pending buffer for ``missing`` ids."""

    message_id: bytes
    adapter: str
    missing: int
    origin: str


@dataclass(frozen=True, slots=True)
class TopicPendingDropped(TraceEvent):
    """A parked message left its buffer unaccepted: ``buffer_overflow`` or its wait ran out."""

    message_id: bytes
    adapter: str
    reason: str


@dataclass(frozen=True, slots=True)
class TopicAcceptedLate(TraceEvent):
    """A deferred message accepted after its DMQ ``expiresAt``: into the adapter store only."""

    message_id: bytes
    adapter: str


@dataclass(frozen=True, slots=True)
class TopicPublicationRefused(TraceEvent):
    """A publication the node made on its own (a request, an answer) was refused."""

    adapter: str
    reason: str
    detail: str
