"""Blocklace publications for a topic client (docs/topics-design.md 5: the node is its pool's creator).

A client never chooses a block's sequence number, pointers, epoch or floor: the node does,
from its own state, so that its pool can never equivocate (5.8). The client publishes a
*draft*, a block whose creator fields are ``0, 0, [], 0``, through ``MsgPublish``; the node
answers with the id of the block it built and signed. What the client does choose:

- the topic: the Blake2b-256 id of its owner keys and threshold (5.1, :class:`TopicOwners`);
- the topic's advertisements, signed by a threshold of the owner keys: who publishes with
  which permissions, and the topic's parameters (5.2, 5.6);
- each block's payload (an Event's bytes, an Ack, an epoch proposal or acknowledgement) and
  its content tags;
- the draft's id (in the draft's ``seq``, which the node replaces): the node records the
  block a draft became with it, so the same draft sent again (a retry after a lost answer or
  a node's crash) is answered with that block instead of making a second one. Every draft
  built here gets a fresh random id unless one is given: keep the bytes to retry.

A pool that signs its own blocks (a client holding the pool's keys, publishing through
protocol 14) builds them with :class:`PoolCreator` over the blocks and final epochs it reads
from a node, as the node would.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from dmq.codec import decode_message
from topics.adapter import ITEM_EPOCH_FINAL, ITEM_MESSAGE
from topics.blocklace.codec import Block, decode_body, encode_block
from topics.blocklace.creator import complete_block
from topics.blocklace.lace import Lace

from topics.adapter import Reject
from topics.blocklace.ads import owner_of, sign_ad_body
from topics.blocklace.creator import draft_body
from topics.blocklace.codec import (
    ACK,
    AD,
    EPOCH,
    EVENT,
    PERM_ACK,
    PERM_EPOCH,
    PERM_EVENT,
    EpochMsg,
    Owner,
    Payload,
    TopicAd,
    TopicParams,
    encode_ad_body,
)

__all__ = ["PERMISSIONS", "TopicOwners", "parse_permissions", "draft_block", "event_draft", "ack_draft",
           "advertisement_draft", "proposal_draft", "acknowledgement_draft", "TopicParams", "new_draft_id",
           "MAX_DRAFT_ID", "PoolCreator"]

#: Draft ids are 1 to 2**63 - 1 (0: a draft without one).
MAX_DRAFT_ID = (1 << 63) - 1


def new_draft_id() -> int:
    """A random draft id (63 bits: two drafts of one topic never share one in practice)."""
    return secrets.randbelow(MAX_DRAFT_ID) + 1

#: Permission names of an advertisement's publishers (5.2: bits 1 Event, 2 Ack, 4 Epoch).
PERMISSIONS = {"event": PERM_EVENT, "ack": PERM_ACK, "epoch": PERM_EPOCH}


def parse_permissions(names: str) -> int:
    """``event,ack,epoch`` (any of them, or ``all``) as permission bits; ``ValueError`` otherwise."""
    if names.strip() == "all":
        return PERM_EVENT | PERM_ACK | PERM_EPOCH
    bits = 0
    for name in (part.strip() for part in names.split(",")):
        if name not in PERMISSIONS:
            raise ValueError(f"unknown permission {name!r}: use event, ack, epoch or all")
        bits |= PERMISSIONS[name]
    return bits


class TopicOwners:
    """The owner keys of a topic (Ed25519 seeds, in the order that gives the topic its id) and the
    number of them that must sign an advertisement."""

    def __init__(self, seeds: Sequence[bytes], threshold: int) -> None:
        if not 1 <= threshold <= len(seeds):
            raise ValueError(f"threshold {threshold} of {len(seeds)} owner keys: expected 1..{len(seeds)}")
        self.seeds = [bytes(s) for s in seeds]
        self.owner: Owner = owner_of(self.seeds, threshold)

    @property
    def topic_id(self) -> bytes:
        return self.owner.topic_id

    def advertisement(self, version: int, publishers: Mapping[bytes, int], *, params: TopicParams | None = None,
                      relays: Sequence[bytes] = (), signers: Sequence[int] | None = None) -> TopicAd:
        """Version ``version`` of the topic's advertisement: ``publishers`` (pool id -> permission
        bits) and ``params``, signed by the owner keys at ``signers`` (default: the first
        ``threshold`` of them)."""
        raw = encode_ad_body(version, self.owner, dict(publishers), tuple(relays), params)
        chosen = list(range(self.owner.threshold)) if signers is None else list(signers)
        return sign_ad_body(raw, self.seeds, chosen)


def draft_block(topic: bytes, payload: Payload, tags: Sequence[bytes] = (), *, draft_id: int | None = None) -> bytes:
    """The body of a draft of ``payload`` in ``topic`` (an Event, Ack, Epoch message or
    TopicAdvertisement), with up to 8 content tags: the node's own draft, as a client sends it.
    ``draft_id``: 1 to 2**63 - 1, or None for a new random one."""
    if draft_id is None:
        draft_id = new_draft_id()
    if not 1 <= draft_id <= MAX_DRAFT_ID:
        raise ValueError(f"draft id {draft_id}: expected 1 to {MAX_DRAFT_ID}")
    return draft_body(topic, payload, tuple(tags), draft_id)


def event_draft(topic: bytes, data: bytes, tags: Sequence[bytes] = (), *, draft_id: int | None = None) -> bytes:
    """A draft of an Event carrying ``data`` (application bytes, encrypted if need be)."""
    return draft_block(topic, Payload(EVENT, event=data), tags, draft_id=draft_id)


def ack_draft(topic: bytes, tags: Sequence[bytes] = (), *, draft_id: int | None = None) -> bytes:
    """A draft of an Ack: the node points it at the topic's current leaves."""
    return draft_block(topic, Payload(ACK), tags, draft_id=draft_id)


def advertisement_draft(ad: TopicAd, *, draft_id: int | None = None) -> bytes:
    """A draft carrying a signed advertisement, in the topic it advertises."""
    return draft_block(ad.body.owner.topic_id, Payload(AD, ad=ad), draft_id=draft_id)


def proposal_draft(topic: bytes, number: int, attempt: int, ad_version: int, cut: Sequence[bytes], *,
                   stake_epoch: int | None = None, tags: Sequence[bytes] = (), draft_id: int | None = None) -> bytes:
    """A draft proposing that epoch ``number`` opens after the blocks of ``cut`` (1 to 16 ids of
    the current epoch the node's pool has seen, 5.7), under advertisement ``ad_version``;
    a topic under the stake rule names its snapshot's Cardano epoch. The node refuses a
    number, attempt or advertisement version other than those the block will carry, and a
    cut block it does not hold in the block's epoch; it adds its own pointers of that epoch
    to the cut (up to 16)."""
    epoch = EpochMsg(number, attempt, ad_version, cut=tuple(sorted(set(cut))), stake_epoch=stake_epoch)
    return draft_block(topic, Payload(EPOCH, epoch=epoch), tags, draft_id=draft_id)


def acknowledgement_draft(topic: bytes, proposal: bytes, number: int, attempt: int, ad_version: int, *,
                          tags: Sequence[bytes] = (), draft_id: int | None = None) -> bytes:
    """A draft acknowledging the proposal whose DMQ id is ``proposal`` (its number, attempt and
    advertisement version repeated, as 5.7 checks: the node refuses other values)."""
    return draft_block(topic, Payload(EPOCH, epoch=EpochMsg(number, attempt, ad_version, acked=proposal)), tags,
                       draft_id=draft_id)


class PoolCreator:
    """The blocks of one pool in one topic, built by a client that signs them itself.

    It follows the topic through the items of a protocol 1000 subscription that starts with
    the retained blocks (``start = retained``): blocks join its lace in delivery order, and
    final epochs (item kind 3) are taken as the node reports them, so that a topic under the
    stake rule, whose quorum a client cannot weigh without the stake snapshot, moves on to
    the next epoch here as at the node. :meth:`next_block` builds the pool's next block as an
    honest creator (5.8): its sequence number, self-parent, the current leaves, the epoch and
    the floor bits; :meth:`published` records it once the node accepted it.
    """

    def __init__(self, pool_id: bytes, topic: bytes) -> None:
        self.pool_id = pool_id
        self.topic = topic
        self.lace = Lace()
        self.seq = 0
        self.last: bytes | None = None

    def follow(self, item: Any) -> None:
        """Take one decoded item (:func:`~clients.topics.client.decode_item`) of the topic."""
        if item.kind == ITEM_EPOCH_FINAL:
            self.lace.adopt_final(item.payload[0], item.payload[1], item.payload[2])
        elif item.kind == ITEM_MESSAGE:
            message = decode_message(item.payload)
            kind, block = decode_body(message.body)
            if kind == 0 and message.message_id not in self.lace.blocks:
                self.lace.accept(message, block, int(time.time()))

    @property
    def ready(self) -> bool:
        """Whether the pool's previous block is back from the node (the next one points to it)."""
        return self.last is None or self.last in self.lace.blocks

    def next_block(self, payload: Payload, tags: Sequence[bytes] = ()) -> bytes:
        """The body of the pool's next block carrying ``payload``, for the pool to sign."""
        built = complete_block(self.lace, self.pool_id, self.seq, self.last,
                               Block(self.topic, 0, 0, (), 0, payload, tuple(tags)))
        if isinstance(built, Reject):
            raise ValueError(f"{built.reason.name}: {built.detail}")
        return encode_block(built)

    def published(self, dmq_id: bytes) -> None:
        """The node accepted the block just built, whose DMQ id is ``dmq_id``."""
        self.seq, self.last = self.seq + 1, dmq_id
