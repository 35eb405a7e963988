"""A Blocklace replica with its pending buffer and its LMDB state, driven by arrivals.

:class:`LaceNode` is the sans-IO form of the adapter's pipeline steps 5 to 7 for blocks: a
block whose pointers are not all held waits in a bounded pending buffer (4096 per topic, 64
per creator, oldest evicted first); every acceptance retries the blocks that waited for it,
in topological order with ties by ascending id (docs/topics-design.md 5.4). Accepted blocks are written
to LMDB (``bl/block``, in acceptance order; ``bl/proof``) inside one transaction per arrival,
and a restarted replica replays them, so its state equals a committed one (C7).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import lmdb

from dmq.message import DmqMessage
from topics import cbor

from .codec import Block, Proof, encode_proof
from .lace import Lace, Outcome, StakeOf
from .reasons import BlocklaceReject

__all__ = ["LaceNode", "Arrival", "PENDING_PER_TOPIC", "PENDING_PER_CREATOR"]

PENDING_PER_TOPIC = 4096     # (P)
PENDING_PER_CREATOR = 64     # (P)


@dataclass(slots=True)
class Arrival:
    """What one arrival did: accepted blocks in order, proofs, finals, or the refusal."""

    accepted: list[bytes] = field(default_factory=list)
    proofs: list[Proof] = field(default_factory=list)
    finals: list[tuple[bytes, int, bytes]] = field(default_factory=list)
    deferred: bool = False
    rejected: BlocklaceReject | None = None
    evicted: list[bytes] = field(default_factory=list)


class LaceNode:
    """One replica: the lace, its pending buffer and, optionally, its LMDB environment."""

    def __init__(self, path: Path | None = None, stake_of: StakeOf | None = None,
                 pending_per_topic: int = PENDING_PER_TOPIC, pending_per_creator: int = PENDING_PER_CREATOR) -> None:
        self.lace = Lace(stake_of)
        self.pending: OrderedDict[bytes, tuple[DmqMessage, Block, bool]] = OrderedDict()
        self.waiting: dict[bytes, set[bytes]] = {}
        self.pending_per_topic = pending_per_topic
        self.pending_per_creator = pending_per_creator
        self.delivered: list[bytes] = []
        self._env = None
        self._order = 0
        if path is not None:
            self._env = lmdb.open(str(path), max_dbs=4, map_size=1 << 28, subdir=True)
            self._db_block = self._env.open_db(b"bl/block")
            self._db_proof = self._env.open_db(b"bl/proof")
            self._replay()

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    # -- persistence ----------------------------------------------------------------------

    def _replay(self) -> None:
        from dmq.codec import decode_message
        from .codec import decode_body

        with self._env.begin() as txn:
            rows = list(txn.cursor(db=self._db_block))
        for key, value in rows:
            raw, arrival, solicited = cbor.decode(value)
            message = decode_message(raw)
            _, block = decode_body(message.body)
            self._accept(message, block, arrival, bool(solicited), Arrival())
            self._order = int.from_bytes(key, "big") + 1

    def _persist(self, txn, held, proofs: list[Proof]) -> None:
        txn.put(self._order.to_bytes(8, "big"), cbor.encode([held.raw, held.arrival, held.solicited]), db=self._db_block)
        self._order += 1
        for proof in proofs:
            txn.put(proof.topic + proof.culprit + bytes([proof.kind]), encode_proof(proof), db=self._db_proof)

    # -- arrivals ---------------------------------------------------------------------------

    def offer(self, message: DmqMessage, block: Block, now: int, solicited: bool = False) -> Arrival:
        """One block arrives (any order, any number of times)."""
        result = Arrival()
        ident = message.message_id
        if ident in self.lace.blocks or ident in self.pending:
            return result
        try:
            missing = self.lace.check(block, message.pool_id, solicited)
        except BlocklaceReject as exc:
            self.lace.invalid[ident] = exc.reason.name
            result.rejected = exc
            self._invalidate_waiters(ident)
            return result
        if missing:
            self._park(message, block, solicited, missing, result)
            return result
        txn = self._env.begin(write=True) if self._env is not None else None
        try:
            self._accept(message, block, now, solicited, result, txn)
            self._drain(ident, now, result, txn)
            if txn is not None:
                txn.commit()
        except BaseException:
            if txn is not None:
                txn.abort()
            raise
        return result

    def _park(self, message, block, solicited, missing, result: Arrival) -> None:
        ident = message.message_id
        result.deferred = True
        self.pending[ident] = (message, block, solicited)
        for m in missing:
            self.waiting.setdefault(m, set()).add(ident)
        same_topic = [i for i, (_, b, _) in self.pending.items() if b.topic == block.topic]
        same_creator = [i for i in same_topic if self.pending[i][0].pool_id == message.pool_id]
        for victims, cap in ((same_creator, self.pending_per_creator), (same_topic, self.pending_per_topic)):
            while len(victims) > cap:
                victim = victims.pop(0)
                if victim in self.pending:
                    del self.pending[victim]
                    result.evicted.append(victim)
                    if victim == ident:
                        result.deferred = False

    def _accept(self, message, block, arrival, solicited, result: Arrival, txn=None) -> Outcome:
        outcome = self.lace.accept(message, block, arrival, solicited)
        result.accepted.append(outcome.held.id)
        result.proofs.extend(outcome.proofs)
        result.finals.extend((block.topic, e, p) for e, p in outcome.finals)
        self.delivered.append(outcome.held.id)
        if txn is not None:
            self._persist(txn, outcome.held, outcome.proofs)
        return outcome

    def _drain(self, first: bytes, now: int, result: Arrival, txn) -> None:
        ready: list[bytes] = []
        self._wake(first, ready)
        while ready:
            ident = heapq.heappop(ready)
            entry = self.pending.pop(ident, None)
            if entry is None:
                continue
            message, block, solicited = entry
            try:
                missing = self.lace.check(block, message.pool_id, solicited)
            except BlocklaceReject as exc:
                self.lace.invalid[ident] = exc.reason.name
                self._invalidate_waiters(ident)
                continue
            if missing:
                self.pending[ident] = entry
                for m in missing:
                    self.waiting.setdefault(m, set()).add(ident)
                continue
            self._accept(message, block, now, solicited, result, txn)
            self._wake(ident, ready)

    def _wake(self, ident: bytes, ready: list[bytes]) -> None:
        for waiter in sorted(self.waiting.pop(ident, ())):
            if waiter in self.pending:
                heapq.heappush(ready, waiter)

    def _invalidate_waiters(self, ident: bytes) -> None:
        stack = [ident]
        while stack:
            for waiter in self.waiting.pop(stack.pop(), ()):
                if self.pending.pop(waiter, None) is not None:
                    self.lace.invalid[waiter] = "invalid_ancestor"
                    stack.append(waiter)

    def missing_ids(self) -> set[bytes]:
        """Pointers pending blocks wait for and nobody holds: what a ``need`` asks for."""
        return {m for m, waiters in self.waiting.items() if waiters & self.pending.keys() and not self.lace.holds(m)}
