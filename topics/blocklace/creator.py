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
* the other pointers, up to ``maxPointers - 1``, written in ascending order: what an Epoch
  message names (the acknowledged proposal, the blocks a proposal's draft cuts); then, when
  these do not hold the certificate of the latest final epoch, the blocks that bring the most
  of its acknowledgements (:func:`toward_final`: with more electors than pointers the leaves
  alone would leave the block an epoch behind); then current leaves, Epoch blocks first,
  then the oldest;
* ``epoch``: the highest epoch certified in the causal past of those pointers, and the floor
  bits the epoch rule asks for (5.7): an opening block marks its older pointers; any other
  block keeps only pointers of its own epoch.

The pool's first block in a topic (``seq`` 0, no self-parent) also carries the pool id as a
content tag, after the client's: without it two pools could sign byte-identical first blocks
(acknowledgements of one proposal over the same leaves, in the same second), and the DMQ id,
which does not cover the signer, would name two blocks. Later blocks differ by their
self-parents.

An Epoch draft (docs/topics-design.md 5.7) is completed to agree with the block it is in: a
proposal opens the epoch after the block's own, names the advertisement in force and cuts
the pointers of the block's epoch; an acknowledgement points to the proposal it names and
copies its number, attempt and advertisement version. One Epoch block per ``(epoch,
attempt)`` and pool: a second one is ``conflict``, since it would be a double vote (5.5).

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

import math

from dmq.codec import decode_message
from topics.adapter import AlreadyPublished, Reject, StoreView
from topics.reasons import CONFLICT, MALFORMED

from . import store
from .codec import EPOCH, MAX_CUT, MAX_POINTERS, MAX_TAGS, Block, EpochMsg, Payload, encode_block
from .lace import Lace
from .reasons import BlocklaceReject

__all__ = ["is_draft", "draft_body", "build_own_block", "complete_block", "toward_final", "waiting", "absorbing"]


def is_draft(block: Block) -> bool:
    """A block whose creator fields are left to the node: ``epoch, ptrs, floorMask = 0, [], 0``;
    its ``seq`` is 0 or the client's draft id (a block with ``seq`` above 0 and no self-parent
    is never valid, so a draft id cannot be mistaken for a block, :mod:`.signing`)."""
    return block.epoch == 0 and not block.ptrs and block.floor_mask == 0


def draft_body(topic: bytes, payload: Payload, tags: tuple[bytes, ...] = (), draft_id: int = 0) -> bytes:
    """The body of a draft of ``payload`` in ``topic``: the node fills in the rest. A
    ``draft_id`` above 0 makes a retry of the same body get the block it already became."""
    return encode_block(Block(topic, draft_id, 0, (), 0, payload, tags))


def build_own_block(lace: Lace, view: StoreView, pool: bytes, block: Block,
                    body: bytes, gathering: bool = False) -> bytes | Reject | AlreadyPublished:
    """The body the node signs for a client's Blocklace block ``block`` (encoded as ``body``);
    ``gathering``: an Ack that gathers a final epoch's certificate (:mod:`.gathering`)."""
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
    built = complete_block(lace, pool, seq, parent, block, gathering)
    if isinstance(built, Reject):
        return built
    try:
        return encode_block(built)
    except BlocklaceReject as exc:
        return Reject(exc.reason, exc.detail)


def complete_block(lace: Lace, pool: bytes, seq: int, parent: bytes | None, block: Block,
                   gathering: bool = False) -> Block | Reject:
    """The block ``pool`` makes of the draft ``block`` as its number ``seq`` after ``parent``:
    pointers, epoch and floor bits from ``lace``, an Epoch message completed (5.7, 5.8). A
    ``gathering`` block points first to the blocks that wait for the latest final epoch
    (:func:`waiting`), then to its certificate."""
    payload, tags = block.payload, block.tags
    if seq == 0 and pool not in tags:
        # A first block has no self-parent: two pools acknowledging one proposal over the same
        # leaves in the same second would sign identical bodies, hence one DMQ id (it does not
        # cover the signer) for two blocks. The pool's id as a tag tells them apart.
        if len(tags) >= MAX_TAGS:
            return Reject(MALFORMED, f"the pool's first block in a topic carries its pool id as a tag: "
                                     f"at most {MAX_TAGS - 1} tags of its own")
        tags = tags + (pool,)
    acked = payload.epoch.acked if payload.type == EPOCH and not payload.epoch.is_proposal else None
    if acked is not None and acked not in lace.blocks:
        return Reject(MALFORMED, "the acknowledged proposal is not held here")
    # What the Epoch message names must be in the block's past: the proposal it acknowledges,
    # the blocks a proposal's draft cuts (each checked by _cut below).
    required = (acked,) if acked is not None else ()
    if payload.type == EPOCH and payload.epoch.is_proposal and payload.epoch.cut:
        required = tuple(c for c in payload.epoch.cut if c in lace.blocks)
    ptrs = _pointers(lace, block.topic, parent, required, gathering)
    draft = Block(block.topic, seq, 0, tuple(ptrs), 0, payload, tags)
    _, _, epoch, _ = lace.summarize(draft, pool, None)
    opening = parent is None or not lace.holds(parent) or lace.epoch_of(parent) < epoch
    if not opening:
        ptrs = ptrs[:1] + [p for p in ptrs[1:] if lace.epoch_of(p) >= epoch]
    mask = 0
    if opening:
        for i, p in enumerate(ptrs):
            if not lace.holds(p) or lace.epoch_of(p) < epoch:
                mask |= 1 << i
    if payload.type == EPOCH:
        _, ads, _, _ = lace.summarize(Block(block.topic, seq, epoch, tuple(ptrs), mask, payload, tags),
                                      pool, None)
        filled = _epoch_message(lace, block.topic, pool, payload.epoch, ptrs, epoch, ads)
        if isinstance(filled, Reject):
            return filled
        payload = Payload(EPOCH, epoch=filled)
    return Block(block.topic, seq, epoch, tuple(ptrs), mask, payload, tags)


def _epoch_message(lace: Lace, topic: bytes, pool: bytes, message: EpochMsg, ptrs: list[bytes], epoch: int,
                   ads: frozenset[bytes]) -> EpochMsg | Reject:
    """The Epoch message of a block of ``epoch`` with pointers ``ptrs`` (5.7), or why the pool
    may not send it."""
    state = lace.topic(topic)
    if message.is_proposal:
        ad = lace.ad_in_force(topic, ads)
        if ad is None:
            return Reject(MALFORMED, "no advertisement in the block's causal past")
        if message.number <= state.final:
            return Reject(CONFLICT, f"epoch {message.number} is final here already")
        refused = _disagreement(message, epoch + 1, message.attempt, ad.version)
        if refused is not None:
            return refused
        cut = _cut(lace, message.cut or (), ptrs, epoch)
        if isinstance(cut, Reject):
            return cut
        filled = EpochMsg(epoch + 1, message.attempt, ad.version, cut, message.stake_epoch)
    else:
        proposal = lace.blocks[message.acked].block.payload.epoch
        refused = _disagreement(message, proposal.number, proposal.attempt, proposal.ad_version)
        if refused is not None:
            return refused
        filled = EpochMsg(proposal.number, proposal.attempt, proposal.ad_version, acked=message.acked)
    if (pool, filled.number, filled.attempt) in state.votes:
        return Reject(CONFLICT, f"this node's pool already voted in epoch {filled.number} attempt {filled.attempt}")
    return filled


def _disagreement(message: EpochMsg, number: int, attempt: int, ad_version: int) -> Reject | None:
    """The draft's epoch number, attempt and advertisement version must be those the block
    will carry: a client's option is honoured or refused, never replaced."""
    for name, given, wanted in (("number", message.number, number), ("attempt", message.attempt, attempt),
                                ("advertisement version", message.ad_version, ad_version)):
        if given != wanted:
            return Reject(MALFORMED, f"the draft's epoch {name} is {given}, the block's would be {wanted}")
    return None


def _cut(lace: Lace, asked: tuple[bytes, ...], ptrs: list[bytes], epoch: int) -> tuple[bytes, ...] | Reject:
    """The proposal's cut: the blocks the draft names, each a block of ``epoch`` held here
    (else the draft is refused), then the block's own pointers of that epoch, at most 16."""
    for ident in asked:
        if not lace.holds(ident) or lace.epoch_of(ident) != epoch:
            return Reject(MALFORMED, f"cut block {ident.hex()} is not a block of epoch {epoch} held here")
    own = [p for p in sorted(ptrs) if p not in asked and lace.holds(p) and lace.epoch_of(p) == epoch]
    cut = sorted([*asked, *own[:max(0, MAX_CUT - len(asked))]])
    if not cut:
        return Reject(MALFORMED, f"no block of epoch {epoch} to cut")
    return tuple(cut)


def _pointers(lace: Lace, topic: bytes, parent: bytes | None, required: tuple[bytes, ...] = (),
              gathering: bool = False) -> list[bytes]:
    """The self-parent, then ``required``, for a ``gathering`` block the blocks that wait for
    the latest final epoch (:func:`absorbing`), the blocks that bring its certificate into the
    block's past (:func:`toward_final`), and the current leaves of ``topic`` (Epoch blocks
    first, then the oldest), in ascending order."""
    state = lace.topic(topic)
    ad = lace.ad_version(topic, max(state.ads, default=-1))
    room = (ad.params.max_pointers if ad is not None else MAX_POINTERS) - (parent is not None)
    chosen = [r for r in required if r != parent][:max(0, room)]
    base = ([] if parent is None else [parent]) + chosen
    if gathering:
        chosen += absorbing(lace, topic, base, room - len(chosen))
        base = ([] if parent is None else [parent]) + chosen
    chosen += toward_final(lace, topic, base, room - len(chosen))
    in_topic = [h for h in lace.blocks.values() if h.block.topic == topic]
    pointed = {p for h in in_topic for p in h.block.ptrs}
    leaves = [h for h in in_topic if h.id not in pointed and h.id != parent and h.id not in chosen]
    leaves.sort(key=lambda h: h.block.payload.type != EPOCH)       # stable: the oldest first within each
    chosen += [h.id for h in leaves]
    return ([] if parent is None else [parent]) + sorted(chosen[:max(0, room)])


def toward_final(lace: Lace, topic: bytes, base: list[bytes], room: int) -> list[bytes]:
    """Up to ``room`` blocks that, added to the pointers ``base``, bring the most
    acknowledgements of the certificate of the topic's latest final epoch F into a block's
    past, greedily (docs/topics-design.md 5.8, "Honest creator"): a block of epoch F first (it
    holds the whole certificate), else, one after the other, the block whose past holds the
    most votes for F's proposal not yet covered. Empty when ``base`` already reaches F.

    A block is in epoch F only when its past holds that certificate (5.7). With more electors
    than pointers, the acknowledgements made when F became final are more than one block can
    point to: the current leaves alone would leave every new block in F - 1, and no proposal of
    F + 1 could cut a block of F. Partial coverage is kept too: a chain of such blocks, or
    another node's block over them, completes it (:mod:`.gathering`)."""
    state = lace.topic(topic)
    final = state.final
    proposal_id = state.certificates.get(final)
    proposal = lace.blocks.get(proposal_id) if proposal_id is not None else None
    if final == 0 or proposal is None or room <= 0:
        return []
    held_base = [lace.blocks[p] for p in base if p in lace.blocks]
    if any(h.cert >= final for h in held_base):
        return []
    named = proposal.block.payload.epoch
    voters: dict[bytes, frozenset[bytes]] = {}

    def voters_of(h) -> frozenset[bytes]:
        if h.id not in voters:
            voters[h.id] = frozenset(lace.blocks[v].creator for v in h.votes
                                     if v in lace.blocks and _names(lace.blocks[v]) == proposal_id)
        return voters[h.id]

    have: set[bytes] = set()
    for h in held_base:
        have |= voters_of(h)
    candidates = [h for h in lace.blocks.values()
                  if h.block.topic == topic and h.block.epoch >= final - 1 and h.id not in base]
    picks: list[bytes] = []
    while len(picks) < room and not lace.quorum(topic, named, have, proposal_id):
        best, gain = None, 0
        for h in candidates:
            if h.id in picks:
                continue
            g = math.inf if h.cert >= final else len(voters_of(h) - have)
            if g > gain:
                best, gain = h, g
        if best is None:
            break
        picks.append(best.id)
        if best.cert >= final:
            break
        have |= voters_of(best)
    return picks


def waiting(lace: Lace, topic: bytes) -> list:
    """The blocks that wait for a block of the latest final epoch F, oldest first: non-Epoch
    blocks of epoch F - 1 that neither F's proposal nor any block of epoch F or above holds
    in its past. They were made after F's cut, and only a block of epoch F that points to
    them lets a proposal of F + 1 cut them (docs/topics-design.md 5.7)."""
    state = lace.topic(topic)
    final = state.final
    proposal = lace.blocks.get(state.certificates.get(final, b"")) if final > 0 else None
    if proposal is None:
        return []
    in_topic = [h for h in lace.blocks.values() if h.block.topic == topic]
    later = [h for h in in_topic if h.block.epoch >= final]
    return [h for h in in_topic if h.block.epoch == final - 1 and h.block.payload.type != EPOCH
            and not lace.in_past(h.id, proposal.vc) and not any(lace.in_past(h.id, x.vc) for x in later)]


def absorbing(lace: Lace, topic: bytes, base: list[bytes], room: int) -> list[bytes]:
    """Up to ``room`` blocks that bring the most waiting blocks (:func:`waiting`) not yet in
    the past of ``base`` into a block's past, greedily, the oldest first among equals."""
    held_base = [lace.blocks[p] for p in base if p in lace.blocks]
    floor = max((h.block.epoch for h in held_base[:1]), default=0)      # a non-opening block's epoch
    left = [w for w in waiting(lace, topic) if w.block.epoch >= floor
            and not any(lace.in_past(w.id, h.vc) for h in held_base)]
    picks: list[bytes] = []
    while left and len(picks) < room:
        _, _, best = max((sum(lace.in_past(w.id, c.vc) for w in left), -i, c) for i, c in enumerate(left))
        picks.append(best.id)
        left = [w for w in left if not lace.in_past(w.id, best.vc)]
    return picks


def _names(held) -> bytes | None:
    """The proposal an Epoch block votes for (itself, for a proposal)."""
    if held.block.payload.type != EPOCH:
        return None
    epoch = held.block.payload.epoch
    return held.id if epoch.is_proposal else epoch.acked
