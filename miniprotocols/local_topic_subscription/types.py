"""Local topic subscription (mini-protocol 1000, docs/topics-design.md 3): states, messages, the state table.

A topic client subscribes with filters, reads items of all its subscriptions through one
stream with cumulative acknowledgements, joins and leaves UPSYCLE groups, pulls missed
messages, and publishes adapter bodies that the node wraps and signs. The client holds
agency only in ``StIdle``; every request leads to a node-agency state that exactly one
reply (or ``MsgReject`` where allowed) leaves. No time limit on either side, as on 14 and
15; the node refuses client messages over 256 KiB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..framework import Agency, ProtocolState, StateSpec

__all__ = [
    "PROTOCOL_NUM",
    "MAX_MESSAGE_BYTES",
    "MAX_ITEMS_PER_REPLY",
    "MAX_REPLY_BYTES",
    "TopicState",
    "START_NOW",
    "START_RETAINED",
    "START_STATE",
    "Resume",
    "Durable",
    "Auth",
    "MsgSubscribe",
    "MsgSubscribed",
    "MsgUnsubscribe",
    "MsgUnsubscribed",
    "MsgJoin",
    "MsgJoinAck",
    "MsgLeave",
    "MsgLeaveAck",
    "MsgPull",
    "MsgPullReply",
    "MsgPublish",
    "MsgPublished",
    "MsgRequestNext",
    "MsgReplyNext",
    "MsgReject",
    "MsgDone",
    "STATES",
    "TRANSITIONS",
]

PROTOCOL_NUM = 1000
MAX_MESSAGE_BYTES = 256 * 1024
MAX_ITEMS_PER_REPLY = 1000
MAX_REPLY_BYTES = 256 * 1024

START_NOW = 0
START_RETAINED = 1
START_STATE = 2


class TopicState(ProtocolState):
    IDLE = "StIdle"
    SUBSCRIBING = "StSubscribing"
    UNSUBSCRIBING = "StUnsubscribing"
    JOINING = "StJoining"
    LEAVING = "StLeaving"
    PULLING = "StPulling"
    PUBLISHING = "StPublishing"
    NEXT_BLOCKING = "StNextBlocking"
    NEXT_NON_BLOCKING = "StNextNonBlocking"
    DONE = "StDone"


@dataclass(frozen=True, slots=True)
class Resume:
    """``start = [3, dseq]``: a durable subscription redelivers from ``dseq``."""

    dseq: int


@dataclass(frozen=True, slots=True)
class Auth:
    """``[ts, sig]``: Ed25519 by the subscriber key over the auth statement (docs/topics-design.md 3.4)."""

    ts: int
    sig: bytes


@dataclass(frozen=True, slots=True)
class Durable:
    """``[name, ? auth]``."""

    name: bytes
    auth: Auth | None = None


@dataclass(frozen=True, slots=True)
class MsgSubscribe:
    filter: Any                      # list of selector maps
    start: int | Resume
    durable: Durable | None = None


@dataclass(frozen=True, slots=True)
class MsgSubscribed:
    sub_id: int
    next_dseq: int


@dataclass(frozen=True, slots=True)
class MsgUnsubscribe:
    sub_id: int
    forget: bool


@dataclass(frozen=True, slots=True)
class MsgUnsubscribed:
    sub_id: int


@dataclass(frozen=True, slots=True)
class MsgJoin:
    subscriber: bytes
    group: bytes
    local: bool
    auth: Auth


@dataclass(frozen=True, slots=True)
class MsgJoinAck:
    group: bytes
    result: int
    detail: int | None = None


@dataclass(frozen=True, slots=True)
class MsgLeave:
    subscriber: bytes
    group: bytes
    auth: Auth


@dataclass(frozen=True, slots=True)
class MsgLeaveAck:
    group: bytes
    result: int
    detail: int | None = None


@dataclass(frozen=True, slots=True)
class MsgPull:
    subscriber: bytes
    group: bytes
    ids: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class MsgPullReply:
    statuses: tuple[tuple[bytes, int], ...]


@dataclass(frozen=True, slots=True)
class MsgPublish:
    body: bytes


@dataclass(frozen=True, slots=True)
class MsgPublished:
    dmq_id: bytes | None
    inner_id: bytes | None = None


@dataclass(frozen=True, slots=True)
class MsgRequestNext:
    blocking: bool
    acks: tuple[tuple[int, int], ...]
    max_items: int


@dataclass(frozen=True, slots=True)
class MsgReplyNext:
    """``[13, [* item], hasMore]``; each item as its exact CBOR bytes ``[subId, dseq, itemBody]``."""

    items: tuple[bytes, ...]
    has_more: bool


@dataclass(frozen=True, slots=True)
class MsgReject:
    code: int
    text: str
    retry_after: int | None = None


@dataclass(frozen=True, slots=True)
class MsgDone:
    pass


def _next_state(request: MsgRequestNext) -> TopicState:
    return TopicState.NEXT_BLOCKING if request.blocking else TopicState.NEXT_NON_BLOCKING


_NODE = StateSpec(Agency.SERVER)

STATES = {
    TopicState.IDLE: StateSpec(Agency.CLIENT, byte_limit=MAX_MESSAGE_BYTES),
    TopicState.SUBSCRIBING: _NODE,
    TopicState.UNSUBSCRIBING: _NODE,
    TopicState.JOINING: _NODE,
    TopicState.LEAVING: _NODE,
    TopicState.PULLING: _NODE,
    TopicState.PUBLISHING: _NODE,
    TopicState.NEXT_BLOCKING: _NODE,
    TopicState.NEXT_NON_BLOCKING: _NODE,
    TopicState.DONE: StateSpec(Agency.NOBODY),
}

I = TopicState
TRANSITIONS = {
    (I.IDLE, MsgSubscribe): I.SUBSCRIBING,
    (I.SUBSCRIBING, MsgSubscribed): I.IDLE,
    (I.SUBSCRIBING, MsgReject): I.IDLE,
    (I.IDLE, MsgUnsubscribe): I.UNSUBSCRIBING,
    (I.UNSUBSCRIBING, MsgUnsubscribed): I.IDLE,
    (I.UNSUBSCRIBING, MsgReject): I.IDLE,
    (I.IDLE, MsgJoin): I.JOINING,
    (I.JOINING, MsgJoinAck): I.IDLE,
    (I.IDLE, MsgLeave): I.LEAVING,
    (I.LEAVING, MsgLeaveAck): I.IDLE,
    (I.IDLE, MsgPull): I.PULLING,
    (I.PULLING, MsgPullReply): I.IDLE,
    (I.PULLING, MsgReject): I.IDLE,
    (I.IDLE, MsgPublish): I.PUBLISHING,
    (I.PUBLISHING, MsgPublished): I.IDLE,
    (I.PUBLISHING, MsgReject): I.IDLE,
    (I.IDLE, MsgRequestNext): _next_state,
    (I.NEXT_BLOCKING, MsgReplyNext): I.IDLE,
    (I.NEXT_NON_BLOCKING, MsgReplyNext): I.IDLE,
    (I.IDLE, MsgDone): I.DONE,
}
del I
