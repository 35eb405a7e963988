"""Local message notification, mini-protocol 15 (docs/protocol/local-protocols.md 8)."""

from .client import LocalMsgNotificationClient
from .codec import LocalNotificationCodec
from .server import MessageSource, SourceContractError, serve
from .spec import LOCAL_MSG_NOTIFICATION
from .types import (
    MAX_MESSAGES_PER_REPLY,
    PROTOCOL_NUM,
    LocalNotificationState,
    MsgClientDone,
    MsgReplyMessagesBlocking,
    MsgReplyMessagesNonBlocking,
    MsgRequestMessages,
)

__all__ = [
    "PROTOCOL_NUM",
    "MAX_MESSAGES_PER_REPLY",
    "LOCAL_MSG_NOTIFICATION",
    "LocalNotificationState",
    "MsgRequestMessages",
    "MsgReplyMessagesNonBlocking",
    "MsgReplyMessagesBlocking",
    "MsgClientDone",
    "LocalNotificationCodec",
    "LocalMsgNotificationClient",
    "MessageSource",
    "SourceContractError",
    "serve",
]
