"""Local message notification (mini-protocol 15): states, messages and the state table.

A local subscriber (the Mithril aggregator) asks for the messages it has not seen yet,
blocking (wait until there is at least one) or non-blocking (answer now, maybe empty,
with a "has more" flag). The request chooses the busy state, so the table maps it through
a small function of the message. Messages travel as their exact CBOR bytes. No byte or
time limits, as on every node-to-client protocol of the reference.
(``dmq-node: DMQ/Protocol/LocalMsgNotification/{Type,Codec}.hs``; docs/protocol/local-protocols.md 8.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..framework import Agency, ProtocolState, StateSpec
from ..framework.cbor_write import as_items

__all__ = [
    "PROTOCOL_NUM",
    "MAX_MESSAGES_PER_REPLY",
    "LocalNotificationState",
    "MsgRequestMessages",
    "MsgReplyMessagesNonBlocking",
    "MsgReplyMessagesBlocking",
    "MsgClientDone",
    "LocalNotificationMessage",
    "STATES",
    "TRANSITIONS",
]

PROTOCOL_NUM = 15
#: The most messages the reference server puts in one reply.
MAX_MESSAGES_PER_REPLY = 1000


class LocalNotificationState(ProtocolState):
    IDLE = "StIdle"
    BUSY_BLOCKING = "StBusy StBlocking"
    BUSY_NON_BLOCKING = "StBusy StNonBlocking"
    DONE = "StDone"


@dataclass(frozen=True, slots=True)
class MsgRequestMessages:
    """``[0, isBlocking]``."""

    blocking: bool


@dataclass(frozen=True, slots=True)
class MsgReplyMessagesNonBlocking:
    """``[1, [_ message*], hasMore]``: possibly empty; each message as raw CBOR."""

    messages: tuple[bytes, ...]
    has_more: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", as_items(self.messages))


@dataclass(frozen=True, slots=True)
class MsgReplyMessagesBlocking:
    """``[2, [_ message+]]``: never empty; each message as raw CBOR."""

    messages: tuple[bytes, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", as_items(self.messages))
        if not self.messages:
            raise ValueError("a blocking reply carries at least one message")


@dataclass(frozen=True, slots=True)
class MsgClientDone:
    """``[3]``: the client ends the protocol (the server has no done message)."""


LocalNotificationMessage = (
    MsgRequestMessages | MsgReplyMessagesNonBlocking | MsgReplyMessagesBlocking | MsgClientDone
)


def _busy_state(request: MsgRequestMessages) -> LocalNotificationState:
    """A blocking request leads to the blocking busy state, a non-blocking one to the other."""
    return LocalNotificationState.BUSY_BLOCKING if request.blocking else LocalNotificationState.BUSY_NON_BLOCKING


STATES = {
    LocalNotificationState.IDLE: StateSpec(Agency.CLIENT),
    LocalNotificationState.BUSY_BLOCKING: StateSpec(Agency.SERVER),
    LocalNotificationState.BUSY_NON_BLOCKING: StateSpec(Agency.SERVER),
    LocalNotificationState.DONE: StateSpec(Agency.NOBODY),
}

TRANSITIONS = {
    (LocalNotificationState.IDLE, MsgRequestMessages): _busy_state,
    (LocalNotificationState.IDLE, MsgClientDone): LocalNotificationState.DONE,
    (LocalNotificationState.BUSY_NON_BLOCKING, MsgReplyMessagesNonBlocking): LocalNotificationState.IDLE,
    (LocalNotificationState.BUSY_BLOCKING, MsgReplyMessagesBlocking): LocalNotificationState.IDLE,
}
