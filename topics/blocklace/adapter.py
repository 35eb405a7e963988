"""The Blocklace adapter: the hooks of docs/topics-design.md 2.4 over the lace (section 5).

* ``validate`` asks :meth:`Lace.check` (no side effect on the store): a block whose pointers
  are not all held is **deferred** on them; a block refused at closure is remembered in an
  in-memory invalid memo, so that any later block pointing to it is refused
  (``invalid_ancestor``) without waiting for pointers that will never be accepted.
* ``on_accept`` runs :meth:`Lace.accept` inside the commit transaction and returns the items:
  the block (kind 0, the original message bytes even when it came in a carry), proofs (kind 1)
  and final epochs (kind 3). The same transaction writes the block, its chain slot, proofs
  and certificates (:mod:`topics.blocklace.store`).
* needs, carries and proof notices follow solicited re-publication (2.8): a carry is accepted
  only for a held, unexpired need that asked for the block, with fewer than R answers; the
  carried message is verified offline (:func:`~topics.blocklace.proofs.carried_block`) and its
  block enters the lace as a *solicited* arrival.
* ``prune`` applies 5.8 retention: blocks below F past their expiry and epoch close become
  tombstones, tombstones go at F >= epoch + 3, expired needs go.
* late joiners (5.8): a block pending with an epoch above F makes the node want anchors
  (:mod:`.recovery`); carried anchors whose past is missing are held aside
  (:class:`~topics.blocklace.lace.Candidate`) until they prove a certificate above F
  (:meth:`Lace.checkpoint_from`). The node then takes it as its checkpoint, in the commit
  transaction of the carry that completed it, delivers the anchors and the final epoch, and
  releases the pending blocks the checkpoint satisfies (``provides``).
* ``due_publications`` also returns the epoch changes this node takes part in (:mod:`.epochs`).

The lace is a cache rebuilt from the databases at the first hook call after start.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dmq.codec import decode_message
from dmq.message import DmqMessage
from dmq.stake import MAINNET_MAX_KES_EVOLUTIONS
from topics.adapter import (
    FLAG_ANSWER,
    FLAG_LATE,
    FLAG_LOCAL,
    ITEM_EPOCH_FINAL,
    ITEM_MESSAGE,
    ITEM_PROOF,
    OK,
    Accepted,
    AdapterRuntime,
    AlreadyPublished,
    AdapterTxn,
    Defer,
    Delivery,
    DmqFacts,
    Origin,
    Priority,
    Reject,
    Start,
    StoreView,
    TopicAdapter,
    ValidationContext,
    Verdict,
)
from topics.classify import TAG_BLOCKLACE, tag_of
from topics.filters import matches
from topics.raw import message_meta
from topics.trace import TopicSigningStopped
from topics.reasons import ANSWER_QUOTA, CONFLICT, EXPIRY_EXCEEDS_BOUND, RATE_LIMITED, UNSOLICITED, RejectReason

from . import store
from .codec import ACK, AD, EPOCH, KIND_BLOCK, KIND_CARRY, KIND_NEED, KIND_PROOF_NOTICE, Block, Carry, Need, Proof, \
    ProofNotice, decode_body
from .creator import build_own_block
from .epochs import EpochDriver, StakeEpochs
from .lace import Candidate, Lace, Outcome, StakeOf
from .metrics import BlocklaceMetrics
from .node import PENDING_PER_CREATOR
from .proofs import carried_block
from .reasons import EPOCH_CLOSED, EQUIVOCATOR_EXCLUDED, STALE_STAKE_SNAPSHOT, BlocklaceReject
from .recovery import ANSWERS_PER_ITEM, REQUEST_LIFETIME, Recovery
from .signing import OwnSigning, operator_action

__all__ = ["BlocklaceAdapter", "BlocklaceInner", "ADAPTER_NUMBER", "REQUESTS_PER_WINDOW", "REQUEST_WINDOW",
           "CARRY_WAIT", "SKEW"]

ADAPTER_NUMBER = 2
REQUESTS_PER_WINDOW = 6          # (P) needs per pool per topic ...
REQUEST_WINDOW = 600             # ... per 10 minutes
CARRY_WAIT = 30.0                # (P) an answer that overtook its need waits this long
ANCHORS_HELD = 256               # (P) carried anchors held aside per topic, oldest dropped first
SKEW = 30                        # S (P)

#: Refusals that depend on when or how a block arrived, not on the block: never memoized.
_CIRCUMSTANTIAL = frozenset({EPOCH_CLOSED, EQUIVOCATOR_EXCLUDED, STALE_STAKE_SNAPSHOT})


@dataclass(frozen=True, slots=True)
class BlocklaceInner:
    """A decoded Blocklace body; a carry also holds the carried message and its block."""

    kind: int
    content: Block | Need | Carry | ProofNotice
    carried: DmqMessage | None = None
    carried_block: Block | None = None

    @property
    def topic(self) -> bytes:
        if self.carried_block is not None:
            return self.carried_block.topic
        return self.content.topic  # type: ignore[union-attr]


class BlocklaceAdapter(TopicAdapter):
    name = "blocklace"
    tag = TAG_BLOCKLACE
    number = ADAPTER_NUMBER
    databases = store.DATABASES
    pending_limit = 4096
    #: A creator whose blocks point at ids that never arrive evicts its own (5.10).
    pending_per_key = PENDING_PER_CREATOR
    convergent = True

    def __init__(self, *, stake_of: StakeOf | None = None, stake_epochs: StakeEpochs | None = None,
                 max_kes_evolutions: int = MAINNET_MAX_KES_EVOLUTIONS, seed: int | None = None,
                 pending_wait: float | None = None) -> None:
        self.lace = Lace(stake_of)
        self.max_kes_evolutions = max_kes_evolutions
        options = {} if pending_wait is None else {"pending_wait": pending_wait}
        self.recovery = Recovery(self.lace, seed=seed, **options)
        self.epochs = EpochDriver(self.lace, stake_epochs)
        #: where the node stopped signing for its pool, and the blocks clients' drafts became
        self.signing = OwnSigning()
        self.runtime: AdapterRuntime | None = None
        self._loaded = False
        #: late joining (5.8): anchors held aside per topic, the ids pending blocks wait for
        #: per topic, and those a new checkpoint satisfies (handed to ``provides``)
        self._candidates: dict[bytes, dict[bytes, Candidate]] = {}
        self._waiting_on: dict[bytes, set[bytes]] = {}
        self._released: list[bytes] = []

    def start(self, runtime: AdapterRuntime) -> None:
        self.runtime = runtime
        for planner in (self.recovery, self.epochs):
            planner.can_publish = runtime.has_signer
            planner.pool_id = runtime.pool_id
        self.signing.pool_id = runtime.pool_id

    # -- the lace as a cache of the store ---------------------------------------------------

    def _ensure_loaded(self, view: StoreView) -> None:
        """Rebuild the lace from the databases once (docs/topics-design.md 2.9: state survives restarts)."""
        if self._loaded:
            return
        self._loaded = True
        for tomb in store.tombs(view):
            self.lace.tombs[tomb.id] = tomb
        for topic, epoch, proposal, final_time in store.epochs(view):
            state = self.lace.topic(topic)
            state.certificates[epoch] = proposal
            state.final_times[epoch] = final_time
            state.final = max(state.final, epoch)
        for topic, checkpoint in store.checkpoints(view):
            self.lace.checkpoints[topic] = checkpoint
        for row in store.blocks(view):
            message = decode_message(row.raw)
            _, block = decode_body(message.body)
            self.lace.accept(message, block, row.arrival, row.solicited)
        for proof in store.proofs(view):
            self._remember_proof(proof)
        self.signing.load(view)

    def _remember_proof(self, proof: Proof) -> None:
        from .lace import proof_key

        self.lace.proofs[proof_key(proof)] = proof
        if proof.kind == 0:
            state = self.lace.topic(proof.topic)
            proven = state.excluded.get(proof.culprit)
            state.excluded[proof.culprit] = proof.where if proven is None else min(proven, proof.where)

    # -- classification and decoding --------------------------------------------------------

    def classify(self, body: bytes) -> bytes | None:
        if tag_of(body) != TAG_BLOCKLACE:
            return None
        inner = self.decode(body)
        return None if isinstance(inner, Reject) else inner.topic

    def decode(self, body: bytes) -> BlocklaceInner | Reject:
        try:
            kind, content = decode_body(body)
            if kind == KIND_CARRY:
                message, block = carried_block(content.message, self.max_kes_evolutions)
                return BlocklaceInner(kind, content, message, block)
        except BlocklaceReject as exc:
            return Reject(exc.reason, exc.detail)
        return BlocklaceInner(kind, content)

    def inner_id(self, inner: BlocklaceInner) -> bytes | None:
        return inner.carried.message_id if inner.carried is not None else None

    def provides(self, inner: BlocklaceInner) -> Iterable[bytes]:
        """A carry makes its block available to blocks deferred on it; a carry that completed
        a checkpoint also releases the blocks of its topic that were waiting, to be checked
        again under it (those still missing something wait again)."""
        released, self._released = self._released, []
        return ([] if inner.carried is None else [inner.carried.message_id]) + released

    # -- validation ---------------------------------------------------------------------------

    def validate(self, inner: BlocklaceInner, ctx: ValidationContext) -> Verdict:
        self._ensure_loaded(ctx.store)
        facts, now = ctx.facts, ctx.now
        if inner.kind == KIND_BLOCK:
            if facts.origin is not Origin.PEER and facts.pool_id == self.recovery.pool_id:
                refused = self._own_equivocation(ctx.store, facts.dmq_id, inner.content)
                if refused is not None:
                    return refused
            return self._check_block(facts.dmq_id, facts.pool_id, inner.content, False, now)
        if inner.kind == KIND_NEED:
            return self._check_need(inner.content, ctx)
        if inner.kind == KIND_CARRY:
            return self._check_carry(inner, ctx)
        return OK

    def _own_equivocation(self, view: StoreView, ident: bytes, block: Block) -> Reject | None:
        """A block of this node's pool, from a local client or the node itself, is refused when
        the pool already has another block with its sequence number, or another Epoch vote in
        its ``(epoch, attempt)``: the node never makes its own pool equivocate (a peer's copy
        is evidence and goes through as usual)."""
        taken = [i for i in store.chain_ids(view, block.topic, self.recovery.pool_id, block.seq) if i != ident]
        if taken:
            return Reject(CONFLICT, f"this node's pool already made block {block.seq} of the topic")
        state = self.lace.topics.get(block.topic)
        if block.payload.type == EPOCH and state is not None:
            vote = block.payload.epoch
            voted = state.votes.get((self.recovery.pool_id, vote.number, vote.attempt))
            if voted is not None and voted != (ident if vote.is_proposal else vote.acked):
                return Reject(CONFLICT, f"this node's pool already voted in epoch {vote.number} attempt {vote.attempt}")
        return None

    def pending_key(self, inner: BlocklaceInner, facts: DmqFacts) -> bytes | None:
        """The creator of the block that waits (a carry's carried block, else the block)."""
        return inner.carried.pool_id if inner.carried is not None else facts.pool_id

    def for_signing(self, body: bytes, inner: BlocklaceInner, view: StoreView,
                    now: float) -> bytes | Reject | AlreadyPublished:
        """A block is built by the node from the client's draft (:mod:`.creator`); needs,
        carries and proof notices are signed as they are."""
        if inner.kind != KIND_BLOCK or self.recovery.pool_id is None:
            return body
        self._ensure_loaded(view)
        refused = self.signing.refusal(view, inner.content, body)
        if refused is not None:
            return refused
        block = inner.content
        gathering = block.payload.type == ACK and self.epochs.gathering.duty(
            block.topic, self.recovery.pool_id, now) is not None
        built = build_own_block(self.lace, view, self.recovery.pool_id, block, body, gathering)
        if isinstance(built, bytes):
            self.signing.building(inner.content, body, decode_body(built)[1].seq, built)
        return built

    def discard_caches(self) -> None:
        """The lace is rebuilt from the databases at the next hook call."""
        self.lace.clear()
        self._loaded = False
        self._candidates, self._released = {}, []

    def _check_block(self, ident: bytes, creator: bytes, block: Block, solicited: bool, now: float) -> Verdict:
        if ident in self.lace.blocks:
            return OK                      # held through a carry: the direct copy may still travel
        memo = self.lace.invalid.get(ident)
        if memo is not None:
            return Reject(_reason_named(memo), "refused before")
        try:
            missing = self.lace.check(block, creator, solicited)
        except BlocklaceReject as exc:
            if exc.reason not in _CIRCUMSTANTIAL:
                self.lace.invalid[ident] = exc.reason.name
            return Reject(exc.reason, exc.detail)
        if missing:
            self.recovery.want(block.topic, missing, now)
            self._waiting_on.setdefault(block.topic, set()).update(missing)
            state = self.lace.topics.get(block.topic)
            final = 0 if state is None else state.final
            if block.epoch > final:
                # F = 0 and no checkpoint: the node never saw the topic change epoch, so it
                # has no history to lose and nothing but anchors will justify the block
                joining = final == 0 and block.topic not in self.lace.checkpoints
                self.recovery.want_anchors(block.topic, block.epoch, now, joining=joining)
            return Defer(missing)
        return OK

    def _check_need(self, need: Need, ctx: ValidationContext) -> Verdict:
        now = ctx.now
        if ctx.facts.expires_at > now + REQUEST_LIFETIME + SKEW:
            return Reject(EXPIRY_EXCEEDS_BOUND, f"a need lives at most {REQUEST_LIFETIME} s")
        recent = store.requests_since(ctx.store, ctx.facts.pool_id, need.topic, int(now) - REQUEST_WINDOW)
        if recent >= REQUESTS_PER_WINDOW:
            return Reject(RATE_LIMITED, f"{recent} needs for this topic in {REQUEST_WINDOW} s", REQUEST_WINDOW)
        return OK

    def _check_carry(self, inner: BlocklaceInner, ctx: ValidationContext) -> Verdict:
        carry: Carry = inner.content  # type: ignore[assignment]
        item = inner.carried.message_id
        req = store.request(ctx.store, carry.need)
        if req is None:
            return Defer([carry.need], max_wait=CARRY_WAIT)
        if req.expires_at < ctx.now:
            return Reject(UNSOLICITED, "the need has expired")
        block = inner.carried_block
        asked = item in req.ids or (req.anchors and block.payload.type in (AD, EPOCH))
        if not asked or block.topic != req.topic:
            return Reject(UNSOLICITED, "the carried block was not requested")
        if store.answers(ctx.store, carry.need, item) >= ANSWERS_PER_ITEM:
            return Reject(ANSWER_QUOTA, f"{ANSWERS_PER_ITEM} answers already accepted")
        if block.topic in self.recovery.anchors_wanted and self._is_candidate(item, block):
            return self._check_anchor(inner.carried.pool_id, block)
        return self._check_block(item, inner.carried.pool_id, block, True, ctx.now)

    def _is_candidate(self, item: bytes, block: Block) -> bool:
        """A carried anchor whose past is missing here (5.8). Validation lets one through only
        while the node wants anchors for its topic; the commit holds aside what got through."""
        return block.payload.type in (AD, EPOCH) and not self.lace.holds(item) and bool(self.lace.missing(block))

    def _check_anchor(self, creator: bytes, block: Block) -> Verdict:
        """An anchor passes the checks that need no past (an advertisement's owner signatures);
        its certificate is checked once the anchors are together (:meth:`Lace.checkpoint_from`)."""
        try:
            self.lace.check_ingress(block, creator, True)
        except BlocklaceReject as exc:
            return Reject(exc.reason, exc.detail)
        return OK

    def rediffuse(self, inner: BlocklaceInner) -> Iterable[DmqMessage]:
        """A carried block goes back into the store while its own lifetime lasts."""
        return () if inner.carried is None else (inner.carried,)

    def publication_priority(self, inner: BlocklaceInner) -> Priority | None:
        """Epoch blocks first, carries and proof notices as answers, needs as requests (2.7)."""
        if inner.kind == KIND_BLOCK:
            return Priority.EPOCH if inner.content.payload.type == EPOCH else None
        return Priority.REQUEST if inner.kind == KIND_NEED else Priority.ANSWER

    def bind_metrics(self, registry: Any, prefix: str) -> Any:
        """The adapter's Prometheus series in the node's registry (:mod:`.metrics`)."""
        return BlocklaceMetrics(self, registry, prefix)

    def expires_at(self, inner: BlocklaceInner, now: float) -> int:
        t = int(now)
        if inner.kind == KIND_NEED:
            return t + REQUEST_LIFETIME
        return t + 1740

    # -- acceptance ---------------------------------------------------------------------------

    def on_accept(self, message: Accepted, txn: AdapterTxn) -> Sequence[Delivery]:
        self._ensure_loaded(txn)
        inner: BlocklaceInner = message.inner
        facts = message.facts
        flags = (FLAG_LATE if message.late else 0) | (0 if facts.origin is Origin.PEER else FLAG_LOCAL)
        if inner.kind == KIND_BLOCK:
            return self._accept_block(txn, message.message, inner.content, message.arrival, False, flags,
                                      own=facts.origin is not Origin.PEER)
        if inner.kind == KIND_CARRY:
            store.count_answer(txn, inner.content.need, inner.carried.message_id)
            if self._is_candidate(inner.carried.message_id, inner.carried_block):
                return self._anchor_arrived(txn, inner.carried, inner.carried_block, message.arrival,
                                            flags | FLAG_ANSWER)
            return self._accept_block(txn, inner.carried, inner.carried_block, message.arrival, True,
                                      flags | FLAG_ANSWER)
        if inner.kind == KIND_NEED:
            need: Need = inner.content  # type: ignore[assignment]
            store.put_request(txn, facts.dmq_id, store.Request(need.topic, need.ids, need.anchors, facts.expires_at,
                                                               facts.pool_id, message.arrival))
            self.recovery.requested(facts.dmq_id, need, self._is_relay(need.topic), facts.origin is Origin.OWN,
                                    message.arrival)
            return ()
        notice: ProofNotice = inner.content  # type: ignore[assignment]
        self.recovery.noticed(notice)
        self.recovery.want(notice.topic, [notice.a, notice.b], message.arrival, urgent=True)
        return ()

    def _is_relay(self, topic: bytes) -> bool:
        pool = self.recovery.pool_id
        ad = self.lace.ad_version(topic, max(self.lace.topic(topic).ads, default=-1))
        return pool is not None and ad is not None and pool in ad.relays

    def _accept_block(self, txn: AdapterTxn, message: DmqMessage, block: Block, arrival: int, solicited: bool,
                      flags: int, *, own: bool = False) -> list[Delivery]:
        if message.message_id in self.lace.blocks:
            return []
        outcome = self.lace.accept(message, block, arrival, solicited)
        items = self._recorded(txn, outcome, flags, own=own)
        if block.payload.type == AD and block.topic in self._candidates:
            # The advertisement a held-aside certificate names may come after the certificate.
            items += self._checkpoint(txn, block.topic, arrival, flags)
        return items

    def _recorded(self, txn: AdapterTxn, outcome: Outcome, flags: int, *, own: bool = False) -> list[Delivery]:
        """Write an acceptance and return its items: the block, its proofs, its final epochs.
        ``own``: the block came from this node or its local clients, not from a peer."""
        held = outcome.held
        self.signing.recording(txn, held, own, held.arrival)
        store.write_accepted(txn, held, outcome.finals, outcome.proofs)
        self.recovery.arrived(held.id)
        items = [self._block_item(held.raw, held.creator, held.block, held.id, held.arrival, flags)]
        for proof in outcome.proofs:
            self.recovery.proven(proof, held.arrival)
            items.append(self._proof_item(proof))
        for epoch, proposal in outcome.finals:
            items.append(Delivery(ADAPTER_NUMBER, [ITEM_EPOCH_FINAL, {0: held.block.topic, 1: epoch, 2: proposal}],
                                  facets={3: frozenset({held.block.topic})}))
        return items

    def _anchor_arrived(self, txn: AdapterTxn, message: DmqMessage, block: Block, arrival: int,
                        flags: int) -> list[Delivery]:
        """Hold a carried anchor aside; when the anchors held prove a certificate above F,
        take it as the checkpoint (5.8) and deliver the anchors and the final epoch."""
        topic = block.topic
        held = self._candidates.setdefault(topic, {})
        held[message.message_id] = Candidate(message, block, arrival)
        while len(held) > ANCHORS_HELD:
            del held[next(iter(held))]
        return self._checkpoint(txn, topic, arrival, flags)

    def _checkpoint(self, txn: AdapterTxn, topic: bytes, arrival: int, flags: int) -> list[Delivery]:
        """Take the certificate the anchors held aside prove, if they do, as the checkpoint."""
        held = self._candidates[topic]
        wanted = self.recovery.anchors_wanted.get(topic)
        found = self.lace.checkpoint_from(topic, list(held.values()), 0 if wanted is None else wanted.asked)
        if found is None:
            return []
        checkpoint, anchors = found
        items = []
        for outcome in self.lace.install_checkpoint(topic, checkpoint, anchors, arrival):
            items += self._recorded(txn, outcome, flags)
        store.put_checkpoint(txn, topic, checkpoint)
        self.recovery.checkpointed(topic)
        items += self._accept_rest(txn, list(self._candidates.pop(topic).values()), flags)
        self._released = sorted(self._waiting_on.pop(topic, set()))
        return items

    def _accept_rest(self, txn: AdapterTxn, rest: list[Candidate], flags: int) -> list[Delivery]:
        """Carried blocks held aside that the checkpoint lets pass closure now; the others are
        dropped (blocks that point to them ask for them again)."""
        items: list[Delivery] = []
        progress = True
        while progress:
            progress = False
            for candidate in list(rest):
                message, block = candidate.message, candidate.block
                if message.message_id in self.lace.blocks:
                    rest.remove(candidate)
                    continue
                try:
                    if self.lace.check(block, message.pool_id, True):
                        continue
                except BlocklaceReject:
                    rest.remove(candidate)
                    continue
                rest.remove(candidate)
                items += self._recorded(txn, self.lace.accept(message, block, candidate.arrival, True), flags)
                progress = True
        return items

    @staticmethod
    def _block_item(raw: bytes, creator: bytes, block: Block, ident: bytes, arrival: int, flags: int) -> Delivery:
        meta = message_meta(ADAPTER_NUMBER, block.topic, arrival, inner_id=ident, pool=creator, flags=flags)
        return Delivery(ADAPTER_NUMBER, [ITEM_MESSAGE, meta, raw],
                        facets={3: frozenset({block.topic}), 4: frozenset({creator}), 6: frozenset(block.tags),
                                9: frozenset({KIND_BLOCK}), 10: frozenset({block.payload.type})},
                        dedup=ident)

    @staticmethod
    def _proof_item(proof: Proof) -> Delivery:
        return Delivery(ADAPTER_NUMBER, [ITEM_PROOF, proof.wire()],
                        facets={3: frozenset({proof.topic}), 9: frozenset({KIND_PROOF_NOTICE})})

    # -- subscriptions --------------------------------------------------------------------------

    def deliver(self, filters: Sequence[Mapping[int, Any]], start: Start, view: StoreView,
                now: float) -> Iterable[Delivery]:
        """``retained``: every held block in acceptance (causal) order; ``state``: the blocks of
        each topic's current epoch. Both are followed by the proofs held."""
        if start is Start.NOW:
            return []
        self._ensure_loaded(view)
        items = []
        for row in store.blocks(view):
            held = self.lace.blocks.get(decode_message(row.raw).message_id)
            if held is None:
                continue
            if start is Start.STATE and held.block.epoch < self.lace.topic(held.block.topic).final:
                continue
            flags = FLAG_ANSWER if row.solicited else 0
            items.append(self._block_item(row.raw, held.creator, held.block, held.id, row.arrival, flags))
        items += [self._proof_item(p) for p in self.lace.proofs.values()]
        return [d for d in items if not filters or matches(filters, d)]

    # -- the node's own publications ------------------------------------------------------------

    def due_publications(self, view: StoreView, now: float) -> list[bytes]:
        """Bodies this node should publish now (carries, needs, proof notices)."""
        self._ensure_loaded(view)
        self._trace_stops()
        return self.recovery.due(view, now) + self.epochs.due(now)

    def _trace_stops(self) -> None:
        """Trace, from the event loop, every topic where signing stopped since the last call."""
        tracer = self.runtime.tracer if self.runtime is not None else None
        for stopped in self.signing.take_traces():
            if tracer is not None:
                tracer.emit(TopicSigningStopped(tracer.now(), self.name, stopped.topic, self.signing.pool_id,
                                                stopped.block, stopped.seq, operator_action(stopped.topic)))

    # -- queries --------------------------------------------------------------------------------

    def equivocations(self) -> list[Proof]:
        """Every proof held, in a stable order."""
        return [self.lace.proofs[k] for k in sorted(self.lace.proofs)]

    # -- retention ------------------------------------------------------------------------------

    def prune(self, now: float, txn: AdapterTxn) -> None:
        self._ensure_loaded(txn)
        for topic in list(self.lace.topics):
            ad = self.lace.ad_version(topic, max(self.lace.topic(topic).ads, default=-1))
            grace = ad.params.grace if ad is not None else 0
            gone = self.lace.prune(self.lace.prunable(topic, now, grace))
            dropped = self.lace.drop_tombs(topic)
            if gone or dropped:
                store.write_tombs(txn, topic, gone, dropped)
        for need_id in store.expired_requests(txn, now):
            store.drop_request(txn, need_id)
        self.signing.prune(txn, now)
        for topic in [t for t in self._waiting_on if t not in self.recovery.anchors_wanted]:
            del self._waiting_on[topic]             # only a checkpoint to come releases them


def _reason_named(name: str) -> RejectReason:
    """The reason a memoized refusal was given (Blocklace reasons and ``malformed``)."""
    from topics.reasons import CORE_REASONS

    from . import reasons as bl

    known = [v for v in vars(bl).values() if isinstance(v, RejectReason)] + list(CORE_REASONS)
    return next((r for r in known if r.name == name), bl.INVALID_ANCESTOR)
