"""The one way into the mempool: decode, de-duplicate, validate, append durably, trace.

Local submission (protocol 14) and node-to-node pulls (protocol 11) both hand received
bytes to :class:`Ingress`; only the *reply* differs, and that is a table lookup on the
error (``dmq.validation.reactions``), never a branch per caller (docs/architecture.md
principle 4). Validation and the in-memory append run without a checkpoint between them,
so two concurrent submitters can never both pass the duplicate or rate-limit check for the
same message or pool; only the wait for the disk commit is shared between them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from dmq.codec import MessageDecodeError, decode_message
from dmq.mempool import DurableMempool, Mempool
from dmq.message import DmqMessage
from dmq.trace import MessageAccepted, MessageRejected, Tracer
from dmq.validation import Outcome, PeerReaction, ReactionPolicy, SigValidationError, Validator

__all__ = ["Ingress", "BatchVerdict"]


@dataclass(frozen=True, slots=True)
class BatchVerdict:
    """What happened to a node-to-node batch, and whether the peer must be disconnected."""

    outcomes: list[Outcome]
    disconnect: SigValidationError | None

    @property
    def accepted(self) -> int:
        return sum(1 for o in self.outcomes if o.accepted)


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
    ) -> None:
        self.mempool = mempool
        self.validator = validator
        self.tracer = tracer
        self.allow_legacy = allow_legacy
        self.reactions = reactions

    def decode(self, raw: bytes) -> DmqMessage:
        """Strict decode (docs/protocol/message.md 5.2); a failure is a protocol error for the caller."""
        return decode_message(raw, allow_legacy=self.allow_legacy)

    async def submit_local(self, raw: bytes) -> SigValidationError | None:
        """One local submission: None when accepted and durable, else the error.

        Raises :class:`~dmq.codec.MessageDecodeError` for bytes that are not a message.
        """
        message = self.decode(raw)
        outcomes = await self._admit([message], origin="local")
        return outcomes[0].error

    async def submit_from_peer(self, raws: Sequence[bytes], peer: str) -> BatchVerdict:
        """One ``MsgReplySigs`` batch from a peer, processed atomically (docs/protocol/validation.md 6.1).

        Decode failures raise :class:`~dmq.codec.MessageDecodeError` (a protocol error:
        the connection closes). The verdict names the first error whose reaction is to
        disconnect; accepted messages of the batch are kept either way.
        """
        messages = [self.decode(raw) for raw in raws]
        outcomes = await self._admit(messages, origin=peer)
        disconnect = None
        for outcome in outcomes:
            if outcome.error is not None and self.reactions.peer_reaction(outcome.error) is PeerReaction.DISCONNECT:
                disconnect = outcome.error
                break
        return BatchVerdict(outcomes, disconnect)

    async def _admit(self, messages: list[DmqMessage], origin: str) -> list[Outcome]:
        started = time.perf_counter_ns()
        outcomes = self.validator.process_batch(messages, self.mempool.contains)
        per_message_ns = (time.perf_counter_ns() - started) // max(1, len(messages))
        accepted = [o.message for o in outcomes if o.accepted]
        if accepted:
            state = self.validator.state
            updates = {}
            for message in accepted:
                exported = state.export_pool(message.pool_id)
                if exported is not None:
                    updates[message.pool_id.hex()] = exported
            if isinstance(self.mempool, DurableMempool):
                await self.mempool.submit(accepted, pool_state_updates=updates)
            else:
                self.mempool.append(accepted)
        now = self.tracer.now()
        for outcome in outcomes:
            m = outcome.message
            if outcome.error is None:
                self.tracer.emit(MessageAccepted(now, m.message_id, m.pool_id, m.size, origin, per_message_ns))
            else:
                reaction = "reject" if origin == "local" else self.reactions.peer_reaction(outcome.error).value
                self.tracer.emit(MessageRejected(now, m.message_id, m.pool_id, m.size, origin,
                                                 outcome.error.show(), reaction))
        return outcomes


# Re-exported for callers that catch decode failures without importing the codec.
MessageDecodeError = MessageDecodeError
