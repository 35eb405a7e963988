"""Trace events of the topic pipeline (same stream and sinks as the core's, docs/architecture.md 2.7)."""

from __future__ import annotations

from dataclasses import dataclass

from dmq.trace import TraceEvent

__all__ = ["TopicDeferred", "TopicPendingDropped", "TopicAcceptedLate", "TopicPublicationRefused",
           "TopicFailureContained", "TopicSubscriptionRefused", "TopicSigningStopped"]


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


@dataclass(frozen=True, slots=True)
class TopicFailureContained(TraceEvent):
    """Topic code failed on one unit of work and only that unit ended (:mod:`topics.containment`).

    ``where`` names the boundary (``ingress``, ``publication``, ``housekeeping``), ``subject``
    what was being done (the adapter and the message id, or the adapter and the task) and
    ``error`` the exception's type and text.
    """

    where: str
    subject: str
    error: str


@dataclass(frozen=True, slots=True)
class TopicSubscriptionRefused(TraceEvent):
    """A local client's subscription was refused by a cap (``TopicSubscriptionLimits``):
    ``limit`` names it, ``value`` is its setting."""

    client: str
    limit: str
    value: float


@dataclass(frozen=True, slots=True)
class TopicSigningStopped(TraceEvent):
    """The node saw a block of its own pool that it did not sign and stopped signing for the
    pool in that topic: another node holds the same pool key, or this database is older than
    the pool's history there. ``action`` says what the operator must do."""

    adapter: str
    topic: bytes
    pool: bytes
    block: bytes
    seq: int
    action: str
