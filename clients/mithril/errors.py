"""What can go wrong between a client and its DMQ node, as types a caller can branch on.

A rejected message is not among them: the node's verdict is a value (accepted or a typed
reject reason). These are the failures to reach a verdict at all. Each message is one line
that names the socket, so the ``dmq`` commands can print it as is.
"""

from __future__ import annotations

__all__ = ["DmqClientError", "NodeUnreachable", "HandshakeFailed", "ConnectionLost", "UnreadableMessage"]


class DmqClientError(Exception):
    """The client could not complete its exchange with the node."""


class NodeUnreachable(DmqClientError):
    """Nothing accepts connections on the socket path (no node, wrong path, no permission)."""


class HandshakeFailed(DmqClientError):
    """The node refused the handshake (typically another network magic) or broke it."""


class ConnectionLost(DmqClientError):
    """The connection ended or the node broke a mini-protocol before the exchange finished."""


class UnreadableMessage(DmqClientError):
    """The node delivered a message (or a Mithril body) the consumer cannot decode.

    As in Mithril's aggregator, the whole batch fails and the connection is dropped; the node
    replays its mempool on the next connection, so the message comes back until it expires.
    """
