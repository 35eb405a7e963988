"""The Blocklace adapter's named databases and their records (docs/topics-design.md 5.8, 2.9).

The in-memory :class:`~topics.blocklace.lace.Lace` is a cache of what these databases hold:
every write happens inside the commit transaction of the message that caused it, and a
restarted node rebuilds the lace by replaying ``block`` in acceptance order over the
``tomb``, ``epoch`` and ``proof`` records. Keys start with the topic id so that one topic
can be scanned or dropped on its own.

=========  ==========================================  ==========================================
database   key                                         value
=========  ==========================================  ==========================================
block      topic, id                                   [order, raw message, arrival, solicited]
chain      topic, creator, seq (8)                     ids of the creator's blocks with that seq
tomb       topic, id                                   [epoch, creator, seq]
ad         topic, version (8)                          id of the first advertisement block
epoch      topic, epoch (8)                            [proposal id, final time]
proof      proof key (see ``lace.proof_key``)           encoded proof
req        ``r`` need id                                [topic, ids, anchors, expiresAt, pool, arrival]
           ``a`` need id, item id                       answers accepted (uint)
           ``p`` pool, topic, arrival (8), need id      empty: the per-pool request budget
meta       ``order``                                    next acceptance number
           ``ckpt`` topic                               [epoch, proposal id, advertisement id]: the
                                                        checkpoint a late joiner started from (5.8)
           ``halt`` topic                               [block id, seq, time]: a block of this
                                                        node's pool it did not sign; the node no
                                                        longer signs in the topic (5.8)
           ``draft`` topic, draft id (8)                [block id, draft hash, time]: the block a
                                                        client's draft became (retries get it)
=========  ==========================================  ==========================================
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from topics import cbor
from topics.adapter import AdapterTxn, StoreView

from .codec import Proof, decode_proof, encode_proof
from .lace import Checkpoint, Held, Tomb, proof_key

__all__ = ["DATABASES", "Request", "BlockRow", "write_accepted", "write_tombs", "blocks", "tombs",
           "epochs", "proofs", "checkpoints", "put_checkpoint", "chain_ids", "last_seq", "request", "put_request", "answers", "count_answer", "requests_since",
           "drop_request", "expired_requests", "Halt", "put_halt", "halts", "drop_halt", "put_draft", "draft",
           "drop_drafts_before"]

DATABASES = ("block", "chain", "tomb", "ad", "epoch", "proof", "req", "meta")
_U64 = struct.Struct(">Q")
_ORDER = b"order"
_CHECKPOINT = b"ckpt"
_HALT = b"halt"
_DRAFT = b"draft"


@dataclass(frozen=True, slots=True)
class BlockRow:
    order: int
    raw: bytes
    arrival: int
    solicited: bool


@dataclass(frozen=True, slots=True)
class Request:
    """A held ``need``: what was asked, until when, by which pool."""

    topic: bytes
    ids: tuple[bytes, ...]
    anchors: bool
    expires_at: int
    pool: bytes
    arrival: int


# -- blocks ---------------------------------------------------------------------------------

def write_accepted(txn: AdapterTxn, held: Held, finals: list[tuple[int, bytes]], proofs: list[Proof]) -> None:
    """Everything one acceptance changes, in the caller's transaction."""
    topic = held.block.topic
    order_raw = txn.get("meta", _ORDER)
    order = 0 if order_raw is None else _U64.unpack(order_raw)[0]
    txn.put("meta", _ORDER, _U64.pack(order + 1))
    txn.put("block", topic + held.id, cbor.encode([order, held.raw, held.arrival, held.solicited]))
    slot = topic + held.creator + _U64.pack(held.block.seq)
    ids = txn.get("chain", slot) or b""
    if held.id not in [ids[i:i + 32] for i in range(0, len(ids), 32)]:
        txn.put("chain", slot, ids + held.id)
    if held.block.payload.type == 3:
        key = topic + _U64.pack(held.block.payload.ad.body.version)
        if txn.get("ad", key) is None:
            txn.put("ad", key, held.id)
    for epoch, proposal in finals:
        txn.put("epoch", topic + _U64.pack(epoch), cbor.encode([proposal, held.arrival]))
    for proof in proofs:
        txn.put("proof", proof_key(proof), encode_proof(proof))


def write_tombs(txn: AdapterTxn, topic: bytes, tombs_: list[Tomb], dropped: list[bytes]) -> None:
    for tomb in tombs_:
        txn.delete("block", topic + tomb.id)
        txn.put("tomb", topic + tomb.id, cbor.encode([tomb.epoch, tomb.creator, tomb.seq]))
    for ident in dropped:
        txn.delete("tomb", topic + ident)


def blocks(view: StoreView) -> list[BlockRow]:
    """Every retained block, in acceptance order (a causal order)."""
    rows = []
    for _, value in view.scan("block"):
        order, raw, arrival, solicited = cbor.decode(value)
        rows.append(BlockRow(order, raw, arrival, bool(solicited)))
    rows.sort(key=lambda r: r.order)
    return rows


def chain_ids(view: StoreView, topic: bytes, creator: bytes, seq: int) -> list[bytes]:
    """Ids of the creator's blocks with ``seq`` in ``topic`` (more than one: an equivocation).

    ``chain`` is never pruned: it remembers every sequence number a creator has used, even
    after its blocks became tombstones and the tombstones went."""
    ids = view.get("chain", topic + creator + _U64.pack(seq)) or b""
    return [ids[i:i + 32] for i in range(0, len(ids), 32)]


def last_seq(view: StoreView, topic: bytes, creator: bytes) -> tuple[int, list[bytes]] | None:
    """The creator's highest sequence number in ``topic`` and its block ids, or None."""
    for key, ids in view.scan("chain", topic + creator, reverse=True):
        return _U64.unpack(key[-8:])[0], [ids[i:i + 32] for i in range(0, len(ids), 32)]
    return None


def tombs(view: StoreView) -> Iterator[Tomb]:
    for key, value in view.scan("tomb"):
        epoch, creator, seq = cbor.decode(value)
        yield Tomb(key[32:], epoch, creator, seq)


def epochs(view: StoreView) -> Iterator[tuple[bytes, int, bytes, int]]:
    """``(topic, epoch, proposal, final time)`` of every final epoch."""
    for key, value in view.scan("epoch"):
        proposal, final_time = cbor.decode(value)
        yield key[:32], _U64.unpack(key[32:])[0], proposal, final_time


def put_checkpoint(txn: AdapterTxn, topic: bytes, checkpoint: Checkpoint) -> None:
    txn.put("meta", _CHECKPOINT + topic, cbor.encode([checkpoint.epoch, checkpoint.proposal, checkpoint.ad]))


def checkpoints(view: StoreView) -> Iterator[tuple[bytes, Checkpoint]]:
    """``(topic, checkpoint)`` of every topic this node joined late."""
    for key, value in view.scan("meta", _CHECKPOINT):
        epoch, proposal, ad = cbor.decode(value)
        yield key[len(_CHECKPOINT):], Checkpoint(epoch, proposal, ad)


def proofs(view: StoreView) -> Iterator[Proof]:
    for _, value in view.scan("proof"):
        yield decode_proof(value)


# -- requests (needs) -------------------------------------------------------------------------

def request(view: StoreView, need_id: bytes) -> Request | None:
    raw = view.get("req", b"r" + need_id)
    if raw is None:
        return None
    topic, ids, anchors, expires_at, pool, arrival = cbor.decode(raw)
    return Request(topic, tuple(ids), bool(anchors), expires_at, pool, arrival)


def put_request(txn: AdapterTxn, need_id: bytes, req: Request) -> None:
    txn.put("req", b"r" + need_id, cbor.encode([req.topic, list(req.ids), req.anchors, req.expires_at,
                                                 req.pool, req.arrival]))
    txn.put("req", b"p" + req.pool + req.topic + _U64.pack(req.arrival) + need_id, b"")


def answers(view: StoreView, need_id: bytes, item: bytes) -> int:
    raw = view.get("req", b"a" + need_id + item)
    return 0 if raw is None else _U64.unpack(raw)[0]


def count_answer(txn: AdapterTxn, need_id: bytes, item: bytes) -> None:
    txn.put("req", b"a" + need_id + item, _U64.pack(answers(txn, need_id, item) + 1))


def requests_since(view: StoreView, pool: bytes, topic: bytes, since: int) -> int:
    """Requests of ``pool`` for ``topic`` that arrived at ``since`` or later."""
    count = 0
    for key, _ in view.scan("req", b"p" + pool + topic):
        if _U64.unpack(key[61:69])[0] >= since:
            count += 1
    return count


def expired_requests(view: StoreView, now: float) -> list[bytes]:
    out = []
    for key, _ in view.scan("req", b"r"):
        req = request(view, key[1:])
        if req is not None and req.expires_at < now:
            out.append(key[1:])
    return out


def drop_request(txn: AdapterTxn, need_id: bytes) -> None:
    req = request(txn, need_id)
    txn.delete("req", b"r" + need_id)
    for key, _ in list(txn.scan("req", b"a" + need_id)):
        txn.delete("req", key)
    if req is not None:
        txn.delete("req", b"p" + req.pool + req.topic + _U64.pack(req.arrival) + need_id)


# -- the node's signing: stops and drafts -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class Halt:
    """Why the node stopped signing for its pool in a topic: a block of the pool it did not sign."""

    topic: bytes
    block: bytes
    seq: int
    since: int


def put_halt(txn: AdapterTxn, halt: Halt) -> None:
    txn.put("meta", _HALT + halt.topic, cbor.encode([halt.block, halt.seq, halt.since]))


def halts(view: StoreView) -> Iterator[Halt]:
    for key, value in view.scan("meta", _HALT):
        block, seq, since = cbor.decode(value)
        yield Halt(key[len(_HALT):], block, seq, since)


def drop_halt(txn: AdapterTxn, topic: bytes) -> bool:
    return txn.delete("meta", _HALT + topic)


def put_draft(txn: AdapterTxn, topic: bytes, draft_id: int, block: bytes, draft_hash: bytes, now: int) -> None:
    txn.put("meta", _DRAFT + topic + _U64.pack(draft_id), cbor.encode([block, draft_hash, now]))


def draft(view: StoreView, topic: bytes, draft_id: int) -> tuple[bytes, bytes] | None:
    """``(block id, draft hash)`` of the block the draft ``draft_id`` of ``topic`` became, or None."""
    raw = view.get("meta", _DRAFT + topic + _U64.pack(draft_id))
    if raw is None:
        return None
    block, draft_hash, _ = cbor.decode(raw)
    return block, draft_hash


def drop_drafts_before(txn: AdapterTxn, before: float) -> None:
    for key, value in list(txn.scan("meta", _DRAFT)):
        if cbor.decode(value)[2] < before:
            txn.delete("meta", key)
