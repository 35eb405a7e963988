"""The node as an honest Blocklace creator for its own pool (docs/topics-design.md 5.8 "Honest creator").

A block signed by the node's KES key is its pool's block: two different blocks with the same
``(topic, pool, seq)`` prove the pool an equivocator and shut it out of the topic for good
(5.5). Clients therefore never choose the fields that decide this. A client publishes a
**draft**, a kind 0 block whose ``seq``, ``epoch``, ``ptrs`` and ``floorMask`` are
``0, 0, [], 0``, carrying only the topic, the payload and the tags; when the publication's
turn has come (:meth:`~topics.adapter.TopicAdapter.for_signing`) the node fills them in from
its committed state:

* ``seq``: one more than the highest sequence number the pool has used in the topic, as the
  ``chain`` database records it (never pruned, so a pool silent for many epochs still counts
  on); its block with that number is the self-parent;
* the other pointers: up to ``maxPointers - 1`` current leaves of the topic, oldest first,
  then in ascending order;
* ``epoch``: the highest epoch certified in the causal past of those pointers, and the floor
  bits the epoch rule asks for (5.7): an opening block marks its older pointers; any other
  block keeps only pointers of its own epoch.

The sequence number is taken from the state committed with the pool's previous block, in
the same transaction that stored it, so a crash or restart resumes after it. A built block
that is then refused, or never committed, left no trace outside the node (only committed
messages are offered to peers or clients), so its number is given again to the next one.

Anything else a client hands over is refused unless it cannot equivocate: a body identical
to a block the pool already made is answered with that block's id (re-publication, nothing
signed); any other pre-built block is ``conflict`` when its sequence number is taken, else
``malformed``. Blocks signed by other pools (protocol 14) are theirs, not the node's.
"""

from __future__ import annotations

from dmq.codec import decode_message
from topics.adapter import AlreadyPublished, Reject, StoreView
from topics.reasons import CONFLICT, MALFORMED

from . import store
from .codec import MAX_POINTERS, Block, encode_block
from .lace import Lace
from .reasons import BlocklaceReject

__all__ = ["is_draft", "build_own_block"]


def is_draft(block: Block) -> bool:
    """A block whose creator fields are left to the node: ``seq, epoch, ptrs, floorMask = 0, 0, [], 0``."""
    return block.seq == 0 and block.epoch == 0 and not block.ptrs and block.floor_mask == 0


def build_own_block(lace: Lace, view: StoreView, pool: bytes, block: Block,
                    body: bytes) -> bytes | Reject | AlreadyPublished:
    """The body the node signs for a client's Blocklace block ``block`` (encoded as ``body``)."""
    for ident in store.chain_ids(view, block.topic, pool, block.seq):
        held = lace.blocks.get(ident)
        if held is not None and decode_message(held.raw).body == body:
            return AlreadyPublished(ident)
    if not is_draft(block):
        if store.chain_ids(view, block.topic, pool, block.seq):
            return Reject(CONFLICT, f"this node's pool already made block {block.seq} of the topic")
        return Reject(MALFORMED, "the node chooses seq, epoch, pointers and floorMask: publish a draft "
                                 "(seq 0, epoch 0, no pointers, floorMask 0)")
    last = store.last_seq(view, block.topic, pool)
    seq, parent = (0, None) if last is None else (last[0] + 1, last[1][0])
    ptrs = _pointers(lace, block.topic, parent)
    draft = Block(block.topic, seq, 0, tuple(ptrs), 0, block.payload, block.tags)
    _, _, epoch, _ = lace.summarize(draft, pool, None)
    opening = parent is None or not lace.holds(parent) or lace.epoch_of(parent) < epoch
    if not opening:
        ptrs = ptrs[:1] + [p for p in ptrs[1:] if lace.epoch_of(p) >= epoch]
    mask = 0
    if opening:
        for i, p in enumerate(ptrs):
            if not lace.holds(p) or lace.epoch_of(p) < epoch:
                mask |= 1 << i
    try:
        return encode_block(Block(block.topic, seq, epoch, tuple(ptrs), mask, block.payload, block.tags))
    except BlocklaceReject as exc:
        return Reject(exc.reason, exc.detail)


def _pointers(lace: Lace, topic: bytes, parent: bytes | None) -> list[bytes]:
    """The self-parent, then the oldest current leaves of ``topic`` in ascending order."""
    state = lace.topic(topic)
    ad = lace.ad_version(topic, max(state.ads, default=-1))
    room = (ad.params.max_pointers if ad is not None else MAX_POINTERS) - (parent is not None)
    in_topic = [h for h in lace.blocks.values() if h.block.topic == topic]
    pointed = {p for h in in_topic for p in h.block.ptrs}
    leaves = [h.id for h in in_topic if h.id not in pointed and h.id != parent][:max(0, room)]
    return ([] if parent is None else [parent]) + sorted(leaves)
