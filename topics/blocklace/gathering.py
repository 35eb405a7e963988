"""Ack blocks that carry the certificate of a final epoch into the topic (docs/topics-design.md 5.7,
"Epoch changes by the clock").

A block is in epoch F only when the certificate of F (the proposal and acknowledgements from
a quorum of the electors) is in its causal past, and a proposal of F + 1 must cut blocks of
epoch F. The acknowledgements are made when F becomes final and nothing points to them yet;
a block points to at most ``maxPointers - 1`` of them besides its self-parent. With more
electors than that (a registration topic has 8 pointers: about 10 electors already), no block
made after F became final is in F, and the topic never changes epoch again.

So one elector, the **gatherer** of F, builds the coverage. While its own chain is not in F
yet and some block **waits** for F (:func:`~topics.blocklace.creator.waiting`: a non-Epoch
block of epoch F - 1 that neither F's proposal nor any block of epoch F has in its past; it
was made too late to be cut by F), it publishes Ack drafts, one at a time. The node builds
each as a gathering block (:func:`~topics.blocklace.creator.complete_block`): after its
self-parent, the waiting blocks first (greedily, those that bring the most of them into its
past), so that the proposal of F + 1 cuts them too, then the blocks that bring the most
acknowledgements of F not yet in its past (:func:`~topics.blocklace.creator.toward_final`).
The chain's past grows by up to ``maxPointers - 1`` blocks each time, and the block that
completes the quorum is the pool's first block of epoch F (its older pointers are floor
pointers). Every block that points to it is in F too, and the proposal of F + 1 can cut it.

* The gatherer of F is the first pool, from index ``(F + r + s) mod n`` on, of the publishers
  with both the Epoch and the Ack permission (ascending pool id) whose latest block is not in
  F yet, where ``r`` is the attempt of F's proposal: at first (``s = 0``) the proposer of F,
  which made the certificate; ``s`` grows by one every ``attemptTimeout`` after the first
  waiting block arrived (or F became final, when that came later), so a gatherer that is
  down costs one timeout. Once a gatherer's chain is in F its blocks may not point below F,
  so a block that arrives later (made by a node that had not received the gatherer's block
  yet) is gathered by the next pool in the rotation, whose opening block of F may.
* A quiet topic with nothing waiting costs nothing: an epoch in which no block was made is
  still not closed (5.7).
* Cost: about ``ceil((w + q) / (maxPointers - 1))`` Ack blocks of one pool per epoch in which
  blocks waited, ``q`` the votes a quorum needs besides the gatherer's own and ``w`` the
  waiting blocks that no other waiting block points to (fewer: waiting blocks bring votes
  too); at most :func:`most_acks` of ``2 n`` per epoch and step. They are ordinary Ack blocks,
  valid under every rule of 5.3 to 5.7, spent from the pool's own token bucket.
"""

from __future__ import annotations

from .codec import ACK, PERM_ACK, PERM_EPOCH, Payload
from .creator import draft_body, waiting
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

    def duty(self, topic: bytes, pool: bytes, now: float) -> tuple[int, int, int] | None:
        """``(F, step, most)`` when ``pool`` is the gatherer of the topic's final epoch F now
        and something waits for it (``most``: the Acks it sends at most in this step)."""
        lace = self.lace
        state = lace.topic(topic)
        final = state.final
        proposal = lace.blocks.get(state.certificates.get(final, b"")) if final > 0 else None
        began = state.final_times.get(final)
        ad = lace.ad_version(topic, max(state.ads, default=-1))
        if proposal is None or began is None or ad is None:
            return None
        gatherers = sorted(p for p, perms in ad.publishers.items() if perms & PERM_EPOCH and perms & PERM_ACK)
        if pool not in gatherers:
            return None
        blocks = waiting(lace, topic)
        if not blocks:
            return None
        start = max(began, min(h.arrival for h in blocks))
        step = max(0, int((now - start) // max(1, ad.params.attempt_timeout)))
        first = (final + proposal.block.payload.epoch.attempt + step) % len(gatherers)
        # the first pool in the rotation whose chain is not in F yet: a chain in F may point
        # below F no more, so blocks that arrive after the gatherer entered F go to the next
        in_final = self._chains_in(topic, final)
        turn = next((p for i in range(len(gatherers))
                     if (p := gatherers[(first + i) % len(gatherers)]) not in in_final), None)
        if turn != pool:
            return None
        return final, step, most_acks(2 * len(gatherers), ad.params.max_pointers)

    def _chains_in(self, topic: bytes, epoch: int) -> set[bytes]:
        """The pools whose latest block held here has ``epoch`` or a later one."""
        lace = self.lace
        state = lace.topic(topic)
        heads: dict[bytes, int] = {}
        for creator, seq in state.chain:
            if heads.get(creator, -1) < seq:
                heads[creator] = seq
        out = set()
        for creator, seq in heads.items():
            ident = state.chain[(creator, seq)][0]
            if lace.holds(ident) and lace.epoch_of(ident) >= epoch:
                out.add(creator)
        return out

    def plan(self, topic: bytes, pool: bytes, now: float) -> bytes | None:
        """An Ack draft to publish now in ``topic``, or None."""
        state = self.lace.topic(topic)
        self._planned = {k: v for k, v in self._planned.items() if k[0] != topic or k[1] >= state.final}
        duty = self.duty(topic, pool, now)
        if duty is None:
            return None
        final, step, most = duty
        own = max((seq for (creator, seq) in state.chain if creator == pool), default=-1)
        sent = self._planned.setdefault((topic, final, step), [])
        if own in sent or len(sent) >= most:
            return None                                   # the last one is not in the lace yet, or enough
        sent.append(own)
        return draft_body(topic, Payload(ACK))
