"""Keep-alive, mini-protocol 12 (docs/protocol/node-to-node.md 9.5)."""

from .client import KeepAliveClient
from .codec import KeepAliveCodec
from .server import serve
from .spec import KEEP_ALIVE
from .types import (
    INGRESS_LIMIT,
    KEEP_ALIVE_INTERVAL,
    PROTOCOL_NUM,
    KeepAliveCookieMismatch,
    KeepAliveState,
    MsgDone,
    MsgKeepAlive,
    MsgKeepAliveResponse,
)

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "KEEP_ALIVE_INTERVAL",
    "KEEP_ALIVE",
    "KeepAliveState",
    "MsgKeepAlive",
    "MsgKeepAliveResponse",
    "MsgDone",
    "KeepAliveCodec",
    "KeepAliveClient",
    "KeepAliveCookieMismatch",
    "serve",
]
