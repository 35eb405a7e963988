"""What the node signs for its pool in a topic, beyond the honest creator's rules (docs/topics-design.md 5.8).

The honest creator (:mod:`.creator`) never makes its pool equivocate *from its own state*.
Two misconfigurations defeat that state, and this module guards against both:

* **A block of the pool that this node did not sign.** A second node holding the same pool
  key (a warm standby started beside the active node), or this node running on a database
  older than the pool's history in a topic (a restored backup), would sign sequence numbers
  the pool has already used: the pool would be proven an equivocator and shut out of the
  topic for good (5.5). Every block of the node's pool that comes from a peer (directly or
  carried) is checked against the ``chain`` database before it is recorded: one whose id is
  not there for its ``(topic, seq)`` was signed elsewhere. The node then **stops signing for
  its pool in that topic**, durably (``meta`` ``halt``), traces it at error level
  (``TopicSigningStopped``, with what the operator must do), and counts it
  (``dmq_node_blocklace_signing_stopped_topics``, ``dmq_node_blocklace_foreign_own_blocks``).
  Every later client draft of the topic is refused ``signing_stopped``; the block itself is
  accepted as any node accepts a valid block of a pool, so this node's view stays that of
  the network. The operator stops the other node (or restores the newest database), then
  clears the stop with ``dmq topic blocklace resume-signing`` while this node is stopped.
* **A crash between a draft's commit and its answer.** The client did not hear back, and
  retries. A draft may carry a **draft id** in its ``seq`` field (a block with ``seq`` above 0
  and no pointers is never a valid block, so it is unambiguous): the block the draft became
  is recorded with the id in the commit that stores the block (``meta`` ``draft``), and a
  draft with the same id and the same bytes is answered with that block instead of a second
  one; the same id with other bytes is ``conflict``. Records are kept for a day (P).

Traces are emitted from the event loop (:meth:`OwnSigning.take_traces`), not from the commit
transaction, which runs in a worker thread.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from dmq.codec import decode_message
from topics.adapter import AdapterTxn, AlreadyPublished, Reject, StoreView
from topics.reasons import CONFLICT, SIGNING_STOPPED

from . import store
from .codec import Block
from .lace import Held

__all__ = ["OwnSigning", "DRAFT_KEEP", "RESUME_COMMAND", "operator_action"]

#: How long the block a draft became is remembered for retries, in seconds (P).
DRAFT_KEEP = 86_400
RESUME_COMMAND = "dmq topic blocklace resume-signing"


def operator_action(topic: bytes) -> str:
    """What the operator must do once the node stopped signing in ``topic``."""
    return (f"another node signs with this pool's key, or this database is older than the pool's history in "
            f"topic {topic.hex()}: stop the other node (or restore the newest database), then, with this node "
            f"stopped, run `{RESUME_COMMAND} --database-path <DatabasePath> --topic {topic.hex()}`")


def _digest(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=32).digest()


@dataclass(frozen=True, slots=True)
class Stopped:
    """A stop to trace: the topic, and the block of the pool this node did not sign."""

    topic: bytes
    block: bytes
    seq: int


class OwnSigning:
    """The stops and draft records of one Blocklace adapter (a cache of ``meta``)."""

    def __init__(self) -> None:
        self.pool_id: bytes | None = None
        self.halted: dict[bytes, store.Halt] = {}
        #: Blocks of the pool seen that this node did not sign, since start.
        self.foreign = 0
        #: (topic, seq) of a block being built -> (draft id, hash of the draft's body, hash of
        #: the block's body): a block refused after it was built leaves an entry that only
        #: the same block can use
        self._building: dict[tuple[bytes, int], tuple[int, bytes, bytes]] = {}
        self._traces: list[Stopped] = []

    def load(self, view: StoreView) -> None:
        self.halted = {halt.topic: halt for halt in store.halts(view)}

    # -- before signing -----------------------------------------------------------------------

    def refusal(self, view: StoreView, draft: Block, body: bytes) -> Reject | AlreadyPublished | None:
        """Why the node will not build a block of ``draft`` (encoded as ``body``), or the block
        a retry of it already became; None: build it."""
        if draft.topic in self.halted:
            return Reject(SIGNING_STOPPED, operator_action(draft.topic))
        if draft.seq and not draft.ptrs:
            found = store.draft(view, draft.topic, draft.seq)
            if found is not None:
                block, digest = found
                if digest == _digest(body):
                    return AlreadyPublished(block)
                return Reject(CONFLICT, f"draft id {draft.seq} was used for another draft of the topic")
        return None

    def building(self, draft: Block, body: bytes, seq: int, built: bytes) -> None:
        """The block of ``draft`` (encoded as ``body``) gets sequence number ``seq``; its body
        is ``built``."""
        if draft.seq and not draft.ptrs:
            self._building[(draft.topic, seq)] = (draft.seq, _digest(body), _digest(built))
        else:
            self._building.pop((draft.topic, seq), None)

    # -- inside a commit ------------------------------------------------------------------------

    def recording(self, txn: AdapterTxn, held: Held, own: bool, now: int) -> None:
        """Before ``held`` is written: remember the draft an own block came from, or stop
        signing in its topic if it is a block of the pool that this node did not sign."""
        if self.pool_id is None or held.creator != self.pool_id:
            return
        topic, seq = held.block.topic, held.block.seq
        if own:
            draft = self._building.pop((topic, seq), None)
            if draft is not None and draft[2] == _digest(decode_message(held.raw).body):
                store.put_draft(txn, topic, draft[0], held.id, draft[1], now)
            return
        if held.id in store.chain_ids(txn, topic, self.pool_id, seq):
            return                  # a block this node made, coming back (a carry)
        self.foreign += 1
        if topic not in self.halted:
            halt = store.Halt(topic, held.id, seq, now)
            store.put_halt(txn, halt)
            self.halted[topic] = halt
            self._traces.append(Stopped(topic, held.id, seq))

    def take_traces(self) -> list[Stopped]:
        traces, self._traces = self._traces, []
        return traces

    def prune(self, txn: AdapterTxn, now: float) -> None:
        store.drop_drafts_before(txn, now - DRAFT_KEEP)
