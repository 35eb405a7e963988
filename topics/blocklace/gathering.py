"""Ack blocks that carry the certificate of a final epoch into the topic (docs/topics-design.md 5.7,
"Epoch changes by the clock").

A block is in epoch F only when the certificate of F (the proposal and acknowledgements from
a quorum of the electors) is in its causal past, and a proposal of F + 1 must cut blocks of
epoch F. The acknowledgements are made when F becomes final and nothing points to them yet;
a block points to at most ``maxPointers - 1`` of them besides its self-parent. With more
electors than that (a registration topic has 8 pointers: about 10 electors already), no block
made after F became final is in F, and the topic never changes epoch again.

So one elector, the **gatherer** of F, builds the coverage: while the topic holds no block of
epoch F and holds a block that waits for one (a non-Epoch block of epoch F - 1 that the
certificate's proposal does not have in its past: it was made too late to be cut by F), it
publishes Ack drafts, one at a time. The creator fills each with the blocks that bring the
most acknowledgements of F not yet in its past (:func:`~topics.blocklace.creator.toward_final`),
so the chain's past grows by up to ``maxPointers - 1`` votes per block, and the block that
completes the quorum is the pool's first block of epoch F (its older pointers are floor
pointers). Every block that points to it is in F too, and the proposal of F + 1 can cut it.

* The gatherer of F is the pool at index ``(F + r + s) mod n`` of the publishers with both
  the Epoch and the Ack permission (ascending pool id), where ``r`` is the attempt of F's
  proposal: at first (``s = 0``) the proposer of F, which made the certificate; ``s`` grows
  by one every ``attemptTimeout`` after the first waiting block arrived (or F became final,
  when that came later), so a gatherer that is down costs one timeout.
* A quiet topic with nothing waiting costs nothing: an epoch in which no block was made is
  still not closed (5.7).
* Cost: about ``ceil(q / (maxPointers - 1))`` Ack blocks of one pool per epoch in which a
  block waited, ``q`` the number of votes a quorum needs (fewer when other blocks already
  cover part of it); at most :func:`most_acks` per epoch and step. They are ordinary Ack
  blocks, valid under every rule of 5.3 to 5.7, spent from the pool's own token bucket.
"""

from __future__ import annotations

from .codec import ACK, EPOCH, PERM_ACK, PERM_EPOCH, Payload
from .creator import draft_body
from .lace import Lace

__all__ = ["Gathering", "most_acks"]


def most_acks(electors: int, max_pointers: int) -> int:
    """The gathering Acks one pool sends at most per epoch and step: enough to point to every
    elector's vote with ``max_pointers - 1`` others per block, and one more."""
    per_block = max(1, max_pointers - 1)
    return -(-electors // per_block) + 1


class Gathering:
    """Plans this node's gathering Acks (one draft at a time per topic)."""

    def __init__(self, lace: Lace) -> None:
        self.lace = lace
        #: (topic, epoch F, step) -> this pool's own last sequence number when each Ack was planned
        self._planned: dict[tuple[bytes, int, int], list[int]] = {}

    def plan(self, topic: bytes, pool: bytes, now: float) -> bytes | None:
        """An Ack draft to publish now in ``topic``, or None."""
        lace = self.lace
        state = lace.topic(topic)
        final = state.final
        self._planned = {k: v for k, v in self._planned.items() if k[0] != topic or k[1] >= final}
        proposal = lace.blocks.get(state.certificates.get(final, b"")) if final > 0 else None
        began = state.final_times.get(final)
        ad = lace.ad_version(topic, max(state.ads, default=-1))
        if proposal is None or began is None or ad is None:
            return None
        in_topic = [h for h in lace.blocks.values() if h.block.topic == topic]
        if any(h.block.epoch >= final for h in in_topic):
            return None                                   # the topic can change epoch already
        waiting = [h.arrival for h in in_topic if h.block.epoch == final - 1 and h.block.payload.type != EPOCH
                   and not lace.in_past(h.id, proposal.vc)]
        if not waiting:
            return None
        gatherers = sorted(p for p, perms in ad.publishers.items() if perms & PERM_EPOCH and perms & PERM_ACK)
        if pool not in gatherers:
            return None
        start = max(began, min(waiting))
        step = max(0, int((now - start) // max(1, ad.params.attempt_timeout)))
        attempt = proposal.block.payload.epoch.attempt
        if gatherers[(final + attempt + step) % len(gatherers)] != pool:
            return None
        own = max((seq for (creator, seq) in state.chain if creator == pool), default=-1)
        sent = self._planned.setdefault((topic, final, step), [])
        if own in sent or len(sent) >= most_acks(len(gatherers), ad.params.max_pointers):
            return None                                   # the last one is not in the lace yet, or enough
        sent.append(own)
        return draft_body(topic, Payload(ACK))
