"""The one way into the mempool: decode, de-duplicate, screen, validate, commit, trace.

Local submission (protocol 14), node-to-node pulls (protocol 11) and a topic instance's
ingress all hand received bytes to :class:`Ingress` and run the same pipeline
(docs/protocol/validation.md 6.1). What differs between them is declared, not coded
around: an :class:`IngressStages` names which ids count as known beyond the batch, what
check 3 is (the pool's spacing, or a topic instance's budgets, both on the times the pool
signed: :mod:`dmq.validation.rate`), whether
passing validation records the pool's acceptance at once or the commit does, how many
messages go through validate-and-commit together, and the commit itself. The *reply* is
a table lookup on the error (``dmq.validation.reactions``), never a branch per caller
(docs/architecture.md principle 4).

The core's stages validate a whole batch and append it with one durable commit. Validation
and the in-memory append run without a checkpoint between them, so two concurrent
submitters can never both pass the duplicate or rate-limit check for the same message or
pool; only the wait for the disk commit is shared between them. Stages whose commit
awaits per message (a topic instance) take one message per round under their own lock.

A peer's batch with the core's stages never waits at all (a relayed message is visible at
once and committed with the mempool's next group, docs/architecture.md principle 5), so the
pulling peer admits it from the connection's reader (:meth:`Ingress.submit_from_peer_now`):
the same stages, with no task woken for the batch. A local sender's message is durable
before its verdict, so a local submission always awaits its commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial

import trio

from dmq.codec import MessageDecodeError, decode_message
from dmq.mempool import Mempool
from dmq.message import DmqMessage
from dmq.trace import MessageAccepted, MessageRejected, Tracer
from dmq.validation import Outcome, PeerReaction, RateRule, ReactionPolicy, SigValidationError, Validator

__all__ = ["Ingress", "IngressStages", "RoundGuard", "BatchVerdict", "LOCAL_ORIGINS", "trace_outcomes"]

#: Origins whose senders get a reject reason rather than a peer reaction: a local client,
#: and this node itself (messages it built and signed).
LOCAL_ORIGINS = frozenset({"local", "own"})


@dataclass(frozen=True, slots=True)
class BatchVerdict:
    """What happened to a node-to-node batch, and whether the peer must be disconnected."""

    outcomes: list[Outcome]
    disconnect: SigValidationError | None

    @property
    def accepted(self) -> int:
        return [o.error for o in self.outcomes].count(None)


class RoundGuard:
    """``with guard:`` around one round; ``failure`` describes what it swallowed, if anything.

    This one swallows nothing: a failure of the core's own code is a bug that must show.
    Stages that contain failures per message return their own (``topics.containment``).
    """

    failure: str | None = None

    def __enter__(self) -> RoundGuard:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


_PASS_THROUGH = RoundGuard()
_NO_TURN = nullcontext()


class IngressStages:
    """The stages an ingress declares; these defaults are the core's (a plain DMQ node).

    ``round_size``: messages per validate-and-commit round; None is the whole batch (one
    durable commit per batch), 1 when a commit changes what the next message is checked
    against. ``rate``: check 3, None for the validator's own spacing. ``record``:
    whether validation accepts a message at once (``Validator.accept``; else ``commit``
    does, once nothing later can refuse it). ``lock``: held for a whole batch by stages
    whose commit awaits between messages; the core's needs none (validation and the
    in-memory append never await in between).
    """

    round_size: int | None = None
    rate: RateRule | None = None
    record: bool = True
    lock: trio.Lock | None = None

    def __init__(self, mempool: Mempool, validator: Validator) -> None:
        self.mempool = mempool
        self.validator = validator

    def known(self) -> Callable[[bytes], bool]:
        """Step 2 beyond the batch: does the node hold this id already? (Asked once per round.)"""
        return self.mempool.contains

    def contain(self, message: DmqMessage, origin: str) -> RoundGuard:
        """The guard around the round that starts with ``message``."""
        return _PASS_THROUGH

    async def commit(self, outcomes: list[Outcome], origin: str) -> list[Outcome]:
        """Step 4: store the accepted messages of a round with their pools' new state.

        A local sender's messages are durable when this returns; a peer's are visible and
        wait for the next group commit (:meth:`commit_relayed`).
        """
        if origin not in LOCAL_ORIGINS:
            return self.commit_relayed(outcomes)
        accepted = [o.message for o in outcomes if o.error is None]
        if accepted:
            updates = self.validator.state.updates([m.pool_id for m in accepted])
            await self.mempool.submit(accepted, pool_state_updates=updates)
        return outcomes

    def commit_relayed(self, outcomes: list[Outcome]) -> list[Outcome]:
        """Step 4 for a peer's messages, without waiting: nothing waits for relayed messages
        (``Mempool.submit_relayed``), so a pulled batch is admitted in the connection's reader."""
        accepted = [o.message for o in outcomes if o.error is None]
        if accepted:
            self.mempool.submit_relayed(accepted, self.validator.state.updates([m.pool_id for m in accepted]))
        return outcomes

    def failed(self, message: DmqMessage, failure: str) -> Outcome:
        """The outcome of a message whose round failed, when :meth:`contain` swallowed the failure."""
        raise NotImplementedError


class Ingress:
    """Received bytes to accepted messages, with the reference's checks and reactions."""

    def __init__(
        self,
        mempool: Mempool,
        validator: Validator,
        tracer: Tracer,
        *,
        allow_legacy: bool = False,
        reactions: ReactionPolicy = ReactionPolicy(),
        stages: IngressStages | None = None,
        decode_received: Callable[[bytes, Callable[[bytes], DmqMessage]], DmqMessage] | None = None,
    ) -> None:
        self.mempool = mempool
        self.validator = validator
        self.tracer = tracer
        self.allow_legacy = allow_legacy
        self.reactions = reactions
        self.stages = stages if stages is not None else IngressStages(mempool, validator)
        #: Whether a peer's batch is admitted without awaiting (:meth:`submit_from_peer_now`): with
        #: the core's stages, one round per batch whose commit never waits. Stages that take
        #: rounds, a lock or a commit of their own (a topic instance) go through :meth:`admit`.
        self.relays_now = (self.stages.round_size is None and self.stages.lock is None
                           and type(self.stages).commit is IngressStages.commit)
        #: How a peer's message bytes become a message, ``decode_received(raw, self.decode)``: this
        #: ingress's own decode of the received bytes (None) in a node. A simulated network of
        #: thousands of nodes in one process passes one shared table, so that the equal bytes every
        #: node receives are decoded once into one immutable message (its bytes included) that each
        #: node validates, stores and serves as its own (docs/network-scale.md, "Simulated time").
        self.decode_received = decode_received
        #: Strict decode (docs/protocol/message.md 5.2) of one message's bytes; a failure is a
        #: protocol error for the caller. The codec's own function, bound to this ingress's
        #: legacy setting (no method around it: it runs once per message).
        self.decode: Callable[[bytes], DmqMessage] = partial(decode_message, allow_legacy=allow_legacy)

    async def submit_local(self, raw: bytes) -> SigValidationError | None:
        """One local submission: None when accepted and durable, else the error.

        Raises :class:`~dmq.codec.MessageDecodeError` for bytes that are not a message.
        """
        outcomes = await self.admit([self.decode(raw)], origin="local")
        return outcomes[0].error

    async def submit_from_peer(self, raws: Sequence[bytes], peer: str) -> BatchVerdict:
        """One ``MsgReplySigs`` batch from a peer, processed atomically (docs/protocol/validation.md 6.1).

        Decode failures raise :class:`~dmq.codec.MessageDecodeError` (a protocol error:
        the connection closes). The verdict names the first error whose reaction is to
        disconnect; accepted messages of the batch are kept either way. A peer replaying a
        pool's history passes check 3 at any pace (:mod:`dmq.validation.rate`).
        """
        return self._verdict(await self.admit(self._decode_batch(raws), origin=peer))

    def submit_from_peer_now(self, raws: Sequence[bytes], peer: str) -> BatchVerdict | None:
        """:meth:`submit_from_peer` without awaiting, for a caller that must not wait (the
        connection's reader); None, with nothing done, when these stages must await
        (:attr:`relays_now`). The same decode, validation, commit and traces."""
        if not self.relays_now:
            return None
        outcomes, verify_ns = self._validate(self._decode_batch(raws), None)
        outcomes = self.stages.commit_relayed(outcomes)
        self.trace(outcomes, peer, verify_ns)
        return self._verdict(outcomes)

    def _decode_batch(self, raws: Sequence[bytes]) -> list[DmqMessage]:
        decode, shared = self.decode, self.decode_received
        return list(map(decode, raws)) if shared is None else [shared(raw, decode) for raw in raws]

    def _verdict(self, outcomes: list[Outcome]) -> BatchVerdict:
        disconnect = None
        for outcome in outcomes:
            error = outcome.error
            if error is None:
                continue
            if self.reactions.peer_reaction(error) is PeerReaction.DISCONNECT:
                disconnect = error
                break
        return BatchVerdict(outcomes, disconnect)

    async def admit(self, messages: list[DmqMessage], origin: str) -> list[Outcome]:
        """Steps 2 to 4 and the trace for decoded messages, in rounds of the stages' size."""
        stages = self.stages
        size = stages.round_size
        if size is None and stages.lock is None:
            # The core's: the whole batch in one round, nothing to serialise or contain.
            return await self._round(messages, origin, None)
        seen: set[bytes] = set()
        results: list[Outcome] = []
        async with stages.lock or _NO_TURN:
            for first in range(0, len(messages), size or max(1, len(messages))):
                chunk = messages[first:first + size] if size else messages
                with stages.contain(chunk[0], origin) as guard:
                    outcomes = await self._round(chunk, origin, seen)
                if guard.failure is not None:
                    outcomes = [stages.failed(m, guard.failure) for m in chunk]
                    self.trace(outcomes, origin, 0)
                results.extend(outcomes)
        return results

    def _validate(self, chunk: list[DmqMessage], seen: set[bytes] | None) -> tuple[list[Outcome], int]:
        """Steps 2 and 3 of a round: the outcomes, and the time they took per message (ns)."""
        stages = self.stages
        started = time.perf_counter_ns()
        outcomes = self.validator.process_batch(chunk, stages.known(), seen=seen, rate=stages.rate,
                                                record=stages.record)
        return outcomes, (time.perf_counter_ns() - started) // max(1, len(chunk))

    async def _round(self, chunk: list[DmqMessage], origin: str, seen: set[bytes] | None) -> list[Outcome]:
        stages = self.stages
        outcomes, verify_ns = self._validate(chunk, seen)
        # Shielded: the store puts accepted messages in its log (readable by clients and peers)
        # before the group commit is on disk, and goes on with the commit if the caller is
        # cancelled. A connection closed meanwhile must not skip what follows, or the node holds
        # a message no MessageAccepted trace (nor metric) counts. The wait is bounded: the
        # writer answers every queued submitter, also when it is cancelled itself.
        with trio.CancelScope(shield=True):
            outcomes = await stages.commit(outcomes, origin)
        self.trace(outcomes, origin, verify_ns)
        return outcomes

    def trace(self, outcomes: Sequence[Outcome], origin: str, verify_ns: int) -> None:
        """One trace per message that was accepted or refused (not one still waiting)."""
        trace_outcomes(self.tracer, self.reactions, outcomes, origin, verify_ns)


def trace_outcomes(tracer: Tracer, reactions: ReactionPolicy, outcomes: Sequence[Outcome], origin: str,
                   verify_ns: int) -> None:
    """The trace of each outcome accepted or refused (a deferred one is neither yet), with the
    reaction its origin gets: a reject reason for a local sender, the peer reaction otherwise.
    An event no sink wants is not built (``Tracer.wants``)."""
    accepted, rejected = tracer.wants(MessageAccepted), tracer.wants(MessageRejected)
    if not (accepted or rejected):
        return
    now = tracer.now()
    emit = tracer.emit
    for outcome in outcomes:
        if outcome.deferred:
            continue
        m = outcome.message
        error = outcome.error
        if error is None:
            if accepted:
                emit(MessageAccepted(now, m.message_id, m.pool_id, len(m.raw), origin, verify_ns))
        elif rejected:
            reaction = "reject" if origin in LOCAL_ORIGINS else reactions.peer_reaction(error).value
            emit(MessageRejected(now, m.message_id, m.pool_id, len(m.raw), origin, error.show(), reaction))


# Re-exported for callers that catch decode failures without importing the codec.
MessageDecodeError = MessageDecodeError
