"""One registered set per Mithril epoch, fixed by a Blocklace epoch certificate (docs/mithril-registration.md 8).

Sans-IO: the node-side service (:mod:`.node_side`) feeds the registration topic's blocks in
causal delivery order (:meth:`RegistrationLedger.deliver`) and its final Blocklace epochs
(:meth:`RegistrationLedger.finalize`); the ledger answers with the sets that became fixed.

**The rule.** The set of registration epoch ``R`` is fixed by the first final Blocklace epoch
whose certificate's cut has in its causal past ``close R`` events from more than a third of
the electors (the pools with the Epoch permission in the advertisement the proposal names),
weighed as the topic's quorum rule weighs them, so that at least one honest node held the
round closed. The set is
every registration for ``R`` in that causal past that passes :func:`~.verify.verify_registration`,
one per pool (the smallest block id among copies of one key); a pool with two different keys
for ``R`` in that past is left out, and the two events are kept as the proof. Everything the
rule reads is in the certificate and the blocks its cut reaches, which every node holds
byte for byte, so every node that took the same certificate derives the same set and digest.

**Inputs fixed by the data, not by a node.** Each registration is verified against the KES
period of the DMQ message that carried it (the publishing pool's signed period, the same
bytes at every node), not against the verifying node's clock. Whether its pool has stake is
asked when the set is fixed (``registered``), of the distribution of the registration epoch,
not when the registration happened to arrive (docs/mithril-registration.md 8.3).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from topics import cbor
from topics.blocklace.codec import AD, EPOCH, EVENT, PERM_EPOCH, Block, EpochMsg

from .errors import RegistrationRefused
from .events import Agreed, Closed, Registered, decode_event
from .message import SignerRegistration
from .verify import VerifiedSigner

__all__ = ["AgreedSigner", "Equivocation", "AgreedSet", "RegistrationLedger", "Verify"]

#: ``verify(registration, kes_period)``: the verdict of :func:`~.verify.verify_registration`
#: with the node's stake view and the given KES period.
Verify = Callable[[SignerRegistration, int], VerifiedSigner]


@dataclass(frozen=True, slots=True)
class AgreedSigner:
    pool_id: bytes
    block_id: bytes             # the block that carried the registration
    event: bytes                # its Event payload, as carried
    signer: VerifiedSigner


@dataclass(frozen=True, slots=True)
class Equivocation:
    """Two keys of one pool for one epoch: both registrations verify, so the pool made both."""

    pool_id: bytes
    epoch: int
    first: tuple[bytes, bytes]      # (block id, Event payload), the smaller block id first
    second: tuple[bytes, bytes]


@dataclass(frozen=True, slots=True)
class AgreedSet:
    epoch: int                      # the Mithril registration epoch R
    blocklace_epoch: int            # the Blocklace epoch whose certificate fixed it
    proposal: bytes                 # that certificate's proposal
    signers: tuple[AgreedSigner, ...]   # ascending pool id
    excluded: tuple[Equivocation, ...]  # ascending pool id
    digest: bytes

    def describe(self) -> dict[str, object]:
        return {"epoch": self.epoch, "blocklace_epoch": self.blocklace_epoch, "proposal": self.proposal.hex(),
                "digest": self.digest.hex(), "signers": [s.signer.party_id for s in self.signers],
                "excluded": [{"pool_id": e.pool_id.hex(), "first": e.first[0].hex(), "second": e.second[0].hex(),
                              "first_event": e.first[1].hex(), "second_event": e.second[1].hex()}
                             for e in self.excluded]}


def set_digest(epoch: int, signers: Iterable[AgreedSigner], excluded: Iterable[Equivocation]) -> bytes:
    """Blake2b-256 of ``[epoch, [[poolId, event], ...], [poolId, ...]]``, deterministic CBOR."""
    return hashlib.blake2b(cbor.encode([epoch, [[s.pool_id, s.event] for s in signers], [e.pool_id for e in excluded]]), digest_size=32).digest()


@dataclass(slots=True)
class _Registration:
    block_id: bytes
    event: Registered
    verdict: VerifiedSigner | RegistrationRefused


@dataclass(slots=True)
class RegistrationLedger:
    """The registration topic as one node delivered it, and the sets fixed so far."""

    verify: Verify
    #: ``stake_at(cardano_epoch, pool)``: the pool's stake in that epoch's set snapshot, None when
    #: the snapshot is not held (``StakeView.set_stake_at``); only a proposal under the stake rule asks.
    stake_at: Callable[[int, bytes], int | None]
    #: ``registered(R, pool)``: whether ``pool`` is in the stake distribution of registration
    #: epoch ``R``, asked when the set is fixed (the verdicts of ``verify`` leave stake out).
    registered: Callable[[int, bytes], bool] = lambda epoch, pool: True
    pointers: dict[bytes, tuple[bytes, ...]] = field(default_factory=dict)
    electors: dict[int, frozenset[bytes]] = field(default_factory=dict)        # ad version -> pools
    proposals: dict[bytes, EpochMsg] = field(default_factory=dict)
    registrations: dict[int, list[_Registration]] = field(default_factory=dict)
    closes: dict[int, dict[bytes, bytes]] = field(default_factory=dict)         # R -> block id -> pool
    notices: dict[bytes, tuple[bytes, Agreed]] = field(default_factory=dict)     # block id -> (pool, notice)
    agreed: dict[int, AgreedSet] = field(default_factory=dict)
    refused: int = 0

    def deliver(self, block_id: bytes, creator: bytes, kes_period: int, block: Block) -> None:
        """Take one delivered block (in causal order; a block seen before is ignored)."""
        if block_id in self.pointers:
            return
        self.pointers[block_id] = block.ptrs
        payload = block.payload
        if payload.type == AD and payload.ad is not None:
            body = payload.ad.body
            self.electors[body.version] = frozenset(p for p, perms in body.publishers.items() if perms & PERM_EPOCH)
        elif payload.type == EPOCH and payload.epoch is not None and payload.epoch.cut is not None:
            self.proposals[block_id] = payload.epoch
        elif payload.type == EVENT and payload.event is not None:
            self._event(block_id, creator, kes_period, payload.event)

    def _event(self, block_id: bytes, creator: bytes, kes_period: int, data: bytes) -> None:
        try:
            event = decode_event(data)
        except RegistrationRefused:
            self.refused += 1
            return
        if isinstance(event, Closed):
            self.closes.setdefault(event.epoch, {})[block_id] = creator
        elif isinstance(event, Agreed):
            self.notices[block_id] = (creator, event)
        else:
            try:
                verdict: VerifiedSigner | RegistrationRefused = self.verify(event.registration, kes_period)
            except RegistrationRefused as refused:
                verdict = refused
                self.refused += 1
            self.registrations.setdefault(event.epoch, []).append(_Registration(block_id, event, verdict))

    def past(self, cut: Iterable[bytes]) -> set[bytes]:
        """The cut and everything it reaches through pointers held here."""
        seen: set[bytes] = set()
        stack = [i for i in cut if i in self.pointers]
        while stack:
            ident = stack.pop()
            if ident in seen:
                continue
            seen.add(ident)
            stack.extend(p for p in self.pointers.get(ident, ()) if p in self.pointers and p not in seen)
        return seen

    def finalize(self, blocklace_epoch: int, proposal: bytes) -> list[AgreedSet]:
        """Blocklace epoch ``blocklace_epoch`` is final with ``proposal``: the sets it fixes."""
        named = self.proposals.get(proposal)
        if named is None or named.cut is None:
            return []
        electors = self.electors.get(named.ad_version, frozenset())
        weight = self._weights(named)
        total = sum(weight(p) for p in electors)
        open_rounds = sorted(r for r in self.closes if r not in self.agreed)
        if not open_rounds or total <= 0:
            return []
        past = self.past(named.cut)
        fixed = []
        for epoch in open_rounds:
            closers = {pool for ident, pool in self.closes[epoch].items() if ident in past and pool in electors}
            if 3 * sum(weight(p) for p in closers) <= total:
                continue
            agreed = self._fix(epoch, blocklace_epoch, proposal, past)
            self.agreed[epoch] = agreed
            fixed.append(agreed)
        return fixed

    def _weights(self, proposal: EpochMsg) -> Callable[[bytes], int]:
        """The electors' weights as the topic's quorum rule counts them for this certificate: one
        each under the count rule, their stake in the snapshot the proposal names under the stake
        rule. Both are in the certificate, so every node weighs alike, even while stake views
        change at an epoch boundary."""
        if proposal.stake_epoch is None:
            return lambda pool: 1
        return lambda pool: self.stake_at(proposal.stake_epoch, pool) or 0

    def _fix(self, epoch: int, blocklace_epoch: int, proposal: bytes, past: set[bytes]) -> AgreedSet:
        by_pool: dict[bytes, list[_Registration]] = {}
        for entry in self.registrations.get(epoch, ()):
            if (entry.block_id in past and isinstance(entry.verdict, VerifiedSigner)
                    and self.registered(epoch, entry.verdict.pool_id)):
                by_pool.setdefault(entry.verdict.pool_id, []).append(entry)
        signers, excluded = [], []
        for pool_id in sorted(by_pool):
            entries = sorted(by_pool[pool_id], key=lambda e: e.block_id)
            first = entries[0]
            other = next((e for e in entries if e.verdict.verification_key != first.verdict.verification_key), None)
            if other is not None:
                excluded.append(Equivocation(pool_id, epoch, (first.block_id, first.event.raw),
                                             (other.block_id, other.event.raw)))
            else:
                signers.append(AgreedSigner(pool_id, first.block_id, first.event.raw, first.verdict))
        return AgreedSet(epoch, blocklace_epoch, proposal, tuple(signers), tuple(excluded),
                         set_digest(epoch, signers, excluded))

    def disagreements(self) -> list[tuple[bytes, bytes, Agreed]]:
        """``(block id, pool, notice)`` of every notice naming another digest than the set fixed here."""
        return [(ident, pool, notice) for ident, (pool, notice) in self.notices.items()
                if notice.epoch in self.agreed and notice.digest != self.agreed[notice.epoch].digest]

    def latest_electors(self) -> frozenset[bytes]:
        """The electors of the highest advertisement version delivered (none before the first)."""
        return self.electors[max(self.electors)] if self.electors else frozenset()

    def closed_by(self, epoch: int, pool: bytes) -> bool:
        """Whether ``pool`` has a ``close epoch`` event here."""
        return pool in self.closes.get(epoch, {}).values()
