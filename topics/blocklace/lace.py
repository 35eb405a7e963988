"""The Blocklace of one node: closure checks, causal acceptance, equivocation, epochs.

Sans-IO and deterministic: :meth:`Lace.check` answers, without changing anything, whether a
block whose pointers are all held may be accepted (docs/topics-design.md 5.3 phase two, 5.6, 5.7), or
which pointers it still waits for; :meth:`Lace.accept` records it and returns what it makes
deliverable: the block itself, proofs (5.5) and final epochs. A block is accepted only when
all its pointers are, so acceptance order is a causal order and the accepted set is closed
(B1); the framework's pending buffer (or :class:`topics.blocklace.node.LaceNode`) holds the
rest.

Per block the lace keeps small summaries of its causal past instead of walking it: a vector
of the highest sequence per creator, the advertisements in it, the highest certified epoch
and the epoch votes not yet certified. They are what 5.3 needs and cost O(creators) each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dmq.message import DmqMessage
from topics.reasons import MALFORMED

from .codec import (
    AD, EPOCH, PERMISSION_OF, AdBody, Block, Proof,
)
from .ads import check_advertisement
from .reasons import (
    BAD_AD_VERSION, BAD_FLOOR, BAD_SELF_PARENT, EPOCH_CLOSED, EQUIVOCATOR_EXCLUDED,
    INVALID_ANCESTOR, NO_ADVERTISEMENT, NOT_PUBLISHER, PERMISSION_DENIED, STALE_ADVERTISEMENT,
    STALE_STAKE_SNAPSHOT, TOO_MANY_POINTERS, TOPIC_CONFLICTED, UNJUSTIFIED_EPOCH, BlocklaceReject,
)

__all__ = ["Held", "Tomb", "Lace", "Outcome", "StakeOf", "Checkpoint", "Candidate"]

#: ``stake_of(cardano_epoch, pool) -> lovelace | None``: None when the snapshot is not held,
#: 0 for a pool without stake in a held snapshot.
StakeOf = Callable[[int, bytes], "int | None"]


@dataclass(slots=True)
class Held:
    """An accepted block and the summaries of its causal past."""

    id: bytes
    raw: bytes
    block: Block
    creator: bytes
    expires_at: int
    arrival: int
    solicited: bool
    vc: dict[bytes, int]                 # creator -> highest seq in [b] with b
    ads: frozenset[bytes]                # advertisement block ids in [b] with b
    cert: int                            # highest epoch certified in [b] with b
    votes: frozenset[bytes]              # epoch blocks in [b] with b, above ``cert``


@dataclass(frozen=True, slots=True)
class Tomb:
    """A pruned block: enough to resolve late pointers and keep sequence checks (5.8)."""

    id: bytes
    epoch: int
    creator: bytes
    seq: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where a late joiner's history starts (docs/topics-design.md 5.8): the certificate of
    ``epoch`` (its proposal) and the advertisement that certificate names."""

    epoch: int
    proposal: bytes
    ad: bytes


@dataclass(frozen=True, slots=True)
class Candidate:
    """An anchor received in answer to an anchors need, held aside until it makes a certificate."""

    message: DmqMessage
    block: Block
    arrival: int


@dataclass(slots=True)
class Outcome:
    """What one acceptance produced."""

    held: Held
    proofs: list[Proof] = field(default_factory=list)
    finals: list[tuple[int, bytes]] = field(default_factory=list)   # (epoch, proposal id)


@dataclass(slots=True)
class _Topic:
    final: int = 0                                     # F
    certificates: dict[int, bytes] = field(default_factory=dict)   # epoch -> proposal (first choice)
    final_times: dict[int, int] = field(default_factory=dict)
    ads: dict[int, bytes] = field(default_factory=dict)            # version -> first ad block id
    chain: dict[tuple[bytes, int], list[bytes]] = field(default_factory=dict)
    excluded: dict[bytes, int] = field(default_factory=dict)       # creator -> seq of its proven pair
    votes: dict[tuple[bytes, int, int], bytes] = field(default_factory=dict)  # (creator, epoch, attempt) -> proposal
    acks: dict[bytes, set[bytes]] = field(default_factory=dict)    # proposal -> acknowledging creators
    #: (epoch number, attempt) -> proposals delivered for it, as (arrival, id)
    proposals: dict[tuple[int, int], list[tuple[int, bytes]]] = field(default_factory=dict)
    conflicted: bool = False


def _named_proposal(h: Held) -> bytes:
    epoch = h.block.payload.epoch
    return h.id if epoch.is_proposal else epoch.acked


class Lace:
    """Every accepted block of every topic at one node."""

    def __init__(self, stake_of: StakeOf | None = None) -> None:
        self.blocks: dict[bytes, Held] = {}
        self.tombs: dict[bytes, Tomb] = {}
        self.topics: dict[bytes, _Topic] = {}
        self.invalid: dict[bytes, str] = {}        # id -> reason name (blocks refused at closure)
        self.proofs: dict[bytes, Proof] = {}       # key -> proof, see proof_key
        self.stake_of = stake_of
        #: late joiners: topic -> the certificate accepted as the start of its history (5.8)
        self.checkpoints: dict[bytes, Checkpoint] = {}
        #: a client's lace (no stake view): proposals a node said are final, with their voters
        #: then (:meth:`adopt_final`)
        self.adopted: dict[bytes, frozenset[bytes]] = {}

    def clear(self) -> None:
        """Forget every block and summary (the adapter then replays its databases)."""
        self.blocks, self.tombs, self.topics = {}, {}, {}
        self.invalid, self.proofs, self.checkpoints = {}, {}, {}
        self.adopted = {}

    def adopt_final(self, topic: bytes, epoch: int, proposal: bytes) -> None:
        """A node said epoch ``epoch`` of ``topic`` is final with ``proposal`` (protocol 1000 item
        kind 3). A lace without the stake view (a client's) cannot weigh a stake-rule quorum
        itself; it takes the votes it holds for that proposal now, which are those the node
        counted (items come in delivery order, the final after the votes that made it), as the
        quorum, so that blocks built over them are in the new epoch as the node's are. Under
        the count rule, and with a stake view, the lace counts for itself."""
        state = self.topic(topic)
        self.adopted[proposal] = frozenset(state.acks.get(proposal, ()))
        if epoch == state.final + 1 and proposal in self.blocks:
            state.certificates.setdefault(epoch, proposal)
            state.final = epoch

    # -- reading --------------------------------------------------------------------------

    def topic(self, topic: bytes) -> _Topic:
        state = self.topics.get(topic)
        if state is None:
            state = self.topics[topic] = _Topic()
        return state

    def holds(self, block_id: bytes) -> bool:
        return block_id in self.blocks or block_id in self.tombs

    def epoch_of(self, block_id: bytes) -> int:
        held = self.blocks.get(block_id)
        return held.block.epoch if held is not None else self.tombs[block_id].epoch

    def missing(self, block: Block) -> list[bytes]:
        return [p for p in block.ptrs if not self.holds(p) and not self._checkpoint_floor(block, p)]

    def _checkpoint_floor(self, block: Block, pointer: bytes) -> bool:
        checkpoint = self.checkpoints.get(block.topic)
        if checkpoint is None or block.epoch != checkpoint.epoch:
            return False
        index = block.ptrs.index(pointer)
        return bool(block.floor_mask >> index & 1)

    def ad_in_force(self, topic: bytes, ads: frozenset[bytes]) -> AdBody | None:
        best = None
        for ad_id in ads:
            body = self.blocks[ad_id].block.payload.ad.body if ad_id in self.blocks else None
            if body is not None and (best is None or body.version > best.version):
                best = body
        return best

    def ad_version(self, topic: bytes, version: int) -> AdBody | None:
        ad_id = self.topic(topic).ads.get(version)
        return None if ad_id is None or ad_id not in self.blocks else self.blocks[ad_id].block.payload.ad.body

    # -- phase one: checks that need no causal past ----------------------------------------

    def check_ingress(self, block: Block, creator: bytes, solicited: bool) -> None:
        """Raise :class:`BlocklaceReject` for what 5.3 checks at ingress."""
        if block.seq > 0 and not block.ptrs:
            raise BlocklaceReject(MALFORMED, "a block with seq > 0 has no self-parent")
        state = self.topics.get(block.topic)
        # No bound from F: a block of an epoch that closed here without its creator (cut off
        # from the others) is late, not invalid, and every later block of its pool needs it (5.3).
        # Only history below a late joiner's checkpoint is missing here for good.
        checkpoint = self.checkpoints.get(block.topic)
        if checkpoint is not None and block.epoch < checkpoint.epoch:
            raise BlocklaceReject(EPOCH_CLOSED, f"epoch {block.epoch} below this node's checkpoint {checkpoint.epoch}")
        if state is not None and not solicited:
            proven = state.excluded.get(creator)
            if proven is not None and block.seq > proven:
                raise BlocklaceReject(EQUIVOCATOR_EXCLUDED, f"creator proven equivocating at seq {proven}")
        if block.payload.type == AD:
            check_advertisement(block.payload.ad, block.topic)
        for p in block.ptrs:
            if p in self.invalid:
                raise BlocklaceReject(INVALID_ANCESTOR, f"points to invalid block {p.hex()[:16]}")

    # -- phase two: closure -------------------------------------------------------------------

    def summarize(self, block: Block, creator: bytes, block_id: bytes | None) -> tuple[dict, frozenset, int, frozenset]:
        """The causal-past summaries of a block whose pointers are held (``block_id`` None: b excluded)."""
        vc: dict[bytes, int] = {}
        ads: set[bytes] = set()
        votes: set[bytes] = set()
        cert = 0
        checkpoint = self.checkpoints.get(block.topic)
        if checkpoint is not None:
            # Every block above the floor has the certificate, hence its advertisement, in
            # its past, though the path there was pruned before this node joined (5.8).
            cert = checkpoint.epoch
            ads.add(checkpoint.ad)
        for p in block.ptrs:
            held = self.blocks.get(p)
            if held is None:
                tomb = self.tombs.get(p)
                if tomb is not None and vc.get(tomb.creator, -1) < tomb.seq:
                    vc[tomb.creator] = tomb.seq
                continue
            for c, s in held.vc.items():
                if vc.get(c, -1) < s:
                    vc[c] = s
            ads |= held.ads
            votes |= held.votes
            cert = max(cert, held.cert)
        if block_id is not None:
            if vc.get(creator, -1) < block.seq:
                vc[creator] = block.seq
            if block.payload.type == AD:
                ads.add(block_id)
            if block.payload.type == EPOCH:
                votes.add(block_id)
        cert, votes = self._certify(block.topic, cert, votes, block_id, block, creator)
        return vc, frozenset(ads), cert, votes

    def _vote_of(self, vote_id: bytes, block_id: bytes | None, block: Block, creator: bytes):
        if vote_id == block_id:
            epoch = block.payload.epoch
            return creator, epoch, (block_id if epoch.is_proposal else epoch.acked)
        held = self.blocks[vote_id]
        return held.creator, held.block.payload.epoch, _named_proposal(held)

    def _certify(self, topic: bytes, cert: int, votes: set[bytes], block_id, block, creator) -> tuple[int, frozenset]:
        """Raise ``cert`` while the votes hold a quorum for the next epoch; drop certified votes
        (and votes pruned since: their epoch is below F, so certified here already)."""
        votes = {v for v in votes if v == block_id or v in self.blocks}
        while True:
            proposals: dict[bytes, set[bytes]] = {}
            for v in votes:
                voter, epoch, named = self._vote_of(v, block_id, block, creator)
                if epoch.number == cert + 1:
                    proposals.setdefault(named, set()).add(voter)
            winner = None
            for proposal in sorted(proposals):
                if proposal in self.blocks or proposal == block_id:
                    p_epoch = block.payload.epoch if proposal == block_id else self.blocks[proposal].block.payload.epoch
                    if self.quorum(topic, p_epoch, proposals[proposal], proposal):
                        winner = proposal
                        break
            if winner is None:
                return cert, frozenset(v for v in votes if self._vote_of(v, block_id, block, creator)[1].number > cert)
            cert += 1

    def quorum(self, topic: bytes, proposal, voters: set[bytes], proposal_id: bytes | None = None) -> bool:
        """Whether ``voters`` are a quorum for a proposal (docs/topics-design.md 5.7)."""
        ad = self.ad_version(topic, proposal.ad_version)
        return ad is not None and self.quorum_under(ad, proposal, voters, proposal_id)

    def quorum_under(self, ad: AdBody, proposal, voters: set[bytes], proposal_id: bytes | None = None) -> bool:
        """The quorum rule of ``ad`` (the advertisement the proposal names) over ``voters``;
        without a stake view, a stake-rule quorum is one a node said it saw (:meth:`adopt_final`)."""
        electors = [p for p, perms in ad.publishers.items() if perms & PERMISSION_OF[EPOCH]]
        rule, num, den = ad.params.quorum
        counted = [p for p in electors if p in voters]
        if rule == 0:
            return len(counted) * den > num * len(electors)
        if self.stake_of is None and proposal_id in self.adopted:
            return self.adopted[proposal_id] <= set(voters)
        if proposal.stake_epoch is None or self.stake_of is None:
            return False
        total = sum(self.stake_of(proposal.stake_epoch, p) or 0 for p in electors)
        acked = sum(self.stake_of(proposal.stake_epoch, p) or 0 for p in counted)
        return total > 0 and acked * den > num * total

    def in_past(self, target: bytes, vc: dict[bytes, int]) -> bool:
        """Whether the held block ``target`` is in the causal past summarized by ``vc``."""
        held = self.blocks.get(target)
        if held is None:
            return False
        return vc.get(held.creator, -1) >= held.block.seq

    def check(self, block: Block, creator: bytes, solicited: bool = False) -> list[bytes]:
        """Missing pointers (non-empty: defer), or ``[]`` when the block may be accepted.

        Raises :class:`BlocklaceReject` with the first failing rule of 5.3, 5.6 and 5.7.
        """
        self.check_ingress(block, creator, solicited)
        missing = self.missing(block)
        if missing:
            return missing
        state = self.topic(block.topic)
        vc, ads, cert, _ = self.summarize(block, creator, None)
        self._check_self_parent(block, creator, vc)
        self._check_epochs(block, creator, cert)
        ad = self._check_authorization(block, creator, ads, state)
        if block.payload.type == EPOCH:
            self._check_epoch_message(block, ad, vc)
        limit = ad.params.max_pointers if ad is not None else 16
        if len(block.ptrs) > limit:
            raise BlocklaceReject(TOO_MANY_POINTERS, f"{len(block.ptrs)} pointers, topic maximum {limit}")
        return []

    def _check_self_parent(self, block: Block, creator: bytes, vc: dict[bytes, int]) -> None:
        if block.seq == 0:
            if creator in vc:
                raise BlocklaceReject(BAD_SELF_PARENT, "seq 0 but the creator has blocks in the causal past")
            return
        parent = block.ptrs[0]
        held = self.blocks.get(parent)
        tomb = self.tombs.get(parent)
        p_creator, p_seq = (held.creator, held.block.seq) if held else ((tomb.creator, tomb.seq) if tomb else (None, None))
        if p_creator is None and self._checkpoint_floor(block, parent):
            return
        if p_creator != creator or p_seq != block.seq - 1:
            raise BlocklaceReject(BAD_SELF_PARENT, "self-parent of another creator or not seq - 1")
        if vc.get(creator, -1) >= block.seq:
            raise BlocklaceReject(BAD_SELF_PARENT, "a block of the creator with this seq or higher is in the past")

    def _check_epochs(self, block: Block, creator: bytes, cert: int) -> None:
        opening = block.seq == 0
        if block.seq > 0 and self.holds(block.ptrs[0]):
            parent_epoch = self.epoch_of(block.ptrs[0])
            if block.epoch < parent_epoch:
                raise BlocklaceReject(UNJUSTIFIED_EPOCH, "epoch lower than the self-parent's")
            opening = parent_epoch < block.epoch
        elif block.seq > 0:
            opening = True    # self-parent below a checkpoint
        for i, p in enumerate(block.ptrs):
            bit = bool(block.floor_mask >> i & 1)
            if self.holds(p):
                if bit != (self.epoch_of(p) < block.epoch):
                    raise BlocklaceReject(BAD_FLOOR, f"floor bit {i} does not mark an older epoch")
            elif not bit:
                raise BlocklaceReject(BAD_FLOOR, f"unresolved pointer {i} is not a floor pointer")
        if block.floor_mask and not opening:
            raise BlocklaceReject(BAD_FLOOR, "floor pointers on a block that does not open its epoch")
        if block.epoch > cert:
            raise BlocklaceReject(UNJUSTIFIED_EPOCH, f"epoch {block.epoch} without a certificate in the past")

    def _check_authorization(self, block: Block, creator: bytes, ads: frozenset[bytes], state: _Topic) -> AdBody | None:
        versions: dict[int, bytes] = {}
        for ad_id in ads:
            if ad_id not in self.blocks:
                continue                    # pruned: an older version than the anchors kept (5.8)
            body = self.blocks[ad_id].block.payload.ad.body
            other = versions.get(body.version)
            if other is not None and other != body.raw:
                raise BlocklaceReject(TOPIC_CONFLICTED, f"two advertisements of version {body.version} in the past")
            versions[body.version] = body.raw
        ad = self.ad_in_force(block.topic, ads)
        if block.payload.type == AD:
            version = block.payload.ad.body.version
            if version > 0:
                previous = self.ad_in_force(block.topic, frozenset(
                    a for a in ads if a in self.blocks and self.blocks[a].block.payload.ad.body.version == version - 1))
                if previous is None or previous.owner != block.payload.ad.body.owner:
                    raise BlocklaceReject(BAD_AD_VERSION, f"version {version} without version {version - 1} in the past")
            return block.payload.ad.body
        if ad is None:
            raise BlocklaceReject(NO_ADVERTISEMENT, "no advertisement in the causal past")
        perms = ad.perms_of(creator)
        if perms is None:
            raise BlocklaceReject(NOT_PUBLISHER, f"creator not a publisher of advertisement {ad.version}")
        if not perms & PERMISSION_OF[block.payload.type]:
            raise BlocklaceReject(PERMISSION_DENIED, f"creator lacks permission {PERMISSION_OF[block.payload.type]}")
        certified = state.certificates.get(block.epoch)
        if certified is not None and certified in self.blocks:
            needed = self.blocks[certified].block.payload.epoch.ad_version
            if ad.version < needed:
                raise BlocklaceReject(STALE_ADVERTISEMENT, f"advertisement {ad.version}, epoch certifies {needed}")
        return ad

    def _check_epoch_message(self, block: Block, ad: AdBody, vc: dict[bytes, int]) -> None:
        epoch = block.payload.epoch
        if epoch.ad_version != ad.version:
            raise BlocklaceReject(STALE_ADVERTISEMENT, f"names advertisement {epoch.ad_version}, in force {ad.version}")
        if epoch.is_proposal:
            if epoch.number != block.epoch + 1:
                raise BlocklaceReject(MALFORMED, f"a proposal of epoch {block.epoch} opens {block.epoch + 1}")
            for c in epoch.cut:
                if not self.in_past(c, vc) or self.blocks[c].block.epoch != block.epoch:
                    raise BlocklaceReject(MALFORMED, "a cut id is not in the past with the block's epoch")
            if ad.params.quorum[0] == 1:
                if epoch.stake_epoch is None:
                    raise BlocklaceReject(MALFORMED, "a proposal under the stake rule names its snapshot")
                if self.stake_of is None or self.stake_of(epoch.stake_epoch, b"\0" * 28) is None:
                    raise BlocklaceReject(STALE_STAKE_SNAPSHOT, f"stake snapshot of epoch {epoch.stake_epoch} not held")
        else:
            proposal = self.blocks.get(epoch.acked)
            if proposal is None or not self.in_past(epoch.acked, vc) or proposal.block.payload.type != EPOCH:
                raise BlocklaceReject(MALFORMED, "the acknowledged proposal is not in the past")
            p = proposal.block.payload.epoch
            if not p.is_proposal or (p.number, p.attempt, p.ad_version) != (epoch.number, epoch.attempt, epoch.ad_version):
                raise BlocklaceReject(MALFORMED, "acknowledgement does not match its proposal")

    # -- acceptance -----------------------------------------------------------------------------

    def accept(self, message: DmqMessage, block: Block, arrival: int, solicited: bool = False) -> Outcome:
        """Record a block that passed :meth:`check`; returns what it makes deliverable."""
        creator = message.pool_id
        vc, ads, cert, votes = self.summarize(block, creator, message.message_id)
        held = Held(message.message_id, message.raw, block, creator, message.expires_at, arrival,
                    solicited, vc, ads, cert, votes)
        self.blocks[held.id] = held
        state = self.topic(block.topic)
        outcome = Outcome(held)
        pair = state.chain.setdefault((creator, block.seq), [])
        if pair and held.id not in pair:
            outcome.proofs.append(self._proof(0, block.topic, creator, block.seq, pair[0], held.id))
            proven = state.excluded.get(creator)
            state.excluded[creator] = block.seq if proven is None else min(proven, block.seq)
        if held.id not in pair:
            pair.append(held.id)
        if block.payload.type == AD:
            body = block.payload.ad.body
            first = state.ads.setdefault(body.version, held.id)
            if first != held.id and first in self.blocks and self.blocks[first].block.payload.ad.body.raw != body.raw:
                outcome.proofs.append(self._proof(2, block.topic, block.topic, body.version, first, held.id))
        if block.payload.type == EPOCH:
            self._count_vote(held, state, outcome)
        return outcome

    def _count_vote(self, held: Held, state: _Topic, outcome: Outcome) -> None:
        epoch = held.block.payload.epoch
        named = _named_proposal(held)
        key = (held.creator, epoch.number, epoch.attempt)
        first = state.votes.get(key)
        if first is not None and first != named:
            earlier = self._vote_block(held.block.topic, key, first)
            outcome.proofs.append(self._proof(1, held.block.topic, held.creator, (epoch.number, epoch.attempt),
                                              earlier, held.id))
            return                                  # a double voter counts once
        state.votes[key] = named
        if epoch.is_proposal and epoch.number > state.final:
            state.proposals.setdefault((epoch.number, epoch.attempt), []).append((held.arrival, held.id))
        voters = state.acks.setdefault(named, set())
        voters.add(held.creator)
        proposal = self.blocks.get(named)
        if proposal is None or not self.quorum(held.block.topic, proposal.block.payload.epoch, voters, named):
            return
        number = epoch.number
        chosen = state.certificates.get(number)
        if chosen is None and number == state.final + 1:
            state.certificates[number] = named
            state.final = number
            state.proposals = {k: v for k, v in state.proposals.items() if k[0] > number}
            state.final_times[number] = held.arrival
            outcome.finals.append((number, named))
        elif chosen is not None and chosen != named:
            outcome.proofs.append(self._proof(3, held.block.topic, held.block.topic, number, chosen, named))

    def _vote_block(self, topic: bytes, key: tuple[bytes, int, int], named: bytes) -> bytes:
        creator, number, attempt = key
        for h in self.blocks.values():
            if h.creator == creator and h.block.topic == topic and h.block.payload.type == EPOCH:
                e = h.block.payload.epoch
                if (e.number, e.attempt) == (number, attempt) and _named_proposal(h) == named:
                    return h.id
        raise KeyError("vote not held")

    def _proof(self, kind: int, topic: bytes, culprit: bytes, where, id_a: bytes, id_b: bytes) -> Proof:
        a, b = sorted((id_a, id_b))
        proof = Proof(kind, topic, culprit, where, self.blocks[a].raw, self.blocks[b].raw)
        self.proofs[proof_key(proof)] = proof
        return proof

    # -- late joiners (docs/topics-design.md 5.8) --------------------------------------------------

    def checkpoint_from(self, topic: bytes, candidates: list[Candidate],
                        at_least: int = 0) -> tuple[Checkpoint, list[Candidate]] | None:
        """The highest certificate above F, and of epoch ``at_least`` or more, that the anchors
        received prove, and the anchors to install for it (advertisements, the proposal, its
        acknowledgements), or None. ``at_least`` is the epoch of the blocks that wait: an
        older certificate (its blocks may be carried as asked-for ids) would not justify them.

        An anchor's causal past was pruned where it came from, so it cannot pass closure here;
        what it proves is checked from the anchors alone: the advertisement by its owner
        signatures (checked on arrival), the proposal and acknowledgements by their KES
        signatures (the carry's checks) and the quorum rule of the advertisement the proposal
        names (5.7)."""
        state = self.topic(topic)
        ads: dict[int, tuple[bytes, AdBody]] = {}
        for version, ad_id in state.ads.items():
            if ad_id in self.blocks:
                ads[version] = (ad_id, self.blocks[ad_id].block.payload.ad.body)
        for c in sorted(candidates, key=lambda c: c.message.message_id):
            if c.block.payload.type == AD:
                body = c.block.payload.ad.body
                ads.setdefault(body.version, (c.message.message_id, body))
        epochs = [c for c in candidates if c.block.payload.type == EPOCH and c.block.topic == topic]
        best: tuple[tuple[int, bytes], Checkpoint, list[Candidate]] | None = None
        for c in epochs:
            proposal, ident = c.block.payload.epoch, c.message.message_id
            named = ads.get(proposal.ad_version)
            if (not proposal.is_proposal or proposal.number <= max(state.final, at_least - 1) or named is None
                    or proposal.number != c.block.epoch + 1):
                continue
            ad_id, ad = named
            if not (ad.perms_of(c.message.pool_id) or 0) & PERMISSION_OF[EPOCH]:
                continue
            acks = [a for a in epochs if a.block.payload.epoch.acked == ident
                    and _same_vote(a.block.payload.epoch, proposal)]
            voters = {c.message.pool_id} | {a.message.pool_id for a in acks}
            if not self.quorum_under(ad, proposal, voters, ident):
                continue
            rank = (proposal.number, bytes(b ^ 0xFF for b in ident))     # highest epoch, then lowest id
            if best is None or rank > best[0]:
                kept = {ad_id, ads[max(ads)][0]}           # the named and the latest advertisement
                install = sorted((x for x in candidates if x.message.message_id in kept),
                                 key=lambda x: x.block.payload.ad.body.version)
                install += [c] + sorted(acks, key=lambda a: a.message.message_id)
                best = (rank, Checkpoint(proposal.number, ident, ad_id), install)
        return None if best is None else (best[1], best[2])

    def install_checkpoint(self, topic: bytes, checkpoint: Checkpoint, anchors: list[Candidate],
                           now: int) -> list[Outcome]:
        """Take ``checkpoint`` as the justification of its epoch and hold its anchors; the
        outcome of the proposal carries the final epoch."""
        state = self.topic(topic)
        state.final = max(state.final, checkpoint.epoch)
        state.certificates[checkpoint.epoch] = checkpoint.proposal
        state.final_times[checkpoint.epoch] = now
        state.proposals = {k: v for k, v in state.proposals.items() if k[0] > state.final}
        self.checkpoints[topic] = checkpoint
        outcomes = []
        for anchor in anchors:
            if anchor.message.message_id in self.blocks:
                continue
            outcome = self.accept(anchor.message, anchor.block, anchor.arrival, solicited=True)
            if anchor.message.message_id == checkpoint.proposal:
                outcome.finals.append((checkpoint.epoch, checkpoint.proposal))
            outcomes.append(outcome)
        return outcomes

    # -- retention ---------------------------------------------------------------------------------

    def anchors(self, topic: bytes) -> set[bytes]:
        """What 5.8 never prunes while current and hands a late joiner: the latest
        advertisement, the certificate of F and the advertisement that certificate names."""
        state = self.topic(topic)
        keep = set()
        if state.ads:
            keep.add(state.ads[max(state.ads)])
        proposal = state.certificates.get(state.final)
        if proposal is not None:
            keep.add(proposal)
            held = self.blocks.get(proposal)
            version = held.block.payload.epoch.ad_version if held is not None else None
            if version in state.ads:
                keep.add(state.ads[version])
            keep |= {h.id for h in self.blocks.values() if h.block.payload.type == EPOCH
                     and h.block.topic == topic and _named_proposal(h) == proposal}
        return keep

    def prunable(self, topic: bytes, now: float, grace: int = 0) -> list[bytes]:
        """Blocks 5.8 lets go: below F, past expiry and the epoch's final time plus one, not anchors."""
        state = self.topic(topic)
        keep = self.anchors(topic)
        out = []
        for h in self.blocks.values():
            if h.block.topic != topic or h.block.epoch >= state.final or h.id in keep:
                continue
            closed_at = state.final_times.get(h.block.epoch + 1, 0)
            if now >= max(h.expires_at, closed_at + 1) + grace:
                out.append(h.id)
        return sorted(out)

    def prune(self, ids: list[bytes]) -> list[Tomb]:
        tombs = []
        for i in ids:
            held = self.blocks.pop(i)
            tomb = Tomb(i, held.block.epoch, held.creator, held.block.seq)
            self.tombs[i] = tomb
            tombs.append(tomb)
        return tombs

    def drop_tombs(self, topic: bytes) -> list[bytes]:
        final = self.topic(topic).final
        gone = [t.id for t in self.tombs.values() if final >= t.epoch + 3]
        for i in gone:
            del self.tombs[i]
        return gone


def _same_vote(ack, proposal) -> bool:
    return (ack.number, ack.attempt, ack.ad_version) == (proposal.number, proposal.attempt, proposal.ad_version)


def proof_key(proof: Proof) -> bytes:
    """Proofs are kept once per (kind, topic, culprit, where)."""
    where = proof.where if isinstance(proof.where, tuple) else (proof.where,)
    return bytes([proof.kind]) + proof.topic + proof.culprit + b"".join(w.to_bytes(8, "big") for w in where)

