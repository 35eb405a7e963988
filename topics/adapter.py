"""The adapter contract (docs/topics-design.md 2.4) and what the framework hands to adapters.

An adapter owns one CBOR tag and the meaning of the bodies it wraps. The framework runs the
DMQ checks, classification and the commit; the adapter only answers these questions:

* ``classify(body)``: the topic key of a body of its tag (pure; must agree with 2.2);
* ``decode(body)``: the inner message, or :class:`Reject` (strict CDDL, sizes, canonical);
* ``validate(inner, ctx)``: :data:`OK`, :class:`Reject` or :class:`Defer` - no side effects;
* ``on_accept(message, txn)``: state updates inside the one commit transaction, returning
  what becomes deliverable to subscribers, in the adapter's order;
* ``deliver(filters, start, view, now)``: the retained or snapshot items a new subscription
  starts with (``start`` = retained or state);
* ``expires_at(inner, now)``: the DMQ ``expiresAt`` the node uses when it wraps ``inner``;
* ``prune(now, txn)``: drop state past its retention, in its own transaction.

Adapters keep their state only in the named LMDB databases they declare in ``databases``
and reach it only through :class:`StoreView` / :class:`AdapterTxn`, so that a reject can
never leave a trace (invariant C4) and a crash leaves a committed state (C7).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from dmq.clock import Clock
from dmq.message import DmqMessage

from .reasons import RejectReason

__all__ = [
    "AlreadyPublished",
    "Ok",
    "OK",
    "Reject",
    "Defer",
    "Verdict",
    "Origin",
    "DmqFacts",
    "StoreView",
    "AdapterTxn",
    "StakeLookup",
    "ValidationContext",
    "Accepted",
    "Delivery",
    "Start",
    "TopicAdapter",
    "Priority",
    "PublishOutcome",
    "AdapterRuntime",
    "JOIN_SUCCESS",
    "JOIN_FAILURE",
    "ITEM_MESSAGE",
    "ITEM_PROOF",
    "ITEM_GAP",
    "ITEM_EPOCH_FINAL",
    "ITEM_DROPPED",
    "ITEM_LOCAL",
    "FLAG_ANSWER",
    "FLAG_LATE",
    "FLAG_LOCAL",
]


# -- verdicts ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Ok:
    """The inner message may be committed."""


OK = Ok()


@dataclass(frozen=True, slots=True)
class Reject:
    """The message is refused for ``reason``; nothing changes (C4)."""

    reason: RejectReason
    detail: str = ""
    retry_after: int | None = None


@dataclass(frozen=True, slots=True)
class Defer:
    """The message waits in the pending buffer until every id in ``missing`` is accepted.

    ``missing`` holds ids the pipeline learns from accepted messages: DMQ ids, and whatever
    :meth:`TopicAdapter.provides` returns (inner ids). ``max_wait`` bounds the wait in
    seconds (None: until the DMQ ``expiresAt``).
    """

    missing: frozenset[bytes]
    max_wait: float | None = None

    def __init__(self, missing: Iterable[bytes], max_wait: float | None = None) -> None:
        object.__setattr__(self, "missing", frozenset(missing))
        object.__setattr__(self, "max_wait", max_wait)
        if not self.missing:
            raise ValueError("Defer needs at least one missing id")


Verdict = Ok | Reject | Defer


# -- facts and views --------------------------------------------------------------------------

class Origin(enum.Enum):
    """Where a DMQ message came from (docs/topics-design.md 2.4)."""

    PEER = "peer"            # node-to-node, protocol 11
    LOCAL = "local"          # local submission, protocol 14
    OWN = "own"              # wrapped and signed by this node (protocol 1000, re-publication)


@dataclass(frozen=True, slots=True)
class DmqFacts:
    """What DMQ validation established about the carrying message."""

    dmq_id: bytes
    pool_id: bytes
    kes_period: int
    expires_at: int
    origin: Origin
    peer: str | None = None   # the peer's address when origin is PEER


@runtime_checkable
class StoreView(Protocol):
    """Read-only access to the adapter's own named databases."""

    def get(self, db: str, key: bytes) -> bytes | None:
        """The value under ``key`` in the adapter database ``db``."""

    def scan(self, db: str, prefix: bytes = b"", *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(key, value)`` whose key starts with ``prefix``, in key order."""


@runtime_checkable
class AdapterTxn(StoreView, Protocol):
    """The adapter's share of the commit transaction."""

    def put(self, db: str, key: bytes, value: bytes) -> None:
        """Write ``value`` under ``key``."""

    def delete(self, db: str, key: bytes) -> bool:
        """Delete ``key``; whether it was there."""


@runtime_checkable
class StakeLookup(Protocol):
    """The part of :class:`dmq.stake.StakeView` adapters may use."""

    def stake_of(self, pool_id: bytes) -> Any:
        """The pool's stake record in the ``set`` snapshot, or None."""


@dataclass(frozen=True, slots=True)
class ValidationContext:
    """Everything ``validate`` may look at; it may change none of it."""

    clock: Clock
    facts: DmqFacts
    stake: StakeLookup | None
    store: StoreView
    params: Mapping[str, Any] = field(default_factory=dict)
    network_magic: int = 0

    @property
    def now(self) -> float:
        return self.clock.now()


@dataclass(frozen=True, slots=True)
class Accepted:
    """A message passing into ``on_accept``: the DMQ message, its facts and the inner one."""

    message: DmqMessage
    facts: DmqFacts
    inner: Any
    arrival: int              # POSIX seconds of acceptance
    late: bool = False        # accepted after its DMQ expiresAt (re-run of a deferred message)


# -- delivery ---------------------------------------------------------------------------------

# itemBody kinds (docs/topics-design.md 3.5)
ITEM_MESSAGE = 0
ITEM_PROOF = 1
ITEM_GAP = 2
ITEM_EPOCH_FINAL = 3
ITEM_DROPPED = 4
ITEM_LOCAL = 5

# meta flags
FLAG_ANSWER = 1
FLAG_LATE = 2
FLAG_LOCAL = 4


@dataclass(frozen=True, slots=True)
class Delivery:
    """One item an adapter makes deliverable.

    ``body`` is the ``itemBody`` value of docs/topics-design.md 3.5 ready for the deterministic encoder
    (for kind 0: ``[0, meta, dmqMessageBytes]``). ``facets`` maps selector field numbers to
    the values this item has for them (1 groups, 2 destinations, 3 topic ids, 4 publisher
    pools, 6 content tags, 8 dmsg keys, 9 envelope kinds, 10 payload types, 11 roles); the
    framework matches filters on them. ``deadline`` is the local deadline after which the
    item is never delivered (C6). ``dedup`` is the inner id subscribers see at most once.
    """

    adapter: int
    body: Any
    facets: Mapping[int, frozenset[Any]] = field(default_factory=dict)
    deadline: float | None = None
    dedup: bytes | None = None


class Start(enum.Enum):
    """Where a new subscription starts (``start`` of docs/topics-design.md 3.5, resume handled apart)."""

    NOW = 0
    RETAINED = 1
    STATE = 2


# -- publication by the node (docs/topics-design.md 2.7) --------------------------------------------------

class Priority(enum.IntEnum):
    """The publication queue's order: lower is served first."""

    EPOCH = 1          # Blocklace epoch messages
    ANSWER = 2         # answers to solicited re-publication requests
    REQUEST = 3        # requests
    CLIENT = 4         # client publications, in arrival order
    REFRESH = 5        # periodic refreshes (advertisements, dmsg entries)


@dataclass(frozen=True, slots=True)
class PublishOutcome:
    """What became of a publication: the DMQ id when accepted, else the reject."""

    dmq_id: bytes | None
    reject: Reject | None = None
    inner_id: bytes | None = None

    @property
    def accepted(self) -> bool:
        return self.reject is None


@dataclass(frozen=True, slots=True)
class AlreadyPublished:
    """A publication that repeats one this node made already: answered with that message's
    id, never signed again (a second signature would be a second message)."""

    dmq_id: bytes
    inner_id: bytes | None = None


@dataclass(frozen=True)
class AdapterRuntime:
    """Handles an adapter receives in :meth:`TopicAdapter.start`.

    ``publish(body, priority)`` wraps a complete adapter body into a DMQ message signed by
    the node's pool and runs it through the ingress pipeline as the node's own publication
    (``Reject(no_signer)`` on a node without a signer). ``has_signer`` says whether it can.
    """

    clock: Clock
    network_magic: int
    params: Mapping[str, Any]
    publish: Any               # async (body: bytes, priority: Priority) -> PublishOutcome
    has_signer: bool
    pool_id: bytes | None = None
    tracer: Any = None


#: ``result`` of JOIN / LEAVE acknowledgements (docs/topics-design.md 3.5).
JOIN_SUCCESS = 0
JOIN_FAILURE = 1


# -- the contract -----------------------------------------------------------------------------

class TopicAdapter(abc.ABC):
    """Base of every adapter; subclasses set the class attributes and the abstract hooks."""

    #: Name used in configuration, traces and ``topic:<name>:<reason>``.
    name: str = ""
    #: Its CBOR tag (38137..38143).
    tag: int = 0
    #: Its number in subscription selectors (field 0): 1 upsycle, 2 blocklace, 3 dmsg.
    number: int = 0
    #: The named LMDB databases it owns (created as ``<name>/<db>``).
    databases: tuple[str, ...] = ()
    #: Bound of the pending (deferred) buffer; eviction is oldest first.
    pending_limit: int = 1024
    #: Bound of the deferred messages of one ``pending_key`` (None: no such bound).
    pending_per_key: int | None = None
    #: Whether its state converges regardless of arrival order (C5).
    convergent: bool = False

    @abc.abstractmethod
    def classify(self, body: bytes) -> bytes | None:
        """The topic key of ``body`` (None: not one of this adapter's bodies)."""

    @abc.abstractmethod
    def decode(self, body: bytes) -> Any | Reject:
        """The inner message of ``body``, or the reason it is not one."""

    @abc.abstractmethod
    def validate(self, inner: Any, ctx: ValidationContext) -> Verdict:
        """Whether ``inner``, carried by the DMQ message of ``ctx.facts``, may be accepted."""

    @abc.abstractmethod
    def on_accept(self, message: Accepted, txn: AdapterTxn) -> Sequence[Delivery]:
        """Record ``message``; return the items it makes deliverable, in order."""

    @abc.abstractmethod
    def deliver(self, filters: Sequence[Mapping[int, Any]], start: Start, view: StoreView,
                now: float) -> Iterable[Delivery]:
        """The items a new subscription starting at ``start`` receives before new ones."""

    @abc.abstractmethod
    def expires_at(self, inner: Any, now: float) -> int:
        """The DMQ ``expiresAt`` for a wrapping of ``inner`` created at ``now``."""

    def prune(self, now: float, txn: AdapterTxn) -> None:
        """Drop state past its retention (default: nothing retained)."""

    def inner_id(self, inner: Any) -> bytes | None:
        """The adapter's own id of ``inner`` (None if it has none)."""
        return None

    def provides(self, inner: Any) -> Iterable[bytes]:
        """Ids that accepting ``inner`` makes available to deferred messages."""
        ident = self.inner_id(inner)
        return () if ident is None else (ident,)

    def rediffuse(self, inner: Any) -> Iterable[DmqMessage]:
        """Complete DMQ messages carried inside ``inner`` (answers to solicited
        re-publication) that the node may put back into its store to diffuse again."""
        return ()

    def publication_priority(self, inner: Any) -> Priority | None:
        """The publication queue priority of a body this node wraps (2.7); None: the
        caller's default (client publications, or requests for due publications)."""
        return None

    def publication_key(self, inner: Any) -> bytes | None:
        """The local publisher's key of a client publication (2.7: the per-key limit);
        None: the body names no publisher key and only the pool's budget applies."""
        return None

    def pending_key(self, inner: Any, facts: DmqFacts) -> bytes | None:
        """Whose share of the pending buffer a deferred ``inner`` uses (``pending_per_key``);
        None: only the buffer's overall bound applies."""
        return None

    def for_signing(self, body: bytes, inner: Any, view: StoreView, now: float) -> bytes | Reject | AlreadyPublished:
        """The body the node signs for a publication of ``inner`` (default: ``body`` unchanged).

        Called when the publication's turn in the queue has come, just before signing, with
        the committed adapter state: an adapter whose bodies depend on that state (the
        Blocklace creator's sequence number and pointers) builds them here, never earlier."""
        return body

    def discard_caches(self) -> None:
        """Forget in-memory state derived from the store (default: none is kept).

        Called after this adapter's code failed on a message (:mod:`topics.containment`): the
        commit did not happen, so a cache updated before the failure is rebuilt from the
        committed state at the next hook call."""

    def start(self, runtime: AdapterRuntime) -> None:
        """Called once when the instance starts, with the instance's runtime handles
        (publisher, clock, parameters); adapters that publish keep it."""
