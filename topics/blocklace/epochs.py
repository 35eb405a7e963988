"""The node's share in closing Blocklace epochs, by the clock (docs/topics-design.md 5.7).

A node whose pool holds the Epoch permission in the latest advertisement of a topic takes
part in every epoch change of it; nobody has to hand-craft Epoch blocks. Times are the
injected clock's and the lace's arrival times (whole POSIX seconds):

* epoch F **began** when it became final here (its certificate's arrival; for F = 0, the
  arrival of the topic's first advertisement held; at a late joiner, its checkpoint);
* attempt 0 of epoch F + 1 **opens** ``epochInterval`` after that; attempt r + 1 opens
  ``attemptTimeout`` after attempt r opened, or after the first proposal of attempt r was
  delivered if that came later. Nothing is sent before attempt 0 opens, and at most one
  Epoch block per ``(epoch, attempt)`` (a second would be a double vote, 5.5);
* in the open attempt, the node **acknowledges** the first proposal of that attempt
  delivered (ties by ascending id); when none has been delivered and the pool is the
  attempt's **proposer**, it **proposes**. The proposer of ``(n, r)`` is the elector at
  index ``(n + r) mod len(electors)`` of the advertisement's electors in ascending pool
  id order: one proposal per attempt instead of every elector proposing at once (each
  proposal is its creator's vote, so simultaneous proposals split the votes and no attempt
  reaches a quorum), and a proposer that is down or slow is replaced at the next attempt;
* a proposal needs a block of epoch F to cut: a topic without one (idle since F began)
  does not change epoch until its next block;
* under the stake rule a proposal names the newest ``set`` snapshot the node's stake view
  holds (``StakeView.set_stake_at`` weighs it, :meth:`Lace.quorum_under`).
* between epoch changes, the gatherer of the latest final epoch sends the Ack blocks that
  carry its certificate into a topic whose blocks cannot reach a quorum of acknowledgements
  by themselves (:mod:`.gathering`).

The epoch becomes final where quorum acknowledgements are delivered (:class:`Lace` counts
them, both rules). This module only plans: :meth:`EpochDriver.due` returns drafts whose
creator fields, cut and pointers the node fills in when it signs them (:mod:`.creator`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .codec import EPOCH, MAX_ATTEMPT, PERM_EPOCH, EpochMsg, Payload
from .creator import draft_body
from .gathering import Gathering
from .lace import Lace

__all__ = ["EpochDriver", "StakeEpochs"]

#: The Cardano epochs whose ``set`` snapshots the node holds (``StakeView.snapshot_epochs``).
StakeEpochs = Callable[[], Sequence[int]]


class EpochDriver:
    """Plans this node's proposals and acknowledgements for every topic of the lace."""

    def __init__(self, lace: Lace, stake_epochs: StakeEpochs | None = None) -> None:
        self.lace = lace
        self.stake_epochs = stake_epochs
        self.can_publish = False
        self.pool_id: bytes | None = None
        #: (topic, epoch number, attempt) this node has planned an Epoch block for
        self._planned: set[tuple[bytes, int, int]] = set()
        #: the Ack blocks that carry a final epoch's certificate into a quiet topic
        self.gathering = Gathering(lace)

    def due(self, now: float) -> list[bytes]:
        """The Epoch drafts to publish now, else the gathering Acks (:mod:`.gathering`); one
        per topic at most."""
        if not self.can_publish or self.pool_id is None:
            return []
        out = []
        for topic in sorted(self.lace.topics):
            body = self._plan(topic, now)
            if body is None:
                body = self.gathering.plan(topic, self.pool_id, now)
            if body is not None:
                out.append(body)
        return out

    def attempt(self, topic: bytes, now: float) -> int | None:
        """The attempt open at ``now`` for the epoch after the topic's F; None before the
        interval has passed or when the topic has no advertisement or beginning here."""
        state = self.lace.topic(topic)
        ad = self._advertisement(topic)
        began = self._began(topic)
        if ad is None or began is None:
            return None
        opens = began + ad.params.epoch_interval
        if now < opens:
            return None
        number, attempt = state.final + 1, 0
        while attempt < MAX_ATTEMPT:
            delivered = state.proposals.get((number, attempt))
            base = max(opens, min(delivered)[0]) if delivered else opens
            if now < base + ad.params.attempt_timeout:
                break
            attempt, opens = attempt + 1, base + ad.params.attempt_timeout
        return attempt

    def proposer(self, topic: bytes, number: int, attempt: int) -> bytes | None:
        """The elector expected to propose ``(number, attempt)``."""
        electors = self._electors(topic)
        return electors[(number + attempt) % len(electors)] if electors else None

    # -- planning ---------------------------------------------------------------------------

    def _advertisement(self, topic: bytes):
        return self.lace.ad_version(topic, max(self.lace.topic(topic).ads, default=-1))

    def _electors(self, topic: bytes) -> list[bytes]:
        ad = self._advertisement(topic)
        return [] if ad is None else sorted(p for p, perms in ad.publishers.items() if perms & PERM_EPOCH)

    def _began(self, topic: bytes) -> int | None:
        state = self.lace.topic(topic)
        if state.final > 0:
            return state.final_times.get(state.final)
        first = state.ads.get(min(state.ads, default=-1))
        held = self.lace.blocks.get(first) if first is not None else None
        return None if held is None else held.arrival

    def _plan(self, topic: bytes, now: float) -> bytes | None:
        state = self.lace.topic(topic)
        self._planned = {k for k in self._planned if k[0] != topic or k[1] > state.final}
        if self.pool_id not in self._electors(topic):
            return None
        attempt = self.attempt(topic, now)
        if attempt is None:
            return None
        number = state.final + 1
        if (topic, number, attempt) in self._planned or (self.pool_id, number, attempt) in state.votes:
            return None
        delivered = state.proposals.get((number, attempt))
        if delivered:
            first = min(delivered)[1]
            named = self.lace.blocks[first].block.payload.epoch
            message = EpochMsg(number, attempt, named.ad_version, acked=first)
        elif self.proposer(topic, number, attempt) == self.pool_id:
            message = self._proposal(topic, number, attempt)
            if message is None:
                return None
        else:
            return None
        self._planned.add((topic, number, attempt))
        return draft_body(topic, Payload(EPOCH, epoch=message))

    def _proposal(self, topic: bytes, number: int, attempt: int) -> EpochMsg | None:
        """A proposal draft (the creator fills in its cut), or None when it cannot be made yet."""
        final = number - 1
        cut = next((h.id for h in self.lace.blocks.values() if h.block.topic == topic and h.block.epoch == final),
                   None)
        if cut is None:
            return None
        ad = self._advertisement(topic)
        stake_epoch = None
        if ad.params.quorum[0] == 1:
            held = tuple(self.stake_epochs()) if self.stake_epochs is not None else ()
            if not held:
                return None
            stake_epoch = max(held)
        return EpochMsg(number, attempt, ad.version, (cut,), stake_epoch)
