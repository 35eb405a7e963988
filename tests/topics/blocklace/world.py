"""Pools with real Sum6KES keys, an owned topic, and honest or dishonest block builders."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from dmq.codec import build_message
from dmq.kes import KesSigningKey
from dmq.message import DmqMessage
from dmq.opcert import cold_verification_key, issue_opcert, pool_id_of
from topics.blocklace.ads import owner_of, sign_ad_body
from topics.blocklace.codec import (
    ACK, AD, EPOCH, EVENT, PERM_ACK, PERM_EPOCH, PERM_EVENT, Block, EpochMsg, Payload, TopicParams,
    decode_body, encode_ad_body, encode_block,
)

NOW = 1_800_000_000
ALL = PERM_EVENT | PERM_ACK | PERM_EPOCH


def _seed(label: str) -> bytes:
    return hashlib.blake2b(label.encode(), digest_size=32).digest()


@dataclass
class Pool:
    cold_seed: bytes
    kes: KesSigningKey
    cold_vk: bytes
    opcert: object

    @property
    def id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    def sign(self, body: bytes, expires_at: int = NOW + 1700) -> DmqMessage:
        return build_message(body, 0, expires_at, self.kes, self.opcert, self.cold_vk)


_POOLS: dict[int, Pool] = {}


def pool(i: int) -> Pool:
    if i not in _POOLS:
        cold = _seed(f"cold-{i}")
        kes = KesSigningKey.generate(_seed(f"kes-{i}"))
        _POOLS[i] = Pool(cold, kes, cold_verification_key(cold), issue_opcert(cold, kes.verification_key(), 0, 0))
    return _POOLS[i]


OWNER_SEEDS = [_seed("owner-0"), _seed("owner-1"), _seed("owner-2")]
OWNER = owner_of(OWNER_SEEDS, 2)
TOPIC = OWNER.topic_id


def advertisement(version: int, publishers: dict[bytes, int], params: TopicParams | None = None, signers=(0, 1),
                  owner_seeds: list[bytes] = OWNER_SEEDS):
    raw = encode_ad_body(version, owner_of(owner_seeds, 2), publishers, params=params)
    return sign_ad_body(raw, owner_seeds, list(signers))


def owner_seeds(label: str) -> list[bytes]:
    """Three owner keys of another topic (its id: ``owner_of(seeds, 2).topic_id``)."""
    return [_seed(f"{label}-{i}") for i in range(3)]


@dataclass
class Author:
    """Builds one pool's blocks: self-parent first, the rest ascending, floor bits computed."""

    pool: Pool
    seq: int = 0
    last: bytes | None = None
    epoch: int = 0
    topic: bytes = TOPIC

    def block(self, payload: Payload, others=(), epochs: dict | None = None, tags=(), epoch: int | None = None,
              seq: int | None = None, parent: bytes | None = None) -> DmqMessage:
        epoch = self.epoch if epoch is None else epoch
        seq = self.seq if seq is None else seq
        parent = self.last if parent is None else parent
        ptrs = ([parent] if seq > 0 else []) + sorted(set(others) - {parent})
        mask = 0
        for i, p in enumerate(ptrs):
            if epochs is not None and epochs.get(p, epoch) < epoch:
                mask |= 1 << i
        body = encode_block(Block(self.topic, seq, epoch, tuple(ptrs), mask, payload, tuple(tags)))
        message = self.pool.sign(body)
        self.seq, self.last = seq + 1, message.message_id
        return message


def event(data: bytes = b"x") -> Payload:
    return Payload(EVENT, event=data)


def ack() -> Payload:
    return Payload(ACK)


def ad_payload(ad) -> Payload:
    return Payload(AD, ad=ad)


def epoch_payload(**kw) -> Payload:
    return Payload(EPOCH, epoch=EpochMsg(**kw))


def block_of(message: DmqMessage) -> Block:
    kind, block = decode_body(message.body)
    assert kind == 0
    return block
