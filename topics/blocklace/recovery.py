"""What a Blocklace node publishes by itself: needs, carries and proof notices (docs/topics-design.md 2.8, 5.4, 5.5).

DMQ cannot address a request to one node, so history travels by solicited re-publication:

* a block pending for T = 15 s makes the node publish a ``need`` for up to 16 missing ids
  (one outstanding request per id, retried after 60 s, 3 times);
* a node holding a needed block answers with a ``carry`` of the complete original message
  after a uniform delay in [0, 5 s) (no delay for relays named in the advertisement), unless
  R = 2 answers for that (need, id) were already accepted;
* a node that lacks history asks for **anchors** (5.8): a block pending with an epoch above
  the node's F means final epochs it holds no certificate for, whose past holders may have
  pruned. It publishes a ``need`` with field 2 (and the ids it misses, up to 16): after
  JOIN_WAIT when it never saw the topic change epoch (a late joiner: waiting longer cannot
  help, diffusion only brings unexpired blocks), after T otherwise (the missing blocks are
  usually on their way), retried like any need while F stays below that epoch; holders
  answer with the latest advertisement and the certificate of their F;
* a node that proves an equivocation announces it once with a ``proofNotice`` after a
  random delay, unless a notice for the same pair was accepted meanwhile; a receiver missing
  one of the two blocks wants it like any missing pointer, but at once.

This module only plans; :meth:`Recovery.due` returns the bodies the node's publisher signs
and submits (nodes without a signer plan nothing). Plans are in memory: after a restart the
pending buffer is empty too, and arrivals plan again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from topics.adapter import StoreView

from . import store
from .codec import MAX_NEED_IDS, Carry, Need, Proof, ProofNotice, encode_carry, encode_need, encode_proof_notice
from .lace import Lace

__all__ = ["Recovery", "PENDING_WAIT", "JOIN_WAIT", "RETRY_AFTER", "RETRIES", "ANSWER_DELAY", "ANSWERS_PER_ITEM",
           "REQUEST_LIFETIME", "notice_key"]

PENDING_WAIT = 15.0        # T (P)
JOIN_WAIT = 2.0            # (P) a node holding nothing of the topic asks for anchors after this
RETRY_AFTER = 60.0         # (P)
RETRIES = 3                # (P)
ANSWER_DELAY = 5.0         # (P)
ANSWERS_PER_ITEM = 2       # R (P)
REQUEST_LIFETIME = 120     # (P)


def notice_key(topic: bytes, kind: int, culprit: bytes, a: bytes, b: bytes) -> bytes:
    return topic + bytes([kind]) + culprit + min(a, b) + max(a, b)


@dataclass(slots=True)
class _Wanted:
    topic: bytes
    since: float
    sent: int = 0
    last: float = float("-inf")


@dataclass(slots=True)
class _Anchors:
    epoch: int                  # the highest epoch seen on a pending block
    since: float
    joining: bool               # the topic never changed epoch here when first wanted
    sent: int = 0
    last: float = float("-inf")
    asked: int = 0              # ``epoch`` when the last need went out: what its answers must reach


@dataclass(order=True, slots=True)
class _Answer:
    due: float
    need: bytes = field(compare=False)
    item: bytes = field(compare=False)


class Recovery:
    """The node's plans of needs, answers and notices."""

    def __init__(self, lace: Lace, *, pending_wait: float = PENDING_WAIT, answer_delay: float = ANSWER_DELAY,
                 seed: int | None = None) -> None:
        self.lace = lace
        self.pending_wait = pending_wait
        self.answer_delay = answer_delay
        self.can_publish = False
        self.pool_id: bytes | None = None
        self._rng = random.Random(seed)
        self.wanted: dict[bytes, _Wanted] = {}
        self.anchors_wanted: dict[bytes, _Anchors] = {}
        self._answers: list[_Answer] = []
        self._notices: dict[bytes, tuple[float, ProofNotice]] = {}
        self._noticed: set[bytes] = set()

    # -- what arrivals tell us --------------------------------------------------------------

    def want(self, topic: bytes, ids, now: float, urgent: bool = False) -> None:
        """Pointers a pending block waits for (``urgent``: named by a proof notice)."""
        since = now - self.pending_wait if urgent else now
        for ident in ids:
            if not self.lace.holds(ident) and ident not in self.wanted:
                self.wanted[ident] = _Wanted(topic, since)

    def want_anchors(self, topic: bytes, epoch: int, now: float, joining: bool) -> None:
        """A block of ``epoch``, above this node's F, waits for pointers (5.8)."""
        wanted = self.anchors_wanted.get(topic)
        if wanted is None:
            self.anchors_wanted[topic] = _Anchors(epoch, now, joining)
        elif epoch > wanted.epoch:
            wanted.epoch = epoch

    def checkpointed(self, topic: bytes) -> None:
        """A checkpoint was taken: what the topic's blocks missed below it is no longer wanted
        (blocks checked again want what they still miss)."""
        self.anchors_wanted.pop(topic, None)
        for ident in [i for i, w in self.wanted.items() if w.topic == topic]:
            del self.wanted[ident]

    def arrived(self, ident: bytes) -> None:
        self.wanted.pop(ident, None)

    def requested(self, need_id: bytes, need: Need, relays: bool, own: bool, now: float) -> None:
        """A need was accepted: plan an answer for each requested block this node holds."""
        if not self.can_publish or own:
            return
        items = [i for i in need.ids if i in self.lace.blocks]
        if need.anchors:
            # The asker takes the first certificate it can assemble from the answers as its
            # checkpoint. Asked-for blocks below F could make up an older certificate than
            # the one of F and win that race, and blocks of that older epoch pointing into
            # the history pruned here would then wait at the asker for ever: send it only
            # what a checkpoint at F lets it use (5.8).
            final = self.lace.topic(need.topic).final
            items = [i for i in items if self.lace.blocks[i].block.epoch >= final]
            items += sorted(self.lace.anchors(need.topic) - set(items))
        for item in items:
            delay = 0.0 if relays else self._rng.uniform(0.0, self.answer_delay)
            self._answers.append(_Answer(now + delay, need_id, item))

    def proven(self, proof: Proof, now: float) -> None:
        """A proof was produced here: plan its notice."""
        if not self.can_publish:
            return
        a, b = _id_of(proof.a), _id_of(proof.b)
        key = notice_key(proof.topic, proof.kind, proof.culprit, a, b)
        if key in self._noticed or key in self._notices:
            return
        notice = ProofNotice(proof.topic, proof.kind, proof.culprit, a, b)
        self._notices[key] = (now + self._rng.uniform(0.0, self.answer_delay), notice)

    def noticed(self, notice: ProofNotice) -> None:
        """A notice was accepted (ours or another node's): do not announce the same pair."""
        key = notice_key(notice.topic, notice.kind, notice.culprit, notice.a, notice.b)
        self._noticed.add(key)
        self._notices.pop(key, None)

    # -- what to publish ---------------------------------------------------------------------

    def due(self, view: StoreView, now: float) -> list[bytes]:
        """Bodies to publish now, answers first (docs/topics-design.md 2.7 priorities), then needs, then notices."""
        if not self.can_publish:
            return []
        return self._due_answers(view, now) + self._due_anchors(now) + self._due_needs(now) + self._due_notices(now)

    def _due_answers(self, view: StoreView, now: float) -> list[bytes]:
        out, waiting = [], []
        seen: set[tuple[bytes, bytes]] = set()
        for answer in sorted(self._answers):
            if answer.due > now:
                waiting.append(answer)
                continue
            req = store.request(view, answer.need)
            held = self.lace.blocks.get(answer.item)
            if req is None or req.expires_at < now or held is None or (answer.need, answer.item) in seen:
                continue
            if store.answers(view, answer.need, answer.item) >= ANSWERS_PER_ITEM:
                continue
            seen.add((answer.need, answer.item))
            out.append(encode_carry(Carry(answer.need, held.raw)))
        self._answers = waiting
        return out

    def _due_anchors(self, now: float) -> list[bytes]:
        """Needs with field 2, each with the topic's missing ids that fit (5.8)."""
        out = []
        for topic, w in list(self.anchors_wanted.items()):
            if self.lace.topic(topic).final >= w.epoch or w.sent > RETRIES:
                del self.anchors_wanted[topic]
                continue
            wait = JOIN_WAIT if w.joining else self.pending_wait
            if now - w.since < wait or now - w.last < RETRY_AFTER:
                continue
            ids = sorted(i for i, x in self.wanted.items() if x.topic == topic and not self.lace.holds(i))
            ids = ids[:MAX_NEED_IDS]
            out.append(encode_need(Need(topic, tuple(ids), anchors=True)))
            w.sent, w.last, w.asked = w.sent + 1, now, w.epoch
            for ident in ids:
                self.wanted[ident].sent += 1
                self.wanted[ident].last = now
        return out

    def _due_needs(self, now: float) -> list[bytes]:
        by_topic: dict[bytes, list[bytes]] = {}
        for ident, w in list(self.wanted.items()):
            if self.lace.holds(ident):
                del self.wanted[ident]
                continue
            if now - w.since < self.pending_wait or now - w.last < RETRY_AFTER or w.topic in self.anchors_wanted:
                continue                    # (while anchors are wanted, ids ride in their need)
            if w.sent > RETRIES:
                del self.wanted[ident]
                continue
            by_topic.setdefault(w.topic, []).append(ident)
        out = []
        for topic, ids in by_topic.items():
            ids.sort()
            for start in range(0, len(ids), MAX_NEED_IDS):
                chunk = ids[start:start + MAX_NEED_IDS]
                out.append(encode_need(Need(topic, tuple(chunk))))
                for ident in chunk:
                    self.wanted[ident].sent += 1
                    self.wanted[ident].last = now
        return out

    def _due_notices(self, now: float) -> list[bytes]:
        out = []
        for key, (due, notice) in list(self._notices.items()):
            if due <= now:
                del self._notices[key]
                self._noticed.add(key)
                out.append(encode_proof_notice(notice))
        return out


def _id_of(raw: bytes) -> bytes:
    from dmq.codec import decode_message

    return decode_message(raw).message_id
