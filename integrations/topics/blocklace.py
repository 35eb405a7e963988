"""Blocklace publications for a topic client (docs/topics-design.md 5.8: the node is its pool's creator).

A client never chooses a block's sequence number, pointers, epoch or floor: the node does,
from its own state, so that its pool can never equivocate. The client publishes a *draft*,
a block whose creator fields are ``0, 0, [], 0``, through ``MsgPublish``; the node answers
with the id of the block it built and signed.
"""

from __future__ import annotations

from collections.abc import Sequence

from topics.blocklace.codec import ACK, EVENT, Block, Payload, encode_block

__all__ = ["draft_block", "event_draft", "ack_draft"]


def draft_block(topic: bytes, payload: Payload, tags: Sequence[bytes] = ()) -> bytes:
    """The body of a draft of ``payload`` in ``topic`` (an Event, Ack, Epoch message or
    TopicAdvertisement), with up to 8 content tags."""
    return encode_block(Block(topic, 0, 0, (), 0, payload, tuple(tags)))


def event_draft(topic: bytes, data: bytes, tags: Sequence[bytes] = ()) -> bytes:
    """A draft of an Event carrying ``data`` (application bytes, encrypted if need be)."""
    return draft_block(topic, Payload(EVENT, event=data), tags)


def ack_draft(topic: bytes, tags: Sequence[bytes] = ()) -> bytes:
    """A draft of an Ack: the node points it at the topic's current leaves."""
    return draft_block(topic, Payload(ACK), tags)
